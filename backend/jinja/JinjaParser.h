// JinjaParser.h — Jinja source → statements (internal to backend/jinja). The lexer applies
// transformers' whitespace settings (trim_blocks, lstrip_blocks, no trailing newline) and the
// -/+ markers; the parser is recursive descent with Jinja's operator precedence.
#pragma once

#include <string>
#include <string_view>

#include "jinja/JinjaAst.h"  // defines: Body

namespace lorascope::jinja {

// JinjaError "<origin> line N: ..." for a syntax error, an unsupported tag or nesting deeper
// than maxDepth.
Body parseTemplate(std::string_view source, const std::string& origin, int maxDepth);

}  // namespace lorascope::jinja
