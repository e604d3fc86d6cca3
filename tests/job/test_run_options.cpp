// test_run_options.cpp — the option table (job/RunOptions.h) reaches the command line, its
// --help and the run's config.json; options apply in any order; values are checked.
#include <QtTest>

#include <algorithm>

#include "job/RunOptions.h"
#include "job/TrainRunConfig.h"
#include "train/Lora.h"  // defines: kAllLoraModules, shortName

using namespace lorascope;
using job::OptionType;
using job::RunOption;
using nlohmann::json;

namespace {

// A value of `option` that differs from its (non-demo) default and passes its checks.
std::string otherValue(const RunOption& option) {
  const std::string fallback = option.spec.defaultText;
  switch (option.spec.type) {
    case OptionType::Bool:
      return fallback == "true" ? "false" : "true";
    case OptionType::Integer: {
      const auto min = static_cast<long long>(option.spec.min);
      return std::to_string(std::stoll(fallback) == min ? min + 1 : min);
    }
    case OptionType::Real:
      return std::stod(fallback) == 0.5 ? "0.25" : "0.5";
    case OptionType::Choice:
      for (const std::string& choice : option.spec.choices) {
        if (choice != fallback) {
          return choice;
        }
      }
      break;
    case OptionType::List:
      return option.spec.choices.front();
    case OptionType::Text:
      // free text: a held-out file where the default is none, else another name (a profile's);
      // the GPU list's words are checked
      if (option.spec.name == "gpus") {
        return "0,1";
      }
      return fallback.empty() ? "held-out.jsonl" : fallback + "other";
  }
  return fallback;
}

json settingsJson(const std::vector<std::pair<std::string, std::string>>& options, bool demo) {
  job::TrainRunSettings settings = job::defaultSettings(demo);
  job::applyOptions(settings, options);
  return job::settingsToJson(settings);
}

}  // namespace

class TestRunOptions : public QObject {
  Q_OBJECT

 private slots:
  void everyOptionReachesTheParserHelpAndConfigJson() {
    const std::string help = job::formatHelp(job::trainCommand(), "lorascope-train");
    const std::string synopsis = job::synopsis(job::trainCommand());
    QVERIFY(job::runOptions().size() >= 27);
    for (const RunOption& option : job::runOptions()) {
      const std::string& name = option.spec.name;
      const std::string value = otherValue(option);
      QVERIFY2(value != option.spec.defaultText, name.c_str());
      // The command line: --name value (and --name / --no-name for booleans).
      const job::CliArgs parsed({"--" + name, value}, job::trainCommand());
      QVERIFY2(parsed.value(name) == value, name.c_str());
      if (option.spec.type == OptionType::Bool) {
        QVERIFY(job::CliArgs({"--no-" + name}, job::trainCommand()).value(name) == "false");
        QVERIFY(job::CliArgs({"--" + name}, job::trainCommand()).has(name));
      }
      // --help and the usage line name it, with its form and default.
      QVERIFY2(help.find("  " + job::optionForm(option.spec) + "\n") != std::string::npos,
               name.c_str());
      QVERIFY2(synopsis.find("[--" + name) != std::string::npos, name.c_str());
      QVERIFY2(option.spec.help.size() > 10 && !option.setting.label.empty() &&
                   !option.setting.group.empty(),
               name.c_str());
      // The run's config.json keeps it: a changed value survives settingsToJson → FromJson.
      job::TrainRunSettings settings = job::defaultSettings(false);
      const json before = option.get(settings);
      job::applyOptions(settings, std::map<std::string, std::string>{{name, value}});
      QVERIFY2(option.get(settings) != before, name.c_str());
      const json training = job::settingsToJson(settings);
      QVERIFY2(training.contains(json::json_pointer(option.setting.configKey)), name.c_str());
      const job::TrainRunSettings back = job::settingsFromJson(training, "config.json");
      QVERIFY2(option.get(back) == option.get(settings), name.c_str());
      // The default parses and is what defaultSettings holds.
      QVERIFY2(option.get(job::defaultSettings(true)) ==
                   job::parseOptionValue(option.spec, option.defaultFor(true)),
               name.c_str());
    }
  }

  void liveOptionsNameTheirToggle() {
    std::set<settings::Toggle> toggles;
    for (const RunOption& option : job::runOptions()) {
      const settings::Setting& setting = option.setting;
      if (setting.apply == settings::Apply::Live) {
        QVERIFY(setting.toggle.has_value());  // the Controls dock changes it through its toggle
      }
      if (setting.toggle) {
        QVERIFY(toggles.insert(*setting.toggle).second);  // one option per toggle
      }
    }
    // Every toggle is an option's; activation checkpointing is one that profiles set, not the
    // Controls dock (the Setup page fixes it when a run starts).
    QCOMPARE(toggles.size(), std::size_t{8});
    QVERIFY(toggles.count(settings::Toggle::ActivationCheckpointing));
    QVERIFY(job::findRunOption("activation-checkpointing")->setting.apply ==
            settings::Apply::Restart);
  }

  // The targets the registry offers are the trainer's LoRA modules, named as it names them.
  void targetChoicesAreTheTrainersModules() {
    std::vector<std::string> modules;
    for (train::LoraModule module : train::kAllLoraModules) {
      modules.emplace_back(train::shortName(module));
    }
    QVERIFY(job::findRunOption("targets")->spec.choices == modules);
  }

  // --gpus: its words checked (the machine's GPUs are checked when the run starts), a list makes
  // the device gpu, and --device cpu beside one is refused.
  void gpusListAGroupOnGpus() {
    job::TrainRunSettings settings = job::defaultSettings(false);
    QCOMPARE(settings.gpus, std::string());
    job::applyOptions(settings, std::map<std::string, std::string>{{"gpus", " 1, 0 "}});
    QCOMPARE(settings.gpus, std::string("1,0"));
    QCOMPARE(settings.device, std::string("gpu"));
    job::applyOptions(settings, std::map<std::string, std::string>{{"gpus", "all"}});
    QCOMPARE(settings.gpus, std::string("all"));
    const auto refusal = [](const std::map<std::string, std::string>& options) {
      job::TrainRunSettings s = job::defaultSettings(false);
      try {
        job::applyOptions(s, options);
      } catch (const job::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    QCOMPARE(refusal({{"gpus", "0,0"}}),
             std::string("--gpus \"0,0\": GPU 0 is named twice; each GPU runs one rank"));
    QCOMPARE(refusal({{"gpus", "0,x"}}),
             std::string("--gpus \"0,x\": \"x\" is not a GPU index (0, 1, ...); use e.g. 0,1 "
                         "or all"));
    QCOMPARE(refusal({{"gpus", "0,1"}, {"device", "cpu"}}),
             std::string("--gpus 0,1 trains on GPUs; --device cpu contradicts it (leave --device "
                         "out, or give --device gpu)"));
    QCOMPARE(refusal({{"gpus", "0,1"}, {"device", "gpu"}}), std::string("accepted"));
    QVERIFY(job::findRunOption("gpus")->setting.apply == settings::Apply::Restart);
  }

  void optionsApplyInAnyOrder() {
    std::vector<std::pair<std::string, std::string>> options = {
        {"steps", "7"}, {"epochs", "3"}, {"batch-size", "2"}, {"lr", "1e-3"}, {"device", "cpu"}};
    std::sort(options.begin(), options.end());
    const json first = settingsJson(options, true);
    QCOMPARE(first["max_steps"].get<int>(), 7);  // steps given: it limits the run
    QCOMPARE(first["epochs"].get<int>(), 3);
    int orders = 0;
    do {
      QCOMPARE(settingsJson(options, true), first);
      ++orders;
    } while (std::next_permutation(options.begin(), options.end()));
    QCOMPARE(orders, 120);
    // Epochs without steps: the run goes by epochs, whichever order the rest came in.
    std::vector<std::pair<std::string, std::string>> byEpochs = {{"lr", "1e-3"}, {"epochs", "2"}};
    QCOMPARE(settingsJson(byEpochs, true)["max_steps"].get<int>(), 0);
    std::reverse(byEpochs.begin(), byEpochs.end());
    QCOMPARE(settingsJson(byEpochs, true)["max_steps"].get<int>(), 0);
  }

  // group-by-length changes each epoch's order: a run made before the option existed has no
  // group_by_length in its config.json and resumes with it off, in the order it started with.
  void groupByLengthIsOffForRunsThatPredateIt() {
    job::TrainRunSettings grouped = job::defaultSettings(false);
    QVERIFY(!grouped.train.groupByLength);
    job::applyOptions(grouped, std::map<std::string, std::string>{{"group-by-length", "true"}});
    json training = job::settingsToJson(grouped);
    QCOMPARE(training.at("group_by_length"), json(true));
    QVERIFY(job::settingsFromJson(training, "config.json").train.groupByLength);
    training.erase("group_by_length");
    QVERIFY(!job::settingsFromJson(training, "config.json").train.groupByLength);
    QVERIFY(job::CliArgs({"--no-group-by-length"}, job::trainCommand()).value("group-by-length") ==
            "false");
  }

  // packing was a Bool before document packing: a config.json with true or false resumes causal
  // or off, and is written back with the choice's name.
  void packingFromBeforeDocumentsReadsAsBefore() {
    json training = job::settingsToJson(job::defaultSettings(false));
    QCOMPARE(training.at("packing"), json("off"));
    training["packing"] = true;
    job::TrainRunSettings s = job::settingsFromJson(training, "config.json");
    QVERIFY(s.train.packing == train::Packing::Causal);
    QCOMPARE(job::settingsToJson(s).at("packing"), json("causal"));
    training["packing"] = false;
    QVERIFY(job::settingsFromJson(training, "config.json").train.packing == train::Packing::Off);
    training["packing"] = "documents";
    s = job::settingsFromJson(training, "config.json");
    QVERIFY(s.train.packing == train::Packing::Documents);
    QCOMPARE(job::settingsToJson(s).at("packing"), json("documents"));
  }

  void badValuesNameTheOption() {
    auto message = [](const std::vector<std::string>& args) {
      try {
        job::CliArgs parsed(args, job::trainCommand());
      } catch (const job::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    QCOMPARE(message({"--lora-r", "0"}), std::string("--lora-r needs an integer from 1 to 4096, "
                                                     "got '0'"));
    QCOMPARE(message({"--schedule", "steep"}),
             std::string("--schedule needs one of constant, linear, cosine, got 'steep'"));
    QCOMPARE(message({"--targets", "q,x"}),
             std::string("--targets needs a comma-separated list of q, k, v, o, gate, up, down, "
                         "got 'q,x'"));
    QCOMPARE(message({"--memory-margin", "0.9"}),
             std::string("--memory-margin needs a number in [0, 0.9), got '0.9'"));
    QCOMPARE(message({"--batch-size", "auto"}), std::string("accepted"));
    // A boolean takes a following true/false, and leaves any other word to the positionals.
    QVERIFY(!job::CliArgs({"--shuffle", "false"}, job::trainCommand()).has("shuffle"));
    const job::CliArgs maybe({"--shuffle", "maybe"}, job::trainCommand());
    QVERIFY(maybe.has("shuffle"));
    QCOMPARE(maybe.positional(), std::vector<std::string>{"maybe"});
    // A choice with a flag value (--packing): alone it is that value, --no-packing and false the
    // first choice, and it takes a following choice or boolean word, leaving others.
    const auto packing = [](const std::vector<std::string>& args) {
      return job::CliArgs(args, job::trainCommand()).value("packing").value_or("absent");
    };
    QCOMPARE(packing({"--packing"}), std::string("causal"));
    QCOMPARE(packing({"--packing", "documents"}), std::string("documents"));
    QCOMPARE(packing({"--packing=documents"}), std::string("documents"));
    QCOMPARE(packing({"--packing", "true"}), std::string("causal"));
    QCOMPARE(packing({"--packing", "false"}), std::string("off"));
    QCOMPARE(packing({"--no-packing"}), std::string("off"));
    const job::CliArgs word({"--packing", "maybe"}, job::trainCommand());
    QCOMPARE(word.value("packing").value_or(""), std::string("causal"));
    QCOMPARE(word.positional(), std::vector<std::string>{"maybe"});
    QCOMPARE(message({"--packing=sideways"}),
             std::string("--packing needs one of off, causal, documents, got 'sideways'"));
  }

  void aConfigFromBeforeTheNewerOptionsTakesTheirDefaults() {
    json training = job::settingsToJson(job::defaultSettings(false));
    for (const RunOption& option : job::runOptions()) {
      if (option.setting.optionalInConfig) {
        training.erase(option.setting.configKey.substr(1));
      }
    }
    training.erase("auto_micro_batch");
    const job::TrainRunSettings s = job::settingsFromJson(training, "old/config.json");
    QCOMPARE(s.gemmBackend, std::string("vendor"));
    QCOMPARE(s.memoryMargin, 0.10);
    // A value outside today's range (an older version allowed any seed) still resumes.
    training["seed"] = 3'000'000'000u;
    QCOMPARE(job::settingsFromJson(training, "old/config.json").train.seed,
             std::uint64_t{3'000'000'000u});
    json broken = training;
    broken["lora"].erase("r");
    QVERIFY_THROWS_EXCEPTION(job::UsageError, job::settingsFromJson(broken, "old/config.json"));
  }

  // config.json's "training" is read back strictly (common/JsonReader.h): a field of the wrong
  // type, which the JSON library would have converted (true as 1.0, 2.5 as 2), is refused naming
  // the file and the field.
  void aResumedConfigIsReadStrictlyNamingTheField() {
    const json training = job::settingsToJson(job::defaultSettings(false));
    const auto refusal = [](const json& bad) {
      try {
        job::settingsFromJson(bad, "run/config.json");
      } catch (const job::UsageError& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    const std::string prefix = "run/config.json: \"training\" does not hold valid settings: ";
    json bad = training;
    bad["adamw"]["beta1"] = true;
    QCOMPARE(refusal(bad), prefix + "adamw.beta1: must be a number");
    bad = training;
    bad["micro_batch_size"] = 2.5;
    QCOMPARE(refusal(bad), prefix + "micro_batch_size: must be a whole number");
    bad = training;
    bad["auto_micro_batch"] = "no";
    QCOMPARE(refusal(bad), prefix + "auto_micro_batch: must be true or false");
    bad = training;
    bad["lora"].erase("r");
    QCOMPARE(refusal(bad), prefix + "lora.r: missing");
    QCOMPARE(refusal(training), std::string("accepted"));
  }
};

QTEST_GUILESS_MAIN(TestRunOptions)
#include "test_run_options.moc"
