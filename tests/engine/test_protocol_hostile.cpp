// test_protocol_hostile.cpp — hostile input on the engine's stdin (issue 20 items 1, 2 and 9):
// bytes that are not UTF-8, nesting deep enough to overflow a stack and numbers past 2^32 each
// get an error event; the engine process neither aborts nor crashes. And the stdio transport
// itself: reading commands never flushes the event stream behind its writers' lock.
#include "TestRunner.h"

#include <algorithm>
#include <atomic>
#include <sstream>

#include "Rejection.h"
#include "engine/Protocol.h"
#include "engine/StdioEngine.h"

using namespace lorascope::engine;
using lorascope::engine::test::rejection;

namespace {

// Runs the engine's stdio loop on `input`; returns the event lines it wrote after hello/state.
std::vector<TimedEvent> serve(const std::string& input, int& exitCode) {
  std::istringstream in(input);
  std::ostringstream out;
  exitCode = serveEngineOverStreams(
      [](const nlohmann::json&, const EventSink&) -> std::unique_ptr<EngineJob> { return nullptr; },
      HelloEvent{kProtocolVersion, "test", "cpu", {}}, in, out);
  std::vector<TimedEvent> events;
  std::istringstream lines(out.str());
  std::string line;
  while (std::getline(lines, line))
    events.push_back(decodeEvent(line));  // every line the engine writes must decode
  return events;
}

std::vector<ErrorEvent> errorsOf(const std::vector<TimedEvent>& events) {
  std::vector<ErrorEvent> errors;
  for (const TimedEvent& e : events) {
    if (const auto* error = std::get_if<ErrorEvent>(&e.event))
      errors.push_back(*error);
  }
  return errors;
}

}  // namespace

TEST_CASE(invalidUtf8LineGetsAnErrorEventNotAnAbort) {
  // `printf '\xff\n' | lorascope-train engine` used to end in SIGABRT: encoding the quote threw.
  int code = -1;
  const auto events = serve("\xff\n{\"v\":1,\"type\":\"bad\xc3\"}\n", code);
  COMPARE(code, 0);
  const auto errors = errorsOf(events);
  COMPARE(errors.size(), std::size_t{2});
  COMPARE(errors[0].category, std::string("protocol"));
  VERIFY2(errors[0].message.find("not valid JSON") != std::string::npos, errors[0].message.c_str());
  // The bad byte is shown as U+FFFD, not dropped and not passed on as invalid UTF-8.
  VERIFY2(errors[0].message.find("(line: \xef\xbf\xbd)") != std::string::npos,
          errors[0].message.c_str());
  // Encoding any event with invalid UTF-8 in a string gives one valid line.
  const std::string line =
      encodeEvent({0, LogEvent{LogLevel::Warning, "path /data/\xfe\xff.jsonl"}});
  VERIFY(line.find('\n') == std::string::npos);
  COMPARE(std::get<LogEvent>(decodeEvent(line).event).text,
          std::string("path /data/\xef\xbf\xbd\xef\xbf\xbd.jsonl"));
}

TEST_CASE(lineCutInsideAMultiByteCharacterQuotesWholeCharacters) {
  // 199 ASCII bytes then "é" (2 bytes): the 200-byte quote would end inside it.
  const std::string line = std::string(199, 'x') + "\xc3\xa9" + "tail";
  const ErrorEvent error = protocolErrorEvent(ProtocolError("not valid JSON"), line);
  const std::string quoted = std::string(199, 'x') + "…)";
  VERIFY2(
      error.message.size() >= quoted.size() &&
          error.message.compare(error.message.size() - quoted.size(), quoted.size(), quoted) == 0,
      error.message.c_str());
  // And the event encodes to a line that decodes to the same message (nothing replaced).
  const auto back = std::get<ErrorEvent>(decodeEvent(encodeEvent({0, error})).event);
  COMPARE(back.message, error.message);
}

TEST_CASE(startNested100000LevelsIsRejectedAtParseTime) {
  const std::string deep = R"({"v":1,"type":"start","config":{"a":)" + std::string(100000, '[') +
                           std::string(100000, ']') + "}}";
  VERIFY2(rejection(deep).contains("nested deeper than 256 levels"),
          rejection(deep).text.substr(0, 200));
  // Through the engine's input thread (whose stack it used to overflow): an error event.
  int code = -1;
  const auto errors = errorsOf(serve(deep + "\n", code));
  COMPARE(code, 0);
  COMPARE(errors.size(), std::size_t{1});
  VERIFY(errors[0].message.find("nested deeper") != std::string::npos);
  // Ordinary nesting still passes.
  const std::string fine = R"({"v":1,"type":"start","config":{"a":)" + std::string(200, '[') +
                           std::string(200, ']') + "}}";
  COMPARE(rejection(fine).text, std::string("<accepted>"));
}

TEST_CASE(numberBeyondADoubleIsAnErrorEventNotACrash) {
  // nlohmann reports 1e400 as out_of_range, not as a parse error: it used to end the engine.
  const std::string line = R"({"v":1,"type":"start","config":{"max_steps":1e400}})";
  VERIFY2(rejection(line).contains("not valid JSON"), rejection(line).text.c_str());
  int code = -1;
  const auto errors = errorsOf(serve(line + "\n", code));
  COMPARE(code, 0);
  COMPARE(errors.size(), std::size_t{1});
  VERIFY(errors[0].message.find("number overflow") != std::string::npos);
}

TEST_CASE(protocolVersionAbove2To32DoesNotWrap) {
  // 2^32 + 1 used to be read as int 1 and accepted.
  VERIFY(rejection(R"({"v":4294967297,"type":"stop"})").contains("protocol version 4294967297"));
  VERIFY(rejection(R"({"v":18446744073709551617,"type":"stop"})").contains("protocol version"));
  COMPARE(rejection(R"({"v":1,"type":"stop"})").text, std::string("<accepted>"));
  try {
    decodeEvent(R"({"v":1,"type":"hello","t_ms":0,"protocol":4294967297,"version":"x",)"
                R"("flavour":"cpu","devices":[]})");
    FAIL("a hello with protocol 2^32 + 1 was accepted");
  } catch (const ProtocolError& e) {
    VERIFY2(std::string(e.what()).find("protocol: out of range") != std::string::npos, e.what());
  }
  try {
    decodeEvent(R"({"v":1,"type":"step","t_ms":18446744073709551615,"step":1})");
    FAIL("t_ms 2^64 - 1 was accepted");
  } catch (const ProtocolError& e) {
    VERIFY2(std::string(e.what()).find("t_ms: too large") != std::string::npos, e.what());
  }
}

// An event stream that counts its flushes.
class CountingFlushes : public std::stringbuf {
 public:
  std::atomic<int> flushes{0};

 protected:
  int sync() override {
    ++flushes;
    return std::stringbuf::sync();
  }
};

TEST_CASE(readingCommandsNeverFlushesTheEventStream) {
  // std::cin is tied to std::cout: each read of a command flushed the events from the reader
  // thread, outside the writers' lock. Under sync_with_stdio(false) that flush once landed inside
  // the hello's write and sent its "{" twice (test_fault_suite beside test_cli_train, ctest -j2).
  std::istringstream in(std::string(1000, '\n'));  // 1000 reads, no event of their own
  CountingFlushes events;
  std::ostream out(&events);
  in.tie(&out);
  const int code = serveEngineOverStreams(
      [](const nlohmann::json&, const EventSink&) -> std::unique_ptr<EngineJob> { return nullptr; },
      HelloEvent{kProtocolVersion, "test", "cpu", {}}, in, out);
  COMPARE(code, 0);
  const std::string text = events.str();
  const auto lines = std::count(text.begin(), text.end(), '\n');
  VERIFY(lines >= 2);  // the hello and the idle state
  VERIFY(text.starts_with("{\"devices\""));
  COMPARE(events.flushes.load(), static_cast<int>(lines));  // one flush per line, by its writer
}
