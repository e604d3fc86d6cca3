// AppTestHome.h — a GUI test's own place for what the app keeps: QSettings in Qt's test
// location (cleared), user profiles (XDG_CONFIG_HOME), runs (XDG_DATA_HOME) and the demo
// model's cache (LORASCOPE_CACHE_DIR) in a temporary folder, and the application named after the
// test, so that no test reads or changes the user's files or another test's. A member of a
// QtTest class (made after QTEST_MAIN's application).
#pragma once

#include <QCoreApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QString>
#include <QTemporaryDir>

namespace lstest {

class AppTestHome {
 public:
  explicit AppTestHome(const QString& testName) {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("XDG_CONFIG_HOME", filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_DATA_HOME", filePath(QStringLiteral("data")).toUtf8());
    qputenv("LORASCOPE_CACHE_DIR", filePath(QStringLiteral("cache")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("LoRAscopeTest"));
    QCoreApplication::setApplicationName(testName);
    QSettings().clear();
  }

  // `name` inside the temporary folder.
  QString filePath(const QString& name) const { return dir_.filePath(name); }

 private:
  QTemporaryDir dir_;
};

}  // namespace lstest
