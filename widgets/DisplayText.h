// widgets/DisplayText.h — how numbers read on screen: byte sizes, engine times, and "n/a" for a
// metric the engine did not report (never a made-up zero).
#pragma once

#include <QString>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/Protocol.h"  // defines: Toggle

namespace lorascope::widgets {

// common::formatBytes as a QString: "512 B", "3.00 KiB", "1.50 GiB".
QString formatBytes(std::uint64_t bytes);
QString formatBytes(std::optional<std::uint64_t> bytes);  // "n/a" when unset

// "1:02:03" / "2:05" from an engine timestamp in ms.
QString formatTimeMs(std::int64_t timeMs);

// The text shown for a metric that was not reported.
QString notAvailable();

// A toggle as a person reads it ("micro-batch", "CPU fallback"), not its protocol id.
QString toggleName(engine::Toggle toggle);
// A toggle's value as a person reads it: "on" / "off", numbers and choices as they are.
QString toggleValueText(const nlohmann::json& value);

// A recovery-ladder rung ("vendor_blas", "builtin_gemm", …) in plain words: what the run uses.
QString rungText(const std::string& rung);

// "epoch 0.333", "epoch 2": a step's epoch as its trainer counts it (runs::StepRecord::epoch), to
// three significant digits (a Trainer's fraction) and a whole one as it is.
QString epochText(double epoch);

// "GPU 1": a card of a run on several GPUs (a reading's or snapshot's card, engine/Protocol.h), as
// the dashboard's and the memory map's card selectors name it.
QString cardName(int card);

// "1 sequence", "8 sequences": a count with the noun's singular or plural.
QString counted(std::int64_t count, const QString& singular, const QString& plural);

// A file name typed or chosen in the GUI as a path, and back, through UTF-16: never through a
// narrow code page (QString::toStdString() into a path breaks non-ASCII names on Windows).
std::filesystem::path toPath(const QString& text);
QString pathToQString(const std::filesystem::path& path);

}  // namespace lorascope::widgets
