// group/GroupCheck.cpp — the group of one's collectives on known values.
#include "group/GroupCheck.h"

#include <vector>

namespace lorascope::group {

GroupOfOneCheck checkGroupOfOne(compute::Backend& gpu, int device,
                                const std::filesystem::path& rendezvousFile) {
  GroupOfOneCheck check;
  check.library = probeCollectiveLibrary();
  if (!check.library.available) {
    check.detail = check.library.name + " cannot be loaded: " + check.library.reason;
    return check;
  }
  check.ran = true;
  try {
    check.group = openNcclGroup({0, 1, device, rendezvousFile, 60'000});
    std::error_code ignored;
    std::filesystem::remove(rendezvousFile, ignored);
    constexpr std::int64_t kCount = 1000;
    std::vector<float> values(kCount);
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = 0.25f * static_cast<float>(i) - 7.0f;
    }
    compute::Tensor t = gpu.upload(values, compute::DType::F32, {kCount});
    gpu.synchronize();
    allReduceBucketed(*check.group, t.as<float>(), kCount, 256 * sizeof(float));  // 4 buckets
    const bool summed = gpu.download(t) == values;
    check.group->broadcast(t.as<float>(), kCount, 0);
    check.group->barrier();
    const bool broadcast = gpu.download(t) == values;
    check.passed = summed && broadcast;
    check.detail =
        check.library.name + " " + check.library.version + ": a group of one on GPU " +
        std::to_string(device) +
        (check.passed ? " formed; its sum (4 buckets), broadcast and barrier returned "
                        "the values"
                      : std::string(" formed, but its ") + (summed ? "broadcast" : "sum") +
                            " changed values that one rank must leave as they are");
  } catch (const std::exception& e) {
    check.detail = e.what();
  }
  return check;
}

}  // namespace lorascope::group
