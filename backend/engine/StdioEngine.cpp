// engine/StdioEngine.cpp — a reader thread feeds the engine; the engine thread writes events.
#include "engine/StdioEngine.h"

#include <cstdlib>
#include <istream>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace lorascope::engine {

int serveEngineOverStreams(JobFactory factory, HelloEvent hello, std::istream& in,
                           std::ostream& out, GenerationRunner generate,
                           GenerationHangCheck generationHang) {
  // A stream tied to `out` flushes it before every read: the reader thread would then flush
  // `out` beside the writer, outside outMutex. With sync_with_stdio(false) (lorascope-train
  // engine) that race on the buffer duplicated bytes ("{{" at the start of a line).
  in.tie(nullptr);
  std::mutex outMutex;
  auto writeLine = [&](const TimedEvent& event) {
    const std::string line = encodeEvent(event);
    const std::lock_guard lock(outMutex);
    out << line << '\n';
    out.flush();
  };
  EngineOptions options;
  options.reportProgress = true;  // for the supervisor's hang watchdog
  options.generate = std::move(generate);
  options.generationHang = std::move(generationHang);
  options.onHang = [&] {
    const std::lock_guard lock(outMutex);  // the report is written and flushed
    std::_Exit(kExitStickyError);
  };
  Engine engine(std::move(factory), writeLine, std::move(hello), std::move(options));
  std::thread reader([&] {
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.empty())
        continue;
      try {
        engine.post(decodeCommand(line));
      } catch (const ProtocolError& e) {
        writeLine(TimedEvent{0, protocolErrorEvent(e, line)});
      }
    }
    engine.closeInput();
  });
  const int code = engine.run();
  if (code != 0) {
    reader.detach();  // still blocked on stdin; the process exits now and takes it along
    return code;
  }
  reader.join();
  return 0;
}

}  // namespace lorascope::engine
