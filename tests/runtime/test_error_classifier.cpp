// test_error_classifier.cpp — real error names and messages of both vendors map to the right
// category, stickiness, advice and ladder rung; injected faults classify like the real ones.
#include <QtTest>

#include "runtime/ErrorClassifier.h"
#include "runtime/FaultInjection.h"

using namespace lorascope::runtime;

class TestErrorClassifier : public QObject {
  Q_OBJECT

 private slots:
  void outOfMemoryIsRecoverableInPlace() {
    for (const auto& [name, message] :
         {std::pair{"hipErrorOutOfMemory", "out of memory"},
          std::pair{"cudaErrorMemoryAllocation", "out of memory"},
          std::pair{"HIPBLAS_STATUS_ALLOC_FAILED", "hipblasLtMatmul failed"},
          std::pair{"", "HIP out of memory. Tried to allocate 2.00 GiB"},
          // Windows' PAL runtime, as a field note quotes it.
          std::pair{"", "Failed PAL memory allocation!"},
          std::pair{"", "Video memory allocation failed!"}}) {
      const ErrorClass c = classifyError(name, message);
      QCOMPARE(c.category, ErrorCategory::OutOfMemory);
      QVERIFY(!c.sticky);
      QVERIFY(c.processCanContinue);
      QCOMPARE(c.rung, RecoveryRung::SmallerMicroBatch);
    }
  }

  void illegalAddressIsStickyAndPointsAtTheGemm() {
    const ErrorClass kernel =
        classifyError("hipErrorIllegalAddress", "an illegal memory access was encountered", "rope");
    QCOMPARE(kernel.category, ErrorCategory::IllegalAddress);
    QVERIFY(kernel.sticky);
    QVERIFY(!kernel.processCanContinue);
    QCOMPARE(kernel.rung, RecoveryRung::Serialize);
    const ErrorClass gemm = classifyError("cudaErrorIllegalAddress", "", "matmul_lora_b");
    QCOMPARE(gemm.rung, RecoveryRung::BuiltinGemm);
    // ROCm's kernel-driver message, as printed to stderr before the abort.
    const ErrorClass rocm = classifyError(
        "",
        "Memory access fault by GPU node-1 (Agent handle: 0x55d) on address 0x7f00. Reason: "
        "Page not present or supervisor privilege.");
    QCOMPARE(rocm.category, ErrorCategory::IllegalAddress);
  }

  void blasInternalErrorMovesToTheBuiltinGemm() {
    const ErrorClass c = classifyError("HIPBLAS_STATUS_INTERNAL_ERROR", "");
    QCOMPARE(c.category, ErrorCategory::BlasFailure);
    QCOMPARE(c.rung, RecoveryRung::BuiltinGemm);
    QCOMPARE(QString::fromStdString(c.signature), QString("HIPBLAS_STATUS_INTERNAL_ERROR"));
    QVERIFY(c.advice.find("built-in GEMM") != std::string::npos);
    QCOMPARE(classifyError("", "rocblas_status_internal_error").category,
             ErrorCategory::BlasFailure);
    QCOMPARE(classifyError("CUBLAS_STATUS_EXECUTION_FAILED", "").category,
             ErrorCategory::BlasFailure);
    QCOMPARE(classifyError("",
                           "RuntimeError: CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when "
                           "calling `hipblasLtMatmul( handle, computeDesc, ...)`")
                 .category,
             ErrorCategory::BlasFailure);
    // hipBLASLt named where nothing failed: a line echoing a setting, PyTorch's fallback warning.
    for (const char* harmless :
         {"export TORCH_BLAS_PREFER_HIPBLASLT=0",
          "UserWarning: Attempting to use hipBLASLt on an unsupported architecture! Overriding "
          "blas backend to hipblas"}) {
      QVERIFY2(classifyError("", harmless).category != ErrorCategory::BlasFailure, harmless);
    }
  }

  void palCommandBufferFailureIsSticky() {
    const ErrorClass c = classifyError("", "PAL failed to finalize a command buffer (-28)");
    QCOMPARE(c.category, ErrorCategory::CommandBufferFailure);
    QVERIFY(c.sticky);
    QCOMPARE(c.rung, RecoveryRung::Serialize);
    QVERIFY(c.advice.find("GPU_MAX_HW_QUEUES") != std::string::npos);
  }

  void launchFailuresAndTimeouts() {
    QCOMPARE(classifyError("hipErrorLaunchFailure", "unspecified launch failure").category,
             ErrorCategory::LaunchFailure);
    QCOMPARE(
        classifyError("cudaErrorLaunchTimeout", "the launch timed out and was terminated").category,
        ErrorCategory::LaunchFailure);
    QVERIFY(classifyError("hipErrorLaunchFailure", "").sticky);
  }

  // A device index past the GPUs PyTorch sees (a field note's error): the visible-devices
  // variables are named in the advice.
  void aDeviceIndexPastTheGpusIsNoDevice() {
    const ErrorClass c =
        classifyError("",
                      "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
                      "\"../aten/src/ATen/hip/HIPContext.cpp\":50");
    QCOMPARE(c.category, ErrorCategory::NoDevice);
    QVERIFY(c.advice.find("HIP_VISIBLE_DEVICES") != std::string::npos);
  }

  void noDeviceFallsBackToTheCpu() {
    const ErrorClass c = classifyError("hipErrorNoDevice", "no ROCm-capable device is detected");
    QCOMPARE(c.category, ErrorCategory::NoDevice);
    QCOMPARE(c.rung, RecoveryRung::Cpu);
  }

  void invalidValueIsOurBug() {
    const ErrorClass c = classifyError("hipErrorInvalidValue", "invalid argument");
    QCOMPARE(c.category, ErrorCategory::InvalidUsage);
    QVERIFY(c.advice.find("report") != std::string::npos);
  }

  void unknownErrorsAreAssumedSticky() {
    const ErrorClass c = classifyError("hipErrorSomethingNew", "a brand new failure");
    QCOMPARE(c.category, ErrorCategory::Unknown);
    QVERIFY(c.sticky);
    QVERIFY(c.signature.empty());
    QCOMPARE(classifyHang().category, ErrorCategory::Hang);
  }

  // Signals other processes send are kills from outside: no GPU error, no step down, and the
  // advice names the likely sender; signals a process raises on itself are left to the messages.
  void killsFromOutsideAreNotGpuErrors() {
    const HostMemory nearlyFull{std::uint64_t{200} << 20, std::uint64_t{16} << 30};
    const auto oom = classifyKill("SIGKILL", nearlyFull);
    QVERIFY(oom.has_value());
    QCOMPARE(oom->category, ErrorCategory::Killed);
    QVERIFY(!oom->sticky);
    QVERIFY(oom->advice.find("out-of-memory killer") != std::string::npos);
    QVERIFY(oom->advice.find("99% used (200 MiB available)") != std::string::npos);
    QCOMPARE(nextRung(RecoveryRung::Serialize, *oom), std::optional(RecoveryRung::Serialize));

    const HostMemory roomy{std::uint64_t{8} << 30, std::uint64_t{16} << 30};
    const auto kill9 = classifyKill("SIGKILL", roomy);
    QVERIFY(kill9->advice.find("50% used") != std::string::npos);
    QVERIFY(kill9->advice.find("so not the out-of-memory killer") != std::string::npos);
    // No reading: either sender, and how to tell them apart.
    const std::string unknown = classifyKill("SIGKILL", std::nullopt)->advice;
    QVERIFY(unknown.find("kill -9") != std::string::npos);
    QVERIFY(unknown.find("out-of-memory killer when host memory ran out") != std::string::npos);
    QVERIFY(unknown.find("journalctl -k") != std::string::npos);
    // A command under `supervise` is named as such, and resumes from its own checkpoints.
    const std::string command =
        classifyKill("SIGTERM", std::nullopt, KilledProcess::Command)->advice;
    QVERIFY2(command.find("stopped the command. Not a GPU error: the command was ended from "
                          "outside. It restarts on the same rung.") != std::string::npos,
             command.c_str());
    QVERIFY(command.find("engine") == std::string::npos);
    QVERIFY(classifyKill("SIGTERM", roomy)->advice.find("SIGTERM asks a process to end") !=
            std::string::npos);
    QCOMPARE(classifyKill("SIGSEGV", nearlyFull), std::nullopt);
    QCOMPARE(classifyKill("SIGABRT", nearlyFull), std::nullopt);
    QCOMPARE(QString(categoryName(ErrorCategory::Killed)), QString("killed"));
  }

  void namesAreStable() {
    QCOMPARE(QString(categoryName(ErrorCategory::CommandBufferFailure)),
             QString("command_buffer_failure"));
    QCOMPARE(QString(rungName(RecoveryRung::SmallerMicroBatch)), QString("smaller_micro_batch"));
  }

  void ladderClimbsAtLeastOneRung() {
    const ErrorClass blas = classifyError("HIPBLAS_STATUS_INTERNAL_ERROR", "");
    QCOMPARE(nextRung(RecoveryRung::VendorBlas, blas), std::optional(RecoveryRung::BuiltinGemm));
    // Already on the built-in GEMM: the next rung.
    QCOMPARE(nextRung(RecoveryRung::BuiltinGemm, blas), std::optional(RecoveryRung::Serialize));
    const ErrorClass fault = classifyError("hipErrorIllegalAddress", "");
    QCOMPARE(nextRung(RecoveryRung::VendorBlas, fault), std::optional(RecoveryRung::Serialize));
    const ErrorClass oom = classifyError("hipErrorOutOfMemory", "");
    QCOMPARE(nextRung(RecoveryRung::SmallerMicroBatch, oom),
             std::optional(RecoveryRung::SmallerMicroBatch));  // steps down again
    QCOMPARE(nextRung(RecoveryRung::Cpu, fault), std::nullopt);
  }

  void injectedFaultsClassifyLikeRealOnes() {
    for (const auto& [kind, category] :
         {std::pair{FaultKind::OutOfMemory, ErrorCategory::OutOfMemory},
          std::pair{FaultKind::IllegalAddress, ErrorCategory::IllegalAddress},
          std::pair{FaultKind::BlasInternal, ErrorCategory::BlasFailure}}) {
      const InjectedFault fault(kind, "matmul", 3, false);
      QCOMPARE(classifyError(fault.errorName(), fault.what(), fault.op()).category, category);
    }
  }
};

QTEST_APPLESS_MAIN(TestErrorClassifier)
#include "test_error_classifier.moc"
