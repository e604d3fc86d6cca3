// Rejection.h — the ProtocolError message a command line is refused with, for the protocol tests.
#pragma once

#include <string>
#include <string_view>

#include "TestRunner.h"  // defines: lstest::Message
#include "engine/Protocol.h"

namespace lorascope::engine::test {

// The decoder's reason for refusing `line`, or "<accepted>" when it decodes.
inline lstest::Message rejection(std::string_view line) {
  try {
    decodeCommand(line);
  } catch (const ProtocolError& e) {
    return {e.what()};
  }
  return {"<accepted>"};
}

}  // namespace lorascope::engine::test
