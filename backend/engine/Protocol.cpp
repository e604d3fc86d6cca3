// engine/Protocol.cpp — JSON-lines encoding of commands and events, and strict decoding.
#include "engine/Protocol.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "common/EnumNames.h"
#include "common/JsonReader.h"

namespace lorascope::engine {
namespace {

using nlohmann::json;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

[[noreturn]] void throwProtocolError(const std::string& message) {
  throw ProtocolError(message);
}

// Reads the fields of one message (common/JsonReader.h); every failure is a ProtocolError naming
// the message type and the field.
class Fields : public common::JsonReader {
 public:
  Fields(const json& object, const std::string& type)
      : JsonReader(object, "'" + type + "' message: ", throwProtocolError) {}
};

// The wire names of the enums, one table each (both directions; dense, in declaration order).
constexpr common::EnumName<RunState> kStateNames[] = {
    {RunState::Idle, "idle"},         {RunState::Starting, "starting"},
    {RunState::Running, "running"},   {RunState::Paused, "paused"},
    {RunState::Stopping, "stopping"}, {RunState::Finished, "finished"},
    {RunState::Failed, "failed"}};
constexpr common::EnumName<LogLevel> kLevelNames[] = {{LogLevel::Debug, "debug"},
                                                      {LogLevel::Info, "info"},
                                                      {LogLevel::Warning, "warning"},
                                                      {LogLevel::Error, "error"}};
constexpr common::EnumName<Answer> kAnswerNames[] = {{Answer::Base, "base"},
                                                     {Answer::Adapter, "adapter"}};
constexpr common::EnumName<GenerationOutcome> kOutcomeNames[] = {
    {GenerationOutcome::Done, "done"},
    {GenerationOutcome::Stopped, "stopped"},
    {GenerationOutcome::Failed, "failed"}};
static_assert(common::coversEnum(kStateNames) && common::coversEnum(kLevelNames) &&
              common::coversEnum(kAnswerNames) && common::coversEnum(kOutcomeNames));

// The card of a memory or queue reading (the GPU's device index), when the reading names one.
std::optional<int> cardOf(const Fields& f) {
  if (!f.has("card"))
    return std::nullopt;
  return static_cast<int>(f.integer("card", 0, 4096));
}

// A generate command, checked so that the engine may rely on its values.
GenerateCommand decodeGenerate(const Fields& f) {
  GenerateCommand c;
  c.id = f.integer("id");
  c.model = f.string("model");
  if (c.model.empty())
    f.fail("model", "must name a model folder or a Hugging Face id");
  c.adapter = f.string("adapter");
  c.device = f.string("device");
  if (c.device != "cpu" && c.device != "gpu" && c.device != "auto")
    f.fail("device", "must be \"cpu\", \"gpu\" or \"auto\"");
  c.baseWeights = f.string("base_weights");
  if (c.baseWeights != "none" && c.baseWeights != "nf4")
    f.fail("base_weights", "must be \"none\" or \"nf4\"");
  c.system = f.string("system");
  c.prompt = f.string("prompt");
  c.maxNewTokens = f.integer("max_new_tokens");
  if (c.maxNewTokens < 1 || c.maxNewTokens > 1'000'000)
    f.fail("max_new_tokens", "must be a whole number from 1 to 1000000");
  c.temperature = f.number("temperature");
  if (!(c.temperature >= 0))
    f.fail("temperature", "must be a number ≥ 0");
  c.topP = f.number("top_p");
  if (!(c.topP > 0 && c.topP <= 1))
    f.fail("top_p", "must be a number in (0, 1]");
  const std::int64_t seed = f.integer("seed");
  if (seed < 0)
    f.fail("seed", "must be a whole number ≥ 0");
  c.seed = static_cast<std::uint64_t>(seed);
  return c;
}

// The toggle named by the message's "toggle", its value checked against the toggle's type (the
// settings registry's); the engine may rely on it after decoding.
Toggle checkedToggle(const Fields& f) {
  const std::string name = f.string("toggle");
  const settings::Setting* setting = settings::registry().findToggle(name);
  if (setting == nullptr) {
    f.fail("toggle",
           "unknown value '" + name + "' (one of " + settings::registry().toggleNames() + ")");
  }
  if (const std::string problem = settings::toggleValueProblem(*setting, f.at("value"));
      !problem.empty()) {
    f.fail("value", name + " " + problem);
  }
  return *setting->toggle;
}

// Deeper nesting than any message needs is refused while parsing: copying, dumping and
// destroying a json value recurse, and 100,000 levels overflow a thread's stack.
constexpr int kMaxNesting = 256;

json parseLine(std::string_view line, std::string& type) {
  json root;
  try {
    root = json::parse(line, [](int depth, json::parse_event_t event, json&) {
      if (depth >= kMaxNesting && (event == json::parse_event_t::object_start ||
                                   event == json::parse_event_t::array_start)) {
        throw ProtocolError("JSON nested deeper than " + std::to_string(kMaxNesting) + " levels");
      }
      return true;
    });
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e400)
    throw ProtocolError(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) {
    throw ProtocolError("a message must be a JSON object");
  }
  const auto v = root.find("v");
  // Compared as the number it is: get<int>() would wrap 2^32 + 1 to 1.
  const bool versionMatches =
      v != root.end() && v->is_number_integer() &&
      (v->is_number_unsigned() ? v->get<std::uint64_t>() == std::uint64_t{kProtocolVersion}
                               : v->get<std::int64_t>() == kProtocolVersion);
  if (!versionMatches) {
    throw ProtocolError("protocol version " +
                        (v == root.end() ? std::string("missing") : v->dump()) +
                        ", this side speaks " + std::to_string(kProtocolVersion));
  }
  const auto t = root.find("type");
  if (t == root.end() || !t->is_string()) {
    throw ProtocolError("message has no \"type\" string");
  }
  type = t->get<std::string>();
  return root;
}

// One line of JSON that never throws: text that is not valid UTF-8 (a quoted rejected line, a
// path in a foreign encoding) has its bad bytes replaced by U+FFFD instead of aborting the
// process.
std::string dumpLine(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json optionalToJson(const std::optional<std::uint64_t>& v) {
  return v ? json(*v) : json(nullptr);
}
json optionalToJson(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

const char* toString(const Toggle& toggle) {
  return toggle.name().c_str();
}

const char* toString(RunState state) {
  return common::enumName(kStateNames, state);
}

const char* toString(LogLevel level) {
  return common::enumName(kLevelNames, level);
}

const char* toString(Answer answer) {
  return common::enumName(kAnswerNames, answer);
}

const char* toString(GenerationOutcome outcome) {
  return common::enumName(kOutcomeNames, outcome);
}

std::string_view commandType(const Command& command) {
  return std::visit(Overloaded{[](const StartCommand&) { return "start"; },
                               [](const PauseCommand&) { return "pause"; },
                               [](const ResumeCommand&) { return "resume"; },
                               [](const StopCommand&) { return "stop"; },
                               [](const SetToggleCommand&) { return "set"; },
                               [](const SwitchProfileCommand&) { return "switch_profile"; },
                               [](const CheckpointNowCommand&) { return "checkpoint_now"; },
                               [](const RequestSnapshotCommand&) { return "request_snapshot"; },
                               [](const UndoRungCommand&) { return "undo_rung"; },
                               [](const GenerateCommand&) { return "generate"; },
                               [](const CancelGenerationCommand&) { return "cancel_generation"; }},
                    command);
}

std::string_view eventType(const Event& event) {
  return std::visit(Overloaded{[](const HelloEvent&) { return "hello"; },
                               [](const StateEvent&) { return "state"; },
                               [](const StepEvent&) { return "step"; },
                               [](const MemoryEvent&) { return "memory"; },
                               [](const QueueEvent&) { return "queue"; },
                               [](const SnapshotEvent&) { return "snapshot"; },
                               [](const LogEvent&) { return "log"; },
                               [](const ErrorEvent&) { return "error"; },
                               [](const CheckpointEvent&) { return "checkpoint"; },
                               [](const IncidentEvent&) { return "incident"; },
                               [](const ToggleAppliedEvent&) { return "toggle_applied"; },
                               [](const ToggleRefusedEvent&) { return "toggle_refused"; },
                               [](const EvalEvent&) { return "eval"; },
                               [](const ProfileSwitchEvent&) { return "profile_switch"; },
                               [](const LadderEvent&) { return "ladder"; },
                               [](const ProgressEvent&) { return "progress"; },
                               [](const GenerationStatusEvent&) { return "generation_status"; },
                               [](const TokenEvent&) { return "token"; },
                               [](const AnswerEndEvent&) { return "answer_end"; },
                               [](const GenerationEndEvent&) { return "generation_end"; }},
                    event);
}

std::string encodeCommand(const Command& command) {
  json out = {{"v", kProtocolVersion}, {"type", commandType(command)}};
  std::visit(
      Overloaded{[&](const StartCommand& c) { out["config"] = c.runConfig; },
                 [&](const SetToggleCommand& c) {
                   out["toggle"] = toString(c.toggle);
                   out["value"] = c.value;
                 },
                 [&](const SwitchProfileCommand& c) { out["name"] = c.name; },
                 [&](const GenerateCommand& c) {
                   out.update({{"id", c.id},
                               {"model", c.model},
                               {"adapter", c.adapter},
                               {"device", c.device},
                               {"base_weights", c.baseWeights},
                               {"system", c.system},
                               {"prompt", c.prompt},
                               {"max_new_tokens", c.maxNewTokens},
                               {"temperature", c.temperature},
                               {"top_p", c.topP},
                               {"seed", c.seed}});
                 },
                 [&](const CancelGenerationCommand& c) { out["id"] = c.id; }, [](const auto&) {}},
      command);
  return dumpLine(out);
}

Command decodeCommand(std::string_view line) {
  std::string type;
  const json root = parseLine(line, type);
  const Fields f(root, type);
  if (type == "start") {
    return StartCommand{f.object("config").value()};
  }
  if (type == "pause")
    return PauseCommand{};
  if (type == "resume")
    return ResumeCommand{};
  if (type == "stop")
    return StopCommand{};
  if (type == "checkpoint_now")
    return CheckpointNowCommand{};
  if (type == "request_snapshot")
    return RequestSnapshotCommand{};
  if (type == "undo_rung")
    return UndoRungCommand{};
  if (type == "switch_profile")
    return SwitchProfileCommand{f.string("name")};
  if (type == "set") {
    const Toggle toggle = checkedToggle(f);
    return SetToggleCommand{toggle, root["value"]};
  }
  if (type == "generate")
    return decodeGenerate(f);
  if (type == "cancel_generation")
    return CancelGenerationCommand{f.integer("id")};
  throw ProtocolError("unknown command type '" + type + "'");
}

std::string encodeEvent(const TimedEvent& timed) {
  json out = {{"v", kProtocolVersion}, {"type", eventType(timed.event)}, {"t_ms", timed.timeMs}};
  std::visit(
      Overloaded{
          [&](const HelloEvent& e) {
            out["protocol"] = e.protocolVersion;
            out["version"] = e.version;
            out["flavour"] = e.flavour;
            out["devices"] = json::array();
            for (const DeviceSummary& d : e.devices) {
              out["devices"].push_back({{"name", d.name},
                                        {"architecture", d.architecture},
                                        {"total_bytes", d.totalBytes}});
            }
            if (!e.gpuRuntime.empty())
              out["gpu_runtime"] = e.gpuRuntime;
            if (!e.noDeviceReason.empty())
              out["no_device_reason"] = e.noDeviceReason;
            if (!e.collectiveLibrary.empty())
              out["collective_library"] = e.collectiveLibrary;
            if (!e.noCollectiveReason.empty())
              out["no_collective_reason"] = e.noCollectiveReason;
          },
          [&](const StateEvent& e) {
            out["state"] = toString(e.state);
            out["step"] = e.step;
            out["detail"] = e.detail;
          },
          [&](const StepEvent& e) { out.update(runs::toJson(e)); },
          [&](const MemoryEvent& e) {
            out.update({{"allocated_bytes", optionalToJson(e.allocatedBytes)},
                        {"reserved_bytes", optionalToJson(e.reservedBytes)},
                        {"largest_free_bytes", optionalToJson(e.largestFreeBytes)},
                        {"fragmentation", optionalToJson(e.fragmentation)},
                        {"driver_used_bytes", optionalToJson(e.driverUsedBytes)},
                        {"driver_total_bytes", optionalToJson(e.driverTotalBytes)},
                        {"held_outside_bytes", optionalToJson(e.heldOutsideBytes)},
                        {"host_rss_bytes", optionalToJson(e.hostRssBytes)},
                        {"host_available_bytes", optionalToJson(e.hostAvailableBytes)}});
            for (const auto& [key, value] :
                 {std::pair{"largest_request_bytes", &e.largestRequestBytes},
                  std::pair{"inactive_split_bytes", &e.inactiveSplitBytes},
                  std::pair{"largest_free_at_peak_bytes", &e.largestFreeAtPeakBytes},
                  std::pair{"inactive_split_at_peak_bytes", &e.inactiveSplitAtPeakBytes}}) {
              if (*value) {
                out[key] = **value;
              }
            }
            if (e.card)
              out["card"] = *e.card;
          },
          [&](const QueueEvent& e) {
            out["streams"] = json::array();
            for (const QueueDepth& q : e.streams) {
              json stream = {{"stream", q.stream}, {"depth", q.depth}};
              if (q.peak) {
                stream["peak"] = *q.peak;
              }
              out["streams"].push_back(std::move(stream));
            }
            if (e.card)
              out["card"] = *e.card;
          },
          [&](const SnapshotEvent& e) {
            out["snapshot"] = e.snapshot;
            if (e.card)
              out["card"] = *e.card;
          },
          [&](const LogEvent& e) {
            out["level"] = toString(e.level);
            out["text"] = e.text;
          },
          [&](const ErrorEvent& e) {
            out.update({{"category", e.category},
                        {"op", e.op},
                        {"code", e.code},
                        {"message", e.message},
                        {"advice", e.advice},
                        {"sticky", e.sticky}});
            if (e.step > 0) {
              out["step"] = e.step;
            }
          },
          [&](const CheckpointEvent& e) {
            out["path"] = e.path;
            out["step"] = e.step;
          },
          [&](const IncidentEvent& e) {
            out.update({{"what", e.what}, {"action", e.action}, {"step", e.step}});
          },
          [&](const ToggleAppliedEvent& e) {
            out.update({{"toggle", toString(e.toggle)}, {"value", e.value}, {"step", e.step}});
            if (!e.detail.empty()) {
              out["detail"] = e.detail;
            }
            if (!e.notApplicable.empty()) {
              out["not_applicable"] = e.notApplicable;
            }
          },
          [&](const ToggleRefusedEvent& e) {
            out.update({{"toggle", toString(e.toggle)},
                        {"value", e.value},
                        {"reason", e.reason},
                        {"step", e.step}});
          },
          [&](const EvalEvent& e) {
            out.update({{"step", e.step},
                        {"loss", e.loss},
                        {"predicted_tokens", e.predictedTokens},
                        {"sequences", e.sequences},
                        {"seconds", e.seconds},
                        {"best_loss", e.bestLoss},
                        {"best_step", e.bestStep}});
          },
          [&](const ProfileSwitchEvent& e) {
            out.update({{"name", e.name}, {"detail", e.detail}, {"step", e.step}});
          },
          [&](const LadderEvent& e) {
            out.update({{"rung", e.rung},
                        {"from", e.from},
                        {"why", e.why},
                        {"step", e.step},
                        {"undoable", e.undoable}});
          },
          [](const ProgressEvent&) {},
          [&](const GenerationStatusEvent& e) {
            out.update({{"id", e.id}, {"text", e.text}});
          },
          [&](const TokenEvent& e) {
            out.update({{"id", e.id}, {"answer", toString(e.answer)}, {"text", e.text}});
          },
          [&](const AnswerEndEvent& e) {
            out.update({{"id", e.id},
                        {"answer", toString(e.answer)},
                        {"tokens", e.tokens},
                        {"stop_reason", e.stopReason},
                        {"tokens_per_s", e.tokensPerS}});
          },
          [&](const GenerationEndEvent& e) {
            out.update({{"id", e.id}, {"outcome", toString(e.outcome)}, {"message", e.message}});
          }},
      timed.event);
  return dumpLine(out);
}

TimedEvent decodeEvent(std::string_view line) {
  std::string type;
  const json root = parseLine(line, type);
  const Fields f(root, type);
  TimedEvent out{f.integer("t_ms"), {}};
  if (type == "hello") {
    const std::int64_t protocol = f.integer("protocol");
    if (protocol < 0 || protocol > INT32_MAX)
      f.fail("protocol", "out of range");
    HelloEvent e{static_cast<int>(protocol), f.string("version"), f.string("flavour"), {}};
    for (std::size_t i = 0; i < f.array("devices").size(); ++i) {
      const common::JsonReader device = f.element("devices", i);
      e.devices.push_back({device.string("name"), device.string("architecture"),
                           static_cast<std::uint64_t>(device.integer("total_bytes"))});
    }
    if (f.has("gpu_runtime"))
      e.gpuRuntime = f.string("gpu_runtime");
    if (f.has("no_device_reason"))
      e.noDeviceReason = f.string("no_device_reason");
    if (f.has("collective_library"))
      e.collectiveLibrary = f.string("collective_library");
    if (f.has("no_collective_reason"))
      e.noCollectiveReason = f.string("no_collective_reason");
    out.event = std::move(e);
  } else if (type == "state") {
    out.event = StateEvent{f.choice("state", kStateNames), f.integer("step"), f.string("detail")};
  } else if (type == "step") {
    out.event = runs::readStepRecord(f);
  } else if (type == "memory") {
    out.event = MemoryEvent{f.optionalUnsigned("allocated_bytes"),
                            f.optionalUnsigned("reserved_bytes"),
                            f.optionalUnsigned("largest_free_bytes"),
                            f.optionalNumber("fragmentation"),
                            f.optionalUnsigned("driver_used_bytes"),
                            f.optionalUnsigned("driver_total_bytes"),
                            f.optionalUnsigned("held_outside_bytes"),
                            f.optionalUnsigned("host_rss_bytes"),
                            f.optionalUnsigned("host_available_bytes"),
                            f.optionalUnsigned("largest_request_bytes"),
                            f.optionalUnsigned("inactive_split_bytes"),
                            f.optionalUnsigned("largest_free_at_peak_bytes"),
                            f.optionalUnsigned("inactive_split_at_peak_bytes"),
                            cardOf(f)};
  } else if (type == "queue") {
    QueueEvent e;
    for (std::size_t i = 0; i < f.array("streams").size(); ++i) {
      const common::JsonReader stream = f.element("streams", i);
      QueueDepth depth{stream.string("stream"), stream.integer("depth")};
      if (stream.has("peak")) {
        depth.peak = stream.integer("peak");
      }
      e.streams.push_back(std::move(depth));
    }
    e.card = cardOf(f);
    out.event = std::move(e);
  } else if (type == "snapshot") {
    out.event = SnapshotEvent{f.object("snapshot").value(), cardOf(f)};
  } else if (type == "log") {
    out.event = LogEvent{f.choice("level", kLevelNames), f.string("text")};
  } else if (type == "error") {
    ErrorEvent e{f.string("category"), f.string("op"),     f.integer("code"),
                 f.string("message"),  f.string("advice"), f.boolean("sticky")};
    if (f.has("step")) {
      e.step = f.integer("step", 0, std::numeric_limits<std::int64_t>::max());
    }
    out.event = std::move(e);
  } else if (type == "checkpoint") {
    out.event = CheckpointEvent{f.string("path"), f.integer("step")};
  } else if (type == "incident") {
    out.event = IncidentEvent{f.string("what"), f.string("action"), f.integer("step")};
  } else if (type == "toggle_applied") {
    const Toggle toggle = checkedToggle(f);
    out.event = ToggleAppliedEvent{toggle, root["value"], f.integer("step"),
                                   f.stringOr("detail", ""), f.stringOr("not_applicable", "")};
  } else if (type == "toggle_refused") {
    const Toggle toggle = checkedToggle(f);
    out.event = ToggleRefusedEvent{toggle, root["value"], f.string("reason"), f.integer("step")};
  } else if (type == "eval") {
    out.event =
        EvalEvent{f.integer("step"),      f.numberOrNaN("loss"), f.integer("predicted_tokens"),
                  f.integer("sequences"), f.number("seconds"),   f.numberOrNaN("best_loss"),
                  f.integer("best_step")};
  } else if (type == "profile_switch") {
    out.event = ProfileSwitchEvent{f.string("name"), f.string("detail"), f.integer("step")};
  } else if (type == "ladder") {
    out.event = LadderEvent{f.string("rung"), f.string("from"), f.string("why"), f.integer("step"),
                            f.integer("undoable")};
  } else if (type == "progress") {
    out.event = ProgressEvent{};
  } else if (type == "generation_status") {
    out.event = GenerationStatusEvent{f.integer("id"), f.string("text")};
  } else if (type == "token") {
    out.event = TokenEvent{f.integer("id"), f.choice("answer", kAnswerNames), f.string("text")};
  } else if (type == "answer_end") {
    out.event =
        AnswerEndEvent{f.integer("id"), f.choice("answer", kAnswerNames), f.integer("tokens"),
                       f.string("stop_reason"), f.number("tokens_per_s")};
  } else if (type == "generation_end") {
    out.event = GenerationEndEvent{f.integer("id"), f.choice("outcome", kOutcomeNames),
                                   f.string("message")};
  } else {
    throw ProtocolError("unknown event type '" + type + "'");
  }
  return out;
}

EvalEvent evalEvent(const runs::EvalRecord& eval, const runs::EvalRecord& best) {
  return EvalEvent{eval.step, eval.loss, eval.predictedTokens, eval.sequences, eval.seconds,
                   best.loss, best.step};
}

ErrorEvent protocolErrorEvent(const ProtocolError& error, std::string_view line) {
  constexpr std::size_t kQuotedBytes = 200;  // enough to recognise the line, not to flood a log
  std::size_t cut = std::min(line.size(), kQuotedBytes);
  if (cut < line.size()) {
    // Back off to the start of a UTF-8 sequence so that the quote does not end in half a
    // character (at most 3 continuation bytes; anything longer is invalid anyway).
    for (int back = 0;
         back < 3 && cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80; ++back) {
      --cut;
    }
  }
  std::string quoted(line.substr(0, cut));
  if (cut < line.size())
    quoted += "…";
  return ErrorEvent{"protocol",
                    "",
                    0,
                    std::string(error.what()) + " (line: " + quoted + ")",
                    "the GUI and the engine must be the same LoRAscope version; reinstall if they "
                    "differ, otherwise report this line as a bug",
                    false};
}

}  // namespace lorascope::engine
