// train/GroupStep.cpp — the data-parallel part of TrainLoop::step, apart from the step itself:
// which micro-batches this rank runs, and the one reduction per optimizer step (group/RankPlan.h,
// Note [micro-batches are the unit of work]). Every rank scaled its backward by the whole step's
// 1/N, so the sum over the ranks is the step's gradient as one GPU computes it.
#include <algorithm>
#include <cmath>

#include "group/RankPlan.h"
#include "train/TrainLoop.h"

namespace lorascope::train {

std::pair<std::int64_t, std::int64_t> TrainLoop::microBatchesOfThisRank(
    std::int64_t microBatches) const {
  if (group_ == nullptr) {
    return {0, microBatches};
  }
  const group::RankShare share = group::shareOfRank(microBatches, group_->rank(), group_->size());
  return {share.firstMicroBatch, share.firstMicroBatch + share.microBatches};
}

void TrainLoop::reduceOverGroup(double& lossSum, std::int64_t& tokens, std::int64_t& positions) {
  backend_->synchronize();  // the collective reads what the backward wrote (group/Collective.h)
  compute::Tensor& gradients = graph_->gradientBuffer();
  group::allReduceBucketed(*group_, gradients.as<float>(),
                           static_cast<std::size_t>(gradients.numel()));
  // The step's scalars in one small buffer of the backend's memory (where the collective reads),
  // each as a float and its rounding error, so that the loss sum keeps about a double's digits;
  // then one slot per rank, this rank's holding its count (setReceivedCount: small integers, exact
  // in a float), the others 0.
  const double values[3] = {lossSum, static_cast<double>(tokens), static_cast<double>(positions)};
  std::vector<float> split;
  for (const double v : values) {
    const float high = static_cast<float>(v);
    split.push_back(high);
    split.push_back(static_cast<float>(v - static_cast<double>(high)));
  }
  const std::size_t countsAt = split.size();
  split.resize(countsAt + static_cast<std::size_t>(group_->size()), 0.0f);
  split[countsAt + static_cast<std::size_t>(group_->rank())] = static_cast<float>(received_);
  compute::Tensor scalars =
      backend_->upload(split, compute::DType::F32, {static_cast<std::int64_t>(split.size())});
  backend_->synchronize();
  group_->allReduceSum(scalars.as<float>(), split.size());
  const std::vector<float> sums = backend_->download(scalars);
  const auto joined = [&](std::size_t i) {
    return static_cast<double>(sums[2 * i]) + static_cast<double>(sums[2 * i + 1]);
  };
  lossSum = joined(0);
  tokens = std::llround(joined(1));
  positions = std::llround(joined(2));
  agreed_ = std::llround(
      *std::min_element(sums.begin() + static_cast<std::ptrdiff_t>(countsAt), sums.end()));
}

}  // namespace lorascope::train
