// Backend.cpp — argument checks shared by every backend's implementation of an op.
#include "compute/Backend.h"

#include "compute/Errors.h"

namespace lorascope::compute {
namespace {

void requireOnDevice(const char* op, const char* what, const Tensor& t, Device device) {
  if (!t.defined()) {
    throw ShapeError(std::string(op) + ": " + what + " is not allocated");
  }
  if (t.device() != device) {
    throw ShapeError(std::string(op) + ": " + what + " is " + t.describe() + ", expected it on " +
                     deviceName(device));
  }
}

void requireMatrix(const char* op, const char* what, const Tensor& t) {
  if (t.rank() != 2) {
    throw ShapeError(std::string(op) + ": " + what + " must be (rows, dim), got " +
                     shapeToString(t.shape()));
  }
}

}  // namespace

void checkRmsnormForwardArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& weight,
                             const Tensor& y, const Tensor& rstd) {
  constexpr const char* op = "rmsnorm_forward";
  for (auto [t, name] : {std::pair{&x, "x"}, {&weight, "weight"}, {&y, "y"}, {&rstd, "rstd"}}) {
    requireOnDevice(op, name, *t, caps.device);
  }
  requireMatrix(op, "x", x);
  requireShape(op, "weight", weight, {x.dim(1)});
  requireShape(op, "y", y, x.shape());
  requireShape(op, "rstd", rstd, {x.dim(0)});
  requireDType(op, "x", x, caps.activationDType);
  requireDType(op, "y", y, caps.activationDType);
  requireDType(op, "rstd", rstd, DType::F32);
}

void checkRmsnormBackwardArgs(const BackendCapabilities& caps, const Tensor& dy, const Tensor& x,
                              const Tensor& weight, const Tensor& rstd, const Tensor& dx) {
  constexpr const char* op = "rmsnorm_backward";
  for (auto [t, name] :
       {std::pair{&dy, "dy"}, {&x, "x"}, {&weight, "weight"}, {&rstd, "rstd"}, {&dx, "dx"}}) {
    requireOnDevice(op, name, *t, caps.device);
  }
  requireMatrix(op, "x", x);
  requireShape(op, "dy", dy, x.shape());
  requireShape(op, "dx", dx, x.shape());
  requireShape(op, "weight", weight, {x.dim(1)});
  requireShape(op, "rstd", rstd, {x.dim(0)});
  requireDType(op, "x", x, caps.activationDType);
  requireDType(op, "dy", dy, caps.activationDType);
  requireDType(op, "dx", dx, caps.activationDType);
  requireDType(op, "rstd", rstd, DType::F32);
}

}  // namespace lorascope::compute
