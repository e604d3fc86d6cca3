// Errors.h — typed errors thrown by the compute layer. Backend code never exits: it throws,
// and the engine turns the exception into an error event with advice.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope::compute {

// Shapes or dtypes passed to an op do not fit together; names the op and the tensors.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A GPU runtime call failed. `code` is the runtime's numeric error, `call` the source text of the
// call and `where` its file:line, so the message points at the op that failed.
class GpuError : public std::runtime_error {
 public:
  GpuError(int code, std::string name, std::string call, std::string where, std::string message);
  int code() const { return code_; }
  const std::string& errorName() const { return name_; }
  const std::string& call() const { return call_; }
  const std::string& where() const { return where_; }

 private:
  int code_;
  std::string name_;
  std::string call_;
  std::string where_;
};

// The backend has no implementation of this op (yet); names the op, e.g. "attention_forward has
// no GPU kernel yet". Callers may fall back to the CPU backend for the whole step.
class UnsupportedOpError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// No usable GPU: the build has no GPU backend, no device is present, or the driver is missing.
// Not a failure of the program: callers fall back to the CPU or skip GPU tests.
class NoGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lorascope::compute
