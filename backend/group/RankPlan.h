// group/RankPlan.h — who does what in a data-parallel group: the GPUs a run asks for (`--gpus`),
// the share of each optimizer step a rank computes, and what each rank writes.
//
// Note [micro-batches are the unit of work]: an optimizer step takes its effective batch of
// sequences in the epoch's order and splits it into micro-batches 0..M−1, as one GPU does
// (train/TrainLoop.h). In a group of R ranks, rank r runs the contiguous micro-batches
// [⌊r·M/R⌋, ⌊(r+1)·M/R⌋) (shares differ by at most one micro-batch). A micro-batch keeps its
// global index wherever it runs, and the dropout mask of a micro-batch is a function of that index
// (train/LoraDropout.h), so every sequence gets the same rows, padding and dropout on any number
// of ranks: the summed gradient is the one-GPU gradient (up to the order of the sum), and a group
// that shrinks or grows on a restart continues the same curve. Every rank scales its backward by
// the whole step's 1/N (N: tokens predicted in the step, which every rank counts from the same
// data), so the sum over ranks needs no further scaling.
//
// Note [rank 0 writes]: every rank holds the same adapter and moments after every step (the same
// summed gradient, clipped and applied by the same AdamW on each), so one copy is the run's state.
// Rank 0 writes the run directory (config.json, metrics.jsonl, TensorBoard, checkpoints, the final
// adapter) and the state mirror; a restart of the group resumes every rank from rank 0's mirror.
// The other ranks write nothing there (the supervisor holds the run lock for all of them); they
// report their own card's telemetry (memory, queue depth, held outside) and their errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::group {

// The GPUs of `--gpus`: "all" (every one of `available`), or device indices separated by commas
// ("0,1"), each once, each below `available`. Throws std::invalid_argument saying what is wrong
// with `text` (an empty list, a word that is not an index, a repeat, a GPU the machine lacks).
std::vector<int> parseGpuList(std::string_view text, int available);
// The list as `--gpus` spells it: "0,1".
std::string gpuListText(const std::vector<int>& devices);
// A `--gpus` value checked for its words without a machine to count GPUs on: "" (no list) and
// "all" as they are, indices as gpuListText spells them ("1, 0" → "1,0"). Throws
// std::invalid_argument as parseGpuList does (a word that is not an index, a repeat).
std::string normalGpuList(std::string_view text);

// A rank's micro-batches of one step (Note [micro-batches are the unit of work]).
struct RankShare {
  std::int64_t firstMicroBatch = 0;
  std::int64_t microBatches = 0;  // may be 0: the rank computes nothing and adds zeros
};
// Rank `rank` of `size` in a step of `microBatches`. Throws std::invalid_argument for a rank
// outside [0, size) or a negative count.
RankShare shareOfRank(std::int64_t microBatches, int rank, int size);

// What a rank writes and reports (Note [rank 0 writes]).
struct RankDuties {
  bool writesRunDirectory = false;  // config.json, metrics.jsonl, TensorBoard, trainer_state.json
  bool writesCheckpoints = false;   // checkpoints/step-N, the final adapter
  bool writesStateMirror = false;   // state.mirror, which a restart of the group resumes from
  bool reportsSteps = false;        // step events (the others report progress only)
  bool reportsTelemetry = true;     // its own card's memory, queue depth and held-outside readings
};
RankDuties dutiesOf(int rank);

}  // namespace lorascope::group
