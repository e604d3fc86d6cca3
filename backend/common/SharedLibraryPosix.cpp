// common/SharedLibraryPosix.cpp — SharedLibrary.h with dlopen/dlsym/dlclose.
#include <dlfcn.h>

#include "common/SharedLibrary.h"

namespace lorascope::common {

std::unique_ptr<SharedLibrary> SharedLibrary::open(const std::string& name, std::string* error) {
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    *error = why != nullptr ? why : name + ": cannot be loaded";
    return nullptr;
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(handle));
}

SharedLibrary::~SharedLibrary() {
  ::dlclose(handle_);
}

void* SharedLibrary::symbol(const char* symbol) const {
  return ::dlsym(handle_, symbol);
}

}  // namespace lorascope::common
