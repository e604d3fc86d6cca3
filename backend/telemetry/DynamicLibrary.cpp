// DynamicLibrary.cpp — common::SharedLibrary + a symbol table of required and optional entry
// points.
#include "telemetry/DynamicLibrary.h"

#include "common/SharedLibrary.h"

namespace lorascope::telemetry {

DynamicLibrary::DynamicLibrary() = default;

DynamicLibrary::~DynamicLibrary() {
  close();
}

void DynamicLibrary::close() {
  library_.reset();
}

LoadResult DynamicLibrary::open(const std::vector<std::string>& candidates,
                                const std::vector<SymbolSpec>& symbols) {
  close();
  LoadResult result;
  std::string tried;
  for (const std::string& candidate : candidates) {
    std::string why;
    library_ = common::SharedLibrary::open(candidate, &why);
    if (library_ != nullptr) {
      result.libraryName = candidate;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  if (library_ == nullptr) {
    result.error = "library not found (tried " + tried + ")";
    return result;
  }
  for (const SymbolSpec& spec : symbols) {
    *spec.slot = nullptr;
    for (const char* name : spec.names) {
      if (void* address = library_->symbol(name)) {
        *spec.slot = address;
        break;
      }
    }
    if (*spec.slot != nullptr || spec.names.empty()) {
      continue;
    }
    if (!spec.required) {
      result.missingOptional.emplace_back(spec.names.front());
      continue;
    }
    result.error = result.libraryName + " lacks the required symbol " + spec.names.front();
    for (const SymbolSpec& reset : symbols) {
      *reset.slot = nullptr;
    }
    close();
    return result;
  }
  result.loaded = true;
  return result;
}

}  // namespace lorascope::telemetry
