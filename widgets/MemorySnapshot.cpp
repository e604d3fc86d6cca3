// widgets/MemorySnapshot.cpp — reading PyTorch-layout snapshots and classifying blocks.
#include "widgets/MemorySnapshot.h"

#include <algorithm>
#include <numeric>

#include <QObject>

namespace lorascope::widgets {
namespace {

using nlohmann::json;

std::uint64_t bytesField(const json& object, const char* field, const std::string& where) {
  const auto it = object.find(field);
  if (it == object.end()) {
    throw SnapshotError(where + ": \"" + field + "\" is missing");
  }
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0)) {
    throw SnapshotError(where + ": \"" + field + "\" must be a byte count ≥ 0");
  }
  return it->get<std::uint64_t>();
}

std::string stringField(const json& object, const char* field, const std::string& where) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    throw SnapshotError(where + ": \"" + field + "\" must be a string");
  }
  return it->get<std::string>();
}

BlockKind ownerKind(const std::string& owner) {
  static const std::array<std::pair<const char*, BlockKind>, 7> kOwners = {{
      {"weights", BlockKind::Weights},
      {"lora", BlockKind::Lora},
      {"grads", BlockKind::Grads},
      {"optimizer", BlockKind::Optimizer},
      {"activations", BlockKind::Activations},
      {"workspace", BlockKind::Workspace},
      {"other", BlockKind::Other},
  }};
  for (const auto& [name, kind] : kOwners) {
    if (owner == name) {
      return kind;
    }
  }
  return BlockKind::Other;
}

}  // namespace

QColor blockKindColor(BlockKind kind) {
  switch (kind) {
    case BlockKind::Weights:
      return QColor(0x4e, 0x79, 0xa7);
    case BlockKind::Lora:
      return QColor(0xf2, 0x8e, 0x2b);
    case BlockKind::Grads:
      return QColor(0xe1, 0x57, 0x59);
    case BlockKind::Optimizer:
      return QColor(0x76, 0xb7, 0xb2);
    case BlockKind::Activations:
      return QColor(0x59, 0xa1, 0x4f);
    case BlockKind::Workspace:
      return QColor(0xed, 0xc9, 0x48);
    case BlockKind::Other:
      return QColor(0xb0, 0x7a, 0xa1);
    case BlockKind::Free:
      return QColor(0xe8, 0xe8, 0xe8);
    case BlockKind::InactiveSplit:
      return QColor(0xa0, 0xa0, 0xa0);
  }
  return Qt::black;
}

QString blockKindName(BlockKind kind) {
  switch (kind) {
    case BlockKind::Weights:
      return QObject::tr("weights");
    case BlockKind::Lora:
      return QObject::tr("LoRA");
    case BlockKind::Grads:
      return QObject::tr("grads");
    case BlockKind::Optimizer:
      return QObject::tr("optimizer");
    case BlockKind::Activations:
      return QObject::tr("activations");
    case BlockKind::Workspace:
      return QObject::tr("workspace");
    case BlockKind::Other:
      return QObject::tr("other");
    case BlockKind::Free:
      return QObject::tr("free");
    case BlockKind::InactiveSplit:
      return QObject::tr("inactive split");
  }
  return {};
}

std::uint64_t MemorySnapshot::totalBytes() const {
  std::uint64_t total = 0;
  for (const SnapshotSegment& s : segments) {
    total += s.totalBytes;
  }
  return total;
}

std::size_t MemorySnapshot::blockCount() const {
  std::size_t count = 0;
  for (const SnapshotSegment& s : segments) {
    count += s.blocks.size();
  }
  return count;
}

std::array<std::uint64_t, kBlockKindCount> MemorySnapshot::bytesByKind() const {
  std::array<std::uint64_t, kBlockKindCount> bytes{};
  for (const SnapshotSegment& s : segments) {
    for (const SnapshotBlock& b : s.blocks) {
      bytes[static_cast<std::size_t>(b.kind)] += b.sizeBytes;
    }
  }
  return bytes;
}

std::array<MemorySnapshot::Cached, kBlockKindCount> MemorySnapshot::cachedByOwner() const {
  std::array<Cached, kBlockKindCount> cached{};
  for (const SnapshotSegment& s : segments) {
    if (s.cachedFor) {
      Cached& c = cached[static_cast<std::size_t>(*s.cachedFor)];
      c.bytes += s.totalBytes;
      ++c.segments;
    }
  }
  return cached;
}

namespace {

// Sets cachedFor on the segments with no live block: the owner of the trace's last allocation or
// free inside each.
void markCachedSegments(MemorySnapshot& snapshot) {
  std::vector<std::size_t> byAddress(snapshot.segments.size());
  std::iota(byAddress.begin(), byAddress.end(), std::size_t{0});
  std::sort(byAddress.begin(), byAddress.end(), [&](std::size_t a, std::size_t b) {
    return snapshot.segments[a].address < snapshot.segments[b].address;
  });
  for (const TraceEvent& e : snapshot.trace) {
    if (e.action != TraceEvent::Action::Alloc && e.action != TraceEvent::Action::Free) {
      continue;
    }
    const auto after = std::upper_bound(byAddress.begin(), byAddress.end(), e.address,
                                        [&](std::uint64_t address, std::size_t s) {
                                          return address < snapshot.segments[s].address;
                                        });
    if (after == byAddress.begin()) {
      continue;
    }
    SnapshotSegment& segment = snapshot.segments[*(after - 1)];
    if (e.address < segment.address + segment.totalBytes && segment.allocatedBytes == 0) {
      segment.cachedFor = e.owner;
    }
  }
}

}  // namespace

MemorySnapshot parseMemorySnapshot(const json& document) {
  if (!document.is_object() || !document.contains("segments") || !document["segments"].is_array()) {
    throw SnapshotError("not a memory snapshot: no \"segments\" array");
  }
  MemorySnapshot out;
  out.raw = document;
  std::size_t si = 0;
  for (const json& s : document["segments"]) {
    const std::string where = "segments[" + std::to_string(si++) + "]";
    if (!s.is_object()) {
      throw SnapshotError(where + ": must be an object");
    }
    SnapshotSegment seg{bytesField(s, "address", where),
                        bytesField(s, "total_size", where),
                        bytesField(s, "allocated_size", where),
                        bytesField(s, "active_size", where),
                        bytesField(s, "requested_size", where),
                        stringField(s, "segment_type", where),
                        {}};
    if (!s.contains("blocks") || !s["blocks"].is_array()) {
      throw SnapshotError(where + ": \"blocks\" must be an array");
    }
    std::size_t bi = 0;
    for (const json& b : s["blocks"]) {
      const std::string bwhere = where + ".blocks[" + std::to_string(bi++) + "]";
      if (!b.is_object()) {
        throw SnapshotError(bwhere + ": must be an object");
      }
      SnapshotBlock block;
      block.address = bytesField(b, "address", bwhere);
      block.sizeBytes = bytesField(b, "size", bwhere);
      block.requestedBytes = bytesField(b, "requested_size", bwhere);
      block.state = stringField(b, "state", bwhere);
      if (b.contains("owner")) {
        block.owner = stringField(b, "owner", bwhere);
      }
      if (b.contains("step")) {
        if (!b["step"].is_number_integer()) {
          throw SnapshotError(bwhere + ": \"step\" must be a whole number");
        }
        block.step = b["step"].get<std::int64_t>();
      }
      const bool inUse = block.state.rfind("active", 0) == 0;  // active_allocated/_pending_free
      if (inUse) {
        block.kind = ownerKind(block.owner);
      } else {
        block.kind = seg.allocatedBytes > 0 ? BlockKind::InactiveSplit : BlockKind::Free;
      }
      seg.blocks.push_back(std::move(block));
    }
    out.segments.push_back(std::move(seg));
  }
  if (document.contains("device_traces")) {
    const json& traces = document["device_traces"];
    if (!traces.is_array() || (!traces.empty() && !traces[0].is_array())) {
      throw SnapshotError("device_traces: must be an array of arrays");
    }
    static const std::array<std::pair<const char*, TraceEvent::Action>, 4> kActions = {{
        {"alloc", TraceEvent::Action::Alloc},
        {"free_completed", TraceEvent::Action::Free},
        {"segment_alloc", TraceEvent::Action::SegmentAlloc},
        {"segment_free", TraceEvent::Action::SegmentFree},
    }};
    std::size_t ti = 0;
    for (const json& t : traces.empty() ? json::array() : traces[0]) {
      const std::string where = "device_traces[0][" + std::to_string(ti++) + "]";
      if (!t.is_object()) {
        throw SnapshotError(where + ": must be an object");
      }
      const std::string action = stringField(t, "action", where);
      const auto known = std::find_if(kActions.begin(), kActions.end(),
                                      [&](const auto& entry) { return action == entry.first; });
      if (known == kActions.end()) {
        continue;  // free_requested, snapshot, oom...: not a change of live or reserved bytes
      }
      TraceEvent event;
      event.action = known->second;
      event.address = bytesField(t, "addr", where);
      event.sizeBytes = bytesField(t, "size", where);
      if (t.contains("owner")) {
        event.owner = ownerKind(stringField(t, "owner", where));
      }
      if (t.contains("step")) {
        if (!t["step"].is_number_integer()) {
          throw SnapshotError(where + ": \"step\" must be a whole number");
        }
        event.step = t["step"].get<std::int64_t>();
      }
      out.trace.push_back(event);
    }
  }
  markCachedSegments(out);
  return out;
}

}  // namespace lorascope::widgets
