// widgets/Format.cpp — byte sizes, engine times, "n/a".
#include "widgets/Format.h"

#include <QCoreApplication>

#include "common/Format.h"

namespace lorascope::widgets {

QString formatBytes(std::uint64_t bytes) {
  return QString::fromStdString(common::formatBytes(bytes));
}

QString formatBytes(std::optional<std::uint64_t> bytes) {
  return bytes ? formatBytes(*bytes) : notAvailable();
}

QString formatTimeMs(std::int64_t timeMs) {
  const std::int64_t totalS = timeMs / 1000;
  const std::int64_t hours = totalS / 3600;
  const std::int64_t minutes = (totalS / 60) % 60;
  const std::int64_t seconds = totalS % 60;
  if (hours > 0) {
    return QStringLiteral("%1:%2:%3")
        .arg(hours)
        .arg(minutes, 2, 10, QLatin1Char('0'))
        .arg(seconds, 2, 10, QLatin1Char('0'));
  }
  return QStringLiteral("%1:%2").arg(minutes).arg(seconds, 2, 10, QLatin1Char('0'));
}

QString notAvailable() {
  return QCoreApplication::translate("lorascope::widgets", "n/a");
}

std::filesystem::path toPath(const QString& text) {
  return std::filesystem::path(text.toStdU16String());
}

QString pathToQString(const std::filesystem::path& path) {
  return QString::fromStdU16String(path.u16string());
}

}  // namespace lorascope::widgets
