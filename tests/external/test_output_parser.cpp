// test_output_parser.cpp — external/OutputParser: each built-in format reads step, loss and lr
// from its trainer's own lines (the formats as tests/external/scripts/print_format.py prints
// them, and as the trainers print them), lines without progress give nothing, and a bad --parser
// is an error naming the problem.
#include <QtTest>

#include "external/OutputParser.h"

using namespace lorascope::external;

class TestOutputParser : public QObject {
  Q_OBJECT
 private slots:
  void huggingFaceDictsTakeTheStepFromTheBar() {
    auto p = makeOutputParser("hf");
    const auto bar = p->parse(" 40%|####      | 12/30 [00:04<00:06,  2.90it/s]");
    QVERIFY(bar && *bar->step == 12 && *bar->totalSteps == 30 && !bar->loss);
    const auto dict =
        p->parse("{'loss': 2.3456, 'grad_norm': 1.25, 'learning_rate': 4.9e-05, 'epoch': 0.4}");
    QVERIFY(dict && dict->loss && dict->step);
    QCOMPARE(*dict->loss, 2.3456);
    QCOMPARE(*dict->learningRate, 4.9e-05);
    QCOMPARE(*dict->step, std::int64_t{12});
    // An explicit step wins; the closing summary is not a step.
    QCOMPARE(*p->parse("{'loss': 1.5, 'step': 40}")->step, std::int64_t{40});
    QVERIFY(!p->parse("{'train_runtime': 12.3, 'train_loss': 1.9, 'epoch': 1.0}"));
    QVERIFY(!p->parse("Saving model checkpoint to out/checkpoint-500"));
  }
  void huggingFaceDictsWithoutABarAreCounted() {
    auto p = makeOutputParser("hf");
    QCOMPARE(*p->parse("{'loss': 3.0, 'learning_rate': 1e-4}")->step, std::int64_t{1});
    QCOMPARE(*p->parse("{'loss': 2.0, 'learning_rate': 1e-4}")->step, std::int64_t{2});
    QVERIFY(std::isnan(*p->parse("{'loss': nan}")->loss));
  }
  void tqdmPostfix() {
    auto p = makeOutputParser("tqdm");
    const auto r = p->parse(
        "Epoch 1:  45%|####5     | 45/100 [00:10<00:12,  4.50it/s, loss=2.31, "
        "lr=1e-4]");
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{45});
    QCOMPARE(*r->totalSteps, std::int64_t{100});
    QCOMPARE(*r->loss, 2.31);
    QCOMPARE(*r->learningRate, 1e-4);
    QVERIFY(!p->parse("loading checkpoint shards: done"));
    const auto unknownTotal = p->parse("7/? [00:01, 5.00it/s, loss=0.5]");
    QVERIFY(unknownTotal && *unknownTotal->step == 7 && !unknownTotal->totalSteps);
  }
  void kohyaAverageLoss() {
    auto p = makeOutputParser("kohya");
    const auto r = p->parse(
        "steps:  10%|█         | 100/1000 [01:23<12:34,  1.19it/s, "
        "avr_loss=0.123]");
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{100});
    QCOMPARE(*r->loss, 0.123);
  }
  void lightningCountsEpochs() {
    auto p = makeOutputParser("lightning");
    const auto r = p->parse(
        "Epoch 2:  50%|█████     | 50/100 [00:05<00:05,  9.80it/s, v_num=0, "
        "train_loss_step=2.310]");
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{250});
    QCOMPARE(*r->loss, 2.31);
    QVERIFY(!p->parse("Validation DataLoader 0: 100%|██████████| 10/10 [00:00<00:00]"));
  }
  void regexWithNamedGroups() {
    auto p = makeOutputParser("regex:it (?<step>\\d+): objective (?<loss>[0-9.]+)");
    const auto r = p->parse("it 7: objective 0.75");
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{7});
    QCOMPARE(*r->loss, 0.75);
    QVERIFY(!p->parse("nothing here"));
    QVERIFY(!p->parse("it 8: objective \xff"));  // not UTF-8: no match, no crash
  }
  void badParsersAreErrorsNamingTheProblem() {
    auto message = [](const std::string& spec) {
      try {
        makeOutputParser(spec);
      } catch (const ExternalError& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    QVERIFY(message("jsonl").find("one of hf, tqdm, kohya, lightning") != std::string::npos);
    QVERIFY(message("regex:(?<step").find("invalid regex '(?<step' at offset") !=
            std::string::npos);
    QVERIFY(message("regex:loss (\\d+)").find("no named group step or loss") != std::string::npos);
    QVERIFY(message("regex:").find("empty") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestOutputParser)
#include "test_output_parser.moc"
