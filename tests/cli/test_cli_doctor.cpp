// test_cli_doctor.cpp — `lorascope-train doctor` as a user runs it (a child process):
//   - on this build without a GPU the GPU steps (parity, smoke test, the collective library) are
//     skipped and say why,
//     the report leads with "no GPU found: this is what runs on the CPU", and the verdict is a
//     pass on the CPU only with exit 0;
//   - the support bundle (--bundle) opens with tar(1) and holds the files it promises, and none
//     of what it must leave out: the dataset's text, weights and checkpoints, environment values
//     outside the allow-list, the home directory and the user's name.
#include <QtTest>

#include <QDir>
#include <QDirIterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include "TestPaths.h"

namespace {

const QString kTrain = QString::fromStdString(lstest::trainProgram());
const QString kUser = QStringLiteral("doctortester");  // also the home folder's name

struct Result {
  int exitCode = -1;
  QByteArray out;
  QByteArray err;
};

Result run(const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(kTrain, args);
  if (!p.waitForFinished(300000)) {
    p.kill();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
          p.readAllStandardError()};
}

QJsonObject checkById(const QJsonObject& report, const QString& id) {
  for (const QJsonValue& c : report.value(QStringLiteral("checks")).toArray()) {
    if (c.toObject().value(QStringLiteral("id")).toString() == id) {
      return c.toObject();
    }
  }
  return {};
}

}  // namespace

class TestCliDoctor : public QObject {
  Q_OBJECT

 private slots:
  void withoutAGpuTheGpuStepsAreSkippedAndSaySo() {
    const Result r = run({QStringLiteral("doctor"), QStringLiteral("--json")},
                         QProcessEnvironment::systemEnvironment());
    const QJsonObject report = QJsonDocument::fromJson(r.out).object();
    QVERIFY2(!report.isEmpty(), r.out.constData());
    QCOMPARE(report.value(QStringLiteral("checks")).toArray().size(), 9);
    if (checkById(report, QStringLiteral("build"))
            .value(QStringLiteral("data"))
            .toObject()
            .value(QStringLiteral("flavour"))
            .toString() != QStringLiteral("cpu")) {
      QSKIP("a GPU build: whether its steps run depends on the machine");
    }
    for (const QString& id :
         {QStringLiteral("parity"), QStringLiteral("smoke"), QStringLiteral("collective")}) {
      const QJsonObject c = checkById(report, id);
      QCOMPARE(c.value(QStringLiteral("verdict")).toString(), QStringLiteral("skip"));
      QVERIFY2(c.value(QStringLiteral("summary"))
                   .toString()
                   .startsWith(QStringLiteral("skipped: the cpu build has no GPU code")),
               qPrintable(c.value(QStringLiteral("summary")).toString()));
    }
    QCOMPARE(report.value(QStringLiteral("verdict")).toString(), QStringLiteral("pass"));
    QCOMPARE(report.value(QStringLiteral("cpu_only")).toString(),
             QStringLiteral("no GPU found: this is what runs on the CPU (the cpu build has no GPU "
                            "code)"));
    QCOMPARE(r.exitCode, 0);
  }

  // The text report leads with it too, and its verdict is not a plain PASS that reads as the GPU's.
  void withoutAGpuTheReportLeadsWithNoGpuFound() {
    const Result r = run({QStringLiteral("doctor")}, QProcessEnvironment::systemEnvironment());
    const QString text = QString::fromUtf8(r.out);
    if (text.contains(QStringLiteral("LoRAscope doctor:")) &&
        !text.contains(QStringLiteral(", cpu build"))) {
      QSKIP("a GPU build: whether it finds a GPU depends on the machine");
    }
    QVERIFY2(text.startsWith(QStringLiteral("no GPU found: this is what runs on the CPU (the cpu "
                                            "build has no GPU code)\nLoRAscope doctor: ")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("\nverdict: PASS on the CPU only (no GPU was checked) (9 "
                                          "checks: 0 failed,")),
             qPrintable(text));
    QCOMPARE(r.exitCode, 0);
  }

  void bundleHoldsTheReportAndLeavesOutPrivateData() {
    QTemporaryDir scratch;
    QVERIFY(scratch.isValid());
    const QString home = scratch.filePath(kUser);
    QVERIFY(QDir().mkpath(home));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), home);
    env.insert(QStringLiteral("USER"), kUser);
    env.remove(QStringLiteral("XDG_CACHE_HOME"));
    env.remove(QStringLiteral("XDG_CONFIG_HOME"));
    env.remove(QStringLiteral("LORASCOPE_CACHE_DIR"));
    env.insert(QStringLiteral("HSA_OVERRIDE_GFX_VERSION"), QStringLiteral("11.0.0"));
    env.insert(QStringLiteral("HIP_SERIALIZE_KERNEL"), QStringLiteral("1"));  // folklore
    env.insert(QStringLiteral("LORASCOPE_TEST_TOKEN"), QStringLiteral("hunter2-not-allowed"));

    // A real run folder: two demo steps leave config, metrics and an adapter (weights).
    const QString runDir = home + QStringLiteral("/runs/demo");
    const Result train =
        run({QStringLiteral("train"), QStringLiteral("--demo"), QStringLiteral("--steps"),
             QStringLiteral("2"), QStringLiteral("--out"), runDir},
            env);
    QVERIFY2(train.exitCode == 0, train.err.constData());
    QDirIterator weights(runDir, {QStringLiteral("*.safetensors")}, QDir::Files,
                         QDirIterator::Subdirectories);
    QVERIFY2(weights.hasNext(), "the run must hold weights for their absence to mean anything");

    const QString bundle = home + QStringLiteral("/support.tar");
    const Result doctor =
        run({QStringLiteral("doctor"), QStringLiteral("--bundle"), bundle, QStringLiteral("--run"),
             runDir, QStringLiteral("--profile"), QStringLiteral("ROCm stable")},
            env);
    QVERIFY2(doctor.exitCode == 0, doctor.out.constData());
    QVERIFY2(doctor.err.contains("support bundle"), doctor.err.constData());

    const QString unpacked = scratch.filePath(QStringLiteral("unpacked"));
    QVERIFY(QDir().mkpath(unpacked));
    QProcess tar;
    tar.start(QStringLiteral("tar"),
              {QStringLiteral("-xf"), bundle, QStringLiteral("-C"), unpacked});
    QVERIFY(tar.waitForFinished(30000));
    QVERIFY2(tar.exitCode() == 0, tar.readAllStandardError().constData());

    QStringList names;
    QMap<QString, QByteArray> files;
    QDirIterator it(unpacked, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
      const QString path = it.next();
      QFile f(path);
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QString name = QDir(unpacked).relativeFilePath(path);
      names << name;
      files.insert(name, f.readAll());
    }
    names.sort();
    QCOMPARE(names,
             QStringList({QStringLiteral("README.txt"), QStringLiteral("environment.txt"),
                          QStringLiteral("profile.json"), QStringLiteral("report.json"),
                          QStringLiteral("report.txt"), QStringLiteral("run/config.json"),
                          QStringLiteral("run/metrics.jsonl"), QStringLiteral("telemetry.json"),
                          QStringLiteral("versions.txt")}));

    // What it holds: the report (the folklore variable flagged), the active profile, versions,
    // the allowed variables with their values, the run's metrics.
    const QJsonObject report = QJsonDocument::fromJson(files.value("report.json")).object();
    const QJsonObject environment = checkById(report, QStringLiteral("environment"));
    QCOMPARE(environment.value(QStringLiteral("verdict")).toString(), QStringLiteral("warn"));
    QVERIFY(files.value("report.txt").contains("fix: unset HIP_SERIALIZE_KERNEL"));
    QCOMPARE(QJsonDocument::fromJson(files.value("profile.json"))
                 .object()
                 .value(QStringLiteral("name"))
                 .toString(),
             QStringLiteral("ROCm stable"));
    QVERIFY(files.value("versions.txt").contains("LoRAscope"));
    QVERIFY(files.value("environment.txt").contains("HSA_OVERRIDE_GFX_VERSION=11.0.0\n"));
    QCOMPARE(files.value("run/metrics.jsonl").count('\n'), 2);               // one line per step
    QVERIFY(files.value("run/config.json").contains("~/.cache/lorascope"));  // home as "~"
    QVERIFY(QJsonDocument::fromJson(files.value("telemetry.json")).isObject());

    // What it leaves out.
    QFile dataset(home + QStringLiteral("/.cache/lorascope/lorascope-demo-tasks-v2.jsonl"));
    QVERIFY(dataset.open(QIODevice::ReadOnly));
    QList<QByteArray> texts;
    for (const QByteArray& line : dataset.readAll().split('\n')) {
      const QJsonObject example = QJsonDocument::fromJson(line).object();
      for (const QJsonValue message : example.value(QStringLiteral("messages")).toArray()) {
        const QByteArray text =
            message.toObject().value(QStringLiteral("content")).toString().toUtf8();
        if (text.size() >= 12) {
          texts << text;
        }
      }
    }
    QVERIFY(texts.size() >= 40);  // every prompt of the demo dataset
    for (auto f = files.cbegin(); f != files.cend(); ++f) {
      for (const QByteArray& text : texts) {
        QVERIFY2(!f.value().contains(text), qPrintable(f.key() + ": dataset text " + text));
      }
      QVERIFY2(!f.key().endsWith(QStringLiteral(".safetensors")), qPrintable(f.key()));
      QVERIFY2(!f.value().contains("hunter2-not-allowed"), qPrintable(f.key()));
      QVERIFY2(!f.value().contains(home.toUtf8()), qPrintable(f.key() + ": home directory"));
      QVERIFY2(!f.value().contains(kUser.toUtf8()), qPrintable(f.key() + ": user name"));
      QVERIFY2(f.value().size() < 1 << 20, qPrintable(f.key() + ": too big for text"));
    }
  }
};

QTEST_GUILESS_MAIN(TestCliDoctor)
#include "test_cli_doctor.moc"
