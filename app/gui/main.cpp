// gui/main.cpp — lorascope, the desktop app: the main window attached to a supervised, isolated
// engine (lorascope-train, which sits beside this program), opened on the built-in demo so that
// one click on Start trains something.
#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QStandardPaths>

#include "engine/Supervisor.h"
#include "gui/MainWindow.h"
#include "profiles/Builtins.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("LoRAscope"));
  QApplication::setOrganizationName(QStringLiteral("LoRAscope"));

  const QString engineProgram =
      QDir(QApplication::applicationDirPath()).filePath(QStringLiteral("lorascope-train"));
  lorascope::engine::Supervisor engine(engineProgram, lorascope::profiles::defaultProfile(),
                                       lorascope::engine::SupervisorPolicy{});

  // Each demo run gets its own folder under the user's data directory.
  const QString runs =
      QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/runs");
  const QString out = runs + QStringLiteral("/demo-") +
                      QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));

  lorascope::app::MainWindow window(lorascope::app::collectAboutFacts());
  window.setEngine(&engine);
  window.setRunConfig({{"demo", true}, {"out", out.toStdString()}});
  window.show();
  return QApplication::exec();
}
