// gui/AppPaths.cpp — the app's identity, its runs folder (and the move from the old one), its
// engine program.
#include "gui/AppPaths.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include "common/Build.h"  // defines: buildInfo

// Q_INIT_RESOURCE must be called from the global namespace; the resources live in a static
// library, so nothing would pull them into the program otherwise.
static void initEmbeddedResources() {
  Q_INIT_RESOURCE(lorascope);
}

namespace lorascope::app {

namespace {

const QString kName = QStringLiteral("LoRAscope");

}  // namespace

QString applicationId() {
  return QStringLiteral(LORASCOPE_APP_ID);
}

void setApplicationNames() {
  QCoreApplication::setApplicationName(kName);
  QCoreApplication::setApplicationVersion(QString::fromStdString(common::buildInfo().version));
  // QSettings falls back to the organisation domain when the name is empty, so settings stay in
  // LoRAscope/LoRAscope.conf while QStandardPaths leaves the empty organisation out.
  QCoreApplication::setOrganizationName(QString());
  QCoreApplication::setOrganizationDomain(kName);
}

void setApplicationIdentity() {
  setApplicationNames();
  QGuiApplication::setApplicationDisplayName(kName);
  QGuiApplication::setDesktopFileName(applicationId());
  QApplication::setWindowIcon(applicationIcon());
}

QIcon applicationIcon() {
  initEmbeddedResources();
  QIcon embedded;
  for (const int size : {16, 24, 32, 48, 64, 128, 256}) {
    embedded.addFile(QStringLiteral(":/lorascope/icons/%1.png").arg(size), QSize(size, size));
  }
  return QIcon::fromTheme(applicationId(), embedded);
}

QString defaultRunsDir() {
  return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
         QStringLiteral("/runs");
}

QString legacyRunsDir() {
  // Earlier versions named the organisation "LoRAscope" as well as the application.
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QLatin1Char('/') +
         kName + QStringLiteral("/runs");
}

RunsMove moveLegacyRuns() {
  RunsMove result;
  const QDir legacy(legacyRunsDir());
  if (!legacy.exists()) {
    return result;
  }
  const QString target = defaultRunsDir();
  if (!QDir().mkpath(target)) {
    result.leftInPlace << QStringLiteral("all: cannot create %1").arg(target);
    return result;
  }
  const QStringList names =
      legacy.entryList(QDir::Dirs | QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
  for (const QString& name : names) {
    const QString destination = QDir(target).filePath(name);
    if (QFileInfo::exists(destination)) {
      result.leftInPlace << QStringLiteral("%1: %2 already exists").arg(name, destination);
    } else if (!QDir().rename(legacy.filePath(name), destination)) {
      result.leftInPlace << QStringLiteral("%1: cannot be moved to %2").arg(name, destination);
    } else {
      result.moved << destination;
    }
  }
  // The legacy folders go once empty (rmdir removes only empty ones).
  if (QDir().rmdir(legacy.absolutePath())) {
    QDir().rmdir(QFileInfo(legacy.absolutePath()).path());
  }
  return result;
}

QString engineProgram() {
  return QDir(QApplication::applicationDirPath())
      .filePath(QStringLiteral("lorascope-train" LORASCOPE_EXECUTABLE_SUFFIX));
}

}  // namespace lorascope::app
