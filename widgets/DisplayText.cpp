// widgets/DisplayText.cpp — byte sizes, engine times, "n/a", toggles and rungs in words, paths.
#include "widgets/DisplayText.h"

#include <QCoreApplication>
#include <cmath>
#include <utility>

#include "common/Format.h"
#include "settings/Registry.h"  // defines: registry (the toggles' names)

namespace lorascope::widgets {
namespace {

// Text of the widgets' own, in the user's language where a translation exists.
QString translated(const char* text) {
  return QCoreApplication::translate("lorascope::widgets", text);
}

}  // namespace

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
  return translated("n/a");
}

QString toggleName(engine::Toggle toggle) {
  const settings::Setting* setting = settings::registry().findToggle(toggle);
  return setting != nullptr && !setting->eventName.empty()
             ? QString::fromStdString(setting->eventName)
             : QString::fromStdString(toggle.name());
}

QString toggleValueText(const nlohmann::json& value) {
  if (value.is_boolean()) {
    return value.get<bool>() ? translated("on") : translated("off");
  }
  return QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump());
}

QString rungText(const std::string& rung) {
  static constexpr std::pair<const char*, const char*> kWords[] = {
      {"vendor_blas", QT_TRANSLATE_NOOP("lorascope::widgets", "the profile's own settings")},
      {"builtin_gemm", QT_TRANSLATE_NOOP("lorascope::widgets",
                                         "LoRAscope's built-in GEMM instead of the vendor BLAS")},
      {"serialize",
       QT_TRANSLATE_NOOP("lorascope::widgets", "serialized kernels and blocking launches")},
      {"smaller_micro_batch", QT_TRANSLATE_NOOP("lorascope::widgets", "a smaller micro-batch")},
      {"cpu", QT_TRANSLATE_NOOP("lorascope::widgets", "the CPU instead of the GPU")},
  };
  for (const auto& [id, words] : kWords) {
    if (rung == id)
      return translated(words);
  }
  return QString::fromStdString(rung);
}

QString epochText(double epoch) {
  // 'g' to three digits shows 0.333 and 12.5; from 1000 on, every digit (not 1.23e+03).
  return translated("epoch %1").arg(QString::number(epoch, 'g', std::abs(epoch) < 1000 ? 3 : 12));
}

QString cardName(int card) {
  return translated("GPU %1").arg(card);
}

QString counted(std::int64_t count, const QString& singular, const QString& plural) {
  return QStringLiteral("%1 %2").arg(count).arg(count == 1 ? singular : plural);
}

std::filesystem::path toPath(const QString& text) {
  return std::filesystem::path(text.toStdU16String());
}

QString pathToQString(const std::filesystem::path& path) {
  return QString::fromStdU16String(path.u16string());
}

}  // namespace lorascope::widgets
