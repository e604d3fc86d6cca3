// fuzz_protocol.cpp — any line given to the decoders is a message or a ProtocolError, and what
// decodes re-encodes to a line that decodes to the same message.
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
  } catch (const ProtocolError&) {
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
