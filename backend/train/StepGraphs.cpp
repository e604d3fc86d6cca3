// train/StepGraphs.cpp — the shapes' pinned inputs, the warm-up / capture / replay sequence and
// the scalars and sums around each step (Note [whole-step graphs] in StepGraphs.h).
#include "train/StepGraphs.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "memory/DeviceAllocator.h"  // defines: OwnerScope
#include "train/Batching.h"          // defines: paddedLength

namespace lorascope::train {

std::int64_t graphSeqLength(std::int64_t longest, std::int64_t maxSeqLen) {
  constexpr std::int64_t kBucket = 64;  // one captured graph per bucket: fewer than eager's
  return paddedLength(longest, kBucket, maxSeqLen);
}

std::int64_t graphPredictedRows(std::int64_t most, std::int64_t positions) {
  constexpr std::int64_t kLevels = 8;  // counts per (rows, seq): one graph each
  constexpr std::int64_t kMultiple = compute::kLmHeadRowBucket;  // eager steps round to it too
  const std::int64_t level =
      (positions + kLevels * kMultiple - 1) / (kLevels * kMultiple) * kMultiple;
  const std::int64_t rows = std::max<std::int64_t>(1, (most + level - 1) / level) * level;
  return rows >= positions ? 0 : rows;
}

struct StepGraphs::Entry {
  StepShape shape;
  std::vector<std::shared_ptr<std::byte[]>> ids, targets;       // per micro-batch, rows·seq int32
  std::vector<std::shared_ptr<std::byte[]>> starts, positions;  // the same, with documents
  std::vector<std::shared_ptr<std::byte[]>> passRows, passTargets;  // predicted int32 each
  std::shared_ptr<std::byte[]> rowLengths;                          // microBatches int32
  compute::Tensor deviceRowLengths;
  int eagerRuns = 0;
  std::uint64_t lastUse = 0;
  std::unique_ptr<compute::CapturedOps> graph;
};

StepGraphs::StepGraphs(compute::Backend& backend)
    : backend_(backend),
      hostScalars_(backend.pinnedHost(sizeof(compute::StepScalars))),
      hostSums_(backend.pinnedHost(sizeof(compute::StepSums))) {
  const memory::OwnerScope owner(memory::Owner::Optimizer);
  deviceScalars_ = backend.empty(compute::DType::F32, {compute::kStepScalarsWords});
  deviceSums_ = backend.empty(compute::DType::F32, {compute::kStepSumsWords});
  new (hostScalars_.get()) compute::StepScalars();
}

StepGraphs::~StepGraphs() {
  const bool captured = capturedShapes() > 0;
  entries_.clear();  // each graph waits for its replay in flight
  if (captured) {
    try {
      backend_.releaseCaptureMemory();
    } catch (const std::exception&) {
      // A lost device: its memory goes with the process; a destructor cannot report.
    }
  }
}

std::size_t StepGraphs::capturedShapes() const {
  return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(),
                                                [](const auto& e) { return e->graph != nullptr; }));
}

StepGraphs::Entry& StepGraphs::entryOf(const StepShape& shape) {
  ++uses_;
  for (const auto& e : entries_) {
    if (e->shape == shape) {
      e->lastUse = uses_;
      return *e;
    }
  }
  if (entries_.size() >= kMaxShapes) {
    // A shape beyond the budget replaces the one used longest ago (its blocks stay in the pool
    // for the next captures).
    const auto oldest =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const auto& a, const auto& b) { return a->lastUse < b->lastUse; });
    backend_.synchronize();
    entries_.erase(oldest);
  }
  auto entry = std::make_unique<Entry>();
  entry->shape = shape;
  entry->lastUse = uses_;
  const auto bytes = static_cast<std::size_t>(shape.rows * shape.seq) * sizeof(std::int32_t);
  for (std::int64_t m = 0; m < shape.microBatches; ++m) {
    entry->ids.push_back(backend_.pinnedHost(bytes));
    entry->targets.push_back(backend_.pinnedHost(bytes));
    if (shape.documents) {
      entry->starts.push_back(backend_.pinnedHost(bytes));
      entry->positions.push_back(backend_.pinnedHost(bytes));
    }
    if (shape.predicted > 0) {
      const auto passBytes = static_cast<std::size_t>(shape.predicted) * sizeof(std::int32_t);
      entry->passRows.push_back(backend_.pinnedHost(passBytes));
      entry->passTargets.push_back(backend_.pinnedHost(passBytes));
    }
  }
  const auto lengthBytes = static_cast<std::size_t>(shape.microBatches) * sizeof(std::int32_t);
  entry->rowLengths = backend_.pinnedHost(lengthBytes);
  {
    const memory::OwnerScope owner(memory::Owner::Optimizer);
    entry->deviceRowLengths = backend_.empty(compute::DType::F32, {shape.microBatches});
  }
  entries_.push_back(std::move(entry));
  return *entries_.back();
}

namespace {

std::span<std::int32_t> int32s(const std::shared_ptr<std::byte[]>& buffer, const StepShape& s) {
  return {reinterpret_cast<std::int32_t*>(buffer.get()), static_cast<std::size_t>(s.rows * s.seq)};
}

}  // namespace

std::span<std::int32_t> StepGraphs::ids(const StepShape& shape, std::int64_t micro) {
  return int32s(entryOf(shape).ids.at(static_cast<std::size_t>(micro)), shape);
}

std::span<std::int32_t> StepGraphs::targets(const StepShape& shape, std::int64_t micro) {
  return int32s(entryOf(shape).targets.at(static_cast<std::size_t>(micro)), shape);
}

std::span<std::int32_t> StepGraphs::documentStarts(const StepShape& shape, std::int64_t micro) {
  return int32s(entryOf(shape).starts.at(static_cast<std::size_t>(micro)), shape);
}

std::span<std::int32_t> StepGraphs::positions(const StepShape& shape, std::int64_t micro) {
  return int32s(entryOf(shape).positions.at(static_cast<std::size_t>(micro)), shape);
}

std::span<std::int32_t> StepGraphs::passRowIndices(const StepShape& shape, std::int64_t micro) {
  return {reinterpret_cast<std::int32_t*>(
              entryOf(shape).passRows.at(static_cast<std::size_t>(micro)).get()),
          static_cast<std::size_t>(shape.predicted)};
}

std::span<std::int32_t> StepGraphs::passRowTargets(const StepShape& shape, std::int64_t micro) {
  return {reinterpret_cast<std::int32_t*>(
              entryOf(shape).passTargets.at(static_cast<std::size_t>(micro)).get()),
          static_cast<std::size_t>(shape.predicted)};
}

compute::LmHeadRows StepGraphs::passRows(const StepShape& shape, std::int64_t micro) {
  if (shape.predicted == 0) {
    return {};
  }
  return {passRowIndices(shape, micro), passRowTargets(shape, micro)};
}

std::span<std::int32_t> StepGraphs::rowLengths(const StepShape& shape) {
  return {reinterpret_cast<std::int32_t*>(entryOf(shape).rowLengths.get()),
          static_cast<std::size_t>(shape.microBatches)};
}

const compute::Tensor& StepGraphs::deviceRowLengths(const StepShape& shape) {
  return entryOf(shape).deviceRowLengths;
}

compute::StepScalars& StepGraphs::scalars() {
  return *reinterpret_cast<compute::StepScalars*>(hostScalars_.get());
}

compute::StepSums StepGraphs::sums() const {
  compute::StepSums s;
  std::memcpy(&s, hostSums_.get(), sizeof s);
  return s;
}

void StepGraphs::issueWrapped(Entry& entry, const std::function<void()>& issue) {
  backend_.copyIn(std::span<const std::byte>(hostScalars_.get(), sizeof(compute::StepScalars)),
                  deviceScalars_);
  backend_.copyIn(std::span<const std::byte>(
                      entry.rowLengths.get(),
                      static_cast<std::size_t>(entry.shape.microBatches) * sizeof(std::int32_t)),
                  entry.deviceRowLengths);
  std::vector<compute::Tensor*> sums{&deviceSums_};
  backend_.fillZero(sums);
  issue();
  backend_.copyOut(deviceSums_, std::span<std::byte>(hostSums_.get(), sizeof(compute::StepSums)));
}

StepGraphs::Run StepGraphs::run(const StepShape& shape, const std::function<void()>& issue) {
  Entry& entry = entryOf(shape);
  if (!backend_.canCapture()) {
    issueWrapped(entry, issue);
    return Run::Uncaptured;
  }
  if (entry.graph) {
    entry.graph->replay();
    return Run::Replayed;
  }
  if (entry.eagerRuns == 0) {
    // A further shape's warm-up takes its blocks from the graph pool, where the captured steps'
    // blocks lie idle between replays: from the ordinary cache it would reserve a whole step's
    // activations again beside them (on the Llama-3.2-1B loop 11.5 GiB against 7.1, when the
    // predicted rows' count changed).
    const bool fromPool = capturedShapes() > 0;
    if (fromPool) {
      backend_.drawFromCapturePool(true);
    }
    try {
      issueWrapped(entry, issue);
    } catch (...) {
      if (fromPool) {
        backend_.drawFromCapturePool(false);
      }
      throw;
    }
    if (fromPool) {
      backend_.drawFromCapturePool(false);
    }
    ++entry.eagerRuns;
    return Run::WarmUp;
  }
  // The warm-up step's activations sit idle in the ordinary cache while the graph pool takes as
  // much again for the captured step's: they go back first, so that graph mode reserves what an
  // eager step does (the pool's own blocks stay; a later eager step takes segments anew).
  backend_.releaseCachedMemory();
  backend_.beginCapture();
  try {
    issueWrapped(entry, issue);
    entry.graph = backend_.endCapture();
  } catch (...) {
    backend_.abandonCapture();
    throw;
  }
  entry.graph->replay();
  return Run::Captured;
}

}  // namespace lorascope::train
