// group/Collective.cpp — the collectives' names and the bucketed all-reduce.
#include "group/Collective.h"

#include <algorithm>

namespace lorascope::group {

const char* collectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return "all_reduce";
    case CollectiveOp::Broadcast:
      return "broadcast";
    case CollectiveOp::Barrier:
      return "barrier";
    case CollectiveOp::Init:
      return "init";
  }
  return "unknown";
}

std::optional<CollectiveOp> parseCollectiveOp(std::string_view name) {
  for (const CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::Broadcast,
                                CollectiveOp::Barrier, CollectiveOp::Init}) {
    if (name == collectiveOpName(op)) {
      return op;
    }
  }
  return std::nullopt;
}

std::vector<Bucket> bucketsOf(std::size_t count, std::size_t bucketElements) {
  const std::size_t size = std::max<std::size_t>(bucketElements, 1);
  std::vector<Bucket> buckets;
  for (std::size_t offset = 0; offset < count; offset += size) {
    buckets.push_back({offset, std::min(size, count - offset)});
  }
  return buckets;
}

void allReduceBucketed(Collective& collective, float* data, std::size_t count,
                       std::size_t bucketBytes) {
  for (const Bucket& bucket : bucketsOf(count, bucketBytes / sizeof(float))) {
    collective.allReduceSum(data + bucket.offset, bucket.count);
  }
}

}  // namespace lorascope::group
