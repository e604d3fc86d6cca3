// gui/main.cpp — lorascope, the desktop app: the main window attached to a supervised, isolated
// engine (lorascope-train, which sits beside this program). The setup page preselects the
// built-in demo on first start, so one click on Start trains something.
#include <QApplication>
#include <QDir>

#include "engine/SupervisorHost.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "profiles/Builtins.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("LoRAscope"));
  QApplication::setOrganizationName(QStringLiteral("LoRAscope"));

  const QString engineProgram =
      QDir(QApplication::applicationDirPath()).filePath(QStringLiteral("lorascope-train"));
  lorascope::app::EngineAdapter engine([&](lorascope::engine::HostListener listener) {
    return std::make_unique<lorascope::engine::SupervisorHost>(
        engineProgram.toStdString(), lorascope::profiles::defaultProfile(),
        lorascope::engine::SupervisorPolicy{}, std::move(listener));
  });

  lorascope::app::MainWindow window(lorascope::app::collectAboutFacts());
  window.setEngineProgram(engineProgram);
  window.setEngine(&engine);
  window.show();
  return QApplication::exec();
}
