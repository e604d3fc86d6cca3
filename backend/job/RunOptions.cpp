// job/RunOptions.cpp — the run options table. Each entry: the option as the command line sees
// it, the GUI's label and group, live or restart, its config.json key, and its accessors.
#include "job/RunOptions.h"

#include <algorithm>
#include <climits>

#include "job/TrainRunConfig.h"   // defines: TrainRunSettings
#include "model/DeviceWeights.h"  // defines: quantizationName, parseQuantization

namespace lorascope::job {
using nlohmann::json;

namespace {

using T = OptionType;

std::vector<std::string> loraTargetNames() {
  std::vector<std::string> names;
  for (train::LoraModule module : train::kAllLoraModules) {
    names.emplace_back(train::shortName(module));
  }
  return names;
}

// Builders that keep each table entry on a few lines.
OptionSpec integer(std::string name, double min, double max, std::string defaultText,
                   std::string unit, std::string help) {
  OptionSpec s{.name = std::move(name),
               .type = T::Integer,
               .help = std::move(help),
               .defaultText = std::move(defaultText),
               .min = min,
               .max = max};
  s.unit = std::move(unit);
  return s;
}
OptionSpec real(std::string name, double min, double max, std::string defaultText, std::string unit,
                std::string help) {
  OptionSpec s =
      integer(std::move(name), min, max, std::move(defaultText), std::move(unit), std::move(help));
  s.type = T::Real;
  return s;
}
OptionSpec boolean(std::string name, std::string defaultText, std::string help) {
  return {.name = std::move(name),
          .type = T::Bool,
          .help = std::move(help),
          .defaultText = std::move(defaultText)};
}
OptionSpec choice(std::string name, std::vector<std::string> choices, std::string defaultText,
                  std::string help) {
  return {.name = std::move(name),
          .type = T::Choice,
          .help = std::move(help),
          .defaultText = std::move(defaultText),
          .choices = std::move(choices)};
}
OptionSpec withZero(OptionSpec spec, std::string zeroMeans) {
  spec.zeroMeans = std::move(zeroMeans);
  return spec;
}

std::int64_t whole(const json& v) {
  return v.get<std::int64_t>();
}

std::vector<RunOption> buildTable() {
  std::vector<RunOption> t;
  auto add = [&](OptionSpec spec, std::string label, std::string group, std::string configKey,
                 auto get, auto set) -> RunOption& {
    RunOption& o = t.emplace_back();
    o.spec = std::move(spec);
    o.label = std::move(label);
    o.group = std::move(group);
    o.configKey = std::move(configKey);
    o.get = get;
    o.set = set;
    return o;
  };

  // ---- LoRA
  add(
      integer("lora-r", 1, 4096, "8", "",
              "The adapter's rank r: capacity and memory grow with it."),
      "Rank r", "LoRA", "/lora/r", [](auto& s) { return json(s.train.lora.rank); },
      [](auto& s, auto& v) { s.train.lora.rank = static_cast<int>(whole(v)); });
  add(
      real("lora-alpha", 0.01, 4096, "16", "",
           "The update is scaled by alpha / r (alpha / sqrt(r) with rsLoRA)."),
      "Alpha", "LoRA", "/lora/alpha", [](auto& s) { return json(s.train.lora.alpha); },
      [](auto& s, auto& v) { s.train.lora.alpha = v.template get<double>(); });
  {
    OptionSpec spec =
        real("lora-dropout", 0, 0.9, "0", "", "Dropout on the adapter's input during training.");
    add(
        spec, "Dropout", "LoRA", "/lora/dropout",
        [](auto& s) { return json(s.train.lora.dropout); },
        [](auto& s, auto& v) { s.train.lora.dropout = v.template get<double>(); });
  }
  add(
      boolean("rslora", "false",
              "Rank-stabilised LoRA: scale by alpha / sqrt(r) instead of "
              "alpha / r."),
      "rsLoRA scaling", "LoRA", "/lora/use_rslora",
      [](auto& s) { return json(s.train.lora.useRslora); },
      [](auto& s, auto& v) { s.train.lora.useRslora = v.template get<bool>(); });
  {
    OptionSpec spec{.name = "targets",
                    .type = T::List,
                    .help = "The projections that get an adapter, in every layer.",
                    .defaultText = "q,k,v,o,gate,up,down",
                    .choices = loraTargetNames()};
    add(
        spec, "Targets", "LoRA", "/lora/targets",
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
        });
  }

  // ---- Training
  add(
      real("lr", 1e-9, 1, "2e-4", "", "Peak learning rate of AdamW."), "Learning rate", "Training",
      "/adamw/lr", [](auto& s) { return json(s.train.adamw.learningRate); },
      [](auto& s, auto& v) { s.train.adamw.learningRate = v.template get<double>(); })
      .demoDefault = "3e-3";
  add(
      choice("schedule", {"constant", "linear", "cosine"}, "linear",
             "How the rate falls after warmup."),
      "Schedule", "Training", "/schedule",
      [](auto& s) { return json(train::toString(s.train.schedule)); },
      [](auto& s, auto& v) {
        s.train.schedule = train::parseScheduleKind(v.template get<std::string>());
      })
      .demoDefault = "cosine";
  add(
      integer("warmup", 0, 1'000'000, "0", "optimizer steps",
              "Steps of linear warmup to the peak rate."),
      "Warmup steps", "Training", "/warmup_steps",
      [](auto& s) { return json(s.train.warmupSteps); },
      [](auto& s, auto& v) { s.train.warmupSteps = whole(v); })
      .demoDefault = "3";
  add(
      integer("epochs", 1, 10'000, "1", "",
              "Passes over the dataset; given without --steps, the run goes by epochs."),
      "Epochs", "Training", "/epochs", [](auto& s) { return json(s.train.epochs); },
      [](auto& s, auto& v) { s.train.epochs = whole(v); });
  add(
      withZero(integer("steps", 0, 100'000'000, "0", "optimizer steps",
                       "Optimizer steps to run; when set, it limits the run before the epochs "
                       "end."),
               "by epochs"),
      "Max steps", "Training", "/max_steps", [](auto& s) { return json(s.train.maxSteps); },
      [](auto& s, auto& v) { s.train.maxSteps = whole(v); })
      .demoDefault = "60";
  {
    OptionSpec spec = integer("batch-size", 1, 4096, "4", "sequences",
                              "Sequences per forward/backward pass (the micro-batch). auto: the "
                              "largest that fits the device's free memory, keeping the effective "
                              "batch.");
    spec.special = "auto";
    RunOption& o = add(
        spec, "Micro-batch", "Training", "/micro_batch_size",
        [](auto& s) { return s.autoMicroBatch ? json("auto") : json(s.train.microBatchSize); },
        [](auto& s, auto& v) {
          s.autoMicroBatch = v.is_string();
          if (!s.autoMicroBatch) {
            s.train.microBatchSize = whole(v);
          }
        });
    o.demoDefault = "8";
    o.apply = ApplyMode::Live;
    o.toggle = engine::Toggle::MicroBatch;
  }
  add(
      real("memory-margin", 0, 0.9, "0.10", "fraction of free memory",
           "With --batch-size auto: the share of free memory kept back for the unforeseen."),
      "Memory margin", "Training", "/memory_margin", [](auto& s) { return json(s.memoryMargin); },
      [](auto& s, auto& v) { s.memoryMargin = v.template get<double>(); })
      .spec.maxExclusive = true;
  t.back().optionalInConfig = true;
  add(
      integer("grad-accum", 1, 4096, "1", "micro-batches",
              "Micro-batches per optimizer step: effective batch = micro-batch x this."),
      "Accumulation", "Training", "/grad_accumulation",
      [](auto& s) { return json(s.train.gradAccumulation); },
      [](auto& s, auto& v) { s.train.gradAccumulation = whole(v); });
  add(
      integer("max-seq-len", 2, 1 << 20, "1024", "tokens",
              "Longest sequence; longer examples are truncated."),
      "Sequence length", "Training", "/max_seq_len",
      [](auto& s) { return json(s.train.maxSeqLen); },
      [](auto& s, auto& v) { s.train.maxSeqLen = whole(v); })
      .demoDefault = "128";
  add(
      real("weight-decay", 0, 10, "0", "", "AdamW's decoupled weight decay."), "Weight decay",
      "Training", "/adamw/weight_decay", [](auto& s) { return json(s.train.adamw.weightDecay); },
      [](auto& s, auto& v) { s.train.adamw.weightDecay = v.template get<double>(); });
  add(
      withZero(real("max-grad-norm", 0, 1e6, "1", "", "Gradients are clipped to this global norm."),
               "no clipping"),
      "Gradient clip", "Training", "/max_grad_norm",
      [](auto& s) { return json(s.train.maxGradNorm); },
      [](auto& s, auto& v) { s.train.maxGradNorm = v.template get<double>(); });
  add(
      integer("non-finite-steps", 1, 1'000'000, "3", "optimizer steps",
              "A step whose loss or gradient norm is NaN or infinite is skipped; this many in a "
              "row stop the run with the last finite state checkpointed."),
      "Non-finite stop", "Training", "/non_finite_step_limit",
      [](auto& s) { return json(s.train.nonFiniteStepLimit); },
      [](auto& s, auto& v) { s.train.nonFiniteStepLimit = whole(v); })
      .optionalInConfig = true;
  add(
      integer("seed", 0, INT_MAX, "42", "",
              "Seeds the adapter's initialisation, dropout and the data order."),
      "Seed", "Training", "/seed", [](auto& s) { return json(s.train.seed); },
      [](auto& s, auto& v) { s.train.seed = static_cast<std::uint64_t>(whole(v)); });
  add(
      boolean("shuffle", "true", "Shuffle the examples each epoch."), "Shuffle examples",
      "Training", "/shuffle", [](auto& s) { return json(s.train.shuffle); },
      [](auto& s, auto& v) { s.train.shuffle = v.template get<bool>(); });
  add(
      boolean("packing", "false", "Pack several short examples into one sequence (no padding)."),
      "Pack short examples", "Training", "/packing", [](auto& s) { return json(s.train.packing); },
      [](auto& s, auto& v) { s.train.packing = v.template get<bool>(); });
  add(
      boolean("group-by-length", "false",
              "Put examples of similar length into the same batches (each epoch's order, from "
              "the seed, like Hugging Face's group_by_length), so that far less padding is "
              "computed. The batch with the longest example comes first."),
      "Group by length", "Training", "/group_by_length",
      [](auto& s) { return json(s.train.groupByLength); },
      [](auto& s, auto& v) { s.train.groupByLength = v.template get<bool>(); })
      .optionalInConfig = true;
  add(
      boolean("activation-checkpointing", "false",
              "Recompute each layer's activations in the backward pass: less memory, about a "
              "third more compute."),
      "Activation checkpointing", "Training", "/activation_checkpointing",
      [](auto& s) { return json(s.train.activationCheckpointing); },
      [](auto& s, auto& v) { s.train.activationCheckpointing = v.template get<bool>(); });
  add(
      choice("quantize", {"none", "nf4"}, "none",
             "nf4: hold the frozen projections (q, k, v, o, gate, up, down) in 4 bits, NF4 with "
             "double quantisation as in QLoRA, quantised from the stored weights when the model "
             "loads: about 0.52 bytes a weight instead of 2. The adapter and the compute stay "
             "bf16 (f32 on the CPU); the adapter is for the unquantised base model."),
      "Base weights", "Training", "/quantize",
      [](auto& s) { return json(model::quantizationName(s.train.quantization)); },
      [](auto& s, auto& v) {
        s.train.quantization = *model::parseQuantization(v.template get<std::string>());
      })
      .optionalInConfig = true;

  // ---- Evaluation (train/Evaluation.h)
  add(
      OptionSpec{.name = "eval-data",
                 .type = T::Text,
                 .help = "A held-out dataset (same formats as --data): its loss is evaluated "
                         "every --eval-every steps and after the last step.",
                 .valueName = "FILE",
                 .emptyAllowed = true},
      "Eval data", "Evaluation", "/eval/data", [](auto& s) { return json(s.evalData); },
      [](auto& s, auto& v) { s.evalData = v.template get<std::string>(); })
      .optionalInConfig = true;
  add(
      withZero(real("eval-split", 0, 0.5, "0", "fraction of the examples",
                    "Hold out this share of the training data (a fixed split drawn from --seed) "
                    "and evaluate on it instead of a file."),
               "no split"),
      "Eval split", "Evaluation", "/eval/split", [](auto& s) { return json(s.evalSplit); },
      [](auto& s, auto& v) { s.evalSplit = v.template get<double>(); })
      .optionalInConfig = true;
  add(
      withZero(integer("eval-every", 0, 1'000'000, "0", "optimizer steps",
                       "Evaluate the held-out loss every N steps (and always after the last)."),
               "only at the end"),
      "Evaluate every", "Evaluation", "/eval/every", [](auto& s) { return json(s.evalEvery); },
      [](auto& s, auto& v) { s.evalEvery = whole(v); })
      .optionalInConfig = true;
  add(
      withZero(integer("early-stopping-patience", 0, 1'000'000, "0", "evaluations",
                       "Stop the run when this many evaluations in a row do not lower the best "
                       "eval loss; the final adapter is the last step's."),
               "off"),
      "Early stopping patience", "Evaluation", "/eval/early_stopping_patience",
      [](auto& s) { return json(s.earlyStoppingPatience); },
      [](auto& s, auto& v) { s.earlyStoppingPatience = whole(v); })
      .optionalInConfig = true;

  // ---- Checkpoints
  add(
      withZero(integer("checkpoint-every", 0, 1'000'000, "50", "optimizer steps",
                       "Write a checkpoint every N steps."),
               "only at the end"),
      "Checkpoint every", "Checkpoints", "/checkpoint_every",
      [](auto& s) { return json(s.checkpointEvery); },
      [](auto& s, auto& v) { s.checkpointEvery = whole(v); })
      .demoDefault = "20";
  add(
      withZero(integer("keep-checkpoints", 0, 100'000, "3", "",
                       "How many of the newest checkpoints are kept."),
               "keep all"),
      "Keep checkpoints", "Checkpoints", "/keep_checkpoints",
      [](auto& s) { return json(s.keepCheckpoints); },
      [](auto& s, auto& v) { s.keepCheckpoints = static_cast<int>(whole(v)); });

  // ---- Device and stability (the controls dock's toggles; the recovery ladder sets them too)
  {
    RunOption& o = add(
        choice("device", {"cpu", "gpu", "auto"}, "cpu",
               "Where the run computes; auto: the GPU when one is usable. During "
               "a run it moves between GPU and CPU with its state (CPU "
               "fallback)."),
        "Device", "Device", "/device", [](auto& s) { return json(s.device); },
        [](auto& s, auto& v) { s.device = v.template get<std::string>(); });
    o.apply = ApplyMode::Live;
    o.toggle = engine::Toggle::CpuFallback;
    o.toggleValues = {{"gpu", false}, {"cpu", true}};
  }
  auto live = [&](engine::Toggle toggle) {
    t.back().apply = ApplyMode::Live;
    t.back().toggle = toggle;
    t.back().optionalInConfig = true;
  };
  add(
      boolean("serialize-kernels", "false",
              "Synchronise the device before and after every launch, so that a crash points at "
              "the kernel that caused it (like AMD_SERIALIZE_KERNEL=3, without a restart). "
              "Several times slower."),
      "Serialize kernels", "Device", "/serialize_kernels",
      [](auto& s) { return json(s.serializeKernels); },
      [](auto& s, auto& v) { s.serializeKernels = v.template get<bool>(); });
  live(engine::Toggle::Serialize);
  add(
      boolean("blocking-launches", "false",
              "Wait for each launch to finish, so that errors are reported against the op that "
              "failed (like HIP_LAUNCH_BLOCKING=1)."),
      "Blocking launches", "Device", "/blocking_launches",
      [](auto& s) { return json(s.blockingLaunches); },
      [](auto& s, auto& v) { s.blockingLaunches = v.template get<bool>(); });
  live(engine::Toggle::Blocking);
  add(
      choice("gemm-backend", {"vendor", "builtin"}, "vendor",
             "Vendor BLAS (hipBLAS/cuBLAS, fastest) or LoRAscope's built-in GEMM (for "
             "HIPBLAS_STATUS_INTERNAL_ERROR)."),
      "GEMM backend", "Device", "/gemm_backend", [](auto& s) { return json(s.gemmBackend); },
      [](auto& s, auto& v) { s.gemmBackend = v.template get<std::string>(); });
  live(engine::Toggle::GemmBackend);
  add(
      choice("allocator-policy", {"caching", "arena"}, "caching",
             "Caching (split/merge blocks) or a planned arena for activations, which stops "
             "steady-state fragmentation."),
      "Allocator policy", "Device", "/allocator_policy",
      [](auto& s) { return json(s.allocatorPolicy); },
      [](auto& s, auto& v) { s.allocatorPolicy = v.template get<std::string>(); });
  live(engine::Toggle::AllocatorPolicy);
  add(
      {.name = "profile",
       .type = T::Text,
       .help = "The profile the run starts with (`lorascope-train profile list`): the GPU "
               "runtime's environment and the toggles it sets, which take precedence over these "
               "options; the recovery ladder adds caution on top. none: the options alone "
               "decide.",
       .defaultText = "none",
       .valueName = "NAME"},
      "Profile", "Device", "/profile", [](auto& s) { return json(s.profile); },
      [](auto& s, auto& v) { s.profile = v.template get<std::string>(); })
      .optionalInConfig = true;
  return t;
}

OptionSpec path(std::string name, std::string valueName, std::string help) {
  return {.name = std::move(name),
          .type = T::Text,
          .help = std::move(help),
          .valueName = std::move(valueName)};
}

}  // namespace

const std::vector<RunOption>& runOptions() {
  static const std::vector<RunOption> table = buildTable();
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
        "from its checkpoint (--device may change). Options come from the command line over a "
        "--config file (a JSON object keyed by option name) over the defaults (the demo has its "
        "own; shown as 'demo'). Ctrl-C checkpoints and exits with status 130.";
    c.options = {
        path("model", "DIR",
             "The base model: a Hugging Face folder (config.json, safetensors, "
             "tokenizer), or a model id (org/name[@revision]) in the local Hugging Face cache."),
        path("data", "FILE",
             "The dataset: JSONL or a JSON array (alpaca, chat messages, ShareGPT, "
             "prompt/completion or text)."),
        path("out", "RUN_DIR", "The run folder to create (with --demo: lorascope-demo-run)."),
        boolean("demo", "false",
                "Train the built-in demo: a pretrained 3 M-parameter Llama learns to "
                "write a word in upper case (40 examples), under a minute on the CPU."),
        path("resume", "RUN_DIR", "Continue this run from its newest checkpoint."),
        integer("checkpoint", 1, 1e15, "", "optimizer steps",
                "With --resume: the step of the checkpoint to continue from (default: the "
                "newest)."),
        path("config", "FILE",
             "A JSON object of option names and values, e.g. {\"lr\": 1e-4, "
             "\"lora-r\": 16}."),
        boolean("json", "false",
                "Print the engine's events, one JSON line each (backend/engine/Protocol.h), and "
                "nothing else on stdout."),
    };
    c.sections.push_back(
        {"run", {"model", "data", "out", "demo", "resume", "checkpoint", "config", "json"}});
    for (const RunOption& option : runOptions()) {
      OptionSpec spec = option.spec;
      const std::string demo = option.defaultFor(true);
      if (demo != option.spec.defaultText) {
        spec.defaultText += ", demo " + demo;
      }
      spec.help += option.apply == ApplyMode::Live ? " Live: the controls dock changes it during "
                                                     "a run."
                                                   : "";
      c.options.push_back(spec);
      auto section = std::find_if(c.sections.begin(), c.sections.end(),
                                  [&](const auto& s) { return s.first == option.group; });
      if (section == c.sections.end()) {
        c.sections.push_back({option.group, {}});
        section = std::prev(c.sections.end());
      }
      section->second.push_back(spec.name);
    }
    return c;
  }();
  return command;
}

}  // namespace lorascope::job
