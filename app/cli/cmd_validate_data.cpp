// cli/cmd_validate_data.cpp — `lorascope-train validate-data FILE (--model DIR | --tokenizer
// PATH) [--template NAME] [--max-seq-len N] [--format
// auto|alpaca|chat|sharegpt|prompt-completion|text]
// [--policy truncate|drop] [--train-on-all] [--json]`: the dataset report (backend/data) as text
// or JSON on stdout; progress on stderr when it is a terminal.
// Exit codes: 0 the report was produced (even when it lists bad lines); 1 FILE (or the
// tokenizer/model folder) cannot be read at all; 2 a usage error.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "cli/Commands.h"
#include "common/OsError.h"   // defines: pathFromUtf8
#include "common/Platform.h"  // defines: isTerminal
#include "data/Validator.h"   // defines: validateDataset, ValidateOptions
#include "job/CliArgs.h"
#include "model/HfCache.h"      // defines: resolveModel
#include "settings/Registry.h"  // defines: registry (the run settings)

namespace lorascope::cli {

namespace {

std::size_t parseMaxSeqLen(const std::string& text) {
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || text.front() == '-') {
    throw job::UsageError("--max-seq-len needs a whole number of tokens (0 = no limit), got '" +
                          text + "'");
  }
  return value;
}

// train's default max_seq_len (the settings registry's), so that the report without
// --max-seq-len is the one a run with the same defaults sees.
const std::string& trainMaxSeqLen() {
  return settings::registry().find("max-seq-len")->option.defaultText;
}

std::optional<data::Format> parseFormat(const std::string& text) {
  if (text == "auto") {
    return std::nullopt;
  }
  if (const auto format = data::parseFormatName(text)) {
    return format;
  }
  throw job::UsageError("--format must be auto, " + data::formatNameList() + ", got '" + text +
                        "'");
}

data::OverLengthPolicy parsePolicy(const std::string& text) {
  if (const auto policy = data::parsePolicyName(text)) {
    return *policy;
  }
  throw job::UsageError("--policy must be truncate or drop, got '" + text + "'");
}

// The tokenizer and template: a model folder gives both; a bare tokenizer.json (or a folder
// passed as --tokenizer) gets the template named by --template, alpaca by default.
std::optional<data::ExampleEncoder> makeEncoder(const job::CliArgs& parsed) {
  const auto model = parsed.value("model");
  const auto tokenizerPath = parsed.value("tokenizer");
  const auto templateName = parsed.value("template");
  if (model && tokenizerPath) {
    throw job::UsageError("give --model DIR or --tokenizer PATH, not both");
  }
  if (model) {
    const std::filesystem::path dir = model::resolveModel(*model).dir;  // a folder or a hub id
    return data::ExampleEncoder(text::Tokenizer::fromModelDir(dir),
                                templateName ? text::ChatTemplate::byName(*templateName)
                                             : text::ChatTemplate::forModelDir(dir));
  }
  if (tokenizerPath) {
    std::error_code ec;
    const std::filesystem::path tokenizer = common::pathFromUtf8(*tokenizerPath);
    const bool isDir = std::filesystem::is_directory(tokenizer, ec);
    return data::ExampleEncoder(
        isDir ? text::Tokenizer::fromModelDir(tokenizer) : text::Tokenizer::fromFile(tokenizer),
        text::ChatTemplate::byName(templateName.value_or("alpaca")));
  }
  if (templateName) {
    throw job::UsageError("--template needs --model DIR or --tokenizer PATH");
  }
  return std::nullopt;
}

void printProgress(std::uint64_t readBytes, std::uint64_t totalBytes) {
  const double percent =
      totalBytes > 0 ? 100.0 * static_cast<double>(readBytes) / static_cast<double>(totalBytes)
                     : 100.0;
  std::fprintf(stderr, "\rvalidate-data: %5.1f%% (%.1f of %.1f MiB)", percent,
               static_cast<double>(readBytes) / 1048576.0,
               static_cast<double>(totalBytes) / 1048576.0);
  if (readBytes >= totalBytes) {
    std::fprintf(stderr, "\n");
  }
}

}  // namespace

const job::CommandSpec& validateDataCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "validate-data",
      .operands = "FILE",
      .summary =
          "A dataset report (formats, issues, duplicates, token lengths). Exit 0 when the report "
          "is produced and at least one example is usable, even with bad lines; 2 when no "
          "example is (the report is still printed); 1 when FILE or the tokenizer cannot be read.",
      .options =
          {
              {.name = "model",
               .type = OptionType::Text,
               .help = "A model folder, or a Hugging Face id in the local cache: its tokenizer "
                       "and chat template.",
               .valueName = "DIR"},
              {.name = "tokenizer",
               .type = OptionType::Text,
               .help = "A tokenizer.json (or folder) instead of --model.",
               .valueName = "PATH"},
              {.name = "template",
               .type = OptionType::Text,
               .help = "A built-in chat template by name, used instead of --model's own; with "
                       "--tokenizer, alpaca unless given.",
               .valueName = "NAME"},
              {.name = "max-seq-len",
               .type = OptionType::Integer,
               .help = "With --model or --tokenizer: the longest sequence (train's default "
                       "unless given).",
               .defaultText = trainMaxSeqLen(),
               .min = 0,
               .max = 1e9,
               .zeroMeans = "no limit",
               .unit = "tokens"},
              {.name = "format",
               .type = OptionType::Choice,
               .help = "The dataset's format.",
               .defaultText = "auto",
               .choices = {"auto", "alpaca", "chat", "sharegpt", "prompt-completion", "text"}},
              {.name = "policy",
               .type = OptionType::Choice,
               .help = "With --model or --tokenizer: what happens to over-long examples.",
               .defaultText = "truncate",
               .choices = {"truncate", "drop"}},
              {.name = "train-on-all",
               .type = OptionType::Bool,
               .help = "With --model or --tokenizer: count every token as trained, not only "
                       "the answers.",
               .defaultText = "false"},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print JSON.",
               .defaultText = "false"},
          },
  };
  return command;
}

int runValidateData(const Args& args) {
  const job::CliArgs parsed(args, validateDataCommand());
  if (parsed.positional().size() != 1) {
    throw job::UsageError("expected one dataset FILE (JSONL or a JSON array), got " +
                          std::to_string(parsed.positional().size()) + " arguments");
  }
  const std::optional<data::ExampleEncoder> encoder = makeEncoder(parsed);
  data::ValidateOptions options;
  options.format = parseFormat(parsed.value("format").value_or("auto"));
  options.encode.maxSeqLen = parseMaxSeqLen(parsed.value("max-seq-len").value_or(trainMaxSeqLen()));
  options.encode.policy = parsePolicy(parsed.value("policy").value_or("truncate"));
  options.encode.trainOnAll = parsed.has("train-on-all");
  options.encoder = encoder ? &*encoder : nullptr;
  if (common::isTerminal(common::StandardStream::Error)) {
    options.progress = printProgress;
  }
  const auto start = std::chrono::steady_clock::now();
  data::ValidationReport report;
  try {
    report = data::validateDataset(common::pathFromUtf8(parsed.positional().front()), options);
  } catch (const data::DatasetError& error) {
    std::cerr << "lorascope-train validate-data: " << error.what() << "\n";
    return 1;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (parsed.has("json")) {
    // A file name that is not UTF-8 must not stop the report: such bytes become U+FFFD.
    std::cout << report.toJson().dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << report.toText();
    std::cout << "Validated in "
              << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms\n";
  }
  if (report.validExamples == 0) {
    // A run on this file would have nothing to train on: a script checking the data before a long
    // run must see that, not exit 0.
    std::cerr << "lorascope-train validate-data: " << parsed.positional().front()
              << ": no usable example (every record has an error; the report above lists them)\n";
    return 2;
  }
  return 0;
}

}  // namespace lorascope::cli
