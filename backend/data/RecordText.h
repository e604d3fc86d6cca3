// RecordText.h — turns the text of one record (a JSONL line or a JSON array element) into a
// JSON value, or into one DatasetIssue that names the line and byte of the fault.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/Issue.h"

namespace lorascope::data {

using IssueSink = std::function<void(DatasetIssue)>;

// Records nested deeper than this are rejected before parsing: no dataset needs more, and it
// bounds the work and stack of the JSON library on hostile input.
constexpr int kMaxRecordNestingDepth = 64;

// `where` locates the first byte of `text`. Reports invalid UTF-8 (with the bad byte's line and
// offset), nesting beyond kMaxRecordNestingDepth and JSON syntax errors to `sink`.
std::optional<nlohmann::json> parseRecordText(std::string_view text, const SourceLocation& where,
                                              const IssueSink& sink);

// The location of byte `offset` of a text that starts at `start` (lines counted by "\n").
SourceLocation locateInText(std::string_view text, std::size_t offset, const SourceLocation& start);

}  // namespace lorascope::data
