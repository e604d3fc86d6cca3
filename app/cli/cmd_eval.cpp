// cli/cmd_eval.cpp — `lorascope-train eval --model DIR (--ids "1,2,3" | --text "...")
// [--labels "..."] [--json]`: one CPU forward pass in fp32; prints the next-token loss (labels
// default to the ids, −100 ignored) and, with --json, the logits of the last position, so that
// the numbers can be checked against transformers.
#include <charconv>
#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "compute/Backend.h"
#include "job/CliArgs.h"
#include "job/Generation.h"  // defines: refuseRunAsModel
#include "model/Forward.h"
#include "model/ModelFolder.h"
#include "text/Tokenizer.h"

namespace lorascope::cli {

std::vector<std::int32_t> parseIdList(const std::string& option, const std::string& text) {
  std::vector<std::int32_t> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    end = end == std::string::npos ? text.size() : end;
    std::size_t first = text.find_first_not_of(" \t", start);
    std::size_t last = text.find_last_not_of(" \t", end == 0 ? 0 : end - 1);
    if (first == std::string::npos || first >= end) {
      throw job::UsageError("--" + option + " has an empty item at character " +
                            std::to_string(start));
    }
    std::int32_t value = 0;
    const auto [ptr, error] = std::from_chars(text.data() + first, text.data() + last + 1, value);
    if (error != std::errc() || ptr != text.data() + last + 1) {
      throw job::UsageError("--" + option + ": '" + text.substr(first, last + 1 - first) +
                            "' is not an integer id");
    }
    ids.push_back(value);
    start = end + 1;
  }
  return ids;
}

const job::CommandSpec& evalCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "eval",
      .operands = "",
      .summary =
          "CPU forward of a model: the loss (and, with --json, the last position's logits), for "
          "--ids or --text (exactly one).",
      .options =
          {
              {.name = "model",
               .type = OptionType::Text,
               .help = "The model folder.",
               .valueName = "DIR"},
              {.name = "ids",
               .type = OptionType::Text,
               .help = "Token ids, comma-separated.",
               .valueName = "\"1,2,3\""},
              {.name = "text",
               .type = OptionType::Text,
               .help = "Text, tokenized with the model's tokenizer.",
               .valueName = "\"...\""},
              {.name = "labels",
               .type = OptionType::Text,
               .help = "Label ids for the loss (default: the input ids).",
               .valueName = "\"1,2,3\""},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print JSON.",
               .defaultText = "false"},
          },
  };
  return command;
}

int runEval(const Args& args) {
  const job::CliArgs parsed(args, evalCommand());
  const std::string dir = parsed.required("model");
  if (parsed.value("ids").has_value() == parsed.value("text").has_value()) {
    throw job::UsageError("give exactly one of --ids \"1,2,3\" or --text \"...\"");
  }
  job::refuseRunAsModel(dir, "--model", "give that model");
  const model::ModelFolder folder = model::ModelFolder::open(dir);
  const std::vector<std::int32_t> ids =
      parsed.value("ids") ? parseIdList("ids", *parsed.value("ids"))
                          : text::Tokenizer::fromModelDir(common::pathFromUtf8(folder.dir()))
                                .encodeWithPostProcessor(*parsed.value("text"));
  if (ids.empty()) {
    throw job::UsageError("the input has no tokens");
  }
  const std::vector<std::int32_t> labels =
      parsed.value("labels") ? parseIdList("labels", *parsed.value("labels")) : ids;

  auto cpu = compute::createCpuBackend();
  const auto start = std::chrono::steady_clock::now();
  const model::ForwardResult result =
      model::forward(*cpu, folder.config(), folder.weights(),
                     {1, static_cast<std::int64_t>(ids.size()), ids, labels});
  const double forwardMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<float> logits = cpu->download(result.logits);
  const auto vocab = static_cast<std::size_t>(folder.config().vocabSize);

  if (parsed.has("json")) {
    nlohmann::json out = {{"model", dir},
                          {"ids", ids},
                          {"tokens", ids.size()},
                          {"predicted_tokens", result.predictedTokens},
                          {"loss", result.loss ? nlohmann::json(*result.loss) : nullptr},
                          {"forward_ms", forwardMs},
                          {"last_logits", std::vector<float>(logits.end() - vocab, logits.end())}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << "tokens " << ids.size() << ", predicted " << result.predictedTokens << ", loss ";
  if (result.loss) {
    std::cout << *result.loss;
  } else {
    std::cout << "n/a (no label to predict)";
  }
  std::cout << " (fp32 CPU forward, " << forwardMs << " ms)\n";
  return 0;
}

}  // namespace lorascope::cli
