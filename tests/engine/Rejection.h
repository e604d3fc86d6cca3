// Rejection.h — the ProtocolError message a command line is refused with, for the protocol tests.
#pragma once

#include <QString>

#include <string_view>

#include "engine/Protocol.h"

namespace lorascope::engine::test {

// The decoder's reason for refusing `line`, or "<accepted>" when it decodes.
inline QString rejection(std::string_view line) {
  try {
    decodeCommand(line);
  } catch (const ProtocolError& e) {
    return QString::fromUtf8(e.what());
  }
  return QStringLiteral("<accepted>");
}

}  // namespace lorascope::engine::test
