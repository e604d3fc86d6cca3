// test_state_codec.cpp — the mirrored trainer state round-trips bit for bit, and truncated or
// damaged bytes are refused with a message instead of yielding a wrong state.
#include "TestRunner.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "train/StateCodec.h"

using namespace lorascope::train;

namespace {

TrainerState sampleState() {
  TrainerState s;
  s.step = 17;
  s.epoch = 1;
  s.dataCursor = 42;
  s.seed = 0xfeedfacecafebeefull;
  s.rngOffset = 9;
  s.tokensSeen = 123456;
  LoraConfig config;
  config.rank = 2;
  s.adapter = createLoraAdapter(config, {{0, LoraModule::Q, 3, 4}, {1, LoraModule::Down, 5, 3}}, 7);
  s.adapter.weights[1].b[2] = -0.0f;
  s.adapter.weights[0].b[0] = std::nextafter(1.0f, 2.0f);
  for (const LoraWeights& w : s.adapter.weights) {
    LoraMoments m{std::vector<float>(w.a.size(), 0.25f), std::vector<float>(w.a.size(), 1e-30f),
                  std::vector<float>(w.b.size(), -3.5f), std::vector<float>(w.b.size(), 7e-8f)};
    s.moments.push_back(m);
  }
  s.microBatchHistory = {{0, 8, 1, "start"}, {5, 2, 4, "oom"}};
  return s;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE(roundTripIsBitExact) {
  const TrainerState s = sampleState();
  const TrainerState back = decodeTrainerState(encodeTrainerState(s));
  COMPARE(back.step, s.step);
  COMPARE(back.epoch, s.epoch);
  COMPARE(back.dataCursor, s.dataCursor);
  COMPARE(back.seed, s.seed);
  COMPARE(back.rngOffset, s.rngOffset);
  COMPARE(back.tokensSeen, s.tokensSeen);
  COMPARE(back.adapter.weights.size(), s.adapter.weights.size());
  for (std::size_t i = 0; i < s.adapter.weights.size(); ++i) {
    COMPARE(back.adapter.weights[i].site.module, s.adapter.weights[i].site.module);
    COMPARE(back.adapter.weights[i].site.inFeatures, s.adapter.weights[i].site.inFeatures);
    VERIFY(sameBits(back.adapter.weights[i].a, s.adapter.weights[i].a));
    VERIFY(sameBits(back.adapter.weights[i].b, s.adapter.weights[i].b));
    VERIFY(sameBits(back.moments[i].secondA, s.moments[i].secondA));
    VERIFY(sameBits(back.moments[i].firstB, s.moments[i].firstB));
  }
  VERIFY(back.microBatchHistory == s.microBatchHistory);
}

TEST_CASE(truncatedOrDamagedBytesAreRefused) {
  const std::vector<std::byte> bytes = encodeTrainerState(sampleState());
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    VERIFY_THROWS_EXCEPTION(StateCodecError, decodeTrainerState(std::span(bytes.data(), cut)));
  }
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  VERIFY_THROWS_EXCEPTION(StateCodecError, decodeTrainerState(longer));
  std::vector<std::byte> badHeader = bytes;
  badHeader[8] = std::byte{'#'};  // the header's first character: no longer JSON
  VERIFY_THROWS_EXCEPTION(StateCodecError, decodeTrainerState(badHeader));
}

namespace {

// The bytes of `state` with its JSON header edited by `edit` (the floats after it unchanged).
std::vector<std::byte> withEditedHeader(const TrainerState& state,
                                        void (*edit)(nlohmann::json& header)) {
  const std::vector<std::byte> bytes = encodeTrainerState(state);
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), sizeof length);
  nlohmann::json header = nlohmann::json::parse(
      std::string(reinterpret_cast<const char*>(bytes.data() + sizeof length), length));
  edit(header);
  const std::string text = header.dump();
  const std::uint64_t newLength = text.size();
  std::vector<std::byte> out(sizeof newLength + text.size());
  std::memcpy(out.data(), &newLength, sizeof newLength);
  std::memcpy(out.data() + sizeof newLength, text.data(), text.size());
  out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(sizeof length + length),
             bytes.end());
  return out;
}

std::string refusalOf(const std::vector<std::byte>& bytes) {
  try {
    decodeTrainerState(bytes);
  } catch (const StateCodecError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(aHeaderOfTheWrongShapeIsRefusedNamingTheField) {
  // The header is read strictly (common/JsonReader.h): nothing is converted on the way.
  COMPARE(refusalOf(withEditedHeader(sampleState(), [](nlohmann::json& h) { h["step"] = 17.5; })),
          std::string("mirrored trainer state: header: step: must be a whole number"));
  COMPARE(refusalOf(withEditedHeader(sampleState(),
                                     [](nlohmann::json& h) { h["lora"]["rslora"] = "no"; })),
          std::string("mirrored trainer state: header: lora.rslora: must be true or false"));
  COMPARE(
      refusalOf(withEditedHeader(sampleState(), [](nlohmann::json& h) { h["sites"][1][1] = 99; })),
      std::string("mirrored trainer state: header: sites[1][1]: must be a whole number "
                  "from 0 to 6"));
  COMPARE(refusalOf(withEditedHeader(sampleState(), [](nlohmann::json& h) { h.erase("seed"); })),
          std::string("mirrored trainer state: header: seed: missing"));
  // The unedited header still reads.
  COMPARE(decodeTrainerState(withEditedHeader(sampleState(), [](nlohmann::json&) {})).step,
          std::int64_t{17});
}
