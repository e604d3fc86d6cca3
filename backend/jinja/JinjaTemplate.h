// JinjaTemplate.h — a Jinja interpreter for the subset chat templates use, with the settings
// transformers' apply_chat_template renders under (trim_blocks, lstrip_blocks, loop controls,
// its own tojson, raise_exception, strftime_now; the {% generation %} block renders its body).
//
// Supported: {{ }}, {% if/elif/else %}, {% for a, b in x if c %} with loop.index/index0/
// revindex/revindex0/first/last/length/previtem/nextitem/cycle and {% else %}, break/continue,
// {% set %} (names, tuples, namespace attributes, blocks), macros with defaults, comments,
// whitespace control (-, +), filters (trim, tojson, length, default, join, map, selectattr,
// ...), tests (defined, none, string, mapping, ...), str/dict methods (strip, split,
// startswith, items, get, ...), slicing, and Python's operators and printing rules.
//
// Untrusted templates (they come inside downloaded model folders) are bounded: parse depth and
// call depth (JinjaLimits::maxDepth), loop iterations in one render, output bytes, the size of
// any one string or list, and a budget per render: the bytes of all the values it builds,
// counted across all values and loop iterations, and its wall time. Exceeding one is a JinjaError
// naming the template and the limit, never a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jinja/JinjaError.h"  // defines: JinjaError

namespace lorascope::jinja {

struct Stmt;

struct JinjaLimits {
  std::size_t maxOutputBytes = 64u << 20;   // 64 MiB: far above any chat prompt
  std::size_t maxLoopIterations = 1000000;  // all loops of one render together
  int maxDepth = 100;                       // nesting of expressions, blocks and macro calls
  // The budget of one render. A chat prompt's render builds a few copies of its conversation
  // (a dataset record is at most 16 MiB, data/LineReader.h) in well under a millisecond.
  std::size_t maxValueBytes = 256u << 20;  // 256 MiB of new strings, lists and dicts in all
  std::chrono::milliseconds maxRenderTime{2000};
};

// The message of a template's raise_exception('...') call, as transformers' TemplateError.
class TemplateRaised : public JinjaError {
 public:
  TemplateRaised(const std::string& origin, std::string message)
      : JinjaError(origin + ": the chat template raised an error: " + message),
        message_(std::move(message)) {}
  const std::string& templateMessage() const { return message_; }

 private:
  std::string message_;
};

class JinjaTemplate {
 public:
  // Parses `source`; JinjaError "<origin> line N: ..." for a syntax error or an unsupported tag.
  static JinjaTemplate parse(std::string_view source, std::string origin, JinjaLimits limits = {});

  // Renders with the keys of `context` (an object) as variables. JinjaError for a runtime error
  // (e.g. "'dict object' has no attribute 'x'" used in arithmetic, an unknown filter, a limit)
  // and TemplateRaised for raise_exception.
  std::string render(const nlohmann::ordered_json& context) const;

  const std::string& origin() const { return origin_; }

 private:
  JinjaTemplate() = default;
  std::shared_ptr<const std::vector<Stmt>> body_;
  std::string origin_;
  JinjaLimits limits_;
};

}  // namespace lorascope::jinja
