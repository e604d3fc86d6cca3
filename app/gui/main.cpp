// gui/main.cpp — lorascope, the desktop app: the main window attached to a supervised, isolated
// engine (lorascope-train, which sits beside this program), and the Try it page to a second one.
// The setup page preselects the built-in demo on first start, so one click on Start trains
// something.
#include <QApplication>
#include <QCommandLineParser>
#include <string_view>

#include "engine/SupervisorHost.h"
#include "gui/AppPaths.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "gui/TryItPage.h"
#include "profiles/Builtins.h"
#include "profiles/ProfileStore.h"
#include "widgets/EventLogModel.h"

namespace {

// The profile named `name` (built-in or the user's), else the default one.
lorascope::profiles::Profile profileNamed(const QString& name) {
  using lorascope::profiles::ProfileStore;
  for (const auto& parsed : ProfileStore(ProfileStore::defaultUserDir()).load().profiles) {
    if (QString::fromStdString(parsed.profile.name) == name)
      return parsed.profile;
  }
  return lorascope::profiles::defaultProfile();
}

void describeCommandLine(QCommandLineParser& parser) {
  parser.setApplicationDescription(QStringLiteral(
      "LoRAscope: fine-tune LLMs with LoRA on your own GPU and watch VRAM, allocator "
      "fragmentation, queue depth and loss live. The window opens on the built-in demo; the "
      "training engine is lorascope-train (see lorascope-train(1)). Runs go to the app's data "
      "folder (~/.local/share/LoRAscope/runs on Linux, %LOCALAPPDATA%\\LoRAscope\\runs on "
      "Windows) unless the setup page names another folder."));
  parser.addHelpOption();
  parser.addVersionOption();
}

// --help and --version are answered before any window exists, so that they work without a
// display (help2man runs them at build time).
bool asksForHelpOrVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "-v" ||
        arg == "--version") {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (asksForHelpOrVersion(argc, argv)) {
    QCoreApplication core(argc, argv);
    lorascope::app::setApplicationNames();
    QCommandLineParser parser;
    describeCommandLine(parser);
    parser.process(core);  // prints the help or version and exits
    return 0;
  }
  QApplication app(argc, argv);
  lorascope::app::setApplicationIdentity();
  QCommandLineParser parser;
  describeCommandLine(parser);
  parser.process(app);  // an unknown option: the message and exit 1

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
  // Try it generates in an engine of its own, made at its first Generate (gui/TryItPage.h).
  window.tryItPage()->setEngineFactory([engineProgram](const QString& profile) {
    return std::make_unique<lorascope::app::EngineAdapter>(
        [&](lorascope::engine::HostListener listener) {
          return std::make_unique<lorascope::engine::SupervisorHost>(
              engineProgram.toStdString(), profileNamed(profile),
              lorascope::engine::SupervisorPolicy{}, std::move(listener));
        });
  });
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
