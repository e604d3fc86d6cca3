// test_app_paths.cpp — the app's identity and where its files go (gui/AppPaths.h): the desktop
// file name and icon it sets, runs in AppLocalDataLocation without the doubled organisation and
// application name, runs of the old location moved there (and a saved folder following them),
// settings where they always were, the engine beside the program.
#include <QApplication>
#include <QFile>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "TestPaths.h"
#include "gui/AppPaths.h"
#include "gui/RunSetupPage.h"

using namespace lorascope;

namespace {

constexpr int kTimeoutMs = 60000;

void writeFile(const QString& path, const QByteArray& content) {
  QVERIFY(QDir().mkpath(QFileInfo(path).path()));
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  QCOMPARE(file.write(content), content.size());
}

QByteArray readFile(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace

class TestAppPaths : public QObject {
  Q_OBJECT

  QTemporaryDir home_;
  QString data_;

 private slots:
  void initTestCase() {
    QVERIFY(home_.isValid());
    data_ = home_.filePath(QStringLiteral("data"));
    // QStandardPaths and QSettings read these on every call (XDG on Linux).
    qputenv("XDG_DATA_HOME", data_.toUtf8());
    qputenv("XDG_CONFIG_HOME", home_.filePath(QStringLiteral("config")).toUtf8());
    qputenv("LORASCOPE_CACHE_DIR", home_.filePath(QStringLiteral("cache")).toUtf8());
    app::setApplicationIdentity();
  }

  void init() {
    QSettings().clear();
    QDir(data_).removeRecursively();
  }

  void setsTheDesktopFileNameAndIcon() {
    QCOMPARE(app::applicationId(), QStringLiteral("io.github.lorascope.LoRAscope"));
    QCOMPARE(QGuiApplication::desktopFileName(), app::applicationId());
    QCOMPARE(QApplication::applicationName(), QStringLiteral("LoRAscope"));
    const QIcon icon = QApplication::windowIcon();
    QVERIFY(!icon.isNull());
    // The embedded sizes (resources/lorascope.qrc), rendered from the SVG.
    const QList<QSize> sizes = icon.availableSizes();
    QVERIFY2(sizes.contains(QSize(256, 256)) && sizes.contains(QSize(16, 16)),
             qPrintable(QStringLiteral("%1 sizes").arg(sizes.size())));
    QCOMPARE(icon.pixmap(QSize(48, 48)).size(), QSize(48, 48));
  }

  void runsGoToAppLocalDataWithoutTheDoubledName() {
    QCOMPARE(app::defaultRunsDir(), data_ + QStringLiteral("/LoRAscope/runs"));
    QCOMPARE(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation),
             data_ + QStringLiteral("/LoRAscope"));
    QCOMPARE(app::legacyRunsDir(), data_ + QStringLiteral("/LoRAscope/LoRAscope/runs"));
  }

  // Settings stay in the file earlier versions wrote (organisation "LoRAscope" then, domain now).
  void settingsStayWhereTheyWere() {
    QCOMPARE(QSettings().fileName(),
             home_.filePath(QStringLiteral("config/LoRAscope/LoRAscope.conf")));
  }

  void runsOfTheOldLocationAreMovedAndFound() {
    const QString legacy = app::legacyRunsDir();
    writeFile(legacy + QStringLiteral("/demo-1/config.json"), "{\"demo\": true}\n");
    writeFile(legacy + QStringLiteral("/demo-1/checkpoints/step-5/trainer_state.json"), "{}\n");
    writeFile(legacy + QStringLiteral("/clash/metrics.jsonl"), "old\n");
    writeFile(app::defaultRunsDir() + QStringLiteral("/clash/metrics.jsonl"), "new\n");

    const app::RunsMove first = app::moveLegacyRuns();
    const QString moved = app::defaultRunsDir() + QStringLiteral("/demo-1");
    QCOMPARE(first.moved, QStringList{moved});
    QCOMPARE(readFile(moved + QStringLiteral("/config.json")), QByteArray("{\"demo\": true}\n"));
    QVERIFY(QFile::exists(moved + QStringLiteral("/checkpoints/step-5/trainer_state.json")));
    // A name taken in the new folder: nothing is overwritten, the old run stays, and says why.
    QCOMPARE(first.leftInPlace.size(), 1);
    QVERIFY2(first.leftInPlace[0].startsWith(QStringLiteral("clash: ")),
             qPrintable(first.leftInPlace[0]));
    QCOMPARE(readFile(legacy + QStringLiteral("/clash/metrics.jsonl")), QByteArray("old\n"));
    QCOMPARE(readFile(app::defaultRunsDir() + QStringLiteral("/clash/metrics.jsonl")),
             QByteArray("new\n"));
    QVERIFY(QFileInfo::exists(legacy));

    // Once the clash is resolved, the rest moves and the doubled folders are gone.
    QVERIFY(QDir(app::defaultRunsDir() + QStringLiteral("/clash")).removeRecursively());
    const app::RunsMove second = app::moveLegacyRuns();
    QCOMPARE(second.moved.size(), 1);
    QVERIFY(second.leftInPlace.isEmpty());
    QCOMPARE(readFile(app::defaultRunsDir() + QStringLiteral("/clash/metrics.jsonl")),
             QByteArray("old\n"));
    QVERIFY(!QFileInfo::exists(data_ + QStringLiteral("/LoRAscope/LoRAscope")));
    // Nothing left to do: a third call changes nothing.
    const app::RunsMove third = app::moveLegacyRuns();
    QVERIFY(third.moved.isEmpty() && third.leftInPlace.isEmpty());
  }

  // The setup page's output folder, saved as the old location, follows the runs.
  void aSavedOldOutputFolderFollowsTheRuns() {
    QSettings().setValue(QStringLiteral("setup/out"), app::legacyRunsDir());
    app::RunSetupPage page;
    page.setTrainProgram(
        QString::fromStdString(lstest::trainProgram()));  // the demo's files (`demo`)
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    const auto config = page.runConfig();
    QVERIFY2(config.has_value(), qPrintable(page.problems().join('\n')));
    const QString out = QString::fromStdString((*config)["out"].get<std::string>());
    QVERIFY2(out.startsWith(app::defaultRunsDir() + QLatin1Char('/')), qPrintable(out));

    // Another saved folder is the user's choice and stays.
    const QString mine = home_.filePath(QStringLiteral("my-runs"));
    QSettings().setValue(QStringLiteral("setup/out"), mine);
    app::RunSetupPage other;
    other.setTrainProgram(QString::fromStdString(lstest::trainProgram()));
    QTRY_VERIFY_WITH_TIMEOUT(!other.isBusy(), kTimeoutMs);
    const auto otherConfig = other.runConfig();
    QVERIFY(otherConfig.has_value());
    QVERIFY(QString::fromStdString((*otherConfig)["out"].get<std::string>())
                .startsWith(mine + QLatin1Char('/')));
  }

  // A run with no name typed is named by the time of its start. One started within the same
  // second as the run before it, which made its folder, gets a folder of its own (-2), not the
  // first's (which the window would offer to resume).
  void twoRunsStartedWithinOneSecondGetTwoFolders() {
    QSettings().setValue(QStringLiteral("setup/out"),
                         home_.filePath(QStringLiteral("same-second")));
    app::RunSetupPage page;
    page.setTrainProgram(QString::fromStdString(lstest::trainProgram()));
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    const auto outOf = [&page] {
      const auto config = page.runConfig();
      return config ? QString::fromStdString((*config)["out"].get<std::string>()) : QString();
    };
    for (int attempt = 0; attempt < 5; ++attempt) {
      const QString first = outOf();
      QVERIFY2(!first.isEmpty(), qPrintable(page.problems().join('\n')));
      QVERIFY(QDir().mkpath(first));  // the first run's folder, as its start makes it
      const QString second = outOf();
      if (!second.startsWith(first))
        continue;  // the clock passed a second between the two: again
      QCOMPARE(second, first + QStringLiteral("-2"));
      QVERIFY(!QFileInfo::exists(second));
      return;
    }
    QFAIL("no two starts fell within one second in 5 attempts");
  }

  void theEngineIsBesideTheProgram() {
    QCOMPARE(app::engineProgram(),
             QDir(QApplication::applicationDirPath()).filePath(QStringLiteral("lorascope-train")));
  }
};

QTEST_MAIN(TestAppPaths)
#include "test_app_paths.moc"
