// train/StepGraphs.h — whole-step graph mode: one optimizer step, every micro-batch, captured once
// per step shape as a CUDA/HIP graph and replayed as one launch.
//
// Note [whole-step graphs]
// A captured graph replays the very launches of its capture: the same kernels, arguments and
// addresses. So nothing a step varies may be a kernel argument or a host read:
// - Inputs: each micro-batch's ids and shifted targets are written by the host into pinned
//   buffers of fixed size before the step; the graph's first copies read them (Backend::copyIn).
//   With document packing so are each token's document start and RoPE position: the attention
//   and RoPE ops upload them from where the host wrote them (model::ForwardInput reads them in
//   place), so a replay masks and rotates by this step's documents, not the captured step's.
// - Shapes: every micro-batch of a step is padded to `rows` sequences of `seq` positions (seq: the
//   step's longest sequence rounded up to a multiple of 64, at most max_seq_len); padding rows and
//   positions have no target, so the loss and gradients are those of the unpadded batch. One
//   graph per (rows, seq, micro-batches, predicted rows) shape; at most kMaxShapes are kept (a
//   new shape beyond them replaces the one used longest ago).
// - Predicted rows: Note [predicted rows in a graph].
// - Per-step values: the AdamW scalars (learning rate, bias corrections), the loss weight
//   1/predicted and the dropout stream's step live in device memory (compute/StepScalars.h),
//   copied from pinned memory at the start of the step.
// - Host reads: the loss sums on the device, the lm-head reads the loss weight from device memory,
//   clipping computes the norm and its factor on the device (the norm is never read there), and
//   the update runs only when the loss and norm are finite (a device flag). The host reads loss,
//   norm and flag once, after the step, in one copy (compute::StepSums). With the shapes of the
//   eager step, a graph computes what it computes, bit for bit; padding changes the products'
//   shapes, and with them, at times, the last bit of a rounding.
// - Memory: blocks allocated while capturing come from the allocator's graph pool, which nothing
//   but captures uses (memory/DeviceAllocator.h); it is released with the graphs. Before a
//   capture the ordinary cache gives its idle segments back (Backend::releaseCachedMemory): the
//   warm-up step's activations would otherwise stay reserved beside the pool's copy of them.
//
// Note [predicted rows in a graph]: the lm-head computes only the rows whose target is predicted
// (Note [predicted rows only] in compute/cpu/lm_head_loss.cpp); which and how many change with
// every batch. A step's shape therefore also holds a count of rows, `predicted`: the most any of
// its micro-batches predicts, rounded up to a multiple of an eighth of its positions
// (graphPredictedRows: at most eight counts per (rows, seq), each a multiple of the eager step's
// kLmHeadRowBucket; micro-batches of up to 128 positions keep computing every row). The host writes
// each micro-batch's predicted rows and their targets into pinned buffers of that count, padded
// with rows it does not predict (compute::LmHeadRows), and the captured lm-head gathers by them at
// every replay. Before, a captured step computed the lm-head on every row: on the Llama-3.2-1B
// loop (alpaca, --packing documents, about 77% of the rows predicted) 30% more rows than an eager
// step, which made graph mode slower than eager there. `predicted` 0: every row (the count would
// reach them all).
//
// The first step of a shape runs its ops eagerly (a warm-up: vendor GEMM plans, kernel attributes
// and the graph pool's sizes are settled outside the capture); the second is captured and
// replayed; the rest are replayed. A backend that cannot capture (the CPU) runs the same
// deferred step uncaptured every time, which is what the CPU's tests compare with eager steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "compute/Backend.h"

namespace lorascope::train {

struct StepShape {
  std::int64_t rows = 0;          // sequences per micro-batch
  std::int64_t seq = 0;           // positions per sequence
  std::int64_t microBatches = 0;  // per step
  bool documents = false;         // rows pack examples apart: starts and positions are inputs too
  std::int64_t predicted = 0;     // rows each micro-batch's lm-head computes; 0: every row
  bool operator==(const StepShape&) const = default;
};

// The padded length of a step whose longest sequence has `longest` tokens.
std::int64_t graphSeqLength(std::int64_t longest, std::int64_t maxSeqLen);
// StepShape::predicted for micro-batches of `positions` positions that predict at most `most`
// targets: `most` rounded up to a multiple of positions / 8 (itself rounded up to
// compute::kLmHeadRowBucket), or 0 when that reaches every position (Note [predicted rows in a
// graph]).
std::int64_t graphPredictedRows(std::int64_t most, std::int64_t positions);

class StepGraphs {
 public:
  // How a step ran.
  enum class Run { Uncaptured, WarmUp, Captured, Replayed };
  // Sequence lengths and predicted counts multiply: 16, so that a run whose lengths vary keeps
  // its graphs (a graph's blocks come from the shared pool; what each holds apart is small).
  // A 17th shape replaces the one used longest ago.
  static constexpr std::size_t kMaxShapes = 16;

  explicit StepGraphs(compute::Backend& backend);
  // Drops every graph, then gives the graph pool back (Backend::releaseCaptureMemory).
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // The pinned inputs of micro-batch `micro` of a step of `shape` (rows·seq each), for the host to
  // fill before run().
  std::span<std::int32_t> ids(const StepShape& shape, std::int64_t micro);
  std::span<std::int32_t> targets(const StepShape& shape, std::int64_t micro);
  // With shape.documents (rows·seq each): each token's document start and RoPE position
  // (model::ForwardInput's), which the captured attention and RoPE ops read at every replay.
  std::span<std::int32_t> documentStarts(const StepShape& shape, std::int64_t micro);
  std::span<std::int32_t> positions(const StepShape& shape, std::int64_t micro);
  // With shape.predicted (that many each): the rows the lm-head of micro-batch `micro` computes
  // and their targets (compute::LmHeadRows), for the host to fill before run().
  compute::LmHeadRows passRows(const StepShape& shape, std::int64_t micro);
  std::span<std::int32_t> passRowIndices(const StepShape& shape, std::int64_t micro);
  std::span<std::int32_t> passRowTargets(const StepShape& shape, std::int64_t micro);
  // The unpadded length of each micro-batch (its longest sequence: what the eager step pads to),
  // for the dropout masks (Backend::dropoutMaskAt); pinned, set before run().
  std::span<std::int32_t> rowLengths(const StepShape& shape);
  const compute::Tensor& deviceRowLengths(const StepShape& shape);
  // The step's values, for the host to set before run() (pinned).
  compute::StepScalars& scalars();
  // The step's device copies: what `issue` passes to the ops.
  const compute::Tensor& deviceScalars() const { return deviceScalars_; }
  compute::Tensor& deviceSums() { return deviceSums_; }

  // Issues one step of `shape`: `issue` issues its ops (taking the inputs from ids() and
  // targets(), the values from deviceScalars(), leaving the results in deviceSums()); run() wraps
  // them in the copies of the scalars in and the sums out, and runs them eagerly (a new shape's
  // warm-up, or a backend that cannot capture), or captures them once and replays the graph.
  // Returns once queued; the sums are read by sums() after Backend::synchronize(). An exception
  // from a capture ends it (nothing of it stays).
  Run run(const StepShape& shape, const std::function<void()>& issue);
  // The last step's results (valid after synchronize).
  compute::StepSums sums() const;
  std::size_t capturedShapes() const;
  std::size_t shapes() const { return entries_.size(); }

 private:
  struct Entry;
  Entry& entryOf(const StepShape& shape);
  void issueWrapped(Entry& entry, const std::function<void()>& issue);

  compute::Backend& backend_;
  std::shared_ptr<std::byte[]> hostScalars_;  // a StepScalars
  std::shared_ptr<std::byte[]> hostSums_;     // a StepSums
  compute::Tensor deviceScalars_;
  compute::Tensor deviceSums_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::uint64_t uses_ = 0;  // entryOf calls: each entry's last one orders them by use
};

}  // namespace lorascope::train
