// test_protocol.cpp — every command and event survives a round trip through its JSON line, and
// malformed, unknown or mistyped lines are rejected with a message, never a crash.
#include "TestRunner.h"

#include "Rejection.h"
#include "engine/Protocol.h"

using namespace lorascope::engine;
using lorascope::engine::test::rejection;

TEST_CASE(everyCommandRoundTrips) {
  const std::vector<Command> commands = {StartCommand{{{"model", "/models/qwen"}, {"steps", 100}}},
                                         PauseCommand{},
                                         ResumeCommand{},
                                         StopCommand{},
                                         SetToggleCommand{Toggle::MicroBatch, 4},
                                         SetToggleCommand{Toggle::Serialize, true},
                                         SetToggleCommand{Toggle::GemmBackend, "builtin"},
                                         SetToggleCommand{Toggle::AllocatorPolicy, "arena"},
                                         SwitchProfileCommand{"ROCm stable"},
                                         CheckpointNowCommand{},
                                         RequestSnapshotCommand{},
                                         UndoRungCommand{}};
  for (const Command& c : commands) {
    const std::string line = encodeCommand(c);
    VERIFY2(line.find('\n') == std::string::npos, line.c_str());
    const Command back = decodeCommand(line);
    COMPARE(back.index(), c.index());
    COMPARE(encodeCommand(back), line);
  }
  const auto set = std::get<SetToggleCommand>(decodeCommand(encodeCommand(commands[4])));
  COMPARE(set.toggle, Toggle::MicroBatch);
  COMPARE(set.value.get<int>(), 4);
}

TEST_CASE(everyEventRoundTrips) {
  const std::vector<Event> events = {
      HelloEvent{
          kProtocolVersion, "0.1.0", "hip-amd", {{"Radeon RX 7900 XTX", "gfx1100", 25753026560}}},
      StateEvent{RunState::Paused, 12, "paused by user"},
      StepEvent{40, 1.8325, 2e-4, 0.93, 1534.5, 2, 8},
      MemoryEvent{1 << 20, 2 << 20, 512 << 10, 0.25, 3ull << 30, 24ull << 30, 1ull << 30, 900 << 20,
                  8ull << 30},
      QueueEvent{{{"compute", 3}, {"copy", 0}}},
      MemoryEvent{1 << 20, 2 << 20, 512 << 10, 0.97, std::nullopt, std::nullopt, std::nullopt,
                  std::nullopt, std::nullopt, 300 << 20, 64 << 20, 40 << 20, 8 << 20},
      SnapshotEvent{{{"segments", nlohmann::json::array()}}},
      LogEvent{LogLevel::Warning, "micro-batch lowered to 2"},
      ErrorEvent{"blas", "gemm_lora_up", 15, "HIPBLAS_STATUS_INTERNAL_ERROR",
                 "switch to built-in GEMM", true},
      CheckpointEvent{"/runs/a/checkpoints/step-40", 40},
      IncidentEvent{"engine killed by SIGSEGV at step 212", "built-in GEMM, resumed at 212", 212},
      ToggleAppliedEvent{Toggle::Blocking, true, 41},
      ToggleAppliedEvent{Toggle::CpuFallback, true, 42, "moved the run to cpu (fp32) at step 42"},
      ToggleAppliedEvent{Toggle::Serialize, false, 3, "", "this run computes on the CPU"},
      ToggleRefusedEvent{Toggle::GemmBackend, "vendor", "this build has no vendor BLAS", 7},
      EvalEvent{40, 1.9125, 5120, 32, 0.75, 1.875, 30},
      ProfileSwitchEvent{"Low VRAM", "applied at the next step", 9},
      LadderEvent{"serialize", "vendor_blas", "engine killed by SIGSEGV", 9, 1},
      QueueEvent{{{"compute", 0, 712}}},
      ProgressEvent{},
      ErrorEvent{"hang", "adamw", 0, "hang in step 5", "restart", true, 5}};
  for (const Event& e : events) {
    const TimedEvent timed{1234, e};
    const std::string line = encodeEvent(timed);
    const TimedEvent back = decodeEvent(line);
    COMPARE(back.timeMs, std::int64_t{1234});
    COMPARE(back.event.index(), e.index());
    COMPARE(encodeEvent(back), line);
  }
  // An error's step travels as "step" when known; without it (not known, or an older engine's
  // line) it reads as 0.
  COMPARE(std::get<ErrorEvent>(decodeEvent(encodeEvent({7, events.back()})).event).step,
          std::int64_t{5});
  const std::string blas = encodeEvent({7, events[8]});
  VERIFY(blas.find("\"step\"") == std::string::npos);
  COMPARE(std::get<ErrorEvent>(decodeEvent(blas).event).step, std::int64_t{0});
  // A reading's peak travels as "peak"; an older engine's line without it reads as its depth.
  const auto queue = std::get<QueueEvent>(decodeEvent(encodeEvent({7, events[18]})).event);
  COMPARE(queue.streams[0].peakOrDepth(), std::int64_t{712});
  COMPARE(queue.streams[0].depth, std::int64_t{0});
  const auto old = std::get<QueueEvent>(
      decodeEvent(R"({"v":1,"t_ms":5,"type":"queue","streams":[{"stream":"compute","depth":9}]})")
          .event);
  VERIFY(!old.streams[0].peak.has_value());
  COMPARE(old.streams[0].peakOrDepth(), std::int64_t{9});
  const auto step = std::get<StepEvent>(decodeEvent(encodeEvent({7, events[2]})).event);
  COMPARE(step.loss, 1.8325);
  COMPARE(step.accumulation, 8);
  const auto eval = std::get<EvalEvent>(decodeEvent(encodeEvent({0, events[15]})).event);
  COMPARE(eval.loss, 1.9125);
  COMPARE(eval.predictedTokens, std::int64_t{5120});
  COMPARE(eval.bestStep, std::int64_t{30});
  VERIFY(encodeEvent({0, events[15]}).find("\"type\":\"eval\"") != std::string::npos);
  const auto hello = std::get<HelloEvent>(decodeEvent(encodeEvent({0, events[0]})).event);
  COMPARE(hello.devices.at(0).totalBytes, std::uint64_t{25753026560});
  // The detail is optional on the wire: absent when empty, kept when given.
  VERIFY(encodeEvent({0, events[11]}).find("detail") == std::string::npos);
  const auto moved = std::get<ToggleAppliedEvent>(decodeEvent(encodeEvent({0, events[12]})).event);
  COMPARE(moved.detail, std::string("moved the run to cpu (fp32) at step 42"));
  // The fragmentation readings are on the wire only when set.
  const auto fragmentation = std::get<MemoryEvent>(decodeEvent(encodeEvent({0, events[5]})).event);
  COMPARE(*fragmentation.largestRequestBytes, std::uint64_t{300} << 20);
  COMPARE(*fragmentation.inactiveSplitAtPeakBytes, std::uint64_t{8} << 20);
  VERIFY(encodeEvent({0, events[3]}).find("largest_request") == std::string::npos);
  // Not applicable: optional on the wire too; a refusal carries its reason.
  VERIFY(encodeEvent({0, events[12]}).find("not_applicable") == std::string::npos);
  COMPARE(
      std::get<ToggleAppliedEvent>(decodeEvent(encodeEvent({0, events[13]})).event).notApplicable,
      std::string("this run computes on the CPU"));
  const auto refused =
      std::get<ToggleRefusedEvent>(decodeEvent(encodeEvent({0, events[14]})).event);
  COMPARE(refused.reason, std::string("this build has no vendor BLAS"));
  COMPARE(refused.value.get<std::string>(), std::string("vendor"));
  VERIFY(encodeEvent({0, events[14]}).find("\"type\":\"toggle_refused\"") != std::string::npos);
  const auto ladder = std::get<LadderEvent>(decodeEvent(encodeEvent({0, events[17]})).event);
  COMPARE(ladder.from, std::string("vendor_blas"));
  COMPARE(ladder.undoable, std::int64_t{1});
  COMPARE(std::get<ProfileSwitchEvent>(decodeEvent(encodeEvent({0, events[16]})).event).name,
          std::string("Low VRAM"));
  // A replayed step says so; an ordinary one carries no such field.
  VERIFY(!step.replayed);
  VERIFY(encodeEvent({0, events[2]}).find("replayed") == std::string::npos);
  StepEvent replay = std::get<StepEvent>(events[2]);
  replay.replayed = true;
  VERIFY(std::get<StepEvent>(decodeEvent(encodeEvent({0, replay})).event).replayed);
  // The run's step count is optional too: absent (0) when unknown, kept when given.
  COMPARE(step.totalSteps, std::int64_t{0});
  VERIFY(encodeEvent({0, events[2]}).find("total_steps") == std::string::npos);
  StepEvent counted = std::get<StepEvent>(events[2]);
  counted.totalSteps = 300;
  COMPARE(std::get<StepEvent>(decodeEvent(encodeEvent({0, counted})).event).totalSteps,
          std::int64_t{300});
  // The compute-only figure beside the run's: optional on the wire, under its own name.
  COMPARE(step.computeTokensPerS, 0.0);
  VERIFY(encodeEvent({0, events[2]}).find("compute_tokens_per_s") == std::string::npos);
  StepEvent computed = std::get<StepEvent>(events[2]);
  computed.computeTokensPerS = 2290.5;
  const std::string computedLine = encodeEvent({0, computed});
  VERIFY(computedLine.find("\"tokens_per_s\":1534.5") != std::string::npos);
  COMPARE(std::get<StepEvent>(decodeEvent(computedLine).event).computeTokensPerS, 2290.5);
  // Progress (for the supervisor's watchdog) carries nothing but its time.
  VERIFY(encodeEvent({0, events[19]}).find("\"type\":\"progress\"") != std::string::npos);
}

TEST_CASE(memoryReadingsKeepNotAvailableApartFromZero) {
  MemoryEvent m;
  m.allocatedBytes = 0;
  const auto back = std::get<MemoryEvent>(decodeEvent(encodeEvent({0, m})).event);
  VERIFY(back.allocatedBytes.has_value());
  COMPARE(*back.allocatedBytes, std::uint64_t{0});
  VERIFY(!back.driverUsedBytes.has_value());
  VERIFY(!back.fragmentation.has_value());
}

TEST_CASE(toggleValuesAreCheckedByType) {
  VERIFY(rejection(R"({"v":1,"type":"set","toggle":"micro_batch","value":0})")
             .contains("micro_batch must be a whole number from 1"));
  VERIFY(rejection(R"({"v":1,"type":"set","toggle":"serialize","value":"yes"})")
             .contains("serialize must be true or false"));
  VERIFY(rejection(R"({"v":1,"type":"set","toggle":"gemm_backend","value":"fast"})")
             .contains("gemm_backend must be"));
  VERIFY(rejection(R"({"v":1,"type":"set","toggle":"turbo","value":true})")
             .contains("toggle: unknown value 'turbo'"));
  VERIFY(rejection(R"({"v":1,"type":"set","toggle":"blocking"})").contains("value: missing"));
}

TEST_CASE(malformedLinesAreRejectedWithAReason) {
  VERIFY(rejection("").contains("not valid JSON"));
  VERIFY(rejection("{\"v\":1,\"type\":\"stop\"").contains("not valid JSON"));
  VERIFY(rejection("[1,2]").contains("JSON object"));
  VERIFY(rejection(R"({"type":"stop"})").contains("protocol version missing"));
  VERIFY(rejection(R"({"v":2,"type":"stop"})").contains("protocol version 2"));
  VERIFY(rejection(R"({"v":1})").contains("no \"type\""));
  VERIFY(rejection(R"({"v":1,"type":"explode"})").contains("unknown command type 'explode'"));
  VERIFY(rejection(R"({"v":1,"type":"start","config":7})").contains("config: must be an object"));
  VERIFY(
      rejection(R"({"v":1,"type":"switch_profile","name":3})").contains("name: must be a string"));
  try {
    decodeEvent(R"({"v":1,"type":"step","t_ms":1,"step":1,"loss":"low"})");
    FAIL("a step event with a string loss was accepted");
  } catch (const ProtocolError& e) {
    VERIFY2(
        std::string(e.what()).find("'step' message: loss: must be a number") != std::string::npos,
        e.what());
  }
}

TEST_CASE(protocolErrorBecomesAnErrorEventQuotingTheLine) {
  const std::string line = std::string(R"({"v":1,"type":"explode",)") + std::string(500, 'x');
  try {
    decodeCommand(line);
    FAIL("accepted");
  } catch (const ProtocolError& e) {
    const ErrorEvent event = protocolErrorEvent(e, line);
    COMPARE(event.category, std::string("protocol"));
    VERIFY(event.message.find(R"({"v":1,"type":"explode")") != std::string::npos);
    VERIFY(event.message.size() < 500);
    VERIFY(!event.advice.empty());
  }
}

// Try it's vocabulary: generate (every field), cancel_generation, and the four events of a
// generation, each carrying its id.
TEST_CASE(generationRoundTrips) {
  GenerateCommand generate;
  generate.id = 12;
  generate.model = "/models/Łukasz/qwen";
  generate.adapter = "/runs/demo";
  generate.device = "gpu";
  generate.baseWeights = "nf4";
  generate.system = "Be brief.";
  generate.prompt = "Name three colours.\nThen a fourth.";
  generate.maxNewTokens = 64;
  generate.temperature = 0.7;
  generate.topP = 0.9;
  generate.seed = 42;
  const auto back = std::get<GenerateCommand>(decodeCommand(encodeCommand(generate)));
  COMPARE(back.id, std::int64_t{12});
  COMPARE(back.model, generate.model);
  COMPARE(back.adapter, generate.adapter);
  COMPARE(back.device, std::string("gpu"));
  COMPARE(back.baseWeights, std::string("nf4"));
  COMPARE(back.system, generate.system);
  COMPARE(back.prompt, generate.prompt);
  COMPARE(back.maxNewTokens, std::int64_t{64});
  COMPARE(back.temperature, 0.7);
  COMPARE(back.topP, 0.9);
  COMPARE(back.seed, std::uint64_t{42});
  COMPARE(
      std::get<CancelGenerationCommand>(decodeCommand(encodeCommand(CancelGenerationCommand{12})))
          .id,
      std::int64_t{12});

  const std::vector<Event> events = {
      GenerationStatusEvent{12, "demo on cpu (fp32), 14 prompt tokens"},
      TokenEvent{12, Answer::Adapter, "BLUE"}, AnswerEndEvent{12, Answer::Base, 5, "eos", 40.5},
      GenerationEndEvent{12, GenerationOutcome::Failed, "an illegal memory access"}};
  for (const Event& e : events) {
    const std::string line = encodeEvent({3, e});
    COMPARE(encodeEvent(decodeEvent(line)), line);
  }
  const auto token = std::get<TokenEvent>(decodeEvent(encodeEvent({0, events[1]})).event);
  COMPARE(token.answer, Answer::Adapter);
  COMPARE(token.text, std::string("BLUE"));
  const auto answer = std::get<AnswerEndEvent>(decodeEvent(encodeEvent({0, events[2]})).event);
  COMPARE(answer.stopReason, std::string("eos"));
  COMPARE(answer.tokens, std::int64_t{5});
  const auto end = std::get<GenerationEndEvent>(decodeEvent(encodeEvent({0, events[3]})).event);
  COMPARE(end.outcome, GenerationOutcome::Failed);
  VERIFY(encodeEvent({0, events[3]}).find("\"outcome\":\"failed\"") != std::string::npos);
}

TEST_CASE(generateCommandsAreChecked) {
  const std::string good =
      R"("id":1,"model":"m","adapter":"","device":"cpu","base_weights":"none","system":"",)"
      R"("prompt":"hi","temperature":0,"top_p":1,"seed":0)";
  const auto line = [&](const std::string& extra) {
    return R"({"v":1,"type":"generate",)" + good + "," + extra + "}";
  };
  COMPARE(std::get<GenerateCommand>(decodeCommand(line(R"("max_new_tokens":8)"))).maxNewTokens,
          std::int64_t{8});
  VERIFY(rejection(line(R"("max_new_tokens":0)")).contains("max_new_tokens: must be a whole"));
  VERIFY(rejection(R"({"v":1,"type":"generate","id":1})").contains("model: missing"));
  VERIFY(rejection(R"({"v":1,"type":"generate","id":1,"model":"","adapter":"","device":"cpu"})")
             .contains("model: must name a model folder"));
  VERIFY(rejection(R"({"v":1,"type":"generate","id":1,"model":"m","adapter":"","device":"tpu"})")
             .contains("device: must be \"cpu\", \"gpu\" or \"auto\""));
  std::string badTopP = line(R"("max_new_tokens":8)");
  badTopP.replace(badTopP.find(R"("top_p":1)"), 9, R"("top_p":0)");
  VERIFY(rejection(badTopP).contains("top_p: must be a number in (0, 1]"));
  VERIFY(rejection(R"({"v":1,"type":"cancel_generation"})").contains("id: missing"));
}

// The hello event's GPU runtime and the reason for no GPU: on the wire only when said.
TEST_CASE(helloCarriesTheGpuRuntimeWhenSaid) {
  HelloEvent hello{kProtocolVersion, "0.1.0", "hip-nvidia", {{"NVIDIA H200", "sm_90", 1ull << 30}}};
  VERIFY(encodeEvent({0, hello}).find("gpu_runtime") == std::string::npos);
  hello.gpuRuntime = "CUDA 13.0 via HIP portability header";
  hello.noDeviceReason = "";
  const auto back = std::get<HelloEvent>(decodeEvent(encodeEvent({0, hello})).event);
  COMPARE(back.gpuRuntime, hello.gpuRuntime);
  HelloEvent none{kProtocolVersion, "0.1.0", "cpu", {}};
  none.noDeviceReason = "this is the cpu build";
  COMPARE(std::get<HelloEvent>(decodeEvent(encodeEvent({0, none})).event).noDeviceReason,
          std::string("this is the cpu build"));
}

// The collective library (or why there is none) and a reading's card: on the wire only when said;
// a card outside 0..4096 is refused.
TEST_CASE(helloNamesTheCollectiveLibraryAndReadingsTheirCard) {
  HelloEvent hello{kProtocolVersion, "0.1.0", "hip-nvidia", {}};
  VERIFY(encodeEvent({0, hello}).find("collective") == std::string::npos);
  hello.collectiveLibrary = "NCCL 2.28.9";
  COMPARE(std::get<HelloEvent>(decodeEvent(encodeEvent({0, hello})).event).collectiveLibrary,
          std::string("NCCL 2.28.9"));
  HelloEvent none{kProtocolVersion, "0.1.0", "cpu", {}};
  none.noCollectiveReason = "this lorascope-train is the cpu flavour";
  COMPARE(std::get<HelloEvent>(decodeEvent(encodeEvent({0, none})).event).noCollectiveReason,
          none.noCollectiveReason);

  MemoryEvent memory;
  memory.allocatedBytes = 5;
  VERIFY(encodeEvent({0, memory}).find("card") == std::string::npos);
  VERIFY(!std::get<MemoryEvent>(decodeEvent(encodeEvent({0, memory})).event).card);
  memory.card = 3;
  COMPARE(std::get<MemoryEvent>(decodeEvent(encodeEvent({0, memory})).event).card,
          std::optional<int>(3));
  QueueEvent queue{{{"compute", 2}}, 1};
  COMPARE(std::get<QueueEvent>(decodeEvent(encodeEvent({0, queue})).event).card,
          std::optional<int>(1));
  std::string refused = "<accepted>";
  try {
    decodeEvent(R"({"v":1,"t_ms":5,"type":"queue","streams":[],"card":-1})");
  } catch (const ProtocolError& e) {
    refused = e.what();
  }
  VERIFY2(lstest::Message{refused}.contains("card"), refused.c_str());
}

// A group's snapshots name their card (engine/Supervisor.h); one without a card, as a run on one
// device and the recordings made before groups send it, reads as one with none (that device's).
TEST_CASE(aSnapshotNamesItsCardOnlyInAGroup) {
  const nlohmann::json segments = {
      {"segments",
       {{{"address", 4096}, {"total_size", 2048}, {"blocks", nlohmann::json::array()}}}}};
  const std::string tagged = encodeEvent({40, SnapshotEvent{segments, 1}});
  VERIFY2(lstest::Message{tagged}.contains("\"card\":1"), tagged.c_str());
  const auto back = std::get<SnapshotEvent>(decodeEvent(tagged).event);
  COMPARE(back.card, std::optional<int>(1));
  COMPARE(back.snapshot, segments);

  const std::string untagged = encodeEvent({40, SnapshotEvent{segments}});
  VERIFY(untagged.find("card") == std::string::npos);
  COMPARE(std::get<SnapshotEvent>(decodeEvent(untagged).event).card, std::optional<int>());
  // A line as an engine before groups wrote it.
  const auto old = std::get<SnapshotEvent>(
      decodeEvent(R"({"v":1,"t_ms":7,"type":"snapshot","snapshot":{"segments":[]}})").event);
  VERIFY(!old.card);
  std::string refused = "<accepted>";
  try {
    decodeEvent(R"({"v":1,"t_ms":7,"type":"snapshot","snapshot":{"segments":[]},"card":"1"})");
  } catch (const ProtocolError& e) {
    refused = e.what();
  }
  VERIFY2(lstest::Message{refused}.contains("card"), refused.c_str());
}
