// test_dataset_reader.cpp — reading dataset files: the formats (alpaca, chat, sharegpt,
// prompt-completion, text), detection, JSONL and
// JSON arrays, and every kind of bad input (broken line, BOM, CRLF, invalid UTF-8, empty and
// missing files, a bad array element), each reported with its location and never fatal.
#include "TempDir.h"
#include "TestRunner.h"

#include <fstream>

#include "DataTestUtil.h"
#include "common/Platform.h"  // defines: peakResidentBytes
#include "common/Utf8.h"      // defines: utf8::findFault
#include "data/Example.h"
#include "data/RecordReader.h"
#include "data/RecordText.h"

using namespace lorascope::data;
using namespace lorascope::data::test;

#ifdef LORASCOPE_SANITIZE
constexpr bool kResidentSetIsOurs = false;  // AddressSanitizer's quarantine is resident too
#else
constexpr bool kResidentSetIsOurs = true;
#endif

TEST_CASE(alpacaJsonlBecomesUserAndAssistantTurns) {
  const ReadAll read = readAll(fixture("alpaca_broken_line.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::Alpaca));
  COMPARE(read.examples.size(), std::size_t{4});
  const Example& second = read.examples[1];
  COMPARE(second.format, Format::Alpaca);
  COMPARE(second.messages.size(), std::size_t{2});
  COMPARE(second.messages[0].role, std::string("user"));
  COMPARE(second.messages[0].content, std::string("Add the numbers.\n\n### Input:\n2 and 3"));
  COMPARE(second.messages[1].role, std::string("assistant"));
  COMPARE(second.messages[1].content, std::string("5"));
}

TEST_CASE(brokenLineInTheMiddleIsReportedAndTheRestIsRead) {
  const ReadAll read = readAll(fixture("alpaca_broken_line.jsonl"));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2, 5, 7}));
  const auto json = issuesOf(read.issues, IssueKind::JsonError);
  COMPARE(json.size(), std::size_t{1});
  COMPARE(json[0].where.line, std::size_t{3});
  VERIFY(json[0].message.find("line 3") != std::string::npos);
  const auto empty = issuesOf(read.issues, IssueKind::NoResponse);
  COMPARE(empty.size(), std::size_t{1});
  COMPARE(empty[0].where.line, std::size_t{6});
}

TEST_CASE(bomAndCrlfReadLikeThePlainFile) {
  const ReadAll plain = readAll(fixture("alpaca_broken_line.jsonl"));
  const ReadAll crlf = readAll(fixture("alpaca_bom_crlf.jsonl"));
  COMPARE(linesOf(crlf.examples), linesOf(plain.examples));
  for (std::size_t i = 0; i < plain.examples.size(); ++i) {
    COMPARE(crlf.examples[i].messages[1].content, plain.examples[i].messages[1].content);
  }
  COMPARE(crlf.issues.size(), plain.issues.size());
  // The first record starts after the 3-byte BOM; line 2 after "...}\r\n".
  COMPARE(crlf.examples[0].where.byteOffset, std::uint64_t{3});
  COMPARE(crlf.examples[1].where.byteOffset, plain.examples[1].where.byteOffset + 3 + 1);
  RecordReader reader(fixture("alpaca_bom_crlf.jsonl"), [](DatasetIssue) {});
  RawRecord record;
  while (reader.next(record)) {
  }
  VERIFY(reader.hadBom());
  COMPARE(reader.crlfLines(), std::size_t{7});
  COMPARE(reader.blankLines(), std::size_t{1});
}

TEST_CASE(invalidUtf8IsReportedWithLineAndByteOffset) {
  const ReadAll read = readAll(fixture("alpaca_invalid_utf8.jsonl"));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 3}));
  const auto bad = issuesOf(read.issues, IssueKind::InvalidUtf8);
  COMPARE(bad.size(), std::size_t{1});
  COMPARE(bad[0].where.line, std::size_t{2});
  COMPARE(bad[0].where.byteOffset, std::uint64_t{77});  // line 2 starts at 57; 0xe9 is col 20
  VERIFY(bad[0].message.find("0xe9") != std::string::npos);
  VERIFY(bad[0].message.find("byte 77") != std::string::npos);
}

TEST_CASE(emptyFileYieldsNoRecordsAndNoError) {
  const ReadAll read = readAll(fixture("empty.jsonl"));
  VERIFY(read.examples.empty());
  VERIFY(read.issues.empty());
  VERIFY(!read.format.has_value());
}

TEST_CASE(missingFileThrowsDatasetErrorNamingIt) {
  const auto path = fixture("no_such_file.jsonl");
  try {
    readAll(path);
    FAIL("expected DatasetError");
  } catch (const DatasetError& error) {
    VERIFY(std::string(error.what()).find("no_such_file.jsonl") != std::string::npos);
    VERIFY(std::string(error.what()).find("cannot open") != std::string::npos);
  }
  VERIFY_THROWS_EXCEPTION(DatasetError, readAll(fixture("")));  // a directory
}

TEST_CASE(jsonArrayBadElementsAreReportedAndTheOthersRead) {
  const ReadAll read = readAll(fixture("alpaca_array_bad_element.json"));
  COMPARE(read.examples.size(), std::size_t{3});
  COMPARE(read.examples[0].where.element, std::optional<std::size_t>(0));
  COMPARE(read.examples[1].where.element, std::optional<std::size_t>(3));
  COMPARE(read.examples[1].where.line, std::size_t{17});
  COMPARE(read.examples[1].messages[0].content, std::string("Fourth\n\n### Input:\nx"));
  COMPARE(read.examples[2].where.element, std::optional<std::size_t>(4));
  COMPARE(read.examples[2].messages[1].content, std::string("five"));
  const auto json = issuesOf(read.issues, IssueKind::JsonError);
  COMPARE(json.size(), std::size_t{2});
  COMPARE(json[0].where.element, std::optional<std::size_t>(1));
  COMPARE(json[0].where.line, std::size_t{8});  // the stray quote
  COMPARE(json[1].where.element, std::optional<std::size_t>(2));
  VERIFY(json[1].message.find("not closed before line 17") != std::string::npos);
}

TEST_CASE(compactJsonArrayGivesElementIndexAndOffset) {
  const ReadAll read = readAll(fixture("alpaca_array_compact.json"));
  COMPARE(read.examples.size(), std::size_t{2});
  COMPARE(read.examples[1].where.element, std::optional<std::size_t>(1));
  COMPARE(read.examples[1].where.line, std::size_t{1});
  COMPARE(read.examples[1].where.byteOffset, std::uint64_t{38});
  const auto structure = issuesOf(read.issues, IssueKind::StructureWarning);
  COMPARE(structure.size(), std::size_t{1});
  VERIFY(structure[0].message.find("trailing comma") != std::string::npos);
}

TEST_CASE(chatKeepsSystemAndAllTurnsAndRejectsBadRecords) {
  const ReadAll read = readAll(fixture("chat.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::Chat));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
  COMPARE(read.examples[0].messages[0].role, std::string("system"));
  COMPARE(read.examples[1].messages.size(), std::size_t{4});
  COMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
  COMPARE(issuesOf(read.issues, IssueKind::UnknownRole)[0].where.line, std::size_t{4});
}

TEST_CASE(shareGptBecomesChatTurns) {
  const ReadAll read = readAll(fixture("sharegpt.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::ShareGpt));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
  const Example& first = read.examples[0];
  COMPARE(first.messages.size(), std::size_t{3});
  COMPARE(first.messages[0].role, std::string("system"));
  COMPARE(first.messages[1].role, std::string("user"));
  COMPARE(first.messages[2].role, std::string("assistant"));
  COMPARE(first.messages[2].content, std::string("Hello."));
  // The record's "system" field becomes the first turn; user/assistant work as "from" too.
  const Example& second = read.examples[1];
  COMPARE(second.messages.size(), std::size_t{5});
  COMPARE(second.messages[0].role, std::string("system"));
  COMPARE(second.messages[0].content, std::string("Answer in digits."));
  COMPARE(second.messages[3].role, std::string("user"));
  COMPARE(second.messages[4].role, std::string("assistant"));
  COMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
  const auto role = issuesOf(read.issues, IssueKind::UnknownRole);
  COMPARE(role[0].where.line, std::size_t{4});
  VERIFY2(role[0].message.find("conversations[1] has from \"function_call\"; expected human, "
                               "gpt or system") != std::string::npos,
          role[0].message.c_str());
  const auto missing = issuesOf(read.issues, IssueKind::MissingField);
  COMPARE(missing[0].where.line, std::size_t{5});
  VERIFY2(missing[0].message.find("has no string \"value\"") != std::string::npos,
          missing[0].message.c_str());
}

TEST_CASE(promptCompletionReadsBothForms) {
  const ReadAll read = readAll(fixture("prompt_completion.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::PromptCompletion));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
  COMPARE(read.examples[0].prompt, std::string("The capital of France is"));
  COMPARE(read.examples[0].text, std::string(" Paris."));
  VERIFY(read.examples[0].messages.empty());
  // The conversational form: prompt messages then completion messages.
  COMPARE(read.examples[1].messages.size(), std::size_t{2});
  COMPARE(read.examples[1].messages[1].role, std::string("assistant"));
  COMPARE(read.examples[1].messages[1].content, std::string("Blue."));
  COMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
  COMPARE(issuesOf(read.issues, IssueKind::WrongType)[0].where.line, std::size_t{4});
}

TEST_CASE(textFormatReadsTextAndRejectsBlankText) {
  const ReadAll read = readAll(fixture("text.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::Text));
  COMPARE(read.examples.size(), std::size_t{2});
  COMPARE(read.examples[1].text, std::string("Pack my box with five dozen liquor jugs."));
  COMPARE(issuesOf(read.issues, IssueKind::EmptyField)[0].where.line, std::size_t{3});
}

TEST_CASE(detectionTakesTheMajorityAndReportsOtherRecords) {
  const ReadAll read = readAll(fixture("mixed.jsonl"));
  COMPARE(read.format, std::optional<Format>(Format::Alpaca));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2, 4}));
  COMPARE(issuesOf(read.issues, IssueKind::FormatMismatch)[0].where.line, std::size_t{3});
  COMPARE(issuesOf(read.issues, IssueKind::NotAnObject)[0].where.line, std::size_t{5});
  const auto missing = issuesOf(read.issues, IssueKind::MissingField);
  COMPARE(missing.size(), std::size_t{3});  // line 6: instruction, output; line 7: output
  COMPARE(missing.back().where.line, std::size_t{7});
  VERIFY(missing.back().message.find("\"output\"") != std::string::npos);
}

TEST_CASE(forcedFormatOverridesDetection) {
  const ReadAll read = readAll(fixture("mixed.jsonl"), Format::Chat);
  COMPARE(read.format, std::optional<Format>(Format::Chat));
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{3}));
  COMPARE(issuesOf(read.issues, IssueKind::FormatMismatch).size(), std::size_t{4});
}

TEST_CASE(jsonErrorMessagesStayValidUtf8) {
  // The JSON lexer stops at the first byte of "é" after the object; its excerpt of what it
  // read would end inside the UTF-8 sequence (found by the fuzzer).
  const std::string line = "{\"text\": \"caf\xc3\xa9\"}\xc3\xa9\"}";
  std::vector<DatasetIssue> issues;
  const auto value = parseRecordText(line, {1, std::nullopt, 0},
                                     [&issues](DatasetIssue issue) { issues.push_back(issue); });
  VERIFY(!value.has_value());
  COMPARE(issues.size(), std::size_t{1});
  COMPARE(issues[0].kind, IssueKind::JsonError);
  VERIFY(!lorascope::common::utf8::findFault(issues[0].message).has_value());
}

TEST_CASE(aRecordNestedTooDeepIsReportedWithItsLine) {
  const std::string line = std::string(100, '[') + std::string(100, ']');
  std::vector<DatasetIssue> issues;
  const auto value = parseRecordText(line, {7, std::nullopt, 0},
                                     [&issues](DatasetIssue issue) { issues.push_back(issue); });
  VERIFY(!value.has_value());
  COMPARE(issues.size(), std::size_t{1});
  VERIFY2(issues[0].message.rfind("line 7: the record nests deeper than 64 levels", 0) == 0,
          issues[0].message.c_str());
}

TEST_CASE(aNumberNoDoubleHoldsIsAnErrorOfItsLine) {
  // Issue 31 item 8: 1e400 aborted validate-data and train with the JSON library's message.
  lstest::TempDir tmp;
  const std::filesystem::path file = tmp.path() / "numbers.jsonl";
  std::ofstream(file) << "{\"instruction\": \"a\", \"output\": \"b\"}\n"
                      << "{\"instruction\": \"a\", \"output\": \"b\", \"score\": 1e400}\n"
                      << "{\"instruction\": \"c\", \"output\": \"d\"}\n";
  const ReadAll read = readAll(file);
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 3}));
  const std::vector<DatasetIssue> errors = issuesOf(read.issues, IssueKind::JsonError);
  COMPARE(errors.size(), std::size_t{1});
  VERIFY2(errors[0].message.rfind("invalid JSON at line 2", 0) == 0 &&
              errors[0].message.find("number overflow parsing '1e400'") != std::string::npos,
          errors[0].message.c_str());
}

TEST_CASE(aRecordOverTheLimitIsAnErrorOfItsLineInBoundedMemory) {
  // Issue 31 item 6: one 1 GB record peaked at 6.97 GB; there was no limit per record.
  lstest::TempDir tmp;
  const std::filesystem::path file = tmp.path() / "huge.jsonl";
  const std::size_t hugeBytes = 100u << 20;
  {
    std::ofstream out(file, std::ios::binary);
    out << "{\"instruction\": \"a\", \"output\": \"b\"}\n{\"instruction\": \"";
    const std::string block(1 << 20, 'x');
    for (std::size_t written = 0; written < hugeBytes; written += block.size())
      out << block;
    out << "\", \"output\": \"b\"}\n{\"instruction\": \"c\", \"output\": \"d\"}\n";
  }
  const std::uint64_t before = lorascope::common::peakResidentBytes().value_or(0);
  const ReadAll read = readAll(file);
  const std::uint64_t after = lorascope::common::peakResidentBytes().value_or(0);
  COMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 3}));
  const std::vector<DatasetIssue> large = issuesOf(read.issues, IssueKind::RecordTooLarge);
  COMPARE(large.size(), std::size_t{1});
  VERIFY2(large[0].message ==
              "line 2: the record is 100.00 MiB, more than the 16.00 MiB limit of "
              "one dataset record; it is left out (split it into shorter examples)",
          large[0].message.c_str());
  COMPARE(read.issues.size(), std::size_t{1});
  // Within a small multiple of the limit, not of the record (0 where the system does not tell).
  // Under AddressSanitizer the resident set holds its quarantine of freed blocks (256 MiB) too:
  // there the bound is not ours to read, and the other builds check it.
  if (kResidentSetIsOurs) {
    VERIFY2(after - before < 5 * kMaxRecordBytes,
            lstest::format("peak resident set grew by %llu MiB",
                           static_cast<unsigned long long>((after - before) >> 20))
                .c_str());
  }
}

TEST_CASE(aCompactArrayIsReadInPiecesAndItsLargeElementRefused) {
  lstest::TempDir tmp;
  const std::filesystem::path file = tmp.path() / "compact.json";
  {
    std::ofstream out(file, std::ios::binary);
    out << "[{\"instruction\": \"a\", \"output\": \"b\"}, {\"instruction\": \""
        << std::string(kMaxRecordBytes + 10, 'y') << "\", \"output\": \"b\"}";
    for (int i = 0; i < 3; ++i)  // the line goes on past the next piece
      out << ", {\"instruction\": \"" << std::string(kMaxRecordBytes / 2, 'z')
          << "\", \"output\": \"d\"}";
    out << "]\n";
  }
  const ReadAll read = readAll(file);
  COMPARE(read.examples.size(), std::size_t{4});
  const std::vector<DatasetIssue> large = issuesOf(read.issues, IssueKind::RecordTooLarge);
  COMPARE(large.size(), std::size_t{1});
  VERIFY2(large[0].message.rfind("element 1 (line 1): the record is 16.00 MiB", 0) == 0,
          large[0].message.c_str());
  COMPARE(read.issues.size(), std::size_t{1});
}

TEST_CASE(guessFormatLooksAtKeys) {
  COMPARE(guessFormat(nlohmann::json::parse(R"({"messages": []})")),
          std::optional<Format>(Format::Chat));
  COMPARE(guessFormat(nlohmann::json::parse(R"({"instruction": "x"})")),
          std::optional<Format>(Format::Alpaca));
  COMPARE(guessFormat(nlohmann::json::parse(R"({"text": "x"})")),
          std::optional<Format>(Format::Text));
  VERIFY(!guessFormat(nlohmann::json::parse(R"({"question": "x"})")).has_value());
  VERIFY(!guessFormat(nlohmann::json::parse("[1]")).has_value());
  COMPARE(guessFormat(nlohmann::json::parse(R"({"conversations": []})")),
          std::optional<Format>(Format::ShareGpt));
  COMPARE(guessFormat(nlohmann::json::parse(R"({"prompt": "a", "completion": "b"})")),
          std::optional<Format>(Format::PromptCompletion));
  COMPARE(parseFormatName("chat"), std::optional<Format>(Format::Chat));
  COMPARE(parseFormatName("sharegpt"), std::optional<Format>(Format::ShareGpt));
  COMPARE(parseFormatName("prompt-completion"), std::optional<Format>(Format::PromptCompletion));
  VERIFY(!parseFormatName("vicuna").has_value());
}
