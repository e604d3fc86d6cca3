// widgets/Format.h — how numbers read on screen: byte sizes, engine times, and "n/a" for a metric
// the engine did not report (never a made-up zero).
#pragma once

#include <QString>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace lorascope::widgets {

// common::formatBytes as a QString: "512 B", "3.00 KiB", "1.50 GiB".
QString formatBytes(std::uint64_t bytes);
QString formatBytes(std::optional<std::uint64_t> bytes);  // "n/a" when unset

// "1:02:03" / "2:05" from an engine timestamp in ms.
QString formatTimeMs(std::int64_t timeMs);

// The text shown for a metric that was not reported.
QString notAvailable();

// A file name typed or chosen in the GUI as a path, and back, through UTF-16: never through a
// narrow code page (QString::toStdString() into a path breaks non-ASCII names on Windows).
std::filesystem::path toPath(const QString& text);
QString pathToQString(const std::filesystem::path& path);

}  // namespace lorascope::widgets
