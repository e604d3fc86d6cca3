// test_dataset_reader.cpp — reading dataset files: the formats (alpaca, chat, sharegpt,
// prompt-completion, text), detection, JSONL and
// JSON arrays, and every kind of bad input (broken line, BOM, CRLF, invalid UTF-8, empty and
// missing files, a bad array element), each reported with its location and never fatal.
#include <QtTest>

#include "DataTestUtil.h"
#include "data/Example.h"
#include "data/RecordReader.h"
#include "data/RecordText.h"
#include "data/Utf8.h"

using namespace lorascope::data;
using namespace lorascope::data::test;

class TestDatasetReader : public QObject {
  Q_OBJECT

 private slots:
  void alpacaJsonlBecomesUserAndAssistantTurns() {
    const ReadAll read = readAll(fixture("alpaca_broken_line.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::Alpaca));
    QCOMPARE(read.examples.size(), std::size_t{4});
    const Example& second = read.examples[1];
    QCOMPARE(second.format, Format::Alpaca);
    QCOMPARE(second.messages.size(), std::size_t{2});
    QCOMPARE(second.messages[0].role, std::string("user"));
    QCOMPARE(second.messages[0].content, std::string("Add the numbers.\n\n### Input:\n2 and 3"));
    QCOMPARE(second.messages[1].role, std::string("assistant"));
    QCOMPARE(second.messages[1].content, std::string("5"));
  }

  void brokenLineInTheMiddleIsReportedAndTheRestIsRead() {
    const ReadAll read = readAll(fixture("alpaca_broken_line.jsonl"));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2, 5, 7}));
    const auto json = issuesOf(read.issues, IssueKind::JsonError);
    QCOMPARE(json.size(), std::size_t{1});
    QCOMPARE(json[0].where.line, std::size_t{3});
    QVERIFY(json[0].message.find("line 3") != std::string::npos);
    const auto empty = issuesOf(read.issues, IssueKind::NoResponse);
    QCOMPARE(empty.size(), std::size_t{1});
    QCOMPARE(empty[0].where.line, std::size_t{6});
  }

  void bomAndCrlfReadLikeThePlainFile() {
    const ReadAll plain = readAll(fixture("alpaca_broken_line.jsonl"));
    const ReadAll crlf = readAll(fixture("alpaca_bom_crlf.jsonl"));
    QCOMPARE(linesOf(crlf.examples), linesOf(plain.examples));
    for (std::size_t i = 0; i < plain.examples.size(); ++i) {
      QCOMPARE(crlf.examples[i].messages[1].content, plain.examples[i].messages[1].content);
    }
    QCOMPARE(crlf.issues.size(), plain.issues.size());
    // The first record starts after the 3-byte BOM; line 2 after "...}\r\n".
    QCOMPARE(crlf.examples[0].where.byteOffset, std::uint64_t{3});
    QCOMPARE(crlf.examples[1].where.byteOffset, plain.examples[1].where.byteOffset + 3 + 1);
    RecordReader reader(fixture("alpaca_bom_crlf.jsonl"), [](DatasetIssue) {});
    RawRecord record;
    while (reader.next(record)) {
    }
    QVERIFY(reader.hadBom());
    QCOMPARE(reader.crlfLines(), std::size_t{7});
    QCOMPARE(reader.blankLines(), std::size_t{1});
  }

  void invalidUtf8IsReportedWithLineAndByteOffset() {
    const ReadAll read = readAll(fixture("alpaca_invalid_utf8.jsonl"));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 3}));
    const auto bad = issuesOf(read.issues, IssueKind::InvalidUtf8);
    QCOMPARE(bad.size(), std::size_t{1});
    QCOMPARE(bad[0].where.line, std::size_t{2});
    QCOMPARE(bad[0].where.byteOffset, std::uint64_t{77});  // line 2 starts at 57; 0xe9 is col 20
    QVERIFY(bad[0].message.find("0xe9") != std::string::npos);
    QVERIFY(bad[0].message.find("byte 77") != std::string::npos);
  }

  void emptyFileYieldsNoRecordsAndNoError() {
    const ReadAll read = readAll(fixture("empty.jsonl"));
    QVERIFY(read.examples.empty());
    QVERIFY(read.issues.empty());
    QVERIFY(!read.format.has_value());
  }

  void missingFileThrowsDatasetErrorNamingIt() {
    const auto path = fixture("no_such_file.jsonl");
    try {
      readAll(path);
      QFAIL("expected DatasetError");
    } catch (const DatasetError& error) {
      QVERIFY(std::string(error.what()).find("no_such_file.jsonl") != std::string::npos);
      QVERIFY(std::string(error.what()).find("cannot open") != std::string::npos);
    }
    QVERIFY_THROWS_EXCEPTION(DatasetError, readAll(fixture("")));  // a directory
  }

  void jsonArrayBadElementsAreReportedAndTheOthersRead() {
    const ReadAll read = readAll(fixture("alpaca_array_bad_element.json"));
    QCOMPARE(read.examples.size(), std::size_t{3});
    QCOMPARE(read.examples[0].where.element, std::optional<std::size_t>(0));
    QCOMPARE(read.examples[1].where.element, std::optional<std::size_t>(3));
    QCOMPARE(read.examples[1].where.line, std::size_t{17});
    QCOMPARE(read.examples[1].messages[0].content, std::string("Fourth\n\n### Input:\nx"));
    QCOMPARE(read.examples[2].where.element, std::optional<std::size_t>(4));
    QCOMPARE(read.examples[2].messages[1].content, std::string("five"));
    const auto json = issuesOf(read.issues, IssueKind::JsonError);
    QCOMPARE(json.size(), std::size_t{2});
    QCOMPARE(json[0].where.element, std::optional<std::size_t>(1));
    QCOMPARE(json[0].where.line, std::size_t{8});  // the stray quote
    QCOMPARE(json[1].where.element, std::optional<std::size_t>(2));
    QVERIFY(json[1].message.find("not closed before line 17") != std::string::npos);
  }

  void compactJsonArrayGivesElementIndexAndOffset() {
    const ReadAll read = readAll(fixture("alpaca_array_compact.json"));
    QCOMPARE(read.examples.size(), std::size_t{2});
    QCOMPARE(read.examples[1].where.element, std::optional<std::size_t>(1));
    QCOMPARE(read.examples[1].where.line, std::size_t{1});
    QCOMPARE(read.examples[1].where.byteOffset, std::uint64_t{38});
    const auto structure = issuesOf(read.issues, IssueKind::StructureWarning);
    QCOMPARE(structure.size(), std::size_t{1});
    QVERIFY(structure[0].message.find("trailing comma") != std::string::npos);
  }

  void chatKeepsSystemAndAllTurnsAndRejectsBadRecords() {
    const ReadAll read = readAll(fixture("chat.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::Chat));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
    QCOMPARE(read.examples[0].messages[0].role, std::string("system"));
    QCOMPARE(read.examples[1].messages.size(), std::size_t{4});
    QCOMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
    QCOMPARE(issuesOf(read.issues, IssueKind::UnknownRole)[0].where.line, std::size_t{4});
  }

  void shareGptBecomesChatTurns() {
    const ReadAll read = readAll(fixture("sharegpt.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::ShareGpt));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
    const Example& first = read.examples[0];
    QCOMPARE(first.messages.size(), std::size_t{3});
    QCOMPARE(first.messages[0].role, std::string("system"));
    QCOMPARE(first.messages[1].role, std::string("user"));
    QCOMPARE(first.messages[2].role, std::string("assistant"));
    QCOMPARE(first.messages[2].content, std::string("Hello."));
    // The record's "system" field becomes the first turn; user/assistant work as "from" too.
    const Example& second = read.examples[1];
    QCOMPARE(second.messages.size(), std::size_t{5});
    QCOMPARE(second.messages[0].role, std::string("system"));
    QCOMPARE(second.messages[0].content, std::string("Answer in digits."));
    QCOMPARE(second.messages[3].role, std::string("user"));
    QCOMPARE(second.messages[4].role, std::string("assistant"));
    QCOMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
    const auto role = issuesOf(read.issues, IssueKind::UnknownRole);
    QCOMPARE(role[0].where.line, std::size_t{4});
    QVERIFY2(role[0].message.find("conversations[1] has from \"function_call\"; expected human, "
                                  "gpt or system") != std::string::npos,
             role[0].message.c_str());
    const auto missing = issuesOf(read.issues, IssueKind::MissingField);
    QCOMPARE(missing[0].where.line, std::size_t{5});
    QVERIFY2(missing[0].message.find("has no string \"value\"") != std::string::npos,
             missing[0].message.c_str());
  }

  void promptCompletionReadsBothForms() {
    const ReadAll read = readAll(fixture("prompt_completion.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::PromptCompletion));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2}));
    QCOMPARE(read.examples[0].prompt, std::string("The capital of France is"));
    QCOMPARE(read.examples[0].text, std::string(" Paris."));
    QVERIFY(read.examples[0].messages.empty());
    // The conversational form: prompt messages then completion messages.
    QCOMPARE(read.examples[1].messages.size(), std::size_t{2});
    QCOMPARE(read.examples[1].messages[1].role, std::string("assistant"));
    QCOMPARE(read.examples[1].messages[1].content, std::string("Blue."));
    QCOMPARE(issuesOf(read.issues, IssueKind::NoResponse)[0].where.line, std::size_t{3});
    QCOMPARE(issuesOf(read.issues, IssueKind::WrongType)[0].where.line, std::size_t{4});
  }

  void textFormatReadsTextAndRejectsBlankText() {
    const ReadAll read = readAll(fixture("text.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::Text));
    QCOMPARE(read.examples.size(), std::size_t{2});
    QCOMPARE(read.examples[1].text, std::string("Pack my box with five dozen liquor jugs."));
    QCOMPARE(issuesOf(read.issues, IssueKind::EmptyField)[0].where.line, std::size_t{3});
  }

  void detectionTakesTheMajorityAndReportsOtherRecords() {
    const ReadAll read = readAll(fixture("mixed.jsonl"));
    QCOMPARE(read.format, std::optional<Format>(Format::Alpaca));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{1, 2, 4}));
    QCOMPARE(issuesOf(read.issues, IssueKind::FormatMismatch)[0].where.line, std::size_t{3});
    QCOMPARE(issuesOf(read.issues, IssueKind::NotAnObject)[0].where.line, std::size_t{5});
    const auto missing = issuesOf(read.issues, IssueKind::MissingField);
    QCOMPARE(missing.size(), std::size_t{3});  // line 6: instruction, output; line 7: output
    QCOMPARE(missing.back().where.line, std::size_t{7});
    QVERIFY(missing.back().message.find("\"output\"") != std::string::npos);
  }

  void forcedFormatOverridesDetection() {
    const ReadAll read = readAll(fixture("mixed.jsonl"), Format::Chat);
    QCOMPARE(read.format, std::optional<Format>(Format::Chat));
    QCOMPARE(linesOf(read.examples), (std::vector<std::size_t>{3}));
    QCOMPARE(issuesOf(read.issues, IssueKind::FormatMismatch).size(), std::size_t{4});
  }

  void jsonErrorMessagesStayValidUtf8() {
    // The JSON lexer stops at the first byte of "é" after the object; its excerpt of what it
    // read would end inside the UTF-8 sequence (found by the fuzzer).
    const std::string line = "{\"text\": \"caf\xc3\xa9\"}\xc3\xa9\"}";
    std::vector<DatasetIssue> issues;
    const auto value = parseRecordText(line, {1, std::nullopt, 0},
                                       [&issues](DatasetIssue issue) { issues.push_back(issue); });
    QVERIFY(!value.has_value());
    QCOMPARE(issues.size(), std::size_t{1});
    QCOMPARE(issues[0].kind, IssueKind::JsonError);
    QVERIFY(!findInvalidUtf8(issues[0].message).has_value());
  }

  void guessFormatLooksAtKeys() {
    QCOMPARE(guessFormat(nlohmann::json::parse(R"({"messages": []})")),
             std::optional<Format>(Format::Chat));
    QCOMPARE(guessFormat(nlohmann::json::parse(R"({"instruction": "x"})")),
             std::optional<Format>(Format::Alpaca));
    QCOMPARE(guessFormat(nlohmann::json::parse(R"({"text": "x"})")),
             std::optional<Format>(Format::Text));
    QVERIFY(!guessFormat(nlohmann::json::parse(R"({"question": "x"})")).has_value());
    QVERIFY(!guessFormat(nlohmann::json::parse("[1]")).has_value());
    QCOMPARE(guessFormat(nlohmann::json::parse(R"({"conversations": []})")),
             std::optional<Format>(Format::ShareGpt));
    QCOMPARE(guessFormat(nlohmann::json::parse(R"({"prompt": "a", "completion": "b"})")),
             std::optional<Format>(Format::PromptCompletion));
    QCOMPARE(parseFormatName("chat"), std::optional<Format>(Format::Chat));
    QCOMPARE(parseFormatName("sharegpt"), std::optional<Format>(Format::ShareGpt));
    QCOMPARE(parseFormatName("prompt-completion"), std::optional<Format>(Format::PromptCompletion));
    QVERIFY(!parseFormatName("vicuna").has_value());
  }
};

QTEST_APPLESS_MAIN(TestDatasetReader)
#include "test_dataset_reader.moc"
