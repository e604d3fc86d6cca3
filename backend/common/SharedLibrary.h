// common/SharedLibrary.h — a library loaded at run time (dlopen; LoadLibraryW on Windows) and
// its symbols looked up by name. A missing library is an ordinary answer, not an exception:
// telemetry/DynamicLibrary.h builds vendor symbol tables on this.
#pragma once

#include <memory>
#include <string>

namespace lorascope::common {

class SharedLibrary {
 public:
  // Loads `name` (a file name searched the system's way, or a path); nullptr when it cannot be
  // loaded, with the system's reason in *error.
  static std::unique_ptr<SharedLibrary> open(const std::string& name, std::string* error);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The address of the exported `symbol`, nullptr when the library has none.
  void* symbol(const char* symbol) const;

 private:
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  void* handle_;
};

}  // namespace lorascope::common
