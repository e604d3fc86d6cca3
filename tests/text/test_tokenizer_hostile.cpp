// test_tokenizer_hostile.cpp — tokenizer files a hostile user could hand over (issue 20 item 5):
// the id -> token tables grow with the number of entries, never with the largest id; a
// tokenizer.json that is no regular file or is over its cap is refused (issue 31 item 7).
#include "TempDir.h"
#include "TestRunner.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/Platform.h"  // defines: kOsFamily
#include "text/BpeModel.h"
#include "text/ConfigFiles.h"  // defines: kMaxTokenizerJsonBytes
#include "text/Tokenizer.h"

using namespace lorascope::text;

namespace {

nlohmann::json bpeModel(std::int64_t abId) {
  return {{"type", "BPE"},
          {"vocab", {{"a", 0}, {"b", 1}, {"ab", abId}}},
          {"merges", nlohmann::json::array({"a b"})}};
}

}  // namespace

TEST_CASE(idOf1500000000SizesTablesByEntriesNotByTheId) {
  // Loading this used to allocate 1.5e9 slots (12 GB, 56 s).
  const auto model = BpeModel::fromJson(bpeModel(1500000000), "huge-id.json");
  COMPARE(model->idTableSlots(), std::size_t{3});
  COMPARE(model->maxId(), 1500000000);
  VERIFY(model->tokenText(1500000000) != nullptr);
  COMPARE(*model->tokenText(1500000000), std::string("ab"));
  COMPARE(*model->tokenText(1), std::string("b"));
  VERIFY(model->tokenText(2) == nullptr);
  VERIFY(model->tokenText(-1) == nullptr);
  std::vector<std::int32_t> ids;
  model->tokenize("ab", ids);
  COMPARE(ids, std::vector<std::int32_t>{1500000000});
  // The whole tokenizer decodes it back.
  const nlohmann::json file = {{"model", bpeModel(1500000000)}};
  const Tokenizer tokenizer = Tokenizer::fromJsonText(file.dump(), "huge-id.json");
  COMPARE(tokenizer.decode(std::vector<std::int32_t>{1500000000, 0}, false), std::string("ab a"));
}

TEST_CASE(denseIdsKeepOneSlotPerId) {
  const auto model = BpeModel::fromJson(bpeModel(2), "dense.json");
  COMPARE(model->idTableSlots(), std::size_t{3});
  COMPARE(*model->tokenText(2), std::string("ab"));
  // Small holes stay in the dense table: ids 0, 1 and 500 take 501 slots.
  const auto holes = BpeModel::fromJson(bpeModel(500), "holes.json");
  COMPARE(holes->idTableSlots(), std::size_t{501});
  COMPARE(*holes->tokenText(500), std::string("ab"));
  VERIFY(holes->tokenText(499) == nullptr);
}

TEST_CASE(tokenizerFilesAreRegularFilesUnderACap) {
  // Issue 31 item 7: tokenizer.json linked to /dev/zero grew until memory ran out.
  lstest::TempDir tmp;
  const std::filesystem::path big = tmp.path() / "tokenizer.json";
  std::ofstream(big) << "{}";
  std::filesystem::resize_file(big, kMaxTokenizerJsonBytes + 1);  // sparse: nothing is written
  try {
    (void)Tokenizer::fromFile(big);
    FAIL("an oversized tokenizer.json is refused");
  } catch (const TextError& e) {
    VERIFY2(lstest::Message{e.what()}.contains(
                lstest::utf8Text(big) +
                ": is 512.00 MiB, more than the 512.00 MiB limit of a tokenizer.json"),
            e.what());
  }
  if (lorascope::common::kOsFamily == lorascope::common::OsFamily::Posix) {
    const std::filesystem::path zero = tmp.path() / "zero" / "tokenizer.json";
    std::filesystem::create_directories(zero.parent_path());
    std::filesystem::create_symlink("/dev/zero", zero);
    try {
      (void)Tokenizer::fromFile(zero);
      FAIL("a tokenizer.json that is a device is refused");
    } catch (const TextError& e) {
      VERIFY2(lstest::Message{e.what()}.contains("tokenizer.json: cannot read: not a regular file"),
              e.what());
    }
  }
}
