// gui/AppPaths.h — who the app is to the desktop and where its files go.
//   - Identity: the application name (QSettings: ~/.config/LoRAscope/LoRAscope.conf, as before),
//     no organisation name, so that QStandardPaths' AppLocalDataLocation is
//     ~/.local/share/LoRAscope (%LOCALAPPDATA%\LoRAscope on Windows) rather than the doubled
//     LoRAscope/LoRAscope of earlier versions; the desktop file name (the app id) and the icon.
//   - Runs: AppLocalDataLocation/runs. Runs that earlier versions put in the doubled folder are
//     moved here at start (a rename each), and a setting that still names that folder follows.
//   - The engine: lorascope-train beside this program, in the build tree and when installed
//     (both programs go to the same bin folder).
#pragma once

#include <QIcon>
#include <QString>
#include <QStringList>

namespace lorascope::app {

// The reverse-DNS id of the .desktop file, the AppStream metainfo and the icon.
QString applicationId();

// Sets the application and organisation names and the version (enough for QSettings,
// QStandardPaths and --version; needs only a QCoreApplication).
void setApplicationNames();
// setApplicationNames(), the desktop file name and the window icon. Call it right after the
// QApplication is made, before anything reads QSettings or QStandardPaths.
void setApplicationIdentity();

// The icon embedded from resources/lorascope.qrc, every size; the theme's when it has one.
QIcon applicationIcon();

// Where new runs go by default: AppLocalDataLocation/runs.
QString defaultRunsDir();
// Where runs went before (AppDataLocation/LoRAscope/runs with the organisation name doubled).
QString legacyRunsDir();

struct RunsMove {
  QStringList moved;        // run folders now under defaultRunsDir()
  QStringList leftInPlace;  // "name: why" for each one that stayed in legacyRunsDir()
};
// Moves each run folder of legacyRunsDir() into defaultRunsDir() (one rename each: nothing is
// copied, nothing is lost) unless that name is taken there; removes the legacy folders once
// empty. Nothing to do when legacyRunsDir() does not exist.
RunsMove moveLegacyRuns();

// lorascope-train: beside this program.
QString engineProgram();

}  // namespace lorascope::app
