// hip/GpuLaunch.cpp — launch policy and queue tracking around each launch, and the HIP events of
// the queue tracker.
#include "runtime/hip/GpuLaunch.h"

#include <stdexcept>

#include "runtime/LaunchControl.h"
#include "runtime/OpTiming.h"  // defines: opTimingEnabled

namespace lorascope::runtime {
namespace {

// A failed hipEvent call; carries the code so afterLaunch can hand it to the caller's check.
class EventCallError : public std::runtime_error {
 public:
  EventCallError(hipError_t error, const char* call)
      : std::runtime_error(std::string(call) + ": " + hipGetErrorName(error)), error_(error) {}
  hipError_t error() const { return error_; }

 private:
  hipError_t error_;
};

class HipEvents final : public EventApi {
 public:
  EventHandle create() override {
    hipEvent_t event = nullptr;
    // Timing off: such events are cheaper to record and query.
    const hipError_t error = hipEventCreateWithFlags(&event, hipEventDisableTiming);
    if (error != hipSuccess) {
      throw EventCallError(error, "hipEventCreateWithFlags");
    }
    return reinterpret_cast<EventHandle>(event);
  }
  void record(EventHandle event, StreamHandle stream) override {
    const hipError_t error =
        hipEventRecord(reinterpret_cast<hipEvent_t>(event), reinterpret_cast<hipStream_t>(stream));
    if (error != hipSuccess) {
      throw EventCallError(error, "hipEventRecord");
    }
  }
  State query(EventHandle event, std::string& errorText) override {
    const hipError_t error = hipEventQuery(reinterpret_cast<hipEvent_t>(event));
    if (error == hipSuccess) {
      return State::Complete;
    }
    if (error == hipErrorNotReady) {
      return State::Pending;
    }
    errorText = std::string(hipGetErrorName(error)) + ": " + hipGetErrorString(error);
    return State::Failed;
  }
  void destroy(EventHandle event) noexcept override {
    (void)hipEventDestroy(reinterpret_cast<hipEvent_t>(event));
  }
};

}  // namespace

std::shared_ptr<EventApi> platformEventApi() {
  return std::make_shared<HipEvents>();
}

namespace gpu {

LaunchStatus beforeLaunch(const char* op, hipStream_t stream) {
  LaunchControl& control = launchControl();
  control.enterOp(op, reinterpret_cast<StreamHandle>(stream));
  if (control.capturing()) {
    return {hipSuccess, ""};  // recorded, not run: nothing to wait for or time
  }
  if (control.policy().serialize) {
    if (const hipError_t error = hipDeviceSynchronize(); error != hipSuccess) {
      return {error, "serialize: device sync before launch"};
    }
  }
  if (opTimingEnabled()) {
    if (const hipError_t error = recordOpStart(op, stream); error != hipSuccess) {
      return {error, "op timing: start event"};
    }
  }
  return {hipSuccess, ""};
}

LaunchStatus afterLaunch(const char* op, hipStream_t stream, hipError_t launchError) {
  if (launchError != hipSuccess) {
    return {launchError, "launch"};
  }
  if (launchControl().capturing()) {
    return {hipSuccess, ""};  // the replay's launch is the one the queue tracker sees
  }
  // Before the queue tracker's event, so the bracket holds the op's kernels alone.
  if (opTimingEnabled()) {
    if (const hipError_t error = recordOpEnd(stream); error != hipSuccess) {
      return {error, "op timing: end event"};
    }
  }
  LaunchControl& control = launchControl();
  try {
    control.queues().onSubmit(reinterpret_cast<StreamHandle>(stream), op);
  } catch (const EventCallError& error) {
    return {error.error(), "queue tracker: event record"};
  }
  const LaunchPolicy policy = control.policy();
  if (policy.serialize) {
    if (const hipError_t error = hipDeviceSynchronize(); error != hipSuccess) {
      return {error, "serialize: device sync after launch"};
    }
  } else if (policy.blocking) {
    if (const hipError_t error = hipStreamSynchronize(stream); error != hipSuccess) {
      return {error, "blocking: stream sync after launch"};
    }
  }
  if (policy.serialize || policy.blocking) {
    control.queues().poll();  // the op is done: let the depth say so at once
  }
  control.watchdog().noteProgress();
  return {hipSuccess, ""};
}

}  // namespace gpu
}  // namespace lorascope::runtime
