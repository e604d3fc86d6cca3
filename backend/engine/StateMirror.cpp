// engine/StateMirror.cpp — three-slot, checksummed state file over a shared mapping
// (common/MappedFile.h).
#include "engine/StateMirror.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "common/BoundedFile.h"  // defines: readToEnd
#include "common/Checksum.h"
#include "common/MappedFile.h"
#include "common/OsError.h"

namespace lorascope::engine {
namespace {

constexpr char kMagic[8] = {'L', 'S', 'M', 'I', 'R', 'R', 'O', 'R'};
constexpr std::uint32_t kFormatVersion = 2;  // 1: two slots, CRC-32, every write durable
constexpr std::size_t kFileHeaderBytes = 64;
constexpr std::size_t kSlotHeaderBytes = 32;
constexpr std::uint32_t kValidFlag = 0x56414c44;  // "VALD"

struct SlotHeader {
  std::uint64_t sequence;
  std::uint64_t length;
  std::uint32_t crc;
  std::uint32_t valid;
};
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

std::size_t slotOffset(std::size_t capacity, int slot) {
  return kFileHeaderBytes + static_cast<std::size_t>(slot) * (kSlotHeaderBytes + capacity);
}

// The first bytes of an existing mirror (magic, version, capacity); fewer when it is shorter.
std::string readFileHeader(const std::filesystem::path& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string header(bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(bytes));
  header.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return header;
}

// The slots' checksum: CRC-32C since version 2 (the CPU's crc32 instruction: the engine checksums
// its whole state after every step, 53 MB for the Qwen2.5-0.5B shape, and the software CRC-32 took
// ~25 ms of it), CRC-32 before.
std::uint32_t checksum(std::uint32_t version, std::span<const std::byte> payload) {
  return version == 1 ? common::crc32(payload) : common::crc32c(payload);
}

std::optional<MirroredState> readSlot(const std::byte* file, std::size_t fileBytes,
                                      std::size_t capacity, int slot, std::uint32_t version) {
  const std::size_t offset = slotOffset(capacity, slot);
  if (offset + kSlotHeaderBytes > fileBytes) {
    return std::nullopt;
  }
  SlotHeader header;
  std::memcpy(&header, file + offset, sizeof header);
  if (header.valid != kValidFlag || header.length > capacity ||
      offset + kSlotHeaderBytes + header.length > fileBytes) {
    return std::nullopt;
  }
  const std::span<const std::byte> payload(file + offset + kSlotHeaderBytes, header.length);
  if (checksum(version, payload) != header.crc) {
    return std::nullopt;
  }
  return MirroredState{header.sequence, {payload.begin(), payload.end()}};
}

}  // namespace

StateMirror::StateMirror(const std::filesystem::path& path, std::size_t capacityBytes,
                         std::size_t requiredBytes)
    : path_(path), capacityBytes_(capacityBytes) {
  if (requiredBytes == 0) {
    requiredBytes = capacityBytes;
  }
  const std::string header = readFileHeader(path, 24);
  std::uint32_t version = 0;
  std::uint64_t existing = 0;
  if (header.size() == 24 && std::memcmp(header.data(), kMagic, sizeof kMagic) == 0) {
    std::memcpy(&version, header.data() + 8, sizeof version);
    std::memcpy(&existing, header.data() + 16, sizeof existing);
    if (version == kFormatVersion && existing >= requiredBytes) {
      capacityBytes_ = static_cast<std::size_t>(existing);
    }
  }
  mappedBytes_ = slotOffset(capacityBytes_, kSlots);
  bool fresh = false;
  try {
    mapping_ = common::MappedFile::openShared(path, mappedBytes_, &fresh);
  } catch (const common::OsError& e) {
    throw StateMirrorError(common::pathText(e.path()) + ": " + e.step() +
                           " the state mirror: " + e.code().message());
  }
  map_ = mapping_->writableBytes().data();
  if (fresh || version != kFormatVersion) {  // an older layout is started afresh, never reused
    std::memset(map_, 0, mappedBytes_);
    std::memcpy(map_, kMagic, sizeof kMagic);
    std::memcpy(map_ + 8, &kFormatVersion, sizeof kFormatVersion);
    const std::uint64_t capacity = capacityBytes_;
    std::memcpy(map_ + 16, &capacity, sizeof capacity);
    flush(0, kFileHeaderBytes, "sync of the state header");
  }
  // What the slots hold: the newest valid one is the newest state, and (not knowing what reached
  // the disk) also the durable one until a durable write says otherwise.
  for (int slot = 0; slot < kSlots; ++slot) {
    if (auto state = readSlot(map_, mappedBytes_, capacityBytes_, slot, kFormatVersion)) {
      sequences_[static_cast<std::size_t>(slot)] = state->sequence;
      if (newestSlot_ < 0 || state->sequence > sequences_[std::size_t(newestSlot_)]) {
        newestSlot_ = slot;
      }
    }
  }
  durableSlot_ = newestSlot_;
  nextSequence_ = newestSlot_ < 0 ? 1 : sequences_[std::size_t(newestSlot_)] + 1;
}

StateMirror::~StateMirror() {
  if (sync_.valid()) {
    sync_.wait();
  }
}

void StateMirror::flush(std::size_t offset, std::size_t bytes, const char* what) {
  try {
    mapping_->flush(offset, bytes, what);
  } catch (const common::OsError& e) {
    throw StateMirrorError(e.what());
  }
}

void StateMirror::collectSync(bool wait) {
  if (!sync_.valid() ||
      (!wait && sync_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)) {
    return;
  }
  const int slot = std::exchange(syncSlot_, -1);
  sync_.get();  // throws the msync's error
  durableSlot_ = slot;
  lastDurable_ = syncStarted_;
}

int StateMirror::freeSlot() const {
  int target = -1;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (slot != newestSlot_ && slot != durableSlot_ && slot != syncSlot_ &&
        (target < 0 || sequences_[std::size_t(slot)] < sequences_[std::size_t(target)])) {
      target = slot;
    }
  }
  return target;
}

void StateMirror::write(std::span<const std::byte> payload) {
  if (payload.size() > capacityBytes_) {
    throw StateMirrorError(
        common::pathText(path_) + ": state of " + std::to_string(payload.size()) +
        " bytes exceeds the mirror's capacity of " + std::to_string(capacityBytes_) + " bytes");
  }
  collectSync(false);
  const auto now = std::chrono::steady_clock::now();
  const std::optional<std::chrono::steady_clock::time_point> latest =
      sync_.valid() ? std::optional(syncStarted_) : lastDurable_;
  const bool durable = !latest || now - *latest >= durableEvery_;
  const bool inBackground = durable && durableEvery_.count() > 0;
  if (durable) {
    collectSync(true);  // a sync longer than the interval: the next one waits for it
  }
  // Never the newest state's slot (a crash now must leave it) nor the last durable one's (a
  // machine that goes down must find it on the disk), nor one being synced to become that.
  int target = freeSlot();
  if (target < 0) {
    collectSync(true);
    target = freeSlot();
  }
  const std::size_t offset = slotOffset(capacityBytes_, target);
  std::byte* slot = map_ + offset;
  SlotHeader header{0, 0, 0, 0};  // invalidate first: a torn payload must never look valid
  std::memcpy(slot, &header, sizeof header);
  sequences_[std::size_t(target)] = 0;
  std::memcpy(slot + kSlotHeaderBytes, payload.data(), payload.size());
  if (durable && !inBackground) {
    flush(offset, kSlotHeaderBytes + payload.size(), "msync of the state payload");
  }
  header = SlotHeader{nextSequence_, payload.size(), checksum(kFormatVersion, payload), kValidFlag};
  std::memcpy(slot, &header, sizeof header);
  if (durable && !inBackground) {
    flush(offset, kSlotHeaderBytes, "msync of the state header");
    durableSlot_ = target;
    lastDurable_ = now;
  }
  sequences_[std::size_t(target)] = nextSequence_++;
  newestSlot_ = target;
  if (inBackground) {  // Note [durable in the background]
    syncSlot_ = target;
    syncStarted_ = now;
    const std::size_t bytes = kSlotHeaderBytes + payload.size();
    sync_ = std::async(std::launch::async,
                       [this, offset, bytes] { flush(offset, bytes, "msync of the state"); });
  }
}

std::optional<MirroredState> StateMirror::readLatest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw StateMirrorError(common::pathText(path) +
                           ": cannot open the state mirror: " + std::strerror(errno));
  }
  const std::optional<std::string> read = common::readToEnd(in);
  if (!read) {
    throw StateMirrorError(common::pathText(path) +
                           ": cannot read the state mirror: " + std::strerror(errno));
  }
  const std::string& bytes = *read;
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  if (bytes.size() < kFileHeaderBytes || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    return std::nullopt;
  }
  std::uint32_t version = 0;
  std::memcpy(&version, data + 8, sizeof version);
  std::uint64_t capacity = 0;
  std::memcpy(&capacity, data + 16, sizeof capacity);
  if (capacity > bytes.size()) {
    return std::nullopt;  // a damaged header: no slot can be trusted
  }
  std::optional<MirroredState> best;
  for (int slot = 0; slot < kSlots; ++slot) {  // a version-1 file's third slot reads as absent
    auto state = readSlot(data, bytes.size(), static_cast<std::size_t>(capacity), slot, version);
    if (state && (!best || state->sequence > best->sequence)) {
      best = std::move(state);
    }
  }
  return best;
}

}  // namespace lorascope::engine
