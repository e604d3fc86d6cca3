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
// what the mapping holds) leaves the newest completed write. By default every write is durable:
// it msyncs the payload before the header and the header after it, and returns once both are on
// the disk. With an interval (setDurableEvery), at most one write in that interval is made
// durable, and in the background (Note [durable in the background]). Either way a machine that
// goes down leaves at least the last durable state on the disk, and any newer slot that reached
// it whole. Version 1 files (two slots, CRC-32) read the same; the engine starts them afresh.
//
// Note [durable in the background]: the engine announces a step only once its write has returned
// (job/StepCommit.h). Training the Llama-3.2-1B shape on the H200 machine (67 MB of state, 49 ms
// steps), the two steps after each durable write waited 19 ms each for the writer, every 2 s:
// ~2% of the run. So with an interval the write returns once the state
// is in the mapping (all an engine that dies needs), and a thread msyncs that slot, payload and
// header in one range; the slot becomes the last durable state when the msync returns. Until
// then it is not written again, nor is the previous durable state's slot: a write that would need
// one of them, or the next durable write, waits for the msync. A machine that goes down during the
// msync may leave the slot torn on the disk with a valid header; its checksum then fails and the
// reader takes the previous durable state (or a newer slot that reached the disk whole), as for a
// slot written between durable ones, which the kernel may write back at any time. An msync's
// failure is thrown by the next write.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
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
  ~StateMirror();  // waits for a background sync (its error is dropped: the state is written)
  StateMirror(const StateMirror&) = delete;
  StateMirror& operator=(const StateMirror&) = delete;

  // Throws StateMirrorError when the payload exceeds the capacity or a sync fails (with an
  // interval, also a background sync of an earlier write).
  void write(std::span<const std::byte> payload);
  // How often a write is made durable: every write, before it returns (zero, the default), or the
  // first write once this long has passed since the last durable one started, in the background
  // (Note [durable in the background]).
  void setDurableEvery(std::chrono::milliseconds interval) { durableEvery_ = interval; }
  std::size_t capacityBytes() const { return capacityBytes_; }

  // The newest state whose checksum verifies, or nothing (new file, or both slots torn).
  // Reads a file another process writes; never throws on a damaged file, only on a missing one.
  static std::optional<MirroredState> readLatest(const std::filesystem::path& path);

 private:
  // Writes [offset, offset + bytes) of the mapping to the disk; throws StateMirrorError.
  void flush(std::size_t offset, std::size_t bytes, const char* what);
  // Collects the background sync once it has finished (`wait`: waits for it): its slot becomes
  // the last durable one, or its error is thrown.
  void collectSync(bool wait);
  // The slot the next write takes: neither the newest nor the last durable one nor one being
  // synced; of the slots left, the oldest (-1 when none is left).
  int freeSlot() const;

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
  // The background sync in flight (Note [durable in the background]): its slot and start.
  std::future<void> sync_;
  int syncSlot_ = -1;
  std::chrono::steady_clock::time_point syncStarted_;
};

}  // namespace lorascope::engine
