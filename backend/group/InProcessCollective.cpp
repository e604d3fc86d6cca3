// group/InProcessCollective.cpp — the ranks meet at one mutex: the last to arrive checks that
// every rank called the same collective, computes it into every rank's memory (the others are
// blocked, so their buffers are still) and opens the next generation.
#include "group/InProcessCollective.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

namespace lorascope::group {

class InProcessGroup {
 public:
  InProcessGroup(int size, std::int64_t timeoutMs)
      : size_(size), timeoutMs_(timeoutMs), arrivals_(static_cast<std::size_t>(size)) {}

  int size() const { return size_; }
  void run(int rank, CollectiveOp op, float* data, std::size_t count, int root);
  void fail(int rank, const std::string& why);

 private:
  struct Arrival {
    bool here = false;
    CollectiveOp op = CollectiveOp::Barrier;
    float* data = nullptr;
    std::size_t count = 0;
    int root = 0;
  };
  std::string where(int rank, CollectiveOp op) const {
    return std::string("in-process group, rank ") + std::to_string(rank) + " of " +
           std::to_string(size_) + ": " + collectiveOpName(op);
  }
  static std::string describe(int rank, const Arrival& a) {
    return "rank " + std::to_string(rank) + " called " + collectiveOpName(a.op) + " of " +
           std::to_string(a.count) + " floats" +
           (a.op == CollectiveOp::Broadcast ? " from rank " + std::to_string(a.root) : "");
  }
  // The last rank's work (lock held): an empty answer when the collective ran, else what the
  // ranks disagreed on.
  std::string complete();

  const int size_;
  const std::int64_t timeoutMs_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Arrival> arrivals_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::string failure_;           // once set, every collective of the group throws it
  bool failureTimedOut_ = false;  // failure_ is a rank that never arrived
};

namespace {

class InProcessCollective final : public Collective {
 public:
  InProcessCollective(std::shared_ptr<InProcessGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string name() const override { return "in-process"; }
  void allReduceSum(float* data, std::size_t count) override {
    group_->run(rank_, CollectiveOp::AllReduce, data, count, 0);
  }
  void broadcast(float* data, std::size_t count, int root) override {
    group_->run(rank_, CollectiveOp::Broadcast, data, count, root);
  }
  void barrier() override { group_->run(rank_, CollectiveOp::Barrier, nullptr, 0, 0); }
  InProcessGroup& group() { return *group_; }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
};

}  // namespace

std::string InProcessGroup::complete() {
  const Arrival& first = arrivals_[0];
  for (int r = 1; r < size_; ++r) {
    const Arrival& a = arrivals_[static_cast<std::size_t>(r)];
    if (a.op != first.op || a.count != first.count || a.root != first.root) {
      return "the ranks disagree: " + describe(0, first) + ", " + describe(r, a);
    }
  }
  if (first.op == CollectiveOp::Broadcast && (first.root < 0 || first.root >= size_)) {
    return "broadcast from rank " + std::to_string(first.root) + ", outside the group";
  }
  if (first.op == CollectiveOp::AllReduce) {
    std::vector<float> sum(first.data, first.data + first.count);
    for (int r = 1; r < size_; ++r) {
      const float* values = arrivals_[static_cast<std::size_t>(r)].data;
      for (std::size_t i = 0; i < sum.size(); ++i) {
        sum[i] += values[i];
      }
    }
    for (const Arrival& a : arrivals_) {
      std::copy(sum.begin(), sum.end(), a.data);
    }
  } else if (first.op == CollectiveOp::Broadcast) {
    const float* source = arrivals_[static_cast<std::size_t>(first.root)].data;
    for (const Arrival& a : arrivals_) {
      if (a.data != source) {
        std::copy(source, source + first.count, a.data);
      }
    }
  }
  return {};
}

void InProcessGroup::run(int rank, CollectiveOp op, float* data, std::size_t count, int root) {
  std::unique_lock lock(mutex_);
  if (!failure_.empty()) {
    throw CollectiveError(op, failureTimedOut_, where(rank, op) + ": " + failure_);
  }
  arrivals_[static_cast<std::size_t>(rank)] = {true, op, data, count, root};
  const std::uint64_t generation = generation_;
  if (++arrived_ == size_) {
    const std::string disagreement = complete();
    for (Arrival& a : arrivals_) {
      a.here = false;
    }
    arrived_ = 0;
    if (!disagreement.empty()) {
      failure_ = disagreement;
      changed_.notify_all();
      throw CollectiveError(op, false, where(rank, op) + ": " + failure_);
    }
    ++generation_;
    changed_.notify_all();
    return;
  }
  const bool moved = changed_.wait_for(lock, std::chrono::milliseconds(timeoutMs_), [&] {
    return generation_ != generation || !failure_.empty();
  });
  if (moved && generation_ != generation) {
    return;
  }
  if (!moved) {
    std::string missing;
    for (int r = 0; r < size_; ++r) {
      if (!arrivals_[static_cast<std::size_t>(r)].here) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    failure_ = std::string(collectiveOpName(op)) + " timed out after " +
               std::to_string(timeoutMs_) + " ms: rank(s) " + missing + " never arrived";
    failureTimedOut_ = true;
    changed_.notify_all();
    throw CollectiveError(op, true, where(rank, op) + ": " + failure_);
  }
  throw CollectiveError(op, failureTimedOut_, where(rank, op) + ": " + failure_);
}

void InProcessGroup::fail(int rank, const std::string& why) {
  std::lock_guard lock(mutex_);
  if (failure_.empty()) {
    failure_ = "rank " + std::to_string(rank) + " failed: " + why;
  }
  changed_.notify_all();
}

std::vector<std::unique_ptr<Collective>> makeInProcessGroup(int size, std::int64_t timeoutMs) {
  if (size < 1) {
    throw std::invalid_argument("an in-process group needs at least 1 rank, got " +
                                std::to_string(size));
  }
  auto group = std::make_shared<InProcessGroup>(size, timeoutMs);
  std::vector<std::unique_ptr<Collective>> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.push_back(std::make_unique<InProcessCollective>(group, r));
  }
  return ranks;
}

void failInProcessRank(Collective& collective, int rank, const std::string& why) {
  auto* inProcess = dynamic_cast<InProcessCollective*>(&collective);
  if (inProcess == nullptr) {
    throw std::invalid_argument("failInProcessRank: " + collective.name() +
                                " is not an in-process group");
  }
  inProcess->group().fail(rank, why);
}

}  // namespace lorascope::group
