// engine/Protocol.h — the one message vocabulary between the GUI and the engine.
//
// Commands go GUI → engine, events engine → GUI. In-process they travel as these structs over
// queued signals; to an isolated engine as one JSON object per line on stdin/stdout:
//   {"v": 1, "type": "set", "toggle": "micro_batch", "value": 2}
//   {"v": 1, "type": "step", "t_ms": 15321, "step": 40, "loss": 1.83, ...}
// Decoding is strict: an unknown type, a missing or ill-typed field or another protocol version is
// a ProtocolError naming the problem, which the receiver answers with an error event — never a
// crash. Plain C++ (no Qt), so `lorascope-train --engine` and the tests need no display.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "runs/StepRecord.h"
#include "settings/Registry.h"  // defines: Toggle

namespace lorascope::engine {

inline constexpr int kProtocolVersion = 1;

class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- Commands --------------------------------------------------------------------------------

// A live setting by its wire name ("micro_batch"); the settings registry (settings/Registry.h)
// lists the toggles and the values each takes, and decoding checks against it.
using Toggle = settings::Toggle;
const char* toString(const Toggle& toggle);  // its wire name

struct StartCommand {
  nlohmann::json runConfig;  // object; its schema belongs to the trainer
};
struct PauseCommand {};
struct ResumeCommand {};
struct StopCommand {};
struct SetToggleCommand {
  Toggle toggle = Toggle::Serialize;
  nlohmann::json value;  // checked against the toggle's type when decoded
};
struct SwitchProfileCommand {
  std::string name;
};
struct CheckpointNowCommand {};
struct RequestSnapshotCommand {};
// Steps back the last rung the recovery ladder took (the supervisor's; a bare engine refuses it).
struct UndoRungCommand {};

// Text from a model, with and without an adapter (the Try it page): the engine loads the model
// (kept for the next command with the same model, adapter, device and base weights), then
// streams the base model's answer and the adapter's as token events, each closed by an
// answer_end, and the whole by a generation_end. Generation runs in the engine's process, so a
// GPU fault there costs the engine (its supervisor restarts it), never the window.
struct GenerateCommand {
  std::int64_t id = 0;         // chosen by the sender; every event of this generation carries it
  std::string model;           // a model folder or a Hugging Face id
  std::string adapter;         // a run folder or a PEFT adapter folder; "" for the base only
  std::string device = "cpu";  // "cpu" | "gpu" | "auto"
  std::string baseWeights = "none";  // "none" (as stored) | "nf4" (as a QLoRA run trained on)
  std::string system;                // the system message, "" for none
  std::string prompt;                // the user's message, through the model's chat template
  std::int64_t maxNewTokens = 128;   // 1..1,000,000
  double temperature = 0;            // ≥ 0; 0 is greedy
  double topP = 1;                   // (0, 1]
  std::uint64_t seed = 0;
};
// Ends generation `id` at its next token (its answers so far stay, outcome "stopped").
struct CancelGenerationCommand {
  std::int64_t id = 0;
};

using Command =
    std::variant<StartCommand, PauseCommand, ResumeCommand, StopCommand, SetToggleCommand,
                 SwitchProfileCommand, CheckpointNowCommand, RequestSnapshotCommand,
                 UndoRungCommand, GenerateCommand, CancelGenerationCommand>;

// ---- Events ----------------------------------------------------------------------------------

struct DeviceSummary {
  std::string name;
  std::string architecture;
  std::uint64_t totalBytes = 0;
};
struct HelloEvent {
  int protocolVersion = kProtocolVersion;
  std::string version;                 // LoRAscope version
  std::string flavour;                 // cpu | hip-amd | hip-nvidia
  std::vector<DeviceSummary> devices;  // in the runtime's order: device 0 first
  // What the GPU runtime is ("CUDA 13.0 via HIP portability header"), and why `devices` is empty
  // when it is: the About dialog's GPU lines (the window asks no GPU runtime itself). Optional on
  // the wire ("gpu_runtime", "no_device_reason"), empty when not said.
  std::string gpuRuntime = {};
  std::string noDeviceReason = {};
  // The collective library a group of GPUs would run on ("NCCL 2.28.9"), or why there is none
  // (group/NcclCollective.h: the cpu flavour, Windows, a library that does not load): what the
  // supervisor checks a start with several GPUs against. Optional on the wire
  // ("collective_library", "no_collective_reason"), empty when not said.
  std::string collectiveLibrary = {};
  std::string noCollectiveReason = {};
};

enum class RunState { Idle, Starting, Running, Paused, Stopping, Finished, Failed };
const char* toString(RunState state);
struct StateEvent {
  RunState state = RunState::Idle;
  std::int64_t step = 0;
  std::string detail;
};

// A completed step, announced: the run's step record itself (runs/StepRecord.h), with
// `replayed` and `totalSteps` set by the announcer; on the wire the record's one JSON form.
using StepEvent = runs::StepRecord;

// The held-out loss after a step (--eval-data / --eval-split), beside that step's training loss.
struct EvalEvent {
  std::int64_t step = 0;
  double loss = 0;                   // mean over the held-out set's predicted tokens; NaN if none
  std::int64_t predictedTokens = 0;  // tokens the loss is over
  std::int64_t sequences = 0;
  double seconds = 0;   // wall time of the evaluation
  double bestLoss = 0;  // the lowest eval loss of the run so far (this one included)
  std::int64_t bestStep = 0;
};
// An evaluation as the engine announces it, beside the best of the run so far.
EvalEvent evalEvent(const runs::EvalRecord& eval, const runs::EvalRecord& best);

// Three memory readings kept apart (DESIGN: honest numbers); unset = not available here.
struct MemoryEvent {
  std::optional<std::uint64_t> allocatedBytes;  // our allocator: held by tensors
  std::optional<std::uint64_t> reservedBytes;   // our allocator: taken from the device
  std::optional<std::uint64_t> largestFreeBytes;
  std::optional<double> fragmentation;           // 1 − largest free / total free, 0..1
  std::optional<std::uint64_t> driverUsedBytes;  // what the driver says the device uses
  std::optional<std::uint64_t> driverTotalBytes;
  std::optional<std::uint64_t> heldOutsideBytes;  // driver used − our reserved
  std::optional<std::uint64_t> hostRssBytes;
  std::optional<std::uint64_t> hostAvailableBytes;
  // Fragmentation as it matters (GPU runs; on the wire only when set): the largest single request
  // of the step so far — the block the next step needs again — the inactive-split bytes (free
  // pieces of partly used segments) now, and the largest free block and inactive-split bytes at the
  // moment the step's allocations peaked. Default-initialised: the older positional forms stay free
  // of missing-initializer warnings.
  std::optional<std::uint64_t> largestRequestBytes = {};
  std::optional<std::uint64_t> inactiveSplitBytes = {};
  std::optional<std::uint64_t> largestFreeAtPeakBytes = {};
  std::optional<std::uint64_t> inactiveSplitAtPeakBytes = {};
  // The GPU (device index) of the reading, set by the supervisor of a group of GPUs on every
  // rank's readings (engine/Supervisor.h); unset for a run on one device. Optional on the wire.
  std::optional<int> card = {};
};

struct QueueDepth {
  std::string stream;
  std::int64_t depth = 0;  // submitted − completed, now
  // The most launches in flight at once since the previous reading (the engine polls every few
  // ms). Optional on the wire ("peak"); absent (older engines) it is the depth.
  std::optional<std::int64_t> peak = {};
  std::int64_t peakOrDepth() const { return peak.value_or(depth); }
};
struct QueueEvent {
  std::vector<QueueDepth> streams;
  std::optional<int> card = {};  // as MemoryEvent::card
};

struct SnapshotEvent {
  nlohmann::json snapshot;  // the allocator's snapshot: segments and blocks
  // The GPU whose allocator it is, set by the supervisor of a group of GPUs on every rank's
  // snapshot (engine/Supervisor.h); unset for a run on one device, and in recordings made before
  // groups: those are the one device's. Optional on the wire ("card").
  std::optional<int> card = {};
};

enum class LogLevel { Debug, Info, Warning, Error };
const char* toString(LogLevel level);
struct LogEvent {
  LogLevel level = LogLevel::Info;
  std::string text;
};

struct ErrorEvent {
  std::string category;  // out_of_memory, illegal_address, blas, hang, protocol, input, ...
  std::string op;        // the op or command it concerns, "" when none
  std::int64_t code = 0;
  std::string message;
  std::string advice;
  bool sticky = false;  // the GPU context is unusable: the engine must restart
  // The step it happened in when the engine knows it (a hang: the step the watchdog saw begin,
  // which can be one past the last step announced, since a step is announced once it is saved);
  // 0 when not known. Sent as "step" only when known.
  std::int64_t step = 0;
};

struct CheckpointEvent {
  std::string path;
  std::int64_t step = 0;
};

struct IncidentEvent {
  std::string what;    // "engine killed by SIGSEGV at step 212"
  std::string action;  // "switched to built-in GEMM; resumed from step 212"
  std::int64_t step = 0;
};

// Confirms that a toggle took effect (and from which step), so the UI shows applied state only.
struct ToggleAppliedEvent {
  Toggle toggle = Toggle::Serialize;
  nlohmann::json value;
  std::int64_t step = 0;
  // What applying it did beyond taking the value, when that is worth a line: "moved the run from
  // NVIDIA H100 (sm_90) to cpu (fp32) at step 40; 812 MiB of device memory released". Optional
  // on the wire ("detail"), empty when there is nothing to add. Default-initialised, so that the
  // three-field form {toggle, value, step} stays free of missing-initializer warnings.
  std::string detail = {};
  // Non-empty when the toggle does nothing where the run computes now, and why ("this run computes
  // on the CPU, which makes no GPU launches"): the GUI disables its editor with this as tooltip.
  // The value is kept and applies once it can. Optional on the wire ("not_applicable").
  std::string notApplicable = {};
};

// The engine could not apply a toggle (the run stays as it was): the GUI shows the reason and puts
// the editor back to the applied value. Not an error: nothing failed, a request was declined.
struct ToggleRefusedEvent {
  Toggle toggle = Toggle::Serialize;
  nlohmann::json value;  // what was asked for
  std::string reason;
  std::int64_t step = 0;
};

// The supervisor switched to a profile: its toggles apply at the next step, or (when its
// environment differs) the engine restarts and the run resumes. An event of its own, not an
// incident: the user asked for it and nothing failed.
struct ProfileSwitchEvent {
  std::string name;
  std::string detail;  // "applied at the next step", or the environment change and the restart
  std::int64_t step = 0;
};

// The supervisor's recovery ladder moved: a step down after an incident, or back up when the user
// undid one. `undoable` counts the step-downs that can still be undone (the controls dock's Undo).
struct LadderEvent {
  std::string rung;  // runtime::rungName: "vendor_blas", "builtin_gemm", "serialize", ...
  std::string from;
  std::string why;
  std::int64_t step = 0;
  std::int64_t undoable = 0;
};

// ---- Generation (GenerateCommand) ----
enum class Answer { Base, Adapter };  // which of the two answers an event belongs to
const char* toString(Answer answer);
// What the generation is doing, in words: the model's load lines, then "Qwen2.5-0.5B on cpu
// (fp32), adapter RUN/adapter, 14 prompt tokens".
struct GenerationStatusEvent {
  std::int64_t id = 0;
  std::string text;
};
// A piece of an answer, whole UTF-8, as soon as it is decoded.
struct TokenEvent {
  std::int64_t id = 0;
  Answer answer = Answer::Base;
  std::string text;
};
struct AnswerEndEvent {
  std::int64_t id = 0;
  Answer answer = Answer::Base;
  std::int64_t tokens = 0;  // new tokens (an end-of-sequence id included)
  std::string stopReason;   // "eos", "max-new-tokens" or "stopped"
  double tokensPerS = 0;    // new tokens after the first, per second
};
enum class GenerationOutcome { Done, Stopped, Failed };
const char* toString(GenerationOutcome outcome);
// The generation's last event. Failed: `message` says why (a model folder that does not open, a
// GPU fault; when the engine died, its supervisor sends this for it).
struct GenerationEndEvent {
  std::int64_t id = 0;
  GenerationOutcome outcome = GenerationOutcome::Done;
  std::string message;
};

// The running step moved since the engine's previous instrument reading (an op launched, returned
// or completed on the GPU, or a stage between steps ended): what the supervisor's hang watchdog
// waits for, so that a step made slow by a loaded machine is not taken for a hung one. The stdio
// engine sends it (EngineOptions::reportProgress); the supervisor does not pass it on.
struct ProgressEvent {};

using Event =
    std::variant<HelloEvent, StateEvent, StepEvent, MemoryEvent, QueueEvent, SnapshotEvent,
                 LogEvent, ErrorEvent, CheckpointEvent, IncidentEvent, ToggleAppliedEvent,
                 ToggleRefusedEvent, EvalEvent, ProfileSwitchEvent, LadderEvent, ProgressEvent,
                 GenerationStatusEvent, TokenEvent, AnswerEndEvent, GenerationEndEvent>;

// An event with the engine's clock (ms since the engine started), the charts' shared time axis.
struct TimedEvent {
  std::int64_t timeMs = 0;
  Event event;
};

// ---- Wire format -----------------------------------------------------------------------------

std::string encodeCommand(const Command& command);  // one line, no newline
Command decodeCommand(std::string_view line);       // throws ProtocolError
std::string encodeEvent(const TimedEvent& event);
TimedEvent decodeEvent(std::string_view line);

// The event that answers a line that could not be decoded.
ErrorEvent protocolErrorEvent(const ProtocolError& error, std::string_view line);

std::string_view commandType(const Command& command);
std::string_view eventType(const Event& event);

}  // namespace lorascope::engine
