// PostProcessors.cpp — tokenizer.json post-processors for one sequence: TemplateProcessing
// (e.g. Llama-3's "<|begin_of_text|> $A"), RobertaProcessing / BertProcessing (cls $A sep),
// ByteLevel (offsets only: no change to ids) and Sequence.
#include "text/Components.h"
#include "text/TextError.h"

namespace lorascope::text {

namespace {

std::int32_t idField(const Json& pair, const std::string& where) {
  // Roberta/Bert store ["<s>", 0].
  if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer()) {
    throw TextError(where + ": expected [token, id]");
  }
  return pair[1].get<std::int32_t>();
}

PostProcessFn makeTemplate(const Json& spec, const std::string& where) {
  const Json& single = requireField(spec, "single", where);
  const Json& specials =
      spec.contains("special_tokens") ? spec.at("special_tokens") : Json::object();
  if (!single.is_array())
    throw TextError(where + ": 'single' must be an array");
  // Each item is either the ids of a special token or the sequence itself (empty vector + flag).
  struct Item {
    bool isSequence;
    std::vector<std::int32_t> ids;
  };
  std::vector<Item> items;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      items.push_back({true, {}});
    } else if (item.contains("SpecialToken")) {
      const std::string name = stringField(item.at("SpecialToken"), "id", where);
      if (!specials.contains(name)) {
        throw TextError(where + ": special token '" + name + "' has no entry in special_tokens");
      }
      const Json& ids = requireField(specials.at(name), "ids", where);
      if (!ids.is_array())
        throw TextError(where + ": special_tokens." + name + ".ids not an array");
      items.push_back({false, ids.get<std::vector<std::int32_t>>()});
    } else {
      throw TextError(where + ": items of 'single' must be Sequence or SpecialToken");
    }
  }
  return [items](std::vector<std::int32_t>& ids) {
    std::vector<std::int32_t> out;
    out.reserve(ids.size() + items.size());
    for (const Item& item : items) {
      if (item.isSequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    ids = std::move(out);
  };
}

}  // namespace

PostProcessFn makePostProcessor(const Json& spec, const std::string& source, std::string& describe,
                                int depth) {
  if (spec.is_null())
    return {};
  const std::string where = source + ": post_processor";
  checkSequenceDepth(depth, where);
  const std::string type = stringField(spec, "type", where);
  describe = type;
  try {
    if (type == "TemplateProcessing")
      return makeTemplate(spec, where);
    if (type == "ByteLevel")
      return [](std::vector<std::int32_t>&) {};
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      const std::int32_t cls = idField(requireField(spec, "cls", where), where);
      const std::int32_t sep = idField(requireField(spec, "sep", where), where);
      return [cls, sep](std::vector<std::int32_t>& ids) {
        ids.insert(ids.begin(), cls);
        ids.push_back(sep);
      };
    }
    if (type == "Sequence") {
      const Json& steps = requireField(spec, "processors", where);
      if (!steps.is_array())
        throw TextError(where + ": 'processors' must be an array");
      std::vector<PostProcessFn> fns;
      for (const Json& step : steps) {
        std::string name;
        if (PostProcessFn fn = makePostProcessor(step, source, name, depth + 1))
          fns.push_back(std::move(fn));
      }
      return [fns](std::vector<std::int32_t>& ids) {
        for (const auto& fn : fns)
          fn(ids);
      };
    }
  } catch (const Json::exception& e) {
    throw TextError(where + ": " + e.what());
  }
  throw TextError(where + ": post-processor type '" + type +
                  "' is not supported (supported: TemplateProcessing, RobertaProcessing, "
                  "BertProcessing, ByteLevel, Sequence)");
}

}  // namespace lorascope::text
