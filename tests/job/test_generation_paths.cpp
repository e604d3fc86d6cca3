// test_generation_paths.cpp — job/Generation.h with a model and an adapter under
// C:\Users\Łukasz\日本, named as the command line and the GUI give them (UTF-8 text): the generator
// finds the model's tokenizer and the adapter there and gives the reference ids; a missing adapter
// is an error that names it. Qt-free, so that the Windows cross-build runs it under Wine, where a
// path made from a narrow string goes through the ANSI code page and these names are lost.
#include "TempDir.h"
#include "TestRunner.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ExpectError.h"
#include "TestPaths.h"
#include "job/CliArgs.h"  // defines: UsageError
#include "job/Generation.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

const fs::path kModelData = lstest::sourcePath("tests/model/data");
const fs::path kTextData = lstest::sourcePath("tests/text/data");

nlohmann::json readJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return nlohmann::json::parse(in);
}

const job::DeviceLog kQuiet = [](const std::string&) {};

}  // namespace

TEST_CASE(modelAndAdapterUnderNonAsciiNamesAreFoundFromUtf8Text) {
  lstest::TempDir tmp;
  const fs::path dir = tmp.nonAsciiFolder() / "qwen2";
  fs::copy(kModelData / "qwen2_f32_tied", dir, fs::copy_options::recursive);
  fs::copy_file(kTextData / "qwen2_bpe.tokenizer.json", dir / "tokenizer.json");
  const nlohmann::json reference = readJson(dir / "generate.json");
  const auto prompt = reference.at("prompt_ids").get<std::vector<std::int32_t>>();
  const auto adapterIds = reference.at("adapter_ids").get<std::vector<std::int32_t>>();
  const fs::path adapter = dir / reference.at("adapter").get<std::string>();

  job::TextGenerator generator(lstest::utf8Text(dir), lstest::utf8Text(adapter), "cpu", kQuiet);
  VERIFY2(generator.hasTokenizer(), "the tokenizer.json beside the model is found");
  VERIFY(generator.hasAdapter());
  job::SamplingOptions greedy;
  greedy.maxNewTokens = static_cast<std::int64_t>(adapterIds.size());
  COMPARE(generator.generate(prompt, greedy).ids, adapterIds);
  const lstest::Message described{generator.describe()};
  VERIFY2(described.contains("qwen2 on ") &&
              described.contains(", adapter " + lstest::utf8Text(adapter)),
          described.text.c_str());

  const fs::path missing = tmp.nonAsciiFolder() / "no-adapter";
  VERIFY(test::throwsWith<job::UsageError>(
      [&] { job::TextGenerator(lstest::utf8Text(dir), lstest::utf8Text(missing), "cpu", kQuiet); },
      {lstest::utf8Text(missing) + ": not an adapter"}));
}
