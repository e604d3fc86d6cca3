// settings/Builtin.cpp — the built-in run settings, in the order --help and the Setup page show
// them. Each entry: the option, the GUI's label and group, its config.json key; the live ones
// also their toggle, profile key, CPU applicability and ladder rung (settings/Registry.h).
#include <climits>

#include "settings/Registry.h"

namespace lorascope::settings {

void addBuiltinSettings(Registry& r);

void addBuiltinSettings(Registry& r) {
  Setting* added = nullptr;
  auto add = [&](OptionSpec spec, std::string label, std::string group,
                 std::string configKey) -> Setting& {
    Setting s;
    s.option = std::move(spec);
    s.label = std::move(label);
    s.group = std::move(group);
    s.configKey = std::move(configKey);
    return *(added = &r.add(std::move(s)));
  };
  auto last = [&]() -> Setting& { return *added; };

  // ---- LoRA
  add(integerOption("lora-r", 1, 4096, "8", "",
                    "The adapter's rank r: capacity and memory grow with it."),
      "Rank r", "LoRA", "/lora/r");
  add(realOption("lora-alpha", 0.01, 4096, "16", "",
                 "The update is scaled by alpha / r (alpha / sqrt(r) with rsLoRA)."),
      "Alpha", "LoRA", "/lora/alpha");
  {
    OptionSpec spec = realOption("lora-dropout", 0, 0.9, "0", "",
                                 "Dropout on the adapter's input during training.");
    add(spec, "Dropout", "LoRA", "/lora/dropout");
  }
  add(boolOption("rslora", "false",
                 "Rank-stabilised LoRA: scale by alpha / sqrt(r) instead of "
                 "alpha / r."),
      "rsLoRA scaling", "LoRA", "/lora/use_rslora");
  {
    OptionSpec spec{.name = "targets",
                    .type = OptionType::List,
                    .help = "The projections that get an adapter, in every layer.",
                    .defaultText = "q,k,v,o,gate,up,down",
                    .choices = {"q", "k", "v", "o", "gate", "up", "down"}};
    add(spec, "Targets", "LoRA", "/lora/targets");
  }

  // ---- Training
  add(realOption("lr", 1e-9, 1, "2e-4", "", "Peak learning rate of AdamW."), "Learning rate",
      "Training", "/adamw/lr")
      .demoDefault = "3e-3";
  add(choiceOption("schedule", {"constant", "linear", "cosine"}, "linear",
                   "How the rate falls after warmup."),
      "Schedule", "Training", "/schedule")
      .demoDefault = "cosine";
  add(integerOption("warmup", 0, 1'000'000, "0", "optimizer steps",
                    "Steps of linear warmup to the peak rate."),
      "Warmup steps", "Training", "/warmup_steps")
      .demoDefault = "3";
  add(integerOption("epochs", 1, 10'000, "1", "",
                    "Passes over the dataset; --steps, when set, replaces it."),
      "Epochs", "Training", "/epochs");
  add(withZero(integerOption("steps", 0, 100'000'000, "0", "optimizer steps",
                             "Optimizer steps to run; when set, it replaces --epochs (the dataset "
                             "repeats as needed, as Hugging Face Trainer's max_steps)."),
               "by epochs"),
      "Max steps", "Training", "/max_steps")
      .demoDefault = "60";
  {
    OptionSpec spec =
        integerOption("batch-size", 1, 4096, "4", "sequences",
                      "Sequences per forward/backward pass (the micro-batch). auto: the "
                      "largest that fits the device's free memory, keeping the effective "
                      "batch; on several GPUs the smallest of their plans, at most the "
                      "effective batch over the number of GPUs.");
    spec.special = "auto";
    Setting& o = add(spec, "Micro-batch", "Training", "/micro_batch_size");
    o.demoDefault = "8";
    o.apply = Apply::Live;
    o.toggle = Toggle::MicroBatch;
    o.toggleValue = integerOption("", 1, 4096, "", "", "");
    o.eventName = "micro-batch";
    o.profileKey = "micro_batch";
    o.ladder = RungEffect{.rung = Rung::SmallerMicroBatch, .halves = true};
  }
  add(realOption("memory-margin", 0, 0.9, "0.10", "fraction of free memory",
                 "With --batch-size auto: the share of free memory kept back for the unforeseen."),
      "Memory margin", "Training", "/memory_margin")
      .option.maxExclusive = true;
  last().optionalInConfig = true;
  add(integerOption("grad-accum", 1, 4096, "1", "micro-batches",
                    "Micro-batches per optimizer step: effective batch = micro-batch x this."),
      "Accumulation", "Training", "/grad_accumulation");
  add(integerOption("max-seq-len", 2, 1 << 20, "1024", "tokens",
                    "Longest sequence; longer examples are truncated."),
      "Sequence length", "Training", "/max_seq_len")
      .demoDefault = "128";
  add(realOption("weight-decay", 0, 10, "0", "", "AdamW's decoupled weight decay."), "Weight decay",
      "Training", "/adamw/weight_decay");
  add(withZero(realOption("max-grad-norm", 0, 1e6, "1", "",
                          "Gradients are clipped to this global norm."),
               "no clipping"),
      "Gradient clip", "Training", "/max_grad_norm");
  add(integerOption(
          "non-finite-steps", 1, 1'000'000, "3", "optimizer steps",
          "A step whose loss or gradient norm is NaN or infinite is skipped; this many in a "
          "row stop the run with the last finite state checkpointed."),
      "Non-finite stop", "Training", "/non_finite_step_limit")
      .optionalInConfig = true;
  add(integerOption("seed", 0, INT_MAX, "42", "",
                    "Seeds the adapter's initialisation, dropout and the data order."),
      "Seed", "Training", "/seed");
  add(boolOption("shuffle", "true", "Shuffle the examples each epoch."), "Shuffle examples",
      "Training", "/shuffle");
  // A Bool until document packing: --packing alone (and true in older config.json) is causal.
  add(choiceOption("packing", {"off", "causal", "documents"}, "off",
                   "Pack several short examples into one sequence (little padding). causal "
                   "(--packing alone): in dataset order, each example seeing those packed before "
                   "it. documents: each example attends only to itself and its positions start "
                   "at 0 (loss and gradients those of the unpacked run); the packs are filled by "
                   "best fit (98-99% real tokens on alpaca-style data)."),
      "Packing", "Training", "/packing")
      .option.flagValue = "causal";
  add(boolOption("group-by-length", "false",
                 "Put examples of similar length into the same batches (each epoch's order, from "
                 "the seed, like Hugging Face's group_by_length), so that far less padding is "
                 "computed. The batch with the longest example comes first."),
      "Group by length", "Training", "/group_by_length")
      .optionalInConfig = true;
  add(boolOption("activation-checkpointing", "false",
                 "Recompute each layer's activations in the backward pass: less memory, about a "
                 "third more compute."),
      "Activation checkpointing", "Training", "/activation_checkpointing");
  // A toggle that profiles set (the engine applies it at the next step); the Controls dock
  // leaves it to the Setup page.
  last().toggle = Toggle::ActivationCheckpointing;
  last().toggleValue = last().option;
  last().toggleValue.defaultText.clear();
  last().profileKey = "activation_checkpointing";
  last().eventName = "activation checkpointing";
  add(choiceOption(
          "quantize", {"none", "nf4"}, "none",
          "nf4: hold the frozen projections (q, k, v, o, gate, up, down) in 4 bits, NF4 with "
          "double quantisation as in QLoRA, quantised from the stored weights when the model "
          "loads: about 0.52 bytes a weight instead of 2. The adapter and the compute stay "
          "bf16 (f32 on the CPU); the adapter is for the unquantised base model."),
      "Base weights", "Training", "/quantize")
      .optionalInConfig = true;

  // ---- Evaluation (train/Evaluation.h)
  add(OptionSpec{.name = "eval-data",
                 .type = OptionType::Text,
                 .help = "A held-out dataset (same formats as --data): its loss is evaluated "
                         "every --eval-every steps and after the last step.",
                 .valueName = "FILE",
                 .emptyAllowed = true},
      "Eval data", "Evaluation", "/eval/data")
      .optionalInConfig = true;
  add(withZero(
          realOption("eval-split", 0, 0.5, "0", "fraction of the examples",
                     "Hold out this share of the training data (a fixed split drawn from --seed) "
                     "and evaluate on it instead of a file."),
          "no split"),
      "Eval split", "Evaluation", "/eval/split")
      .optionalInConfig = true;
  add(withZero(integerOption(
                   "eval-every", 0, 1'000'000, "0", "optimizer steps",
                   "Evaluate the held-out loss every N steps (and always after the last); needs "
                   "--eval-data or --eval-split."),
               "only at the end"),
      "Evaluate every", "Evaluation", "/eval/every")
      .optionalInConfig = true;
  add(withZero(
          integerOption("early-stopping-patience", 0, 1'000'000, "0", "evaluations",
                        "Stop the run when this many evaluations in a row do not lower the best "
                        "eval loss; the final adapter is the last step's. Needs --eval-data or "
                        "--eval-split."),
          "off"),
      "Early stopping patience", "Evaluation", "/eval/early_stopping_patience")
      .optionalInConfig = true;

  // ---- Checkpoints
  add(withZero(integerOption("checkpoint-every", 0, 1'000'000, "50", "optimizer steps",
                             "Write a checkpoint every N steps."),
               "only at the end"),
      "Checkpoint every", "Checkpoints", "/checkpoint_every")
      .demoDefault = "20";
  add(withZero(integerOption("keep-checkpoints", 0, 100'000, "3", "",
                             "How many of the newest checkpoints are kept."),
               "keep all"),
      "Keep checkpoints", "Checkpoints", "/keep_checkpoints");

  // ---- Device and stability (the controls dock's toggles; the recovery ladder sets them too)
  // The toggles that do nothing on a CPU run say why, after "this run computes on the CPU, ".
  const char* noLaunches = "which makes no GPU launches";
  auto toggle = [&](Toggle wire, std::string profileKey, std::string eventName,
                    std::string cpuNote) {
    Setting& s = last();
    s.apply = Apply::Live;
    s.toggle = std::move(wire);
    s.toggleValue = s.option;
    s.toggleValue.defaultText.clear();
    s.profileKey = std::move(profileKey);
    s.eventName = std::move(eventName);
    s.cpuNote = std::move(cpuNote);
    s.optionalInConfig = s.option.name != "device";  // device was in config.json from format 1
  };
  add(choiceOption("device", {"cpu", "gpu", "auto"}, "cpu",
                   "Where the run computes; auto: the GPU when one is usable. During a run it "
                   "moves between GPU and CPU with its state (CPU fallback)."),
      "Device", "Device", "/device");
  toggle(Toggle::CpuFallback, "cpu_fallback", "CPU fallback", "");
  last().toggleValue = boolOption("", "", "");
  last().toggleValues = {{"gpu", false}, {"cpu", true}};
  last().ladder = RungEffect{.rung = Rung::Cpu, .value = true, .offValue = false};
  add(boolOption("serialize-kernels", "false",
                 "Synchronise the device before and after every launch, so that a crash points "
                 "at the kernel that caused it (like AMD_SERIALIZE_KERNEL=3, without a restart). "
                 "Several times slower."),
      "Serialize kernels", "Device", "/serialize_kernels");
  toggle(Toggle::Serialize, "serialize", "serialized kernels", noLaunches);
  last().ladder = RungEffect{.rung = Rung::Serialize, .value = true, .offValue = false};
  add(boolOption("blocking-launches", "false",
                 "Wait for each launch to finish, so that errors are reported against the op "
                 "that failed (like HIP_LAUNCH_BLOCKING=1)."),
      "Blocking launches", "Device", "/blocking_launches");
  toggle(Toggle::Blocking, "blocking", "blocking launches", noLaunches);
  last().ladder = RungEffect{.rung = Rung::Serialize, .value = true, .offValue = false};
  add(choiceOption("gemm-backend", {"vendor", "builtin"}, "vendor",
                   "Vendor BLAS (hipBLAS/cuBLAS, fastest) or LoRAscope's built-in GEMM (for "
                   "HIPBLAS_STATUS_INTERNAL_ERROR)."),
      "GEMM backend", "Device", "/gemm_backend");
  toggle(Toggle::GemmBackend, "gemm", "GEMM backend", "which multiplies with OpenBLAS");
  last().ladder = RungEffect{.rung = Rung::BuiltinGemm,
                             .value = gemmName(Gemm::BuiltIn),
                             .offValue = gemmName(Gemm::Vendor)};
  // Profiles set the allocator's mode with its other settings ("allocator": {"mode": …}).
  add(choiceOption("allocator-policy", {"caching", "arena"}, "caching",
                   "Caching (split/merge blocks) or a planned arena for activations, which "
                   "stops steady-state fragmentation."),
      "Allocator policy", "Device", "/allocator_policy");
  toggle(Toggle::AllocatorPolicy, "", "allocator policy", "which has no device allocator");
  add(boolOption("graph", "false",
                 "Whole-step graph mode: each optimizer step, all its micro-batches, is captured "
                 "once per step shape as a CUDA/HIP graph and replayed as one launch. A failed "
                 "capture or replay leaves it: that step and the rest of the run are eager."),
      "Graph mode", "Device", "/graph");
  toggle(Toggle::Graph, "graph", "graph mode", "which has nothing to capture");
  // Restart only: the group is formed when the run starts (group/RankPlan.h, engine/Supervisor.h).
  add(OptionSpec{.name = "gpus",
                 .type = OptionType::Text,
                 .help = "Train on several GPUs, one engine per GPU (data parallel over NCCL on "
                         "NVIDIA, RCCL on AMD; Linux only): device indices such as 0,1, or all. "
                         "Each GPU computes its share of every step; the loss curve is one GPU's "
                         "at the same effective batch. Empty: one GPU or the CPU, as --device "
                         "says.",
                 .valueName = "LIST",
                 .emptyAllowed = true},
      "GPUs", "Device", "/gpus")
      .optionalInConfig = true;
  add({.name = "profile",
       .type = OptionType::Text,
       .help = "The profile the run starts with: a built-in or saved profile's name (the "
               "window's profile bar), or a profile JSON file. Its GPU runtime environment and "
               "the toggles it sets take precedence over these options; the recovery ladder "
               "adds caution on top. none: the options alone decide.",
       .defaultText = "none",
       .valueName = "NAME"},
      "Profile", "Device", "/profile")
      .optionalInConfig = true;
}

}  // namespace lorascope::settings
