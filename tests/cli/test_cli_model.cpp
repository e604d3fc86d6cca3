// test_cli_model.cpp — lorascope-train inspect-model, eval and train --model, end to end on the
// reference folders: parameter counts and weight bytes equal what transformers wrote in the shard
// index (metadata.total_parameters / total_size), the 4-bit (--quantize nf4) footprint follows the
// NF4 layout, and eval's last logits equal transformers' logits.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "train/DemoModel.h"  // defines: demoTokenizerJson, demoTokenizerConfigJson

using nlohmann::json;

namespace {

const QString kTrainExe = QString::fromStdString(lstest::trainProgram());
const std::string kDataDir = lstest::sourcePath("tests/model/data");

json readJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Runs lorascope-train; returns stdout, or fails the test with stderr.
QByteArray runTrain(const QStringList& args, int expectedExit = 0) {
  QProcess process;
  process.start(kTrainExe, args);
  if (!process.waitForFinished(60000)) {
    qWarning("lorascope-train did not finish");
    return {};
  }
  if (process.exitCode() != expectedExit) {
    qWarning("exit %d: %s", process.exitCode(), process.readAllStandardError().constData());
    return {};
  }
  return expectedExit == 0 ? process.readAllStandardOutput() : process.readAllStandardError();
}

}  // namespace

class TestCliModel : public QObject {
  Q_OBJECT

 private slots:
  void inspectModelCountsMatchTransformersIndex_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("llama tied") << "llama_bf16_sharded_tied";
    QTest::newRow("qwen2 untied") << "qwen2_bf16_sharded_linear_rope";
  }

  // inspect-model names the family and what its graph adds, in text and JSON; a model_type this
  // build does not run is refused naming config.json and the type.
  void inspectModelNamesTheFamily() {
    const QString gemma2 = QString::fromStdString(kDataDir + "/gemma2_f32");
    const QByteArray text = runTrain({"inspect-model", gemma2});
    QVERIFY2(text.contains("family      gemma2: GeGLU"), text.constData());
    QVERIFY(text.contains("sliding window 5 on 1 of 2 layers"));
    QVERIFY(text.contains("attention scores soft-capped at 5, logits soft-capped at 8"));
    const json report = json::parse(
        runTrain({"inspect-model", QString::fromStdString(kDataDir + "/qwen3_f32"), "--json"})
            .toStdString());
    QCOMPARE(report["family"].get<std::string>(), std::string("qwen3"));
    QCOMPARE(report["graph_features"].get<std::string>(), std::string("q/k norms"));

    QTemporaryDir tmp;
    QFile config(tmp.filePath("config.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"model_type": "phi3", "hidden_size": 8})");
    config.close();
    const QByteArray error = runTrain({"inspect-model", tmp.path()}, 1);
    QVERIFY2(error.contains("config.json") && error.contains("model_type 'phi3'") &&
                 error.contains("gemma3_text"),
             error.constData());
  }

  // `train --model DIR` on a tiny Gemma 2 folder (soft-caps, sliding window, GeGLU, sandwich norms;
  // the transformers reference weights) given the demo's byte-level tokenizer: the run ends, its
  // losses are finite and the adapter is written with PEFT's module names.
  void trainsALoraOnATinyGemma2() {
    QTemporaryDir tmp;
    const std::string dir = tmp.filePath("gemma2").toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
    for (const char* file : {"config.json", "model.safetensors"}) {
      QVERIFY(QFile::copy(QString::fromStdString(kDataDir + "/gemma2_f32/" + file),
                          QString::fromStdString(dir + "/" + file)));
    }
    const auto write = [](const QString& path, const std::string& text) {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text.data(), static_cast<qint64>(text.size()));
    };
    write(QString::fromStdString(dir + "/tokenizer.json"), lorascope::train::demoTokenizerJson());
    write(QString::fromStdString(dir + "/tokenizer_config.json"),
          lorascope::train::demoTokenizerConfigJson());
    std::string data;
    for (const char* word : {"apple", "river", "stone", "cloud", "tiger", "lemon"}) {
      data += json{{"instruction", "Repeat the word."}, {"input", word}, {"output", word}}.dump() +
              "\n";
    }
    write(tmp.filePath("data.jsonl"), data);
    const QString run = tmp.filePath("run");
    const QByteArray out = runTrain({"train", "--model", QString::fromStdString(dir), "--data",
                                     tmp.filePath("data.jsonl"), "--steps", "3", "--batch-size",
                                     "2", "--max-seq-len", "128", "--lora-r", "4", "--out", run});
    QVERIFY2(out.contains("done: 3 steps"), out.constData());
    std::ifstream metrics((run + "/metrics.jsonl").toStdString());
    int steps = 0;
    for (std::string line; std::getline(metrics, line);) {
      const json m = json::parse(line);
      if (m.contains("loss")) {
        QVERIFY(std::isfinite(m["loss"].get<double>()) && m["loss"].get<double>() > 0);
        ++steps;
      }
    }
    QCOMPARE(steps, 3);
    const json adapter = readJson((run + "/adapter/adapter_config.json").toStdString());
    QCOMPARE(adapter["target_modules"].size(), std::size_t{7});
    QVERIFY(QFile::exists(run + "/adapter/adapter_model.safetensors"));
  }

  void inspectModelCountsMatchTransformersIndex() {
    QFETCH(QString, name);
    const std::string dir = kDataDir + "/" + name.toStdString();
    const json index = readJson(dir + "/model.safetensors.index.json");
    const QByteArray out = runTrain({"inspect-model", QString::fromStdString(dir), "--json",
                                     "--batch", "2", "--seq", "128", "--rank", "8"});
    QVERIFY(!out.isEmpty());
    const json report = json::parse(out.toStdString());
    QCOMPARE(report["parameters"]["total"].get<std::int64_t>(),
             index["metadata"]["total_parameters"].get<std::int64_t>());
    const json& lora = report["lora_training"];
    QCOMPARE(lora["weights_bytes"].get<std::int64_t>(),
             index["metadata"]["total_size"].get<std::int64_t>());
    QCOMPARE(lora["batch"].get<int>(), 2);
    QCOMPARE(report["files"].size(), std::size_t{4});
    // The peak: the fixed terms, the saved activations and the larger transient.
    QCOMPARE(lora["total_bytes"].get<std::int64_t>(),
             lora["weights_bytes"].get<std::int64_t>() + lora["lora_bytes"].get<std::int64_t>() +
                 lora["lora_grad_bytes"].get<std::int64_t>() +
                 lora["optimizer_bytes"].get<std::int64_t>() +
                 lora["activation_bytes"].get<std::int64_t>() +
                 std::max(lora["loss_bytes"].get<std::int64_t>(),
                          lora["backward_bytes"].get<std::int64_t>()));
  }

  // --quantize nf4: the seven projections of each layer take compute/Nf4.h's storage (a 16-byte
  // header and 8452 bytes a group of 16384 weights), everything else bf16, and the estimate adds
  // the bf16 workspace of the largest projection. (This model's projections are so small that the
  // padded groups make them larger than in bf16; real ones are 16384-weight groups many times.)
  void inspectModelShowsTheNf4Footprint() {
    const std::string dir = kDataDir + "/llama_bf16_sharded_tied";
    const json config = readJson(dir + "/config.json");
    const std::int64_t h = config["hidden_size"], inter = config["intermediate_size"];
    const std::int64_t hd = config["head_dim"], heads = config["num_attention_heads"];
    const std::int64_t kv = config["num_key_value_heads"], layers = config["num_hidden_layers"];
    const std::int64_t projections[] = {h * heads * hd, h * kv * hd, h * kv * hd, heads * hd * h,
                                        h * inter,      h * inter,   inter * h};
    const QByteArray out =
        runTrain({"inspect-model", QString::fromStdString(dir), "--json", "--quantize", "nf4"});
    const json report = json::parse(out.toStdString());
    std::int64_t packed = 0, projectionWeights = 0, largest = 0;
    for (const std::int64_t numel : projections) {
      packed += 16 + (numel + 16383) / 16384 * 8452;
      projectionWeights += numel;
      largest = std::max(largest, numel);
    }
    const std::int64_t total = report["parameters"]["total"];
    const std::int64_t expected = layers * packed + 2 * (total - layers * projectionWeights);
    QCOMPARE(report["weights_bytes_nf4"].get<std::int64_t>(), expected);
    const json& lora = report["lora_training"];
    QCOMPARE(lora["quantize"].get<std::string>(), std::string("nf4"));
    QCOMPARE(lora["weights_bytes"].get<std::int64_t>(), expected);
    QCOMPARE(lora["dequantize_bytes"].get<std::int64_t>(), 2 * largest);
    QCOMPARE(lora["total_bytes"].get<std::int64_t>(),
             expected + lora["lora_bytes"].get<std::int64_t>() +
                 lora["lora_grad_bytes"].get<std::int64_t>() +
                 lora["optimizer_bytes"].get<std::int64_t>() +
                 lora["activation_bytes"].get<std::int64_t>() +
                 std::max(lora["loss_bytes"].get<std::int64_t>(),
                          lora["backward_bytes"].get<std::int64_t>()) +
                 2 * largest);
    const QByteArray text = runTrain({"inspect-model", QString::fromStdString(dir)});
    QVERIFY2(text.contains("on a GPU with --quantize nf4"), text.constData());
  }

  // Row 0 of the reference batch alone: its last position's logits are among those recorded.
  void evalLastLogitsMatchTransformers_data() {
    QTest::addColumn<QString>("name");
    for (const char* name : {"llama_f32_legacy_rope", "qwen3_f32", "mistral_f32_sliding",
                             "gemma2_f32", "gemma3_f32"}) {
      QTest::newRow(name) << QString(name);
    }
  }

  void evalLastLogitsMatchTransformers() {
    QFETCH(QString, name);
    const std::string dir = kDataDir + "/" + name.toStdString();
    const json expected = readJson(dir + "/expected.json");
    QStringList ids;
    for (const json& id : expected["input_ids"][0]) {
      ids << QString::number(id.get<int>());
    }
    const QByteArray out = runTrain(
        {"eval", "--model", QString::fromStdString(dir), "--ids", ids.join(','), "--json"});
    QVERIFY(!out.isEmpty());
    const json result = json::parse(out.toStdString());
    QCOMPARE(result["predicted_tokens"].get<int>(), ids.size() - 1);
    const json& want = expected["logits"][0][2];  // position 11, the last
    QCOMPARE(expected["logits_positions"][2].get<int>(), ids.size() - 1);
    const json& got = result["last_logits"];
    QCOMPARE(got.size(), want.size());
    for (std::size_t v = 0; v < want.size(); ++v) {
      QVERIFY(std::fabs(got[v].get<double>() - want[v].get<double>()) <=
              1e-4 * (1.0 + std::fabs(want[v].get<double>())));
    }
  }

  void evalNamesBadIdsAndMissingFolders() {
    const QString dir = QString::fromStdString(kDataDir + "/qwen2_f32_tied");
    QVERIFY(runTrain({"eval", "--model", dir, "--ids", "1,x,3"}, 2).contains("'x' is not"));
    QVERIFY(runTrain({"eval", "--model", dir, "--ids", "1,300"}, 1).contains("token id 300"));
    QVERIFY(runTrain({"inspect-model", "/nonexistent/model"}, 1).contains("/nonexistent/model"));
    QVERIFY(runTrain({"inspect-model", dir, "--rank", "0"}, 2).contains("--rank"));
  }
};

QTEST_GUILESS_MAIN(TestCliModel)
#include "test_cli_model.moc"
