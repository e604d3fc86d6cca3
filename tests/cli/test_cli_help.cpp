// test_cli_help.cpp — lorascope-train's usage and every command's --help come from the option
// tables: every run option (job/RunOptions.h) is in the usage line of `train` and in
// `train --help` with its form and default; a --config file takes the same names; every command
// answers --help.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "TestPaths.h"
#include "job/RunOptions.h"

using namespace lorascope;

namespace {

const QString kTrainExe = QString::fromStdString(lstest::trainProgram());

struct Result {
  int exitCode = -1;
  QString out;
  QString err;
};

Result run(const QStringList& args) {
  QProcess process;
  QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
  environment.insert(QStringLiteral("LORASCOPE_CACHE_DIR"),
                     QDir::tempPath() + QStringLiteral("/lorascope-help-test"));
  process.setProcessEnvironment(environment);
  process.start(kTrainExe, args);
  process.waitForFinished(60000);
  return {process.exitCode(), QString::fromUtf8(process.readAllStandardOutput()),
          QString::fromUtf8(process.readAllStandardError())};
}

}  // namespace

class TestCliHelp : public QObject {
  Q_OBJECT

 private slots:
  void usageAndTrainHelpListEveryRunOption() {
    const Result usage = run({QStringLiteral("--help")});
    QCOMPARE(usage.exitCode, 0);
    const Result help = run({QStringLiteral("train"), QStringLiteral("--help")});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.startsWith(QStringLiteral("usage: lorascope-train train")));
    QString joinedUsage = usage.out;
    joinedUsage.replace(QRegularExpression(QStringLiteral("\\s+")), QStringLiteral(" "));
    for (const job::RunOption& option : job::runOptions()) {
      const QString name = QString::fromStdString(option.spec.name);
      QVERIFY2(joinedUsage.contains(QStringLiteral("[--") + name), qPrintable(name));
      const QString form = QString::fromStdString(job::optionForm(option.spec));
      QVERIFY2(help.out.contains(QStringLiteral("  ") + form + QLatin1Char('\n')),
               qPrintable(form));
    }
    QVERIFY(help.out.contains(QStringLiteral("--shuffle/--no-shuffle")));
    QVERIFY(help.out.contains(QStringLiteral("sequences; default 4, demo 8)")));  // batch-size
  }

  void everyCommandAnswersHelp() {
    for (const char* command :
         {"bench", "devices", "doctor", "engine", "eval", "export", "generate", "inspect-model",
          "tokenize", "train", "validate-data"}) {
      const Result help = run({QString::fromLatin1(command), QStringLiteral("--help")});
      QCOMPARE(help.exitCode, 0);
      QVERIFY2(help.out.startsWith(QStringLiteral("usage: lorascope-train ") +
                                   QString::fromLatin1(command)),
               command);
      QVERIFY2(help.out.contains(QStringLiteral("  --help\n")), command);
    }
  }

  // supervise reads its options before "--" only (every word after it is the command's), so its
  // usage lines put them there.
  void superviseShowsItsOptionsBeforeTheCommand() {
    const Result help = run({QStringLiteral("supervise"), QStringLiteral("--help")});
    QCOMPARE(help.exitCode, 0);
    QVERIFY2(help.out.startsWith(QStringLiteral(
                 "usage: lorascope-train supervise [options] -- COMMAND [ARGS...]\n")),
             qPrintable(help.out.left(200)));
    QString joinedUsage = run({QStringLiteral("--help")}).out;
    joinedUsage.replace(QRegularExpression(QStringLiteral("\\s+")), QStringLiteral(" "));
    const qsizetype at = joinedUsage.indexOf(QStringLiteral("supervise ["));
    QVERIFY2(at >= 0, qPrintable(joinedUsage));
    const qsizetype command = joinedUsage.indexOf(QStringLiteral("-- COMMAND [ARGS...]"), at);
    QVERIFY(command > at);
    QVERIFY(joinedUsage.indexOf(QStringLiteral("[--profile"), at) < command);
  }

  void aConfigFileIsCheckedAgainstTheTable() {
    QTemporaryDir dir;
    const QString config = dir.filePath(QStringLiteral("run.json"));
    QFile file(config);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"lr": 1e-4, "lora-r": 0})");
    file.close();
    const Result bad =
        run({QStringLiteral("train"), QStringLiteral("--demo"), QStringLiteral("--out"),
             dir.filePath(QStringLiteral("run")), QStringLiteral("--config"), config});
    QCOMPARE(bad.exitCode, 2);
    QVERIFY2(bad.err.contains(config + QStringLiteral(": --lora-r needs an integer from 1 to")),
             qPrintable(bad.err));
    QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("run"))));
    // A key spelt as in the run's config.json (max_seq_len) is named with its option's spelling.
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(R"({"max_seq_len": 128})");
    file.close();
    const Result underscored =
        run({QStringLiteral("train"), QStringLiteral("--demo"), QStringLiteral("--out"),
             dir.filePath(QStringLiteral("run")), QStringLiteral("--config"), config});
    QCOMPARE(underscored.exitCode, 2);
    QVERIFY2(underscored.err.contains(config + QStringLiteral(": unknown option \"max_seq_len\"; "
                                                              "the keys are train's option names: "
                                                              "\"max-seq-len\"")),
             qPrintable(underscored.err));
  }
};

QTEST_GUILESS_MAIN(TestCliHelp)
#include "test_cli_help.moc"
