// train/TfEvents.cpp — TFRecord framing, CRC-32C and the few protobuf fields of an Event.
#include "train/TfEvents.h"

#include <cstring>
#include <ctime>
#include <span>

#include "common/Checksum.h"
#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathText
#include "train/CheckpointError.h"

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEventsPrefix = "events.out.tfevents.";
constexpr const char* kFileVersion = "brain.Event:2";
constexpr std::uint32_t kCrcMaskDelta = 0xa282ead8u;

// Protocol buffer wire types.
constexpr std::uint32_t kVarint = 0;
constexpr std::uint32_t kFixed64 = 1;
constexpr std::uint32_t kLengthDelimited = 2;
constexpr std::uint32_t kFixed32 = 5;

void putVarint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void putTag(std::string& out, std::uint32_t field, std::uint32_t wireType) {
  putVarint(out, (field << 3) | wireType);
}

template <typename T>
void putLittleEndian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and AArch64 Linux are little endian
  out.append(bytes, sizeof(T));
}

void putBytes(std::string& out, std::uint32_t field, std::string_view bytes) {
  putTag(out, field, kLengthDelimited);
  putVarint(out, bytes.size());
  out.append(bytes);
}

// A reader over one protobuf message; every read is bounds-checked.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size())
        throw std::runtime_error("truncated varint");
      const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  }

  std::string_view take(std::size_t n) {
    if (n > data_.size() - pos_)
      throw std::runtime_error("field runs past the end of the message");
    const std::string_view bytes = data_.substr(pos_, n);
    pos_ += n;
    return bytes;
  }

  template <typename T>
  T fixed() {
    T value;
    std::memcpy(&value, take(sizeof(T)).data(), sizeof(T));
    return value;
  }

  void skip(std::uint32_t wireType) {
    switch (wireType) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        take(8);
        return;
      case kLengthDelimited:
        take(varint());
        return;
      case kFixed32:
        take(4);
        return;
      default:
        throw std::runtime_error("unknown wire type " + std::to_string(wireType));
    }
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

std::pair<std::string, float> decodeValue(std::string_view bytes) {
  WireReader r(bytes);
  std::pair<std::string, float> value{"", 0.0f};
  while (!r.done()) {
    const auto key = r.varint();
    const auto field = static_cast<std::uint32_t>(key >> 3);
    const auto wire = static_cast<std::uint32_t>(key & 7);
    if (field == 1 && wire == kLengthDelimited)
      value.first = std::string(r.take(r.varint()));
    else if (field == 2 && wire == kFixed32)
      value.second = r.fixed<float>();
    else
      r.skip(wire);
  }
  return value;
}

TfEvent decodeEvent(std::string_view bytes) {
  WireReader r(bytes);
  TfEvent event;
  while (!r.done()) {
    const auto key = r.varint();
    const auto field = static_cast<std::uint32_t>(key >> 3);
    const auto wire = static_cast<std::uint32_t>(key & 7);
    if (field == 1 && wire == kFixed64) {
      event.wallTime = r.fixed<double>();
    } else if (field == 2 && wire == kVarint) {
      event.step = static_cast<std::int64_t>(r.varint());
    } else if (field == 3 && wire == kLengthDelimited) {
      event.fileVersion = std::string(r.take(r.varint()));
    } else if (field == 5 && wire == kLengthDelimited) {
      WireReader summary(r.take(r.varint()));
      while (!summary.done()) {
        const auto summaryKey = summary.varint();
        if ((summaryKey >> 3) == 1 && (summaryKey & 7) == kLengthDelimited)
          event.scalars.push_back(decodeValue(summary.take(summary.varint())));
        else
          summary.skip(static_cast<std::uint32_t>(summaryKey & 7));
      }
    } else {
      r.skip(wire);
    }
  }
  return event;
}

std::string fileVersionRecord() {
  TfEvent version;
  version.wallTime = static_cast<double>(std::time(nullptr));
  version.fileVersion = kFileVersion;
  return tfRecord(encodeTfEvent(version));
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  return common::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

std::uint32_t maskedCrc32c(std::string_view bytes) {
  const std::uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

std::string encodeTfEvent(const TfEvent& event) {
  std::string out;
  putTag(out, 1, kFixed64);
  putLittleEndian(out, event.wallTime);
  if (event.step != 0) {
    putTag(out, 2, kVarint);
    putVarint(out, static_cast<std::uint64_t>(event.step));
  }
  if (!event.fileVersion.empty())
    putBytes(out, 3, event.fileVersion);
  if (!event.scalars.empty()) {
    std::string summary;
    for (const auto& [tag, value] : event.scalars) {
      std::string v;
      putBytes(v, 1, tag);
      putTag(v, 2, kFixed32);
      putLittleEndian(v, value);
      putBytes(summary, 1, v);
    }
    putBytes(out, 5, summary);
  }
  return out;
}

std::string tfRecord(std::string_view data) {
  std::string out;
  std::string length;
  putLittleEndian(length, static_cast<std::uint64_t>(data.size()));
  out += length;
  putLittleEndian(out, maskedCrc32c(length));
  out.append(data);
  putLittleEndian(out, maskedCrc32c(data));
  return out;
}

std::vector<TfEvent> readTfEvents(const fs::path& file) {
  const std::string bytes = readRunFile(file);
  std::vector<TfEvent> events;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::string where = "record at byte " + std::to_string(pos);
    if (bytes.size() - pos < 12)
      break;  // a torn header at the end
    const std::string_view lengthBytes(bytes.data() + pos, 8);
    std::uint64_t length = 0;
    std::uint32_t lengthCrc = 0;
    std::memcpy(&length, lengthBytes.data(), 8);
    std::memcpy(&lengthCrc, bytes.data() + pos + 8, 4);
    if (lengthCrc != maskedCrc32c(lengthBytes))
      throw CheckpointError(common::pathText(file), where + ": the length's CRC does not match");
    if (length > bytes.size() - pos - 12 || bytes.size() - pos - 12 - length < 4)
      break;  // a torn record at the end
    const std::string_view data(bytes.data() + pos + 12, length);
    std::uint32_t dataCrc = 0;
    std::memcpy(&dataCrc, bytes.data() + pos + 12 + length, 4);
    if (dataCrc != maskedCrc32c(data))
      throw CheckpointError(common::pathText(file), where + ": the data's CRC does not match");
    try {
      events.push_back(decodeEvent(data));
    } catch (const std::runtime_error& e) {
      throw CheckpointError(common::pathText(file), where + ": not an Event (" + e.what() + ")");
    }
    pos += 12 + length + 4;
  }
  return events;
}

fs::path tfEventsPath(const fs::path& runDir) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(runDir, ec)) {
    if (common::pathText(entry.path().filename()).rfind(kEventsPrefix, 0) == 0 &&
        entry.is_regular_file())
      return entry.path();
  }
  return runDir / (kEventsPrefix + std::to_string(std::time(nullptr)) + ".lorascope");
}

void appendTfEvent(const fs::path& file, const TfEvent& event) {
  std::string bytes;
  if (!fs::exists(file))
    bytes = fileVersionRecord();
  bytes += tfRecord(encodeTfEvent(event));
  appendRunFile(file, bytes);
}

void truncateTfEventsAfter(const fs::path& file, std::int64_t step) {
  if (!fs::exists(file))
    return;
  std::string kept;
  for (const TfEvent& event : readTfEvents(file)) {
    if (!event.fileVersion.empty() || event.step <= step)
      kept += tfRecord(encodeTfEvent(event));
  }
  common::writeFileDurably(file, kept);
}

}  // namespace lorascope::train
