// train/TfEvents.h — TensorBoard event files (events.out.tfevents.*), written by our own code.
//
// Format (TensorFlow's TFRecord holding tensorflow.Event protocol buffers):
//   record   = uint64 length (little endian) | uint32 masked_crc32c(length bytes)
//              | data[length] | uint32 masked_crc32c(data)
//   masked   = ((crc >> 15) | (crc << 17)) + 0xa282ead8, CRC-32C (Castagnoli)
//   Event    = 1: double wall_time, 2: int64 step, 3: string file_version ("brain.Event:2",
//              the first record), 5: Summary summary
//   Summary  = repeated 1: Value;  Value = 1: string tag, 2: float simple_value
// The scalars carry Hugging Face Trainer's tag names (train/loss, train/learning_rate,
// train/grad_norm, train/epoch) so that TensorBoard views of both line up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::train {

struct TfEvent {
  double wallTime = 0.0;  // seconds since the Unix epoch
  std::int64_t step = 0;
  std::string fileVersion;                             // set on the first record only
  std::vector<std::pair<std::string, float>> scalars;  // (tag, simple_value)
};

std::uint32_t crc32c(std::string_view bytes);
std::uint32_t maskedCrc32c(std::string_view bytes);

std::string encodeTfEvent(const TfEvent& event);  // the Event message's bytes
std::string tfRecord(std::string_view data);      // one framed record

// Every event of a file. Throws CheckpointError naming the file and the byte offset for a bad
// length or CRC or an Event that does not decode; a torn last record (a crash mid-write) is
// skipped, as TensorBoard does.
std::vector<TfEvent> readTfEvents(const std::filesystem::path& file);

// The run folder's event file: the one named events.out.tfevents.* that exists, else a new name
// with the current time ("events.out.tfevents.<unix seconds>.lorascope").
std::filesystem::path tfEventsPath(const std::filesystem::path& runDir);

// Appends one event (one write(); the file_version record first when the file is new).
void appendTfEvent(const std::filesystem::path& file, const TfEvent& event);
// Keeps the events of steps ≤ `step` (the file_version record too), rewriting the file
// atomically: a resumed run continues the file without repeating steps.
void truncateTfEventsAfter(const std::filesystem::path& file, std::int64_t step);

}  // namespace lorascope::train
