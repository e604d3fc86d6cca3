// test_group.cpp — the group logic without a GPU: the `--gpus` list, each rank's share of a step,
// what each rank writes, the in-process collective (sums, broadcast, barrier, a failed rank, a
// rank that never arrives, ranks that disagree), buckets, and the fault fan-out.
#include "TestRunner.h"

#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ExpectError.h"
#include "group/Collective.h"
#include "group/GroupRecovery.h"
#include "group/InProcessCollective.h"
#include "group/NcclCollective.h"
#include "group/RankPlan.h"

using namespace lorascope::group;
using lorascope::runtime::ErrorCategory;
using lorascope::runtime::RecoveryRung;
using lorascope::test::throwsWith;

namespace {

// Runs body(rank) on one thread per rank of `ranks`; the exceptions' messages per rank ("" none).
std::vector<std::string> onEveryRank(std::vector<std::unique_ptr<Collective>>& ranks,
                                     const std::function<void(Collective&)>& body) {
  std::vector<std::string> errors(ranks.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(*ranks[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  return errors;
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

}  // namespace

TEST_CASE(gpuListTakesIndicesAndAll) {
  COMPARE(parseGpuList("0,1", 2), (std::vector<int>{0, 1}));
  COMPARE(parseGpuList(" 1 , 0 ", 2), (std::vector<int>{1, 0}));
  COMPARE(parseGpuList("all", 3), (std::vector<int>{0, 1, 2}));
  COMPARE(parseGpuList("2", 4), (std::vector<int>{2}));
  COMPARE(gpuListText({0, 2}), std::string("0,2"));
}

TEST_CASE(gpuListRefusesWhatTheMachineLacks) {
  VERIFY(throwsWith<std::invalid_argument>(
      [] { parseGpuList("0,2", 2); }, {"--gpus \"0,2\"", "GPU 2 does not exist", "2 GPUs (0-1)"}));
  VERIFY(
      throwsWith<std::invalid_argument>([] { parseGpuList("0,0", 2); }, {"GPU 0 is named twice"}));
  VERIFY(throwsWith<std::invalid_argument>([] { parseGpuList("0,x", 2); },
                                           {"\"x\" is not a GPU index"}));
  VERIFY(throwsWith<std::invalid_argument>([] { parseGpuList("0,", 2); }, {"is not a GPU index"}));
  VERIFY(throwsWith<std::invalid_argument>([] { parseGpuList("", 2); }, {"name the GPUs"}));
  VERIFY(throwsWith<std::invalid_argument>([] { parseGpuList("all", 0); }, {"no GPU was found"}));
  VERIFY(throwsWith<std::invalid_argument>([] { parseGpuList("-1", 2); }, {"not a GPU index"}));
}

// Every micro-batch of a step goes to exactly one rank, contiguous and in order, the shares
// differing by at most one; a rank may get none (the last short step of an epoch).
TEST_CASE(ranksShareEveryMicroBatchOnce) {
  for (int size = 1; size <= 4; ++size) {
    for (std::int64_t m = 0; m <= 9; ++m) {
      std::int64_t next = 0, least = m, most = 0;
      for (int r = 0; r < size; ++r) {
        const RankShare share = shareOfRank(m, r, size);
        COMPARE(share.firstMicroBatch, next);
        next += share.microBatches;
        least = std::min(least, share.microBatches);
        most = std::max(most, share.microBatches);
      }
      COMPARE(next, m);
      VERIFY(most - least <= 1);
    }
  }
  COMPARE(shareOfRank(8, 1, 2).firstMicroBatch, std::int64_t{4});
  COMPARE(shareOfRank(1, 0, 2).microBatches, std::int64_t{0});
  COMPARE(shareOfRank(1, 1, 2).microBatches, std::int64_t{1});
  VERIFY(throwsWith<std::invalid_argument>([] { shareOfRank(4, 2, 2); },
                                           {"rank 2 is outside a group of 2"}));
}

TEST_CASE(rankZeroWritesTheRunAndEveryRankItsTelemetry) {
  const RankDuties first = dutiesOf(0);
  VERIFY(first.writesRunDirectory && first.writesCheckpoints && first.writesStateMirror &&
         first.reportsSteps && first.reportsTelemetry);
  const RankDuties second = dutiesOf(1);
  VERIFY(!second.writesRunDirectory && !second.writesCheckpoints && !second.writesStateMirror &&
         !second.reportsSteps);
  VERIFY(second.reportsTelemetry);
}

TEST_CASE(bucketsCoverTheBufferInOrder) {
  const std::vector<Bucket> buckets = bucketsOf(10, 4);
  COMPARE(buckets.size(), std::size_t{3});
  COMPARE(buckets[2].offset, std::size_t{8});
  COMPARE(buckets[2].count, std::size_t{2});
  VERIFY(bucketsOf(0, 4).empty());
  COMPARE(bucketsOf(8, 4).size(), std::size_t{2});
}

// Three ranks sum in buckets (in rank order), then broadcast and meet at a barrier.
TEST_CASE(inProcessGroupSumsBroadcastsAndMeets) {
  auto ranks = makeInProcessGroup(3);
  std::vector<std::vector<float>> data(3);
  const auto errors = onEveryRank(ranks, [&](Collective& c) {
    std::vector<float>& mine = data[static_cast<std::size_t>(c.rank())];
    mine.assign(10, static_cast<float>(c.rank() + 1));
    mine[9] = c.rank() == 2 ? 0.5f : 0.0f;
    allReduceBucketed(c, mine.data(), mine.size(), 4 * sizeof(float));  // 3 buckets
    std::vector<float> seed{static_cast<float>(10 * c.rank()), -1.0f};
    c.broadcast(seed.data(), seed.size(), 2);
    mine.insert(mine.end(), seed.begin(), seed.end());
    c.barrier();
  });
  for (int r = 0; r < 3; ++r) {
    COMPARE(errors[static_cast<std::size_t>(r)], std::string());
    const std::vector<float>& mine = data[static_cast<std::size_t>(r)];
    COMPARE(mine[0], 6.0f);
    COMPARE(mine[8], 6.0f);
    COMPARE(mine[9], 0.5f);
    COMPARE(mine[10], 20.0f);
    COMPARE(mine[11], -1.0f);
  }
  COMPARE(ranks[1]->size(), 3);
  COMPARE(ranks[1]->name(), std::string("in-process"));
}

// A rank that fails ends its peers' collective with an error naming it, at once.
TEST_CASE(aFailedRankEndsEveryRanksCollective) {
  auto ranks = makeInProcessGroup(2, 120'000);
  const auto errors = onEveryRank(ranks, [&](Collective& c) {
    if (c.rank() == 1) {
      failInProcessRank(c, 1, "out of memory in matmul");
      return;
    }
    std::vector<float> g(4, 1.0f);
    c.allReduceSum(g.data(), g.size());
  });
  VERIFY2(contains(errors[0], "rank 0 of 2: all_reduce: rank 1 failed: out of memory in matmul"),
          errors[0].c_str());
  VERIFY(throwsWith<CollectiveError>([&] { ranks[0]->barrier(); }, {"rank 1 failed"}));
}

// A rank that never arrives makes the others' collective a timed-out error naming it.
TEST_CASE(aRankThatNeverArrivesTimesOut) {
  auto ranks = makeInProcessGroup(3, 200);
  std::vector<bool> timedOut(3, false);
  const auto errors = onEveryRank(ranks, [&](Collective& c) {
    if (c.rank() == 2) {
      return;  // hung elsewhere
    }
    try {
      c.barrier();
    } catch (const CollectiveError& e) {
      timedOut[static_cast<std::size_t>(c.rank())] =
          e.timedOut() && e.op() == CollectiveOp::Barrier;
      throw;
    }
  });
  VERIFY(timedOut[0] && timedOut[1]);
  VERIFY2(
      contains(errors[0] + errors[1], "barrier timed out after 200 ms: rank(s) 2 never arrived"),
      errors[0].c_str());
}

TEST_CASE(ranksThatDisagreeAreRefused) {
  auto ranks = makeInProcessGroup(2);
  const auto errors = onEveryRank(ranks, [&](Collective& c) {
    std::vector<float> g(c.rank() == 0 ? 4 : 5, 1.0f);
    c.allReduceSum(g.data(), g.size());
  });
  VERIFY(contains(errors[0], "the ranks disagree"));
  VERIFY(contains(errors[1], "the ranks disagree"));
  VERIFY(contains(errors[0] + errors[1], "called all_reduce of 5 floats"));
}

// The fan-out: one rank's out-of-memory restarts every rank on the next rung; the peer's failed
// collective is a consequence, whichever was seen first.
TEST_CASE(oneRanksFaultRestartsTheGroupOnTheNextRung) {
  RankFault peer = collectiveFault(
      0, CollectiveError(CollectiveOp::AllReduce, false, "NCCL rank 0: remote process exited"));
  RankFault oom;
  oom.rank = 1;
  oom.error = lorascope::runtime::classifyError("hipErrorOutOfMemory", "out of memory", "matmul");
  const std::vector<RankFault> faults{peer, oom};
  COMPARE(causeOf(faults)->rank, 1);
  const GroupRecovery plan = planGroupRecovery({0, 1}, RecoveryRung::VendorBlas, faults);
  VERIFY(plan.action == GroupAction::Restart);
  COMPARE(plan.cause, 1);
  COMPARE(plan.ranksToEnd, std::vector<int>{0});
  COMPARE(plan.devices, (std::vector<int>{0, 1}));
  VERIFY(plan.rung == lorascope::runtime::nextRung(RecoveryRung::VendorBlas, oom.error));
  VERIFY2(contains(plan.reason, "rank 1 (GPU 1): out_of_memory: all 2 ranks restart on rung"),
          plan.reason.c_str());
}

// A hung collective with no other fault is a hang naming the collective.
TEST_CASE(aHungCollectiveIsAHangNamingIt) {
  const RankFault hang = collectiveFault(
      1, CollectiveError(CollectiveOp::AllReduce, true, "NCCL rank 1: all_reduce: timed out"));
  VERIFY(hang.error.category == ErrorCategory::Hang);
  COMPARE(hang.error.signature, std::string("all_reduce"));
  VERIFY(contains(hang.error.advice, "the collective all_reduce of rank 1 hung"));
  const std::vector<RankFault> faults{hang};
  const GroupRecovery plan = planGroupRecovery({0, 1}, RecoveryRung::VendorBlas, faults);
  VERIFY(plan.action == GroupAction::Restart);
  VERIFY(plan.rung == lorascope::runtime::nextRung(RecoveryRung::VendorBlas, hang.error));
}

// A library error (the transport) restarts on the same rung: no rung changes the transport.
TEST_CASE(aLibraryErrorRestartsOnTheSameRung) {
  const std::vector<RankFault> faults{collectiveFault(
      0, CollectiveError(CollectiveOp::Broadcast, false, "NCCL rank 0: broadcast: remote error"))};
  const GroupRecovery plan = planGroupRecovery({0, 1}, RecoveryRung::Serialize, faults);
  VERIFY(plan.action == GroupAction::Restart);
  VERIFY(plan.rung == RecoveryRung::Serialize);
}

// The CPU rung of a group is one rank on the CPU; past it, the run stops.
TEST_CASE(theCpuRungIsOneRankOnTheCpu) {
  RankFault oom;
  oom.rank = 0;
  oom.error = lorascope::runtime::classifyError("hipErrorOutOfMemory", "out of memory", "matmul");
  const std::vector<RankFault> faults{oom};
  const GroupRecovery plan = planGroupRecovery({0, 1}, RecoveryRung::SmallerMicroBatch, faults);
  if (plan.rung == RecoveryRung::Cpu) {
    VERIFY(plan.devices.empty());
    VERIFY(contains(plan.reason, "one rank on the CPU"));
  }
  RankFault illegal;
  illegal.rank = 1;
  illegal.error = lorascope::runtime::classifyError("hipErrorIllegalAddress",
                                                    "an illegal memory access", "attention");
  const std::vector<RankFault> worse{illegal};
  const GroupRecovery cpu = planGroupRecovery({0, 1}, RecoveryRung::SmallerMicroBatch, worse);
  VERIFY(cpu.rung == RecoveryRung::Cpu);
  VERIFY(cpu.devices.empty());
  const GroupRecovery last = planGroupRecovery({0, 1}, RecoveryRung::Cpu, worse);
  VERIFY(last.action == GroupAction::Stop);
  VERIFY(contains(last.reason, "ladder is exhausted"));
}

// A GPU that disappears leaves the choice to continue on the others.
TEST_CASE(aLostGpuOffersTheOthers) {
  RankFault gone;
  gone.rank = 1;
  gone.error = lorascope::runtime::classifyError("hipErrorNoDevice", "no ROCm-capable device");
  VERIFY(gone.error.category == ErrorCategory::NoDevice);
  const std::vector<RankFault> faults{gone};
  const GroupRecovery plan = planGroupRecovery({0, 3, 5}, RecoveryRung::VendorBlas, faults);
  VERIFY(plan.action == GroupAction::ContinueWithoutLost);
  COMPARE(plan.devices, (std::vector<int>{0, 5}));
  VERIFY2(contains(plan.reason, "rank 1 (GPU 3)"), plan.reason.c_str());
  VERIFY(contains(plan.reason, "continue on GPU(s) 0,5"));
  gone.rank = 0;
  const GroupRecovery alone =
      planGroupRecovery({3}, RecoveryRung::VendorBlas, std::vector<RankFault>{gone});
  VERIFY(alone.action == GroupAction::Stop);
  VERIFY(throwsWith<std::invalid_argument>(
      [&] {
        planGroupRecovery({0, 1}, RecoveryRung::VendorBlas, std::vector<RankFault>{});
      },
      {"no fault"}));
}

// The cpu flavour's answer for a NCCL group names what is missing (the hip flavours load it).
TEST_CASE(theLibraryProbeAnswers) {
  const CollectiveLibrary library = probeCollectiveLibrary();
  VERIFY(library.available || !library.reason.empty());
}
