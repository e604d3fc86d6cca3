// Tensor.h — a typed, shaped, owning view of memory on one device.
//
// Storage is reference-counted and released by whoever allocated it (a Backend), so a Tensor can
// outlive nothing it points to. Tensors are row-major; shape[0] is the outermost axis. They are
// dense, except a matrix's column view (columns()): its rows lie ld() elements apart, wider than
// its columns. Only the ops that take a leading dimension read one (the GEMMs and the few that
// say so, e.g. Note [the LoRA term in the inner dimension] in train/TrainGraph.cpp); for the rest
// data() and as() refuse it, so no op reads a column view as dense.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lorascope::compute {

// NF4: QLoRA's 4-bit NormalFloat with double quantisation (compute/Nf4.h), for frozen weights
// only; two weights per byte plus their block scales, so it has no whole bytes per element.
enum class DType : std::uint8_t { F32, BF16, F16, NF4 };
enum class Device : std::uint8_t { Cpu, Gpu };

// Bytes per element; throws ShapeError for NF4 (use storageBytes).
std::size_t dtypeBytes(DType dtype);
// Bytes a dense tensor of `numel` elements of `dtype` occupies (NF4: codes and scales).
std::size_t storageBytes(DType dtype, std::int64_t numel);
const char* dtypeName(DType dtype);
const char* deviceName(Device device);

using Shape = std::vector<std::int64_t>;
std::int64_t numelOf(const Shape& shape);
std::string shapeToString(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<void> storage, DType dtype, Shape shape, Device device);

  // The first element; throws ShapeError for a column view (base() is for the ops that take ld()).
  void* data() {
    requireDense();
    return storage_.get();
  }
  const void* data() const {
    requireDense();
    return storage_.get();
  }
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data());
  }
  // The first element of a dense tensor or a column view, whose rows lie ld() elements apart.
  template <typename T>
  T* base() {
    return static_cast<T*>(storage_.get());
  }
  template <typename T>
  const T* base() const {
    return static_cast<const T*>(storage_.get());
  }

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t axis) const { return shape_.at(axis); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return numelOf(shape_); }
  std::size_t bytes() const { return storageBytes(dtype_, numel()); }
  bool defined() const { return storage_ != nullptr; }
  std::string describe() const;  // e.g. "bf16[7, 896] on gpu"
  // The same storage seen with another shape of the same element count (e.g. (T, heads*hd) as
  // (T, heads, hd)); throws ShapeError when the counts differ.
  Tensor viewAs(Shape shape) const;
  // Rows [first, first + count) of axis 0, sharing this tensor's storage (a KV cache's newest
  // positions); throws ShapeError when they are not all inside.
  Tensor rows(std::int64_t first, std::int64_t count) const;
  // Columns [first, first + count) of a matrix, sharing its storage: a column view whose rows lie
  // ld() elements apart; throws ShapeError when they are not all inside or this is not 2-D.
  Tensor columns(std::int64_t first, std::int64_t count) const;
  // Elements from one row of a matrix to the next: its width, or a column view's parent's.
  std::int64_t ld() const {
    return rowStride_ > 0 ? rowStride_ : shape_.empty() ? 1 : shape_.back();
  }
  bool dense() const { return rowStride_ == 0; }

 private:
  std::shared_ptr<void> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  Device device_ = Device::Cpu;
  std::int64_t rowStride_ = 0;  // a column view's ld(); 0 when dense

  void requireDense() const {
    if (rowStride_ > 0) {
      throwNotDense();
    }
  }
  [[noreturn]] void throwNotDense() const;
};

// Throws ShapeError naming `op` and `what` unless `t` has exactly `expected` as its shape.
void requireShape(const char* op, const char* what, const Tensor& t, const Shape& expected);
// Throws ShapeError naming `op` and `what` unless `t` has dtype `expected`.
void requireDType(const char* op, const char* what, const Tensor& t, DType expected);

}  // namespace lorascope::compute
