// cli/cmd_generate.cpp — `lorascope-train generate [--model DIR] [--adapter RUN|DIR]
// [--quantize none|nf4] (--prompt "..." | --ids "1,2,3")`: text from the model (its projections
// in NF4 with --quantize nf4, as a QLoRA run trained), with the adapter when given, streamed
// to stdout as it is generated (job/Generation.h: chat template, KV cache, greedy or seeded
// top-p sampling). --json prints one object with the ids instead, for comparison with
// transformers' generate.
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "job/CliArgs.h"
#include "job/Generation.h"
#include "model/WeightQuantization.h"  // defines: parseQuantization
#include "runs/RunFolder.h"            // defines: runModelPath

namespace lorascope::cli {

const job::CommandSpec& generateCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "generate",
      .operands = "",
      .summary =
          "Text from a model folder, with a LoRA adapter when --adapter names one (a PEFT "
          "folder, or a run: its final adapter, else its newest checkpoint). The prompt "
          "is rendered with the model's chat template; the reply streams to stdout.",
      .options =
          {
              {.name = "model",
               .type = OptionType::Text,
               .help = "The base model: a folder, or a model id in the local Hugging Face cache "
                       "(default: the model of the run --adapter names).",
               .valueName = "DIR"},
              {.name = "adapter",
               .type = OptionType::Text,
               .help = "A PEFT adapter folder or a run folder (default: the base model alone).",
               .valueName = "RUN|DIR"},
              {.name = "prompt",
               .type = OptionType::Text,
               .help = "The user's message.",
               .valueName = "\"...\""},
              {.name = "system",
               .type = OptionType::Text,
               .help = "A system message before it (with the chat template only).",
               .valueName = "\"...\""},
              {.name = "ids",
               .type = OptionType::Text,
               .help = "The prompt as token ids instead of --prompt (no chat template).",
               .valueName = "\"1,2,3\""},
              {.name = "chat-template",
               .type = OptionType::Bool,
               .help = "Render --prompt with the model's chat template; --no-chat-template "
                       "tokenizes it as plain text.",
               .defaultText = "true"},
              {.name = "max-new-tokens",
               .type = OptionType::Integer,
               .help = "Stop after this many new tokens (or at end-of-sequence).",
               .defaultText = "256",
               .min = 1,
               .max = 1'000'000,
               .unit = "tokens"},
              {.name = "temperature",
               .type = OptionType::Real,
               .help = "0 is greedy (the most likely token); above 0 samples.",
               .defaultText = "0",
               .min = 0,
               .max = 100},
              {.name = "top-p",
               .type = OptionType::Real,
               .help = "Sampling: keep the most likely tokens up to this probability mass.",
               .defaultText = "1",
               .min = 1e-6,
               .max = 1},
              {.name = "seed",
               .type = OptionType::Integer,
               .help = "Seeds the sampling: the same seed gives the same text.",
               .defaultText = "0",
               .min = 0,
               .max = 2147483647},
              {.name = "device",
               .type = OptionType::Choice,
               .help = "Where to compute; auto: the GPU when one is usable.",
               .defaultText = "cpu",
               .choices = {"cpu", "gpu", "auto"}},
              {.name = "quantize",
               .type = OptionType::Choice,
               .help = "The base weights: as stored (none), or the seven projections of every "
                       "layer quantised to NF4 at load as train --quantize nf4 holds them, to try "
                       "an adapter on the 4-bit base it was trained on.",
               .defaultText = "none",
               .choices = {"none", "nf4"}},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print one JSON object (prompt and new ids, text, speed) instead of "
                       "streaming.",
               .defaultText = "false"},
          },
  };
  return command;
}

int runGenerate(const Args& args) {
  const job::CliArgs parsed(args, generateCommand());
  if (parsed.value("prompt").has_value() == parsed.value("ids").has_value()) {
    throw job::UsageError("give exactly one of --prompt \"...\" or --ids \"1,2,3\"");
  }
  const bool asJson = parsed.has("json");
  job::SamplingOptions sampling;
  sampling.maxNewTokens = std::stoll(parsed.value("max-new-tokens").value_or("256"));
  sampling.temperature = std::stod(parsed.value("temperature").value_or("0"));
  sampling.topP = std::stod(parsed.value("top-p").value_or("1"));
  sampling.seed = std::stoull(parsed.value("seed").value_or("0"));
  // Log lines go to stderr, so that stdout holds the reply (or the JSON) alone.
  const job::DeviceLog log = [](const std::string& line) { std::cerr << line << "\n"; };
  // The option table admits only none and nf4.
  const model::WeightQuantization quantization =
      model::parseQuantization(parsed.value("quantize").value_or("none"))
          .value_or(model::WeightQuantization::None);
  const std::string adapter = parsed.value("adapter").value_or("");
  std::optional<std::string> model = parsed.value("model");
  if (model) {
    job::refuseRunAsModel(*model, "--model", "give it as --adapter " + *model);
  }
  if (!model && !adapter.empty()) {
    // A run's base model; none for a PEFT adapter, whose base is a name that need not be here.
    model = runs::runModelPath(common::pathFromUtf8(adapter));
  }
  if (!model) {
    throw job::UsageError(
        "missing --model DIR: the base model (without it, --adapter must name a LoRAscope run, "
        "whose config.json names the model it trained on)");
  }
  job::TextGenerator generator(*model, adapter, parsed.value("device").value_or("cpu"), log,
                               quantization);
  const bool chat = parsed.value("chat-template").value_or("true") == "true";
  const std::vector<std::int32_t> prompt =
      parsed.value("ids")
          ? parseIdList("ids", *parsed.value("ids"))
          : generator.promptIds(*parsed.value("prompt"), parsed.value("system").value_or(""), chat);
  if (prompt.empty()) {
    throw job::UsageError("the prompt has no tokens");
  }
  std::cerr << "generate: " << generator.describe() << ", " << prompt.size() << " prompt tokens\n";
  const bool streamIds = !asJson && !generator.hasTokenizer();
  const job::GenerationResult result = generator.generate(
      prompt, sampling,
      [&](const std::string& piece) {
        if (!asJson) {
          std::cout << piece << std::flush;
        }
        return true;
      },
      [&](std::int32_t id) {
        if (streamIds) {
          std::cout << id << " " << std::flush;
        }
        return true;
      });
  if (asJson) {
    std::cout << nlohmann::json{{"prompt_ids", prompt},         {"ids", result.ids},
                                {"text", result.text},          {"stop", result.stopReason},
                                {"prompt_ms", result.promptMs}, {"tokens_per_s", result.tokensPerS}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << "\n";
  std::cerr << "generate: " << result.ids.size() << " tokens (" << result.stopReason << "), prompt "
            << static_cast<long long>(result.promptMs) << " ms, "
            << static_cast<long long>(result.tokensPerS) << " tokens/s\n";
  return 0;
}

}  // namespace lorascope::cli
