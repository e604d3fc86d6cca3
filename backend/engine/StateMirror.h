// engine/StateMirror.h — the state of the last completed optimizer step, kept in a memory-mapped
// file the engine rewrites after every step, so the supervisor can resume a run whose engine
// process died without losing a step.
//
// Layout (little-endian):
//   header (64 bytes): magic "LSMIRROR", format version (2), slot capacity in bytes
//   slots 0, 1, 2 (each 32-byte slot header + capacity bytes of payload):
//     sequence (u64), payload length (u64), CRC-32C of the payload (u32), valid flag (u32)
// A write goes to a slot that holds neither the newest state nor the last durable one: header
// invalidated, payload, then the slot header with a higher sequence. Readers take the valid slot
// with the highest sequence. An engine that dies at any moment (killed, crashed: the kernel keeps
// what the mapping holds) leaves the newest completed write. A durable write also msyncs the
// payload before the header and the header after it; writes are durable at most every
// durableEvery (default: every write), so a machine that goes down leaves at least the last
// durable state on the disk, and any newer slot that reached it whole. Version 1 files (two
// slots, CRC-32) read the same; the engine starts them afresh.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

namespace lorascope::common {
class MappedFile;
}

namespace lorascope::engine {

class StateMirrorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MirroredState {
  std::uint64_t sequence = 0;  // increases by one per write
  std::vector<std::byte> payload;
};

class StateMirror {
 public:
  // Creates the file with `capacityBytes` of room per slot, or reopens one that has at least
  // `requiredBytes` (default: capacityBytes), keeping its contents and its capacity
  // (capacityBytes() tells which). An engine asks for room to spare but requires only what its
  // state takes now: the encoded state grows by a few bytes over a run, and a restarted engine
  // that re-created the mirror for that would lose the newest state to a crash before its first
  // write.
  StateMirror(const std::filesystem::path& path, std::size_t capacityBytes,
              std::size_t requiredBytes = 0);
  ~StateMirror();
  StateMirror(const StateMirror&) = delete;
  StateMirror& operator=(const StateMirror&) = delete;

  // Throws StateMirrorError when the payload exceeds the capacity or the sync fails.
  void write(std::span<const std::byte> payload);
  // How often a write also waits for the disk (msync): every write (zero, the default), or the
  // first write once this long has passed since the last durable one.
  void setDurableEvery(std::chrono::milliseconds interval) { durableEvery_ = interval; }
  std::size_t capacityBytes() const { return capacityBytes_; }

  // The newest state whose checksum verifies, or nothing (new file, or both slots torn).
  // Reads a file another process writes; never throws on a damaged file, only on a missing one.
  static std::optional<MirroredState> readLatest(const std::filesystem::path& path);

 private:
  // Writes [offset, offset + bytes) of the mapping to the disk; throws StateMirrorError.
  void flush(std::size_t offset, std::size_t bytes, const char* what);

  std::filesystem::path path_;
  std::size_t capacityBytes_ = 0;
  std::size_t mappedBytes_ = 0;
  std::unique_ptr<common::MappedFile> mapping_;  // shared and writable
  std::byte* map_ = nullptr;                     // mapping_'s bytes
  static constexpr int kSlots = 3;
  std::uint64_t nextSequence_ = 1;
  std::array<std::uint64_t, kSlots> sequences_{};  // each slot's valid sequence, 0 when none
  int newestSlot_ = -1;                            // the slot of the newest state
  int durableSlot_ = -1;                           // the slot of the last durable state
  std::chrono::milliseconds durableEvery_{0};
  std::optional<std::chrono::steady_clock::time_point> lastDurable_;
};

}  // namespace lorascope::engine
