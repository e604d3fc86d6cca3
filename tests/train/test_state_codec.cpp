// test_state_codec.cpp — the mirrored trainer state round-trips bit for bit, and truncated or
// damaged bytes are refused with a message instead of yielding a wrong state.
#include "TestRunner.h"

#include <cmath>
#include <cstring>

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
