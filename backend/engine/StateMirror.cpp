// engine/StateMirror.cpp — double-buffered, checksummed state file over mmap (POSIX).
#include "engine/StateMirror.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace lorascope::engine {
namespace {

constexpr char kMagic[8] = {'L', 'S', 'M', 'I', 'R', 'R', 'O', 'R'};
constexpr std::uint32_t kFormatVersion = 1;
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

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw StateMirrorError(path.string() + ": " + what + ": " + std::strerror(errno));
}

std::optional<MirroredState> readSlot(const std::byte* file, std::size_t fileBytes,
                                      std::size_t capacity, int slot) {
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
  if (crc32(payload) != header.crc) {
    return std::nullopt;
  }
  return MirroredState{header.sequence, {payload.begin(), payload.end()}};
}

}  // namespace

std::uint32_t crc32(std::span<const std::byte> data) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;  // reflected IEEE 802.3 polynomial
      }
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : data) {
    crc = table[(crc ^ static_cast<std::uint8_t>(b)) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

StateMirror::StateMirror(const std::filesystem::path& path, std::size_t capacityBytes,
                         std::size_t requiredBytes)
    : path_(path), capacityBytes_(capacityBytes) {
  if (requiredBytes == 0) {
    requiredBytes = capacityBytes;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail(path, "cannot open the state mirror");
  }
  char header[24] = {};
  std::uint32_t version = 0;
  std::uint64_t existing = 0;
  if (::pread(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) &&
      std::memcmp(header, kMagic, sizeof kMagic) == 0) {
    std::memcpy(&version, header + 8, sizeof version);
    std::memcpy(&existing, header + 16, sizeof existing);
    if (version == kFormatVersion && existing >= requiredBytes) {
      capacityBytes_ = static_cast<std::size_t>(existing);
    }
  }
  mappedBytes_ = slotOffset(capacityBytes_, 2);
  struct stat info {};
  const bool fresh =
      ::fstat(fd, &info) != 0 || static_cast<std::size_t>(info.st_size) != mappedBytes_;
  if (fresh && ::ftruncate(fd, static_cast<off_t>(mappedBytes_)) != 0) {
    ::close(fd);
    fail(path, "cannot size the state mirror");
  }
  void* map = ::mmap(nullptr, mappedBytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    fail(path, "cannot map the state mirror");
  }
  map_ = static_cast<std::byte*>(map);
  if (fresh) {
    std::memset(map_, 0, mappedBytes_);
    std::memcpy(map_, kMagic, sizeof kMagic);
    std::memcpy(map_ + 8, &kFormatVersion, sizeof kFormatVersion);
    const std::uint64_t capacity = capacityBytes_;
    std::memcpy(map_ + 16, &capacity, sizeof capacity);
    ::msync(map_, kFileHeaderBytes, MS_SYNC);
  }
  // Continue after the newest valid slot, writing into the other one.
  std::uint64_t newest = 0;
  for (int slot = 0; slot < 2; ++slot) {
    if (auto state = readSlot(map_, mappedBytes_, capacityBytes_, slot);
        state && state->sequence >= newest) {
      newest = state->sequence;
      nextSlot_ = 1 - slot;
    }
  }
  nextSequence_ = newest + 1;
}

StateMirror::~StateMirror() {
  if (map_ != nullptr) {
    ::munmap(map_, mappedBytes_);
  }
}

void StateMirror::write(std::span<const std::byte> payload) {
  if (payload.size() > capacityBytes_) {
    throw StateMirrorError(path_.string() + ": state of " + std::to_string(payload.size()) +
                           " bytes exceeds the mirror's capacity of " +
                           std::to_string(capacityBytes_) + " bytes");
  }
  const std::size_t offset = slotOffset(capacityBytes_, nextSlot_);
  std::byte* slot = map_ + offset;
  SlotHeader header{0, 0, 0, 0};  // invalidate first: a torn payload must never look valid
  std::memcpy(slot, &header, sizeof header);
  std::memcpy(slot + kSlotHeaderBytes, payload.data(), payload.size());
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t alignedOffset =
      offset / static_cast<std::size_t>(page) * static_cast<std::size_t>(page);
  const std::size_t syncBytes = offset - alignedOffset + kSlotHeaderBytes + payload.size();
  if (::msync(map_ + alignedOffset, syncBytes, MS_SYNC) != 0) {
    fail(path_, "msync of the state payload failed");
  }
  header = SlotHeader{nextSequence_, payload.size(), crc32(payload), kValidFlag};
  std::memcpy(slot, &header, sizeof header);
  if (::msync(map_ + alignedOffset, offset - alignedOffset + kSlotHeaderBytes, MS_SYNC) != 0) {
    fail(path_, "msync of the state header failed");
  }
  ++nextSequence_;
  nextSlot_ = 1 - nextSlot_;
}

std::optional<MirroredState> StateMirror::readLatest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw StateMirrorError(path.string() +
                           ": cannot open the state mirror: " + std::strerror(errno));
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  if (bytes.size() < kFileHeaderBytes || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    return std::nullopt;
  }
  std::uint64_t capacity = 0;
  std::memcpy(&capacity, data + 16, sizeof capacity);
  if (capacity > bytes.size()) {
    return std::nullopt;  // a damaged header: no slot can be trusted
  }
  std::optional<MirroredState> best;
  for (int slot = 0; slot < 2; ++slot) {
    auto state = readSlot(data, bytes.size(), static_cast<std::size_t>(capacity), slot);
    if (state && (!best || state->sequence > best->sequence)) {
      best = std::move(state);
    }
  }
  return best;
}

}  // namespace lorascope::engine
