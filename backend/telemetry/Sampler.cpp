// Sampler.cpp — one worker thread per provider, a shared store of rings and latest snapshots.
#include "telemetry/Sampler.h"

#include <algorithm>

namespace lorascope::telemetry {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

struct Sampler::Store {
  struct ProviderState {
    std::uint64_t samples = 0;
    std::optional<Clock::time_point> lastCompleted;
    std::optional<Clock::time_point> inFlightSince;
    bool lastOk = false;
    bool finished = false;  // the worker has returned
    std::string lastError;
    std::optional<Snapshot> latest;
  };

  Clock::time_point epoch = Clock::now();
  milliseconds interval{250};
  milliseconds staleAfter{1000};
  std::size_t historySamples = 240;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;  // a sample, a finished worker, or stop
  bool stopping = false;
  std::uint64_t generation = 0;  // bumped by every start()
  std::uint64_t totalSamples = 0;
  std::map<std::string, ProviderState> states;
  std::map<std::string, RingBuffer<MetricPoint>> series;

  // Called with `mutex` held.
  void pushMetric(const std::string& key, std::int64_t timeMs, std::optional<double> value) {
    auto it = series.find(key);
    if (it == series.end()) {
      it = series.emplace(key, RingBuffer<MetricPoint>(historySamples)).first;
    }
    it->second.push(MetricPoint{timeMs, value});
  }

  void publish(const std::string& provider, Snapshot snapshot, bool ok, std::string error,
               Clock::time_point now) {
    const std::int64_t timeMs = duration_cast<milliseconds>(now - epoch).count();
    for (const DeviceReading& device : snapshot.devices) {
      const std::string prefix = provider + "/" + std::to_string(device.index) + "/";
      forEachMetric(device, [&](const char* metric, std::optional<double> value) {
        pushMetric(prefix + metric, timeMs, value);
      });
    }
    if (snapshot.host) {
      forEachMetric(*snapshot.host, [&](const char* metric, std::optional<double> value) {
        pushMetric(provider + "/" + metric, timeMs, value);
      });
    }
    ProviderState& state = states[provider];
    state.samples += 1;
    state.lastCompleted = now;
    state.inFlightSince.reset();
    state.lastOk = ok;
    state.lastError = std::move(error);
    state.latest = std::move(snapshot);
    totalSamples += 1;
  }
};

// The worker's whole life. It owns shared pointers to the store and the provider, so an
// abandoned (detached) worker stays valid until its hung call returns.
void Sampler::runWorker(const std::shared_ptr<Store>& store, std::shared_ptr<Provider> provider,
                        std::string name, std::uint64_t generation) {
  Clock::time_point next = Clock::now();
  std::unique_lock lock(store->mutex);
  // A worker abandoned by an earlier stop() must not resume after a restart: it belongs to its
  // generation only.
  const auto ended = [&] { return store->stopping || store->generation != generation; };
  while (!ended()) {
    store->states[name].inFlightSince = Clock::now();
    lock.unlock();
    Snapshot snapshot;
    const bool ok = provider->refresh(snapshot);  // may be slow; no lock held
    std::string error = ok ? std::string() : provider->lastError();
    lock.lock();
    if (ended()) {
      break;  // stopped (or abandoned) meanwhile: this late sample is dropped
    }
    store->publish(name, std::move(snapshot), ok, std::move(error), Clock::now());
    store->changed.notify_all();
    next += store->interval;
    if (next < Clock::now()) {
      next = Clock::now();  // a slow refresh skips the ticks it missed instead of bursting
    }
    store->changed.wait_until(lock, next, ended);
  }
  if (store->generation == generation) {
    store->states[name].finished = true;
  }
  store->changed.notify_all();
}

Sampler::Sampler(std::vector<std::shared_ptr<Provider>> providers, SamplerOptions options)
    : providers_(std::move(providers)), options_(options), store_(std::make_shared<Store>()) {
  if (options_.interval.count() <= 0) {
    throw std::invalid_argument("Sampler interval must be positive");
  }
  store_->interval = options_.interval;
  store_->staleAfter = options_.staleAfter.count() > 0
                           ? options_.staleAfter
                           : std::max(milliseconds(1000), 3 * options_.interval);
  store_->historySamples = std::max<std::size_t>(1, options_.historySamples);
  for (const std::shared_ptr<Provider>& provider : providers_) {
    store_->states[provider->name()];
  }
}

Sampler::~Sampler() {
  stop();
}

void Sampler::start() {
  if (!workers_.empty()) {
    return;
  }
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(store_->mutex);
    store_->stopping = false;
    store_->generation += 1;
    store_->epoch = Clock::now();
    for (auto& entry : store_->states) {
      entry.second.finished = false;
    }
    generation = store_->generation;
  }
  for (const std::shared_ptr<Provider>& provider : providers_) {
    if (hungProviders_.count(provider.get()) != 0) {
      continue;  // still inside the call it hung in: never call it from a second thread
    }
    workers_.push_back(
        Worker{provider, std::thread(runWorker, store_, provider, provider->name(), generation)});
  }
}

void Sampler::stop() {
  if (workers_.empty()) {
    return;
  }
  std::unique_lock lock(store_->mutex);
  store_->stopping = true;
  store_->changed.notify_all();
  const auto allFinished = [&] {
    return std::all_of(workers_.begin(), workers_.end(), [&](const Worker& w) {
      return store_->states[w.provider->name()].finished;
    });
  };
  store_->changed.wait_for(lock, options_.stopWait, allFinished);
  for (Worker& worker : workers_) {
    const bool finished = store_->states[worker.provider->name()].finished;
    if (finished) {
      lock.unlock();
      worker.thread.join();
      lock.lock();
    } else {
      worker.thread.detach();  // stuck in a vendor call; it cleans up when the call returns
      hungProviders_.insert(worker.provider.get());
    }
  }
  workers_.clear();
}

std::vector<ProviderStatus> Sampler::status() const {
  std::lock_guard lock(store_->mutex);
  const Clock::time_point now = Clock::now();
  std::vector<ProviderStatus> result;
  for (const auto& [name, state] : store_->states) {
    ProviderStatus s;
    s.provider = name;
    s.samples = state.samples;
    s.lastRefreshOk = state.lastOk;
    s.lastError = state.lastError;
    if (state.lastCompleted) {
      s.lastSampleAgeMs = duration_cast<milliseconds>(now - *state.lastCompleted).count();
    }
    if (state.inFlightSince) {
      s.inFlightForMs = duration_cast<milliseconds>(now - *state.inFlightSince).count();
    }
    const Clock::time_point reference = state.lastCompleted.value_or(store_->epoch);
    s.stale = now - reference > store_->staleAfter;
    result.push_back(std::move(s));
  }
  return result;
}

std::optional<Snapshot> Sampler::latest(const std::string& provider) const {
  std::lock_guard lock(store_->mutex);
  const auto it = store_->states.find(provider);
  return it == store_->states.end() ? std::nullopt : it->second.latest;
}

std::vector<std::string> Sampler::metricKeys() const {
  std::lock_guard lock(store_->mutex);
  std::vector<std::string> keys;
  for (const auto& entry : store_->series) {
    keys.push_back(entry.first);
  }
  return keys;
}

std::vector<MetricPoint> Sampler::history(const std::string& key) const {
  std::lock_guard lock(store_->mutex);
  std::vector<MetricPoint> points;
  if (const auto it = store_->series.find(key); it != store_->series.end()) {
    it->second.copyTo(points);
  }
  return points;
}

std::uint64_t Sampler::totalSamples() const {
  std::lock_guard lock(store_->mutex);
  return store_->totalSamples;
}

bool Sampler::waitForSamples(std::uint64_t target, milliseconds timeout) const {
  std::unique_lock lock(store_->mutex);
  return store_->changed.wait_for(lock, timeout, [&] { return store_->totalSamples >= target; });
}

}  // namespace lorascope::telemetry
