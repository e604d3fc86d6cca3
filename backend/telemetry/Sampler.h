// Sampler.h — polls providers at a fixed rate (default 4 Hz) and keeps a preallocated ring buffer
// per metric plus each provider's latest snapshot, for the UI and `devices --watch`.
//
// Threading rules:
//  - Each provider is refreshed on a worker thread of its own, so a slow or hung vendor call
//    never stalls the caller, the UI or the other providers.
//  - Readers (status, latest, history) take the store's mutex only for a copy; the mutex is never
//    held during a provider call, so readers never wait on a provider.
//  - A provider with no completed refresh for `staleAfter` is reported stale (status().stale).
//  - stop() waits at most `stopWait` for a refresh in flight; a worker still inside a hung call
//    is detached. It owns shared pointers to its provider and to the store, so it can finish
//    whenever the call returns without touching a destroyed Sampler.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/Provider.h"
#include "telemetry/RingBuffer.h"

namespace lorascope::telemetry {

struct SamplerOptions {
  std::chrono::milliseconds interval{250};  // 4 Hz
  std::size_t historySamples = 240;         // per metric: one minute at 4 Hz
  std::chrono::milliseconds staleAfter{0};  // 0 = max(3 intervals, 1 s)
  std::chrono::milliseconds stopWait{500};  // then a hung worker is detached
};

struct MetricPoint {
  std::int64_t timeMs = 0;  // since the sampler started (steady clock)
  std::optional<double> value;
};

struct ProviderStatus {
  std::string provider;
  std::uint64_t samples = 0;                    // completed refreshes (count)
  std::optional<std::int64_t> lastSampleAgeMs;  // nullopt: never completed
  std::optional<std::int64_t> inFlightForMs;    // a refresh running this long, or nullopt
  bool stale = true;
  bool lastRefreshOk = false;
  std::string lastError;
};

class Sampler {
 public:
  Sampler(std::vector<std::shared_ptr<Provider>> providers, SamplerOptions options = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();  // providers must be init()ed already
  void stop();   // idempotent
  // Workers left running in a hung provider call by stop() (count).
  int abandonedWorkers() const { return static_cast<int>(hungProviders_.size()); }

  std::vector<ProviderStatus> status() const;
  std::optional<Snapshot> latest(const std::string& provider) const;
  // "<provider>/<device index>/<metric>" ("nvml/0/vram_used_bytes") and "host/<metric>".
  std::vector<std::string> metricKeys() const;
  std::vector<MetricPoint> history(const std::string& key) const;
  // Total completed refreshes over all providers; waitForSamples blocks the caller (not a
  // provider) until that total reaches `target` or the timeout passes. True when reached.
  std::uint64_t totalSamples() const;
  bool waitForSamples(std::uint64_t target, std::chrono::milliseconds timeout) const;

 private:
  struct Store;
  static void runWorker(const std::shared_ptr<Store>& store, std::shared_ptr<Provider> provider,
                        std::string name, std::uint64_t generation);
  struct Worker {
    std::shared_ptr<Provider> provider;
    std::thread thread;
  };
  std::vector<std::shared_ptr<Provider>> providers_;
  SamplerOptions options_;
  std::shared_ptr<Store> store_;
  std::vector<Worker> workers_;
  std::set<const Provider*> hungProviders_;  // abandoned by stop(); not restarted
};

}  // namespace lorascope::telemetry
