// Tensor.cpp — dtype/shape helpers and the shape checks every op starts with.
#include "compute/Tensor.h"

#include <functional>
#include <numeric>
#include <utility>

#include "compute/Errors.h"
#include "compute/Nf4.h"  // defines: nf4::storageBytes

namespace lorascope::compute {

std::size_t dtypeBytes(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::BF16:
    case DType::F16:
      return 2;
    case DType::NF4:
      throw ShapeError(
          "nf4 packs two weights per byte with their block scales: it has no bytes "
          "per element (storageBytes gives a tensor's size)");
  }
  return 0;
}

std::size_t storageBytes(DType dtype, std::int64_t numel) {
  if (dtype == DType::NF4) {
    return nf4::storageBytes(numel);
  }
  return static_cast<std::size_t>(numel) * dtypeBytes(dtype);
}

const char* dtypeName(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::BF16:
      return "bf16";
    case DType::F16:
      return "f16";
    case DType::NF4:
      return "nf4";
  }
  return "?";
}

const char* deviceName(Device device) {
  return device == Device::Cpu ? "cpu" : "gpu";
}

std::int64_t numelOf(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1},
                         std::multiplies<std::int64_t>());
}

std::string shapeToString(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "]";
}

Tensor::Tensor(std::shared_ptr<void> storage, DType dtype, Shape shape, Device device)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), device_(device) {}

std::string Tensor::describe() const {
  return std::string(dtypeName(dtype_)) + shapeToString(shape_) + " on " + deviceName(device_) +
         (rowStride_ > 0 ? " (a column view, rows " + std::to_string(rowStride_) + " apart)" : "");
}

void Tensor::throwNotDense() const {
  throw ShapeError(describe() + " is read as dense by an op that takes no leading dimension");
}

Tensor Tensor::viewAs(Shape shape) const {
  if (rowStride_ > 0) {
    throw ShapeError("view: " + describe() + " cannot be seen as " + shapeToString(shape) +
                     " (its rows are not contiguous)");
  }
  if (numelOf(shape) != numel()) {
    throw ShapeError("view: " + describe() + " cannot be seen as " + shapeToString(shape) +
                     " (element counts differ)");
  }
  return Tensor(storage_, dtype_, std::move(shape), device_);
}

Tensor Tensor::rows(std::int64_t first, std::int64_t count) const {
  if (shape_.empty() || first < 0 || count < 0 || first + count > shape_[0]) {
    throw ShapeError("rows: [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") is not inside " + describe());
  }
  Shape shape = shape_;
  shape[0] = count;
  const std::size_t rowBytes = rowStride_ > 0
                                   ? static_cast<std::size_t>(rowStride_) * dtypeBytes(dtype_)
                               : shape_[0] > 0 ? bytes() / static_cast<std::size_t>(shape_[0])
                                               : 0;
  // The aliasing constructor: the slice keeps the whole storage alive.
  std::shared_ptr<void> slice(storage_, static_cast<std::byte*>(storage_.get()) +
                                            static_cast<std::size_t>(first) * rowBytes);
  Tensor view(std::move(slice), dtype_, std::move(shape), device_);
  view.rowStride_ = rowStride_;
  return view;
}

Tensor Tensor::columns(std::int64_t first, std::int64_t count) const {
  if (shape_.size() != 2 || first < 0 || count < 0 || first + count > shape_[1]) {
    throw ShapeError("columns: [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") is not inside " + describe());
  }
  std::shared_ptr<void> slice(storage_, static_cast<std::byte*>(storage_.get()) +
                                            static_cast<std::size_t>(first) * dtypeBytes(dtype_));
  Tensor view(std::move(slice), dtype_, {shape_[0], count}, device_);
  view.rowStride_ = count == shape_[1] ? rowStride_ : ld();
  return view;
}

void requireShape(const char* op, const char* what, const Tensor& t, const Shape& expected) {
  if (t.shape() != expected) {
    throw ShapeError(std::string(op) + ": " + what + " has shape " + shapeToString(t.shape()) +
                     ", expected " + shapeToString(expected));
  }
}

void requireDType(const char* op, const char* what, const Tensor& t, DType expected) {
  if (t.dtype() != expected) {
    throw ShapeError(std::string(op) + ": " + what + " is " + dtypeName(t.dtype()) + ", expected " +
                     dtypeName(expected));
  }
}

}  // namespace lorascope::compute
