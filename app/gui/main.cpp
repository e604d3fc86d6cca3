// gui/main.cpp — lorascope, the desktop app: the main window attached to a supervised, isolated
// engine (lorascope-train, which sits beside this program). The setup page preselects the
// built-in demo on first start, so one click on Start trains something.
#include <QApplication>
#include <QCommandLineParser>

#include "engine/SupervisorHost.h"
#include "gui/AppPaths.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "profiles/Builtins.h"
#include "widgets/EventLogModel.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  lorascope::app::setApplicationIdentity();

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "LoRAscope: fine-tune LLMs with LoRA on your own GPU and watch VRAM, allocator "
      "fragmentation, queue depth and loss live. The window opens on the built-in demo; the "
      "training engine is lorascope-train (see lorascope-train(1)). Runs go to the app's data "
      "folder (~/.local/share/LoRAscope/runs on Linux, %LOCALAPPDATA%\\LoRAscope\\runs on "
      "Windows) unless the setup page names another folder."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.process(app);

  const lorascope::app::RunsMove moved = lorascope::app::moveLegacyRuns();
  const QString engineProgram = lorascope::app::engineProgram();
  lorascope::app::EngineAdapter engine([&](lorascope::engine::HostListener listener) {
    return std::make_unique<lorascope::engine::SupervisorHost>(
        engineProgram.toStdString(), lorascope::profiles::defaultProfile(),
        lorascope::engine::SupervisorPolicy{}, std::move(listener));
  });

  lorascope::app::MainWindow window(lorascope::app::collectAboutFacts());
  window.setEngineProgram(engineProgram);
  window.setEngine(&engine);
  auto log = [&window](lorascope::engine::LogLevel level, const QString& text) {
    window.eventLog()->handleEvent({0, lorascope::engine::LogEvent{level, text.toStdString()}});
  };
  if (!moved.moved.isEmpty()) {
    log(lorascope::engine::LogLevel::Info,
        QObject::tr("moved %1 run folder(s) from %2 to %3")
            .arg(moved.moved.size())
            .arg(lorascope::app::legacyRunsDir(), lorascope::app::defaultRunsDir()));
  }
  for (const QString& stayed : moved.leftInPlace) {
    log(lorascope::engine::LogLevel::Warning,
        QObject::tr("run folder left in %1: %2").arg(lorascope::app::legacyRunsDir(), stayed));
  }
  window.show();
  return QApplication::exec();
}
