// test_output_parser.cpp — external/OutputParser: each built-in format reads step, loss and lr
// (and the epoch, where the format gives one) from its trainer's own lines (the formats as the
// trainers print them; whole recorded runs are test_trainer_fixtures'), a bar's step is announced
// once with its last loss, lines without progress give nothing, rank prefixes are recognised, and a
// bad --parser is an error naming the problem.
#include <QtTest>

#include "external/OutputParser.h"

using namespace lorascope::external;

class TestOutputParser : public QObject {
  Q_OBJECT
 private slots:
  void huggingFaceDictsAreCountedAndTheBarGivesTheTotal() {
    auto p = makeOutputParser("hf");
    QVERIFY(!p->parse(" 40%|####      | 12/30 [00:04<00:06,  2.90it/s]"));
    QCOMPARE(*p->totalSteps(), std::int64_t{30});
    // transformers 4 prints numbers, transformers 5 strings; the bar's 12 does not number it.
    const auto dict =
        p->parse("{'loss': 2.3456, 'grad_norm': 1.25, 'learning_rate': 4.9e-05, 'epoch': 0.4}");
    QVERIFY(dict && dict->loss && dict->step && dict->counted);
    QCOMPARE(*dict->loss, 2.3456);
    QCOMPARE(*dict->learningRate, 4.9e-05);
    QCOMPARE(*dict->gradNorm, 1.25);
    QCOMPARE(*dict->step, std::int64_t{1});
    QCOMPARE(*dict->totalSteps, std::int64_t{30});
    const auto quoted = p->parse(
        "{'loss': '9.029', 'grad_norm': '0.1983', 'learning_rate': '0.0009167', "
        "'epoch': '0.003906'}");
    QVERIFY(quoted && quoted->loss);
    QCOMPARE(*quoted->loss, 9.029);
    QCOMPARE(*quoted->learningRate, 0.0009167);
    QCOMPARE(*quoted->step, std::int64_t{2});
    // An explicit step wins; the closing summary is not a step; an evaluation is no step.
    const auto numbered = p->parse("{'loss': 1.5, 'step': 40}");
    QVERIFY(numbered && !numbered->counted);
    QCOMPARE(*numbered->step, std::int64_t{40});
    QVERIFY(!p->parse("{'train_runtime': '12.3', 'train_loss': '1.9', 'epoch': '1.0'}"));
    const auto eval = p->parse("{'eval_loss': '9.025', 'eval_runtime': '0.0154', 'epoch': '0.25'}");
    QVERIFY(eval && eval->evalLoss && !eval->loss);
    QCOMPARE(*eval->evalLoss, 9.025);
    QVERIFY(!p->parse("Saving model checkpoint to out/checkpoint-500"));
    QVERIFY(std::isnan(*p->parse("{'loss': nan}")->loss));
  }
  void barStepsAreHeldUntilTheBarMovesOn() {
    // The trainers advance the bar, then set the step's loss: a step is drawn first with no loss
    // or the previous step's, then with its own.
    auto p = makeOutputParser("tqdm");
    QVERIFY(!p->parse("Steps:   8%|▊         | 1/12 [00:00<00:04,  2.59it/s]"));
    QVERIFY(!p->parse("Steps:   8%|▊         | 1/12 [00:00<00:04,  2.59it/s, loss=0.88, lr=0.01]"));
    const auto one =
        p->parse("Steps:  17%|█▋        | 2/12 [00:00<00:03,  2.59it/s, loss=0.88, lr=0.01]");
    QVERIFY(one && *one->step == 1);
    QCOMPARE(*one->loss, 0.88);
    QVERIFY(
        !p->parse("Steps:  17%|█▋        | 2/12 [00:00<00:03,  2.59it/s, loss=0.616, lr=0.01]"));
    QCOMPARE(*p->totalSteps(), std::int64_t{12});
    const auto two =
        p->parse("Steps:  25%|██▌       | 3/12 [00:00<00:03,  2.59it/s, loss=0.844, lr=0.01]");
    QVERIFY(two && *two->step == 2);
    QCOMPARE(*two->loss, 0.616);
    QVERIFY(!p->parse("loading checkpoint shards: done"));
    const auto three = p->finish();
    QVERIFY(three && *three->step == 3 && *three->totalSteps == 12);
    QCOMPARE(*three->loss, 0.844);
    QCOMPARE(*three->learningRate, 0.01);
    QVERIFY(!p->finish());
  }
  void barStepOneIsReleasedWithItsOwnLoss() {
    auto p = makeOutputParser("tqdm");
    QVERIFY(!p->parse("Steps:   8%|▊         | 1/12 [00:00<00:04,  2.59it/s, loss=0.88]"));
    const auto one = p->parse("Steps:  17%|█▋        | 2/12 [00:00<00:03,  2.59it/s, loss=0.616]");
    QVERIFY(one && *one->step == 1);
    QCOMPARE(*one->loss, 0.88);
    QVERIFY(!p->parse("7/? [00:01, 5.00it/s]"));  // another bar, without a loss: not ours
  }
  void kohyaAverageLoss() {
    auto p = makeOutputParser("kohya");
    QVERIFY(!p->parse("steps:  10%|█         | 100/1000 [01:23<12:34,  1.19it/s, avr_loss=0.123]"));
    const auto r = p->finish();
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{100});
    QCOMPARE(*r->loss, 0.123);
  }
  void lightningCountsEpochs() {
    auto p = makeOutputParser("lightning");
    QVERIFY(
        !p->parse("Epoch 2:  50%|█████     | 50/100 [00:05<00:05,  9.80it/s, v_num=0, "
                  "train_loss_step=2.310]"));
    QVERIFY(!p->parse("Validation DataLoader 0: 100%|██████████| 10/10 [00:00<00:00]"));
    const auto r = p->finish();
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{250});
    QCOMPARE(*r->loss, 2.31);
    QCOMPARE(*r->epoch, 2.5);  // epoch 2 (0-based), batch 50 of 100
  }
  void lightningRichFrame() {
    auto p = makeOutputParser("lightning");
    QVERIFY(
        !p->parse("Epoch 1/1  ━━━━━━━━━━━━━━━━━ 6/6 0:00:00 • 0:00:00 255.21it/s "
                  "train_loss: 0.346"));
    const auto r = p->finish();
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{12});
    QCOMPARE(*r->loss, 0.346);
    QCOMPARE(*r->epoch, 2.0);
  }
  // Lines from the recorded runs of fixtures/recorded (transformers 5.17, Lightning 2.6): the
  // epoch as the trainer counts it, absent where a format has none.
  void theEpochOfRecordedTrainerLines() {
    auto hf = makeOutputParser("hf");
    const auto first = hf->parse(  // hf_notqdm.stdout, line 1; its log_history says 0.015625
        "{'loss': '9.037', 'grad_norm': '0.1503', 'learning_rate': '0.001', 'epoch': '0.01562'}");
    QVERIFY(first && first->epoch);
    QCOMPARE(*first->epoch, 0.01562);
    QVERIFY(!hf->parse("{'loss': '9.035', 'grad_norm': '0.1433'}")->epoch);
    QVERIFY(!hf->parse("{'loss': '9.035', 'epoch': 'nan'}")->epoch);  // not a count: unknown
    auto lightning = makeOutputParser("lightning");  // lightning_tqdm.stdout: 6 batches an epoch
    QVERIFY(!lightning->parse(
        "Epoch 0:  83%|████████▎ | 5/6 [00:00<00:00, 24.62it/s, train_loss=2.050]"));
    const auto five = lightning->parse(
        "Epoch 0: 100%|██████████| 6/6 [00:00<00:00, 28.93it/s, train_loss=0.464]");
    QVERIFY(five && *five->step == 5);
    QCOMPARE(*five->epoch, 5.0 / 6.0);
    const auto six = lightning->finish();
    QVERIFY(six && *six->step == 6);
    QCOMPARE(*six->epoch, 1.0);
    auto tqdm = makeOutputParser("tqdm");  // accelerate.stderr's bar: no epoch in it
    QVERIFY(
        !tqdm->parse("Steps:   8%|▊         | 1/12 [00:00<00:04,  2.59it/s, loss=0.88, lr=0.01]"));
    QVERIFY(!tqdm->finish()->epoch);
  }
  void rankPrefixes() {
    const auto zero = splitRankPrefix("[rank0]: {'loss': 1.0}");
    QVERIFY(zero && zero->first == 0 && zero->second == " {'loss': 1.0}");
    const auto one = splitRankPrefix("[default1]:step 3 loss 2.0");
    QVERIFY(one && one->first == 1 && one->second == "step 3 loss 2.0");
    QVERIFY(!splitRankPrefix("[INFO|2025] >> {'loss': 1.0}"));
    QVERIFY(!splitRankPrefix("[0]:"));
  }
  void regexWithNamedGroups() {
    auto p = makeOutputParser("regex:it (?<step>\\d+): objective (?<loss>[0-9.]+)");
    const auto r = p->parse("it 7: objective 0.75");
    QVERIFY(r);
    QCOMPARE(*r->step, std::int64_t{7});
    QCOMPARE(*r->loss, 0.75);
    QVERIFY(!r->epoch);
    auto withEpoch =
        makeOutputParser("regex:it (?<step>\\d+) \\(epoch (?<epoch>[0-9.]+)\\): (?<loss>[0-9.]+)");
    const auto e = withEpoch->parse("it 7 (epoch 1.75): 0.5");
    QVERIFY(e && e->epoch);
    QCOMPARE(*e->epoch, 1.75);
    QVERIFY(!p->parse("nothing here"));
    auto unnumbered = makeOutputParser("regex:objective (?<loss>[0-9.]+)");
    const auto counted = unnumbered->parse("objective 0.5");
    QVERIFY(counted && counted->counted && *counted->step == 1);
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
