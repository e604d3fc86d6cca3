// DynamicLibrary.h — a vendor library opened at run time (common/SharedLibrary.h: dlopen,
// LoadLibraryW) and resolved from a table of
// required and optional symbols, so that providers never link against vendor libraries and a
// missing library is an ordinary "unavailable" answer (nvtop's pattern, without the unrolled
// dlsym lines).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lorascope::common {
class SharedLibrary;
}

namespace lorascope::telemetry {

// One function the provider wants. `names` are tried in order (newest entry point first,
// e.g. {"nvmlInit_v2", "nvmlInit"}); the first that resolves is stored in *slot.
struct SymbolSpec {
  std::vector<const char*> names;
  void** slot = nullptr;
  bool required = true;
};

struct LoadResult {
  bool loaded = false;
  std::string libraryName;                   // the file name that opened
  std::string error;                         // why it failed, in words
  std::vector<std::string> missingOptional;  // first names of optional symbols not found
};

class DynamicLibrary {
 public:
  DynamicLibrary();
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // Tries each candidate file name in order, then resolves `symbols`. On any missing required
  // symbol the library is closed again and every slot is reset to nullptr.
  LoadResult open(const std::vector<std::string>& candidates,
                  const std::vector<SymbolSpec>& symbols);
  bool isOpen() const { return library_ != nullptr; }
  void close();

 private:
  std::unique_ptr<common::SharedLibrary> library_;
};

// Stores a resolved symbol into a typed function pointer slot: `slotFor(fn)` gives the void**
// that SymbolSpec wants for a `Ret (*fn)(Args...)` member.
template <typename Fn>
void** slotFor(Fn*& fn) {
  return reinterpret_cast<void**>(&fn);
}

}  // namespace lorascope::telemetry
