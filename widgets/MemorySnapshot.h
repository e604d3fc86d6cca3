// widgets/MemorySnapshot.h — the allocator snapshot as the memory map reads it.
//
// The JSON follows PyTorch's memory-snapshot field names, as backend/memory writes them:
//   {"segments": [{"address", "total_size", "allocated_size", "active_size", "requested_size",
//                  "segment_type": "small"|"large", "blocks": [{"address", "size",
//                  "requested_size", "state": "active_allocated"|"active_pending_free"|"inactive",
//                  "owner": "weights"|..., "step"}]}], ...}
// "owner" and "step" are ours and present on allocated blocks only. "device_traces" (optional):
//   [[{"action": "alloc"|"free_completed"|"free_requested"|"segment_alloc"|"segment_free", "addr",
//      "size", and ours: "owner", "step"}, ...]] — the first device's list becomes `trace`
//   (free_requested is not a free yet and is skipped). Other keys ("device",
// "stats", "policy", "pool", "stream") are kept in `raw` and saved back untouched.
#pragma once

#include <QColor>
#include <QString>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::widgets {

// What a block is drawn as. Owners first (backend/memory's ownerName order), then the two
// kinds of free memory: a whole free segment (releasable) and a free block inside a segment that
// is partly in use ("inactive split": cannot be released, and only serves requests that fit).
enum class BlockKind {
  Weights,
  Lora,
  Grads,
  Optimizer,
  Activations,
  Workspace,
  Other,
  Free,
  InactiveSplit
};
inline constexpr int kBlockKindCount = 9;

QColor blockKindColor(BlockKind kind);
QString blockKindName(BlockKind kind);

struct SnapshotBlock {
  std::uint64_t address = 0;
  std::uint64_t sizeBytes = 0;
  std::uint64_t requestedBytes = 0;
  std::string state;
  std::string owner;                 // "" when free
  std::optional<std::int64_t> step;  // the step it was allocated at
  BlockKind kind = BlockKind::Free;
};

struct SnapshotSegment {
  std::uint64_t address = 0;
  std::uint64_t totalBytes = 0;
  std::uint64_t allocatedBytes = 0;
  std::uint64_t activeBytes = 0;
  std::uint64_t requestedBytes = 0;
  std::string segmentType;
  std::vector<SnapshotBlock> blocks;
  // A segment with no live block is cache; the owner of the last block the trace allocated or
  // freed in it says what it was cached for (nullopt: in use, or the trace never touched it).
  std::optional<BlockKind> cachedFor = std::nullopt;
};

// One entry of the allocator's trace ("device_traces"[0]): what the allocation timeline draws.
struct TraceEvent {
  enum class Action { Alloc, Free, SegmentAlloc, SegmentFree };
  Action action = Action::Alloc;
  BlockKind owner = BlockKind::Other;  // Alloc and Free
  std::int64_t step = 0;
  std::uint64_t address = 0;
  std::uint64_t sizeBytes = 0;
};

struct MemorySnapshot {
  std::vector<SnapshotSegment> segments;
  std::vector<TraceEvent> trace;  // oldest first; empty when the snapshot has none
  nlohmann::json raw;             // the document as received, for saving
  std::uint64_t totalBytes() const;
  std::size_t blockCount() const;
  std::array<std::uint64_t, kBlockKindCount> bytesByKind() const;
  // Per owner: the segments with no live block that last held that owner's blocks, and their
  // bytes (the freed activations a caching allocator keeps for the next step).
  struct Cached {
    std::uint64_t bytes = 0;
    int segments = 0;
  };
  std::array<Cached, kBlockKindCount> cachedByOwner() const;
};

class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SnapshotError naming the segment/block and field that is missing or ill-typed.
MemorySnapshot parseMemorySnapshot(const nlohmann::json& document);

}  // namespace lorascope::widgets
