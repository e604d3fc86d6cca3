// fuzz_protocol.cpp — any line given to the decoders is a message or a ProtocolError, what
// decodes re-encodes to a line that decodes to the same message, and the error event answering a
// rejected line always encodes to one line that decodes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/Protocol.h"

using namespace lorascope::engine;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  try {
    const Command c = decodeCommand(line);
    const std::string again = encodeCommand(c);
    if (encodeCommand(decodeCommand(again)) != again)
      __builtin_trap();
  } catch (const ProtocolError& e) {
    // The engine's answer to a rejected line (issue 20 item 1: encoding its quote aborted on
    // invalid UTF-8): one line that decodes back to an error event.
    const std::string reply = encodeEvent({0, protocolErrorEvent(e, line)});
    if (reply.find('\n') != std::string::npos ||
        !std::holds_alternative<ErrorEvent>(decodeEvent(reply).event))
      __builtin_trap();
  }
  try {
    const TimedEvent e = decodeEvent(line);
    const std::string again = encodeEvent(e);
    if (encodeEvent(decodeEvent(again)) != again)
      __builtin_trap();
  } catch (const ProtocolError&) {
  }
  return 0;
}
