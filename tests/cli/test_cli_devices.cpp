// test_cli_devices.cpp — `lorascope-train devices` end to end: exit 0 and a plain
// "none" with every provider's reason on a machine without a GPU; --json carries the host's
// memory and the providers' reasons, and the collective library of several GPUs or why there is
// none; --count N --json prints the inventory then N sample lines;
// a bad option is a usage error (exit 2) naming it.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>
#include "TestPaths.h"

namespace {

struct Result {
  int exitCode = -1;
  QByteArray out;
  QByteArray err;
};

Result runDevices(const QStringList& args) {
  QProcess process;
  process.start(QString::fromStdString(lstest::trainProgram()), QStringList{"devices"} + args);
  Result r;
  if (!process.waitForFinished(60000)) {
    process.kill();
    process.waitForFinished();
    return r;
  }
  r.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  r.out = process.readAllStandardOutput();
  r.err = process.readAllStandardError();
  return r;
}

}  // namespace

class TestCliDevices : public QObject {
  Q_OBJECT

 private slots:
  void jsonHasHostMemoryAndProviderReasons() {
    const Result r = runDevices({"--json"});
    QCOMPARE(r.exitCode, 0);
    QJsonParseError error{};
    const QJsonObject root = QJsonDocument::fromJson(r.out, &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    const QJsonObject telemetry = root["telemetry"].toObject();
    const QJsonObject host = telemetry["host"].toObject();
    QVERIFY(host["ram_total_bytes"].toDouble() > 0);
    QVERIFY(host["process_rss_bytes"].toDouble() > 0);
    const QJsonArray devices = telemetry["devices"].toArray();
    for (const QJsonValue& unavailable : telemetry["unavailable"].toArray()) {
      QVERIFY(!unavailable.toObject()["reason"].toString().isEmpty());
    }
    if (devices.isEmpty()) {
      // No GPU here: every GPU provider must say why it is not in use.
      QVERIFY(telemetry["unavailable"].toArray().size() >= 2);
    } else {
      const QJsonObject metrics = devices[0].toObject()["metrics"].toObject();
      QVERIFY(metrics.contains("vram_used_bytes"));
    }
  }

  // The collective library of several GPUs: loaded with its version, or the reason it is not
  // (the cpu flavour says a group needs a hip build).
  void collectiveLibraryIsNamed() {
    const Result r = runDevices({"--json"});
    QCOMPARE(r.exitCode, 0);
    const QJsonObject collective = QJsonDocument::fromJson(r.out)["collective"].toObject();
    QVERIFY(!collective["library"].toString().isEmpty());
    if (collective["available"].toBool()) {
      QVERIFY(!collective["version"].toString().isEmpty());
    } else {
      QVERIFY(!collective["reason"].toString().isEmpty());
    }
    const Result text = runDevices({});
    QVERIFY(text.out.contains("Several GPUs: "));
  }

  void withoutAGpuSaysNoneAndExitsZero() {
    const Result r = runDevices({});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("host  RAM"));
    const Result json = runDevices({"--json"});
    if (!QJsonDocument::fromJson(json.out)["telemetry"]["devices"].toArray().isEmpty()) {
      QSKIP("this machine has a GPU with telemetry");
    }
    QVERIFY(r.out.contains("GPU telemetry: none"));
    QVERIFY(r.out.contains("nvml: "));
    QVERIFY(r.out.contains("rocm-smi: "));
  }

  void watchWithCountPrintsThatManySamples() {
    const Result r = runDevices({"--json", "--count", "3", "--interval-ms", "20"});
    QCOMPARE(r.exitCode, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 4);  // the inventory, then one line per sample
    QVERIFY(QJsonDocument::fromJson(lines[0]).object().contains("inventory"));
    for (int i = 1; i < lines.size(); ++i) {
      const QJsonObject sample = QJsonDocument::fromJson(lines[i]).object();
      QCOMPARE(sample["sample"].toInt(), i);
      QVERIFY(sample["host"].toObject()["ram_total_bytes"].toDouble() > 0);
    }
  }

  void badOptionsAreUsageErrors() {
    const Result unknown = runDevices({"--bogus"});
    QCOMPARE(unknown.exitCode, 2);
    QVERIFY(unknown.err.contains("--bogus"));
    const Result zero = runDevices({"--count", "0"});
    QCOMPARE(zero.exitCode, 2);
    QVERIFY2(zero.err.contains("--count needs an integer from 1 to"), qPrintable(zero.err));
  }
};

QTEST_GUILESS_MAIN(TestCliDevices)
#include "test_cli_devices.moc"
