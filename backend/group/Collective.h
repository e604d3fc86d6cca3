// group/Collective.h — what the ranks of a data-parallel group say to each other: a sum of the
// LoRA gradients over every rank (in buckets), a broadcast from one rank, and a barrier.
//
// Implementations: group/NcclCollective.h (NCCL on NVIDIA, RCCL on AMD: the vendors' library,
// device memory, one process per GPU) and group/InProcessCollective.h (threads of one process on
// host memory: the CI tests' group). Every rank calls the same collectives in the same order with
// the same counts; a rank that does not (or fails, or is gone) makes the others' calls end in a
// CollectiveError naming the collective, never a silent wait: the NCCL one after its timeout, the
// in-process one as soon as the failed rank says so.
//
// Memory: `data` is memory the implementation reads where it runs (device memory of the rank's GPU
// for NCCL, host memory for the in-process group). The caller has finished writing it (the
// device's queue is synchronized) before the call; on return the result is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::group {

enum class CollectiveOp : std::uint8_t { AllReduce, Broadcast, Barrier, Init };
const char* collectiveOpName(CollectiveOp op);  // "all_reduce", "broadcast", "barrier", "init"
// The collective a name stands for (a rank's error event names it); none for any other word.
std::optional<CollectiveOp> parseCollectiveOp(std::string_view name);

// A collective that failed or timed out on this rank: the message names the collective, the
// rank and the group's size, and what the library or the other ranks said.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(CollectiveOp op, bool timedOut, const std::string& message)
      : std::runtime_error(message), op_(op), timedOut_(timedOut) {}
  CollectiveOp op() const { return op_; }
  // A hung collective (a rank never arrived): the supervisor reports it as a hang naming the
  // collective; otherwise an error of the library or of a peer.
  bool timedOut() const { return timedOut_; }

 private:
  CollectiveOp op_;
  bool timedOut_;
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "nccl", "rccl", "in-process": what the group runs on.
  virtual std::string name() const = 0;
  // Σ over the ranks of `count` floats at `data`, in place on every rank.
  virtual void allReduceSum(float* data, std::size_t count) = 0;
  // Rank `root`'s `count` floats at `data` into every rank's `data`.
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
};

// Buckets of a flat buffer of `count` floats: [offset, offset + size) pieces of at most
// `bucketElements` (the last one shorter), in order. Empty for count 0.
struct Bucket {
  std::size_t offset = 0;
  std::size_t count = 0;
};
std::vector<Bucket> bucketsOf(std::size_t count, std::size_t bucketElements);

// The default bucket: 25 MiB of f32 (PyTorch DDP's bucket_cap_mb), so that the LoRA gradients of
// a 1B model (tens of MB) are a few collectives, each large enough to run at the link's speed.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{25} << 20;

// allReduceSum over `count` floats at `data`, one collective per bucket of `bucketBytes`.
void allReduceBucketed(Collective& collective, float* data, std::size_t count,
                       std::size_t bucketBytes = kDefaultBucketBytes);

}  // namespace lorascope::group
