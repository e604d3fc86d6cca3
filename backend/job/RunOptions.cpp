// job/RunOptions.cpp — where a run keeps each run setting: the accessors of TrainRunSettings, by
// option name. The settings themselves (names, types, ranges, defaults, help) are the registry's
// (settings/Registry.h).
#include "job/RunOptions.h"

#include <algorithm>
#include <stdexcept>

#include "group/RankPlan.h"            // defines: normalGpuList
#include "job/TrainRunConfig.h"        // defines: TrainRunSettings
#include "model/WeightQuantization.h"  // defines: quantizationName, parseQuantization

namespace lorascope::job {
using nlohmann::json;

namespace {

std::int64_t whole(const json& v) {
  return v.get<std::int64_t>();
}

// --gpus with its words checked (the machine's GPUs are checked when the run starts).
std::string checkedGpus(const std::string& text) {
  try {
    return group::normalGpuList(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

struct Access {
  std::string name;
  std::function<json(const TrainRunSettings&)> get;
  std::function<void(TrainRunSettings&, const json&)> set;
};

// The option's value in the settings as parseOptionValue returns it, and back. `set` takes a
// checked value and touches only this option's fields.
std::vector<Access> accessors() {
  return {
      {"lora-r", [](auto& s) { return json(s.train.lora.rank); },
       [](auto& s, auto& v) { s.train.lora.rank = static_cast<int>(whole(v)); }},
      {"lora-alpha", [](auto& s) { return json(s.train.lora.alpha); },
       [](auto& s, auto& v) { s.train.lora.alpha = v.template get<double>(); }},
      {"lora-dropout", [](auto& s) { return json(s.train.lora.dropout); },
       [](auto& s, auto& v) { s.train.lora.dropout = v.template get<double>(); }},
      {"rslora", [](auto& s) { return json(s.train.lora.useRslora); },
       [](auto& s, auto& v) { s.train.lora.useRslora = v.template get<bool>(); }},
      {"targets",
       [](auto& s) {
         json names = json::array();
         for (train::LoraModule m : s.train.lora.targets) {
           names.push_back(train::shortName(m));
         }
         return names;
       },
       [](auto& s, auto& v) {
         s.train.lora.targets.clear();
         for (const json& name : v) {
           s.train.lora.targets.insert(train::parseLoraModule(name.template get<std::string>()));
         }
       }},
      {"lr", [](auto& s) { return json(s.train.adamw.learningRate); },
       [](auto& s, auto& v) { s.train.adamw.learningRate = v.template get<double>(); }},
      {"schedule", [](auto& s) { return json(train::toString(s.train.schedule)); },
       [](auto& s, auto& v) {
         s.train.schedule = train::parseScheduleKind(v.template get<std::string>());
       }},
      {"warmup", [](auto& s) { return json(s.train.warmupSteps); },
       [](auto& s, auto& v) { s.train.warmupSteps = whole(v); }},
      {"epochs", [](auto& s) { return json(s.train.epochs); },
       [](auto& s, auto& v) { s.train.epochs = whole(v); }},
      {"steps", [](auto& s) { return json(s.train.maxSteps); },
       [](auto& s, auto& v) { s.train.maxSteps = whole(v); }},
      {"batch-size",
       [](auto& s) { return s.autoMicroBatch ? json("auto") : json(s.train.microBatchSize); },
       [](auto& s, auto& v) {
         s.autoMicroBatch = v.is_string();
         if (!s.autoMicroBatch) {
           s.train.microBatchSize = whole(v);
         }
       }},
      {"memory-margin", [](auto& s) { return json(s.memoryMargin); },
       [](auto& s, auto& v) { s.memoryMargin = v.template get<double>(); }},
      {"grad-accum", [](auto& s) { return json(s.train.gradAccumulation); },
       [](auto& s, auto& v) { s.train.gradAccumulation = whole(v); }},
      {"max-seq-len", [](auto& s) { return json(s.train.maxSeqLen); },
       [](auto& s, auto& v) { s.train.maxSeqLen = whole(v); }},
      {"weight-decay", [](auto& s) { return json(s.train.adamw.weightDecay); },
       [](auto& s, auto& v) { s.train.adamw.weightDecay = v.template get<double>(); }},
      {"max-grad-norm", [](auto& s) { return json(s.train.maxGradNorm); },
       [](auto& s, auto& v) { s.train.maxGradNorm = v.template get<double>(); }},
      {"non-finite-steps", [](auto& s) { return json(s.train.nonFiniteStepLimit); },
       [](auto& s, auto& v) { s.train.nonFiniteStepLimit = whole(v); }},
      {"seed", [](auto& s) { return json(s.train.seed); },
       [](auto& s, auto& v) { s.train.seed = static_cast<std::uint64_t>(whole(v)); }},
      {"shuffle", [](auto& s) { return json(s.train.shuffle); },
       [](auto& s, auto& v) { s.train.shuffle = v.template get<bool>(); }},
      {"packing", [](auto& s) { return json(train::packingName(s.train.packing)); },
       [](auto& s, auto& v) {
         s.train.packing = train::parsePacking(v.template get<std::string>());
       }},
      {"group-by-length", [](auto& s) { return json(s.train.groupByLength); },
       [](auto& s, auto& v) { s.train.groupByLength = v.template get<bool>(); }},
      {"activation-checkpointing", [](auto& s) { return json(s.train.activationCheckpointing); },
       [](auto& s, auto& v) { s.train.activationCheckpointing = v.template get<bool>(); }},
      {"quantize", [](auto& s) { return json(model::quantizationName(s.train.quantization)); },
       [](auto& s, auto& v) {
         s.train.quantization = *model::parseQuantization(v.template get<std::string>());
       }},
      {"eval-data", [](auto& s) { return json(s.evalData); },
       [](auto& s, auto& v) { s.evalData = v.template get<std::string>(); }},
      {"eval-split", [](auto& s) { return json(s.evalSplit); },
       [](auto& s, auto& v) { s.evalSplit = v.template get<double>(); }},
      {"eval-every", [](auto& s) { return json(s.evalEvery); },
       [](auto& s, auto& v) { s.evalEvery = whole(v); }},
      {"early-stopping-patience", [](auto& s) { return json(s.earlyStoppingPatience); },
       [](auto& s, auto& v) { s.earlyStoppingPatience = whole(v); }},
      {"checkpoint-every", [](auto& s) { return json(s.checkpointEvery); },
       [](auto& s, auto& v) { s.checkpointEvery = whole(v); }},
      {"keep-checkpoints", [](auto& s) { return json(s.keepCheckpoints); },
       [](auto& s, auto& v) { s.keepCheckpoints = static_cast<int>(whole(v)); }},
      {"device", [](auto& s) { return json(s.device); },
       [](auto& s, auto& v) { s.device = v.template get<std::string>(); }},
      {"serialize-kernels", [](auto& s) { return json(s.serializeKernels); },
       [](auto& s, auto& v) { s.serializeKernels = v.template get<bool>(); }},
      {"blocking-launches", [](auto& s) { return json(s.blockingLaunches); },
       [](auto& s, auto& v) { s.blockingLaunches = v.template get<bool>(); }},
      {"gemm-backend", [](auto& s) { return json(s.gemmBackend); },
       [](auto& s, auto& v) { s.gemmBackend = v.template get<std::string>(); }},
      {"allocator-policy", [](auto& s) { return json(s.allocatorPolicy); },
       [](auto& s, auto& v) { s.allocatorPolicy = v.template get<std::string>(); }},
      {"graph", [](auto& s) { return json(s.graph); },
       [](auto& s, auto& v) { s.graph = v.template get<bool>(); }},
      {"gpus", [](auto& s) { return json(s.gpus); },
       [](auto& s, auto& v) { s.gpus = checkedGpus(v.template get<std::string>()); }},
      {"profile", [](auto& s) { return json(s.profile); },
       [](auto& s, auto& v) { s.profile = v.template get<std::string>(); }},
  };
}

}  // namespace

const std::vector<RunOption>& runOptions() {
  static const std::vector<RunOption> table = [] {
    std::vector<RunOption> options;
    std::vector<Access> fields = accessors();
    for (const settings::Setting& setting : settings::registry().all()) {
      auto field = std::find_if(fields.begin(), fields.end(),
                                [&](const Access& a) { return a.name == setting.option.name; });
      if (field != fields.end()) {
        options.push_back({setting, setting.option, std::move(field->get), std::move(field->set)});
        fields.erase(field);
      }
    }
    if (!fields.empty()) {
      throw std::logic_error("run option --" + fields.front().name +
                             " has no entry in the settings registry");
    }
    return options;
  }();
  return table;
}

const RunOption* findRunOption(const std::string& name) {
  for (const RunOption& option : runOptions()) {
    if (option.spec.name == name) {
      return &option;
    }
  }
  return nullptr;
}

const CommandSpec& trainCommand() {
  static const CommandSpec command = [] {
    CommandSpec c;
    c.name = "train";
    c.summary =
        "LoRA training into a run folder: --model DIR --data FILE --out RUN_DIR for a new run, "
        "--demo for the built-in demo model and dataset, or --resume RUN_DIR to continue a run "
        "from its checkpoint with its own settings (only --device, --gpus and --checkpoint may "
        "be given beside it). Options come from the command line over a --config file (a JSON "
        "object keyed by option name) over the defaults (the demo has its own; shown as "
        "'demo'). Ctrl-C checkpoints and exits with status 130.";
    c.options = {
        settings::textOption(
            "model", "DIR",
            "The base model: a Hugging Face folder (config.json, safetensors, "
            "tokenizer), or a model id (org/name[@revision]) in the local Hugging Face cache."),
        settings::textOption("data", "FILE",
                             "The dataset: JSONL or a JSON array (alpaca, chat messages, ShareGPT, "
                             "prompt/completion or text)."),
        settings::textOption("out", "RUN_DIR",
                             "The run folder to create (with --demo: lorascope-demo-run)."),
        settings::boolOption(
            "demo", "false",
            "Train the built-in demo: a pretrained 3 M-parameter Llama learns to "
            "write a word in upper case (40 examples), under a minute on the CPU."),
        settings::textOption("resume", "RUN_DIR", "Continue this run from its newest checkpoint."),
        settings::integerOption(
            "checkpoint", 1, 1e15, "", "optimizer steps",
            "With --resume: the step of the checkpoint to continue from (default: the "
            "newest)."),
        settings::textOption("config", "FILE",
                             "A JSON object of option names and values, e.g. {\"lr\": 1e-4, "
                             "\"lora-r\": 16}."),
        settings::boolOption(
            "json", "false",
            "Print the engine's events, one JSON line each (backend/engine/Protocol.h), and "
            "nothing else on stdout; read the engine's commands from stdin, one JSON line each "
            "(set, request_snapshot, checkpoint_now, pause, resume, switch_profile, undo_rung, "
            "stop), as the window sends them."),
    };
    c.sections.push_back(
        {"run", {"model", "data", "out", "demo", "resume", "checkpoint", "config", "json"}});
    for (const settings::Setting& setting : settings::registry().all()) {
      OptionSpec spec = setting.option;
      const std::string demo = setting.defaultFor(true);
      if (demo != setting.option.defaultText) {
        spec.defaultText += ", demo " + demo;
      }
      spec.help += setting.apply == settings::Apply::Live ? " Live: the controls dock changes it "
                                                            "during a run."
                                                          : "";
      c.options.push_back(spec);
      auto section = std::find_if(c.sections.begin(), c.sections.end(),
                                  [&](const auto& s) { return s.first == setting.group; });
      if (section == c.sections.end()) {
        c.sections.push_back({setting.group, {}});
        section = std::prev(c.sections.end());
      }
      section->second.push_back(spec.name);
    }
    return c;
  }();
  return command;
}

}  // namespace lorascope::job
