// group/InProcessCollective.h — a group whose ranks are threads of one process, on host memory:
// the fake collective of the CI tests (the trainer's data parallelism on CPU backends, checked
// against one rank without a GPU or NCCL). Sums add the ranks' values in rank order, so a result
// does not depend on which thread arrived first.
//
// Failure is explicit: fail(rank, why) ends every rank's pending and later collectives with a
// CollectiveError naming the failed rank and its reason (what a dead peer does to NCCL ranks,
// without waiting for a timeout); a rank that never arrives ends the others' wait after
// `timeoutMs` with a timed-out CollectiveError naming the ranks that are missing; ranks that
// disagree on a collective (another op, another count) all get an error naming both.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "group/Collective.h"

namespace lorascope::group {

class InProcessGroup;

// `size` ranks, element r is rank r's collective (each used by one thread). Throws
// std::invalid_argument for a size below 1.
std::vector<std::unique_ptr<Collective>> makeInProcessGroup(int size,
                                                            std::int64_t timeoutMs = 60'000);

// Marks `rank` of the group `collective` belongs to as failed, for `why`: every rank's pending
// and later collective throws. `collective` must come from makeInProcessGroup.
void failInProcessRank(Collective& collective, int rank, const std::string& why);

}  // namespace lorascope::group
