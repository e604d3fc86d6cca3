// DemoRun.h — test helper: the start command of a shrunk demo run (the built-in demo model and
// dataset on short sequences, a small adapter, a micro-batch of 2), for the tests that supervise
// the real engine on the CPU (the fault suite, the supervisor's run lock).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lstest {

inline nlohmann::json demoRun(const std::string& out, int steps, int checkpointEvery) {
  return {{"demo", true},
          {"out", out},
          {"options",
           {{"steps", steps},
            {"batch-size", 2},
            {"grad-accum", 1},
            {"max-seq-len", 80},
            {"lora-r", 4},
            {"checkpoint-every", checkpointEvery}}}};
}

}  // namespace lstest
