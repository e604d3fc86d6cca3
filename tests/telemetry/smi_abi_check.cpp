// smi_abi_check.cpp — a compile-time check: the hand-declared rocm-smi and amd-smi ABIs of
// backend/telemetry (RocmSmiAbi.h, AmdSmiAbi.h) against the real headers (rocm_smi/rocm_smi.h,
// amd_smi/amdsmi.h). Enum values, struct sizes and field offsets, and every function pointer's
// signature (same arity; same sizes; pointers where pointers). Built where the headers are
// installed (CI: the ROCm 6.4 chroot, target smi_abi_check); compiling it is the check.
#include <amd_smi/amdsmi.h>
#include <rocm_smi/rocm_smi.h>

#include <cstddef>
#include <type_traits>

#include "telemetry/AmdSmiAbi.h"
#include "telemetry/RocmSmiAbi.h"

namespace {

namespace rsmi = lorascope::telemetry::rsmi;
namespace amd = lorascope::telemetry::amdsmi;

// One parameter (or return value) passes the same way: both pointers (to objects of one size, or
// one of them void*), or both integers/enums of one size.
template <typename Ours, typename Theirs>
constexpr bool sameArgument() {
  if constexpr (std::is_pointer_v<Ours> || std::is_pointer_v<Theirs>) {
    if constexpr (!(std::is_pointer_v<Ours> && std::is_pointer_v<Theirs>)) {
      return false;
    } else {
      using O = std::remove_cv_t<std::remove_pointer_t<Ours>>;
      using T = std::remove_cv_t<std::remove_pointer_t<Theirs>>;
      if constexpr (std::is_void_v<O> || std::is_void_v<T>) {
        return true;
      } else if constexpr (std::is_pointer_v<O> || std::is_pointer_v<T>) {
        return sameArgument<O, T>();
      } else {
        return sizeof(O) == sizeof(T);
      }
    }
  } else {
    return sizeof(Ours) == sizeof(Theirs) &&
           (std::is_integral_v<Ours> || std::is_enum_v<Ours>)&&(std::is_integral_v<Theirs> ||
                                                                std::is_enum_v<Theirs>);
  }
}

template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool sameSignature(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2)) {
    return false;
  } else {
    return sameArgument<R1, R2>() && (sameArgument<A1, A2>() && ...);
  }
}

#define CHECK_FN(ours, theirs) \
  static_assert(sameSignature(decltype(ours){}, &theirs), #ours " does not match " #theirs)
#define CHECK_FIELD(ours, oursField, theirs, theirsField)                     \
  static_assert(offsetof(ours, oursField) == offsetof(theirs, theirsField) && \
                    sizeof(ours::oursField) == sizeof(theirs::theirsField),   \
                #ours "::" #oursField " is not where " #theirs "::" #theirsField " is")

// --- rocm-smi ---------------------------------------------------------------------------------
static_assert(rsmi::kSuccess == RSMI_STATUS_SUCCESS);
static_assert(rsmi::kMemTypeVram == RSMI_MEM_TYPE_VRAM);
static_assert(rsmi::kMemTypeVisVram == RSMI_MEM_TYPE_VIS_VRAM);
static_assert(rsmi::kMemTypeGtt == RSMI_MEM_TYPE_GTT);
static_assert(rsmi::kTempTypeEdge == RSMI_TEMP_TYPE_EDGE);
static_assert(rsmi::kTempCurrent == RSMI_TEMP_CURRENT);
static_assert(rsmi::kClockTypeSys == RSMI_CLK_TYPE_SYS);
static_assert(rsmi::kClockTypeMem == RSMI_CLK_TYPE_MEM);
static_assert(rsmi::kMaxFrequencies == RSMI_MAX_NUM_FREQUENCIES);
static_assert(sizeof(rsmi_frequencies_t) <= rsmi::kFrequencyBufferBytes);
static_assert(offsetof(rsmi_frequencies_t, num_supported) == rsmi::kRocm6FrequencyCountOffset);
static_assert(offsetof(rsmi_frequencies_t, current) == rsmi::kRocm6FrequencyCountOffset + 4);
static_assert(offsetof(rsmi_frequencies_t, frequency) == rsmi::kRocm6FrequencyArrayOffset);
static_assert(sizeof(rsmi::ProcessInfo) == sizeof(rsmi_process_info_t));
CHECK_FIELD(rsmi::ProcessInfo, processId, rsmi_process_info_t, process_id);
CHECK_FIELD(rsmi::ProcessInfo, pasid, rsmi_process_info_t, pasid);
CHECK_FIELD(rsmi::ProcessInfo, vramUsageBytes, rsmi_process_info_t, vram_usage);
CHECK_FIELD(rsmi::ProcessInfo, sdmaUsageUs, rsmi_process_info_t, sdma_usage);
CHECK_FIELD(rsmi::ProcessInfo, cuOccupancyPercent, rsmi_process_info_t, cu_occupancy);

CHECK_FN(rsmi::Api::init, rsmi_init);
CHECK_FN(rsmi::Api::shutDown, rsmi_shut_down);
CHECK_FN(rsmi::Api::numMonitorDevices, rsmi_num_monitor_devices);
CHECK_FN(rsmi::Api::memoryTotal, rsmi_dev_memory_total_get);
CHECK_FN(rsmi::Api::memoryUsage, rsmi_dev_memory_usage_get);
CHECK_FN(rsmi::Api::statusString, rsmi_status_string);
CHECK_FN(rsmi::Api::deviceName, rsmi_dev_name_get);
CHECK_FN(rsmi::Api::pciId, rsmi_dev_pci_id_get);
CHECK_FN(rsmi::Api::busyPercent, rsmi_dev_busy_percent_get);
CHECK_FN(rsmi::Api::memoryBusyPercent, rsmi_dev_memory_busy_percent_get);
CHECK_FN(rsmi::Api::temperature, rsmi_dev_temp_metric_get);
CHECK_FN(rsmi::Api::socketPower, rsmi_dev_current_socket_power_get);
CHECK_FN(rsmi::Api::averagePower, rsmi_dev_power_ave_get);
CHECK_FN(rsmi::Api::clockFrequencies, rsmi_dev_gpu_clk_freq_get);
CHECK_FN(rsmi::Api::processInfo, rsmi_compute_process_info_get);
CHECK_FN(rsmi::Api::processGpus, rsmi_compute_process_gpus_get);
CHECK_FN(rsmi::Api::processInfoByPid, rsmi_compute_process_info_by_pid_get);
CHECK_FN(rsmi::Api::processInfoByDevice, rsmi_compute_process_info_by_device_get);

// --- amd-smi ----------------------------------------------------------------------------------
static_assert(amd::kSuccess == AMDSMI_STATUS_SUCCESS);
static_assert(amd::kInitAmdGpus == AMDSMI_INIT_AMD_GPUS);
static_assert(amd::kProcessorTypeAmdGpu == AMDSMI_PROCESSOR_TYPE_AMD_GPU);
static_assert(amd::kMemTypeVram == AMDSMI_MEM_TYPE_VRAM);
static_assert(amd::kMemTypeVisVram == AMDSMI_MEM_TYPE_VIS_VRAM);
static_assert(amd::kMemTypeGtt == AMDSMI_MEM_TYPE_GTT);
static_assert(amd::kTempTypeEdge == AMDSMI_TEMPERATURE_TYPE_EDGE);
static_assert(amd::kTempCurrent == AMDSMI_TEMP_CURRENT);
static_assert(amd::kClockTypeSys == AMDSMI_CLK_TYPE_SYS);
static_assert(amd::kClockTypeMem == AMDSMI_CLK_TYPE_MEM);
static_assert(amd::kMaxStringLength == AMDSMI_MAX_STRING_LENGTH);
static_assert(amd::kMaxFrequencies == AMDSMI_MAX_NUM_FREQUENCIES);
static_assert(amd::kCheckedLibraryMajor == AMDSMI_LIB_VERSION_MAJOR);
static_assert(sizeof(amd::Handle) == sizeof(amdsmi_processor_handle));
static_assert(sizeof(amd::Bdf) == sizeof(amdsmi_bdf_t));

static_assert(sizeof(amd::Version) == sizeof(amdsmi_version_t));
CHECK_FIELD(amd::Version, major, amdsmi_version_t, major);
CHECK_FIELD(amd::Version, minor, amdsmi_version_t, minor);
CHECK_FIELD(amd::Version, release, amdsmi_version_t, release);
static_assert(sizeof(amd::EngineUsage) == sizeof(amdsmi_engine_usage_t));
CHECK_FIELD(amd::EngineUsage, gfxActivity, amdsmi_engine_usage_t, gfx_activity);
CHECK_FIELD(amd::EngineUsage, umcActivity, amdsmi_engine_usage_t, umc_activity);
CHECK_FIELD(amd::EngineUsage, mmActivity, amdsmi_engine_usage_t, mm_activity);
static_assert(sizeof(amd::PowerInfo) == sizeof(amdsmi_power_info_t));
CHECK_FIELD(amd::PowerInfo, socketPower, amdsmi_power_info_t, socket_power);
CHECK_FIELD(amd::PowerInfo, currentSocketPower, amdsmi_power_info_t, current_socket_power);
CHECK_FIELD(amd::PowerInfo, averageSocketPower, amdsmi_power_info_t, average_socket_power);
static_assert(sizeof(amd::Frequencies) == sizeof(amdsmi_frequencies_t));
CHECK_FIELD(amd::Frequencies, numSupported, amdsmi_frequencies_t, num_supported);
CHECK_FIELD(amd::Frequencies, current, amdsmi_frequencies_t, current);
CHECK_FIELD(amd::Frequencies, frequency, amdsmi_frequencies_t, frequency);
static_assert(sizeof(amd::AsicInfo) == sizeof(amdsmi_asic_info_t));
CHECK_FIELD(amd::AsicInfo, marketName, amdsmi_asic_info_t, market_name);
static_assert(sizeof(amd::ProcInfo) == sizeof(amdsmi_proc_info_t));
CHECK_FIELD(amd::ProcInfo, name, amdsmi_proc_info_t, name);
CHECK_FIELD(amd::ProcInfo, pid, amdsmi_proc_info_t, pid);
CHECK_FIELD(amd::ProcInfo, mem, amdsmi_proc_info_t, mem);
CHECK_FIELD(amd::ProcInfo, engineUsage, amdsmi_proc_info_t, engine_usage);
CHECK_FIELD(amd::ProcInfo, memoryUsage, amdsmi_proc_info_t, memory_usage);
static_assert(offsetof(amd::ProcInfo, memoryUsage) +
                  offsetof(decltype(amd::ProcInfo::memoryUsage), vramMem) ==
              offsetof(amdsmi_proc_info_t, memory_usage) +
                  offsetof(decltype(amdsmi_proc_info_t::memory_usage), vram_mem));
static_assert(offsetof(amd::ProcInfo, memoryUsage) +
                  offsetof(decltype(amd::ProcInfo::memoryUsage), gttMem) ==
              offsetof(amdsmi_proc_info_t, memory_usage) +
                  offsetof(decltype(amdsmi_proc_info_t::memory_usage), gtt_mem));
CHECK_FIELD(amd::ProcInfo, cuOccupancy, amdsmi_proc_info_t, cu_occupancy);
CHECK_FIELD(amd::ProcInfo, sdmaUsage, amdsmi_proc_info_t, sdma_usage);

CHECK_FN(amd::Api::init, amdsmi_init);
CHECK_FN(amd::Api::shutDown, amdsmi_shut_down);
CHECK_FN(amd::Api::libVersion, amdsmi_get_lib_version);
CHECK_FN(amd::Api::socketHandles, amdsmi_get_socket_handles);
CHECK_FN(amd::Api::processorHandles, amdsmi_get_processor_handles);
CHECK_FN(amd::Api::processorType, amdsmi_get_processor_type);
CHECK_FN(amd::Api::statusString, amdsmi_status_code_to_string);
CHECK_FN(amd::Api::memoryTotal, amdsmi_get_gpu_memory_total);
CHECK_FN(amd::Api::memoryUsage, amdsmi_get_gpu_memory_usage);
CHECK_FN(amd::Api::asicInfo, amdsmi_get_gpu_asic_info);
CHECK_FN(amd::Api::deviceBdf, amdsmi_get_gpu_device_bdf);
CHECK_FN(amd::Api::activity, amdsmi_get_gpu_activity);
CHECK_FN(amd::Api::temperature, amdsmi_get_temp_metric);
CHECK_FN(amd::Api::powerInfo, amdsmi_get_power_info);
CHECK_FN(amd::Api::clockFrequencies, amdsmi_get_clk_freq);
CHECK_FN(amd::Api::processList, amdsmi_get_gpu_process_list);

}  // namespace
