// hip/HipBackend.h — the GPU backend's class, shared by the files that define its ops.
// Internal to backend/compute/hip: HipBackend.cpp (memory, transfers), HipBackendOps*.cpp (op
// launchers, one file per op family). Everything else reaches it through compute::Backend.
#pragma once

#include <memory>

#include "compute/Backend.h"
#include "compute/hip/gemm.h"        // defines: VendorBlas
#include "gpu/hip_portability.h"     // defines: hipStream_t
#include "memory/DeviceAllocator.h"  // defines: DeviceAllocator

namespace lorascope::compute::hip {

// bf16 → true, f32 → false; f16 and nf4 weights are rejected with a ShapeError naming `op` (an
// nf4 weight is read only by matmul, which dequantises it first).
bool isBf16Weight(const char* op, const Tensor& weight);

class PinnedHostPool;
class PinnedRanges;

class HipBackend final : public Backend {
 public:
  explicit HipBackend(int deviceIndex);
  ~HipBackend() override;

  const BackendCapabilities& capabilities() const override { return caps_; }
  Tensor empty(DType dtype, const Shape& shape) override;
  Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) override;
  Tensor uploadRaw(std::span<const std::byte> bytes, DType dtype, const Shape& shape) override;
  std::vector<float> download(const Tensor& tensor) override;
  void synchronize() override;
  std::unique_ptr<PendingDownload> downloadAsync(std::span<const Tensor* const> tensors) override;
  std::optional<DeviceMemoryUse> deviceMemoryUse() const override;
  void releaseCachedMemory() override;

  void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                      Tensor& rstd) override;
  void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       Tensor& dx, bool accumulate) override;
  void matmul(const Tensor& a, bool transposeA, const Tensor& b, bool transposeB, Tensor& c,
              float alpha, float beta) override;
  void setGemmImplementation(GemmImplementation impl) override;
  void dequantize(const Tensor& packed, Tensor& out) override;
  GemmImplementation gemmImplementation() const override { return gemmImplementation_; }
  void embeddingForward(const Tensor& table, std::span<const std::int32_t> ids,
                        Tensor& out) override;
  void rope(Tensor& x, std::span<const std::int32_t> positions, const Tensor& invFreq,
            bool inverse) override;
  void ropeBackwardStacked(Tensor& dq, Tensor& dk, const Tensor& dv,
                           std::span<const std::int32_t> positions, const Tensor& invFreq,
                           Tensor& dqkv) override;
  void attentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionOptions& options, Tensor& out, Tensor& logsumexp) override;
  void attentionCached(const Tensor& q, const Tensor& k, const Tensor& v,
                       const AttentionOptions& options, Tensor& out) override;
  void swigluForward(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void gegluForward(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void scaleActivations(Tensor& x, float factor) override;
  void softcapInPlace(Tensor& x, float cap) override;
  void addInPlace(Tensor& x, const Tensor& y) override;
  void addBias(Tensor& x, const Tensor& bias) override;
  void crossEntropyForward(const Tensor& logits, std::span<const std::int32_t> targets,
                           Tensor& losses, Tensor& logsumexp) override;
  void attentionBackward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& out, const Tensor& logsumexp,
                         const AttentionOptions& options, Tensor& dq, Tensor& dk,
                         Tensor& dv) override;
  void swigluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up, Tensor& dgate,
                      Tensor& dup) override;
  void gegluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up, Tensor& dgate,
                     Tensor& dup) override;
  void multiplyInPlace(Tensor& x, const Tensor& y) override;
  void swigluBackwardStacked(const Tensor& dout, const Tensor& gate, const Tensor& up,
                             Tensor& dGateUp) override;
  void stackColumns(std::span<const Tensor* const> parts, Tensor& dst) override;
  void copyMatrices(std::span<const MatrixCopy> copies) override;
  void lmHeadCrossEntropy(const Tensor& h, const Tensor& weight,
                          std::span<const std::int32_t> targets, float gradScale, Tensor& losses,
                          Tensor& dh, float logitSoftcap) override;
  void fillZero(std::span<Tensor* const> tensors) override;
  double sumOfSquares(std::span<const Tensor* const> tensors) override;
  void scaleInPlace(std::span<Tensor* const> tensors, float factor) override;
  void adamw(std::span<const AdamWTensors> tensors, const AdamWScalars& scalars) override;
  void dropoutMask(Tensor& mask, std::uint64_t seed, std::uint64_t philoxStream, double p) override;
  void convert(const Tensor& src, Tensor& dst) override;
  void addLowRankProduct(const Tensor& lhsT, const Tensor& w, bool transposeW, float scale,
                         Tensor& y) override;
  void projectionProducts(std::span<const ProjectionProduct> products) override;
  void loraOutputProducts(std::span<const LoraOutputSite> sites, float scale) override;

  void lmHeadCrossEntropyAt(const Tensor& h, const Tensor& weight,
                            std::span<const std::int32_t> targets, LmHeadRows passRows,
                            const Tensor& scalars, Tensor& losses, Tensor& dh,
                            float logitSoftcap) override;
  void copyIn(std::span<const std::byte> host, Tensor& dst) override;
  void copyOut(const Tensor& src, std::span<std::byte> host) override;
  std::shared_ptr<std::byte[]> pinnedHost(std::size_t bytes) override;
  void accumulateLoss(const Tensor& losses, Tensor& sums) override;
  void clipScaledGradients(std::span<Tensor* const> grads, const Tensor& scalars,
                           Tensor& sums) override;
  void adamwIfFinite(std::span<const AdamWTensors> tensors, const Tensor& scalars,
                     const Tensor& sums) override;
  void dropoutMaskAt(Tensor& mask, std::uint64_t seed, std::uint32_t streamLow,
                     const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                     std::int64_t micro, double p) override;
  bool canCapture() const override { return true; }
  void beginCapture() override;
  std::unique_ptr<CapturedOps> endCapture() override;
  void abandonCapture() override;
  void releaseCaptureMemory() override;
  void drawFromCapturePool(bool on) override;

  // A host-to-device copy in stream order. While capturing, a source outside pinnedHost() memory
  // is first copied into pinned memory the capture keeps (a constant of the graph); a pinned one
  // is read at every replay. Outside a capture, a pageable source is staged by the runtime before
  // the call returns, so it may go away at once.
  void copyHostToDeviceAsync(void* dst, const void* src, std::size_t bytes);
  bool capturing() const { return capture_ != nullptr; }
  // upload's copy into a fresh tensor (see HipBackend.cpp).
  void copyHostToDevice(Tensor& t, const void* host, std::size_t bytes);
  // Throws UnsupportedOpError naming `op` while capturing (an op that waits or reads back).
  void requireNotCapturing(const char* op) const;

  hipStream_t stream() const { return stream_; }
  memory::DeviceAllocator* deviceAllocator() override { return allocator_.get(); }

 private:
  // lmHeadCrossEntropy and its graph-mode twin: the scale given, or read from device memory.
  void lmHeadLoss(const Tensor& h, const Tensor& weight, std::span<const std::int32_t> targets,
                  const LmHeadRows& passRows, float gradScale, const float* gradScaleOnDevice,
                  Tensor& losses, Tensor& dh, float logitSoftcap);

  std::size_t poolLiveAtDraw_ = 0;  // drawFromCapturePool(true)'s graphPoolLiveBytes
  int deviceIndex_;
  hipStream_t stream_ = nullptr;
  // downloadAsync's side stream (created on first use) and its pinned host buffers.
  hipStream_t downloadStream_ = nullptr;
  std::shared_ptr<PinnedHostPool> pinned_;
  std::shared_ptr<memory::DeviceAllocator> allocator_;
  BackendCapabilities caps_;
  GemmImplementation gemmImplementation_ = GemmImplementation::BuiltIn;  // the constructor's pick
  std::unique_ptr<VendorBlas> vendorBlas_;  // bound to stream_; created by the first vendor matmul
  Tensor nf4Tables_;  // (kNf4TableFloats) f32: the NF4 and dynamic codes, uploaded on first use
  // The capture in progress (beginCapture .. endCapture): the pinned copies of constant host
  // values its ops read. The pinnedHost() ranges, by address, for copyHostToDeviceAsync.
  struct Capture;
  std::unique_ptr<Capture> capture_;
  std::shared_ptr<PinnedRanges> pinnedRanges_;
};

// Copies host indices (ids, positions, targets) to the device, ordered before the kernels that
// read them. The staging copy of pageable memory is finished when the call returns, so the host
// span may go away at once. Stored as an f32-typed tensor of the same 4-byte size (Tensor has no
// integer dtype): only the op launchers read it, as std::int32_t.
Tensor uploadIndices(HipBackend& backend, std::span<const std::int32_t> values);

}  // namespace lorascope::compute::hip
