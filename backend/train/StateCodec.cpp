// train/StateCodec.cpp — encoding and strict decoding of the mirrored trainer state.
#include "train/StateCodec.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "common/JsonReader.h"

namespace lorascope::train {
namespace {

using nlohmann::json;

[[noreturn]] void throwStateCodecError(const std::string& message) {
  throw StateCodecError(message);
}

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::span<const std::byte> take(std::size_t n, const char* what) {
    if (n > bytes_.size() - offset_) {
      throw StateCodecError(std::string("mirrored trainer state is truncated in ") + what);
    }
    auto s = bytes_.subspan(offset_, n);
    offset_ += n;
    return s;
  }
  std::vector<float> floats(std::size_t count, const char* what) {
    std::vector<float> v(count);
    const auto s = take(count * sizeof(float), what);
    std::memcpy(v.data(), s.data(), s.size());
    return v;
  }
  bool atEnd() const { return offset_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
};

}  // namespace

std::vector<std::span<const float>> encodingArrays(const TrainerState& s) {
  std::vector<std::span<const float>> arrays;
  arrays.reserve(6 * s.adapter.weights.size());
  for (std::size_t i = 0; i < s.adapter.weights.size(); ++i) {
    const LoraMoments& m = s.moments.at(i);
    for (const std::vector<float>* v : {&s.adapter.weights[i].a, &s.adapter.weights[i].b, &m.firstA,
                                        &m.secondA, &m.firstB, &m.secondB}) {
      arrays.emplace_back(*v);
    }
  }
  return arrays;
}

std::vector<std::byte> encodeTrainerState(const TrainerState& s) {
  std::vector<std::byte> out;
  encodeTrainerStateInto(s, encodingArrays(s), out);
  return out;
}

void encodeTrainerStateInto(const TrainerState& s, std::span<const std::span<const float>> arrays,
                            std::vector<std::byte>& out) {
  if (arrays.size() != 6 * s.adapter.weights.size()) {
    throw std::invalid_argument("encodeTrainerStateInto: " + std::to_string(arrays.size()) +
                                " float arrays for " + std::to_string(s.adapter.weights.size()) +
                                " adapter entries (six each)");
  }
  json header = {{"step", s.step},
                 {"epoch", s.epoch},
                 {"data_cursor", s.dataCursor},
                 {"seed", s.seed},
                 {"rng_offset", s.rngOffset},
                 {"tokens_seen", s.tokensSeen},
                 {"lora",
                  {{"rank", s.adapter.config.rank},
                   {"alpha", s.adapter.config.alpha},
                   {"dropout", s.adapter.config.dropout},
                   {"rslora", s.adapter.config.useRslora}}},
                 {"sites", json::array()},
                 {"history", json::array()}};
  std::size_t floatCount = 0;
  for (std::size_t i = 0; i < s.adapter.weights.size(); ++i) {
    const LoraSite& site = s.adapter.weights[i].site;
    const std::span<const float>* entry = &arrays[6 * i];
    const std::size_t aCount = entry[0].size(), bCount = entry[1].size();
    if (entry[2].size() != aCount || entry[3].size() != aCount || entry[4].size() != bCount ||
        entry[5].size() != bCount) {
      throw std::invalid_argument("encodeTrainerStateInto: the moments of entry " +
                                  std::to_string(i) + " are shaped unlike its A and B");
    }
    header["sites"].push_back({site.layer, static_cast<int>(site.module), site.inFeatures,
                               site.outFeatures, aCount, bCount});
    floatCount += 3 * (aCount + bCount);
  }
  for (const MicroBatchChange& c : s.microBatchHistory) {
    header["history"].push_back({c.step, c.microBatch, c.accumulation, c.reason});
  }
  const std::string text = header.dump();
  const std::uint64_t length = text.size();
  out.resize(sizeof length + text.size() + floatCount * sizeof(float));
  std::byte* p = out.data();
  std::memcpy(p, &length, sizeof length);
  p += sizeof length;
  std::memcpy(p, text.data(), text.size());
  p += text.size();
  for (const std::span<const float> v : arrays) {
    if (!v.empty()) {
      std::memcpy(p, v.data(), v.size_bytes());
    }
    p += v.size_bytes();
  }
}

TrainerState decodeTrainerState(std::span<const std::byte> bytes) {
  Reader r(bytes);
  std::uint64_t length = 0;
  std::memcpy(&length, r.take(sizeof length, "its header length").data(), sizeof length);
  if (length > bytes.size())
    throw StateCodecError("mirrored trainer state: bad header length");
  const auto headerBytes = r.take(static_cast<std::size_t>(length), "its header");
  const json h = json::parse(
      std::string(reinterpret_cast<const char*>(headerBytes.data()), headerBytes.size()), nullptr,
      /*allow_exceptions=*/false);
  if (h.is_discarded())
    throw StateCodecError("mirrored trainer state: malformed header: not JSON");
  const common::JsonReader header(h, "mirrored trainer state: header: ", throwStateCodecError);
  TrainerState s;
  s.step = header.integer("step");
  s.epoch = header.integer("epoch");
  s.dataCursor = header.integer("data_cursor");
  s.seed = header.unsignedInteger("seed");
  s.rngOffset = header.unsignedInteger("rng_offset");
  s.tokensSeen = header.integer("tokens_seen");
  const common::JsonReader lora = header.object("lora");
  s.adapter.config.rank = static_cast<int>(lora.integer("rank", 1, kMaxLoraRank));
  s.adapter.config.alpha = lora.number("alpha");
  s.adapter.config.dropout = lora.number("dropout");
  s.adapter.config.useRslora = lora.boolean("rslora");
  s.adapter.config.targets.clear();
  constexpr auto kModuleCount = static_cast<std::int64_t>(std::size(kAllLoraModules));
  for (std::size_t i = 0; i < header.array("sites").size(); ++i) {
    // [layer, module, in features, out features, A's floats, B's floats]
    const common::JsonRow site = header.row("sites", i);
    LoraWeights w;
    w.site = {static_cast<int>(site.integer(0, 0, std::numeric_limits<int>::max())),
              static_cast<LoraModule>(site.integer(1, 0, kModuleCount - 1)), site.integer(2),
              site.integer(3)};
    const std::size_t aCount = site.unsignedInteger(4), bCount = site.unsignedInteger(5);
    w.a = r.floats(aCount, "LoRA A");
    w.b = r.floats(bCount, "LoRA B");
    LoraMoments m;
    m.firstA = r.floats(aCount, "AdamW moments");
    m.secondA = r.floats(aCount, "AdamW moments");
    m.firstB = r.floats(bCount, "AdamW moments");
    m.secondB = r.floats(bCount, "AdamW moments");
    s.adapter.config.targets.insert(w.site.module);
    s.adapter.weights.push_back(std::move(w));
    s.moments.push_back(std::move(m));
  }
  for (std::size_t i = 0; i < header.array("history").size(); ++i) {
    // [step, micro-batch, accumulation, reason]
    const common::JsonRow c = header.row("history", i);
    s.microBatchHistory.push_back({c.integer(0), c.integer(1), c.integer(2), c.string(3)});
  }
  if (!r.atEnd())
    throw StateCodecError("mirrored trainer state: trailing bytes");
  return s;
}

}  // namespace lorascope::train
