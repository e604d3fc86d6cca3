#!/usr/bin/env bash
# check-os-headers.sh — operating-system code lives in the platform layer only.
#
# The platform layer is backend/common/*Posix.cpp and backend/common/*Win32.cpp (behind the plain
# C++ headers Platform.h, OsFile.h, MappedFile.h, SharedLibrary.h, ChildProcess.h and the
# Windows telemetry seams; docs/ARCHITECTURE.md). Every other file of backend/, app/, widgets/
# and tests/support/ fails this check when it
#   - includes a POSIX-only header (unistd.h, fcntl.h, sys/*, dlfcn.h, signal.h, spawn.h, pwd.h,
#     ...) or a Win32 one (windows.h, dxgi*.h, pdh.h, psapi.h, io.h, ...);
#   - tests the OS with the preprocessor (_WIN32, __linux__, __unix__, __APPLE__); only
#     backend/common/Platform.h turns it into data (common::kOsFamily);
#   - calls a POSIX-only function that a standard header declares on Linux (gmtime_r,
#     localtime_r, strerror_r, setenv, unsetenv, realpath, mkstemp, strcasecmp, strtok_r): the
#     mingw build has none of them (std::gmtime under a lock, or a function of the layer);
#   - uses GCC vector extensions (__attribute__((vector_size(...)))) outside
#     backend/compute/cpu/lanes4.h, which holds their portable fallback.
# Tests that exercise POSIX behaviour on purpose (a fake vendor .so, a SIGINT sent to the CLI)
# are outside its scope: they are Linux tests. A grep, under a second.
# Usage: scripts/check-os-headers.sh [SOURCE_DIR]   (run by CTest as `check_os_headers`)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

SCOPE=(backend app widgets tests/support)
LAYER='^backend/common/[A-Za-z0-9_]+(Posix|Win32)\.cpp$'
POSIX_HEADERS='unistd\.h|fcntl\.h|sys/[a-z_/]+\.h|dlfcn\.h|signal\.h|csignal|spawn\.h|pwd\.h|grp\.h|poll\.h|dirent\.h|termios\.h|pthread\.h|semaphore\.h|sched\.h|syslog\.h|netdb\.h|netinet/[a-z_]+\.h|arpa/[a-z_]+\.h|libgen\.h|glob\.h|link\.h|elf\.h'
WIN32_HEADERS='windows\.h|winbase\.h|winnt\.h|winerror\.h|wincon\.h|winsock2?\.h|ws2[a-z0-9_]*\.h|io\.h|direct\.h|process\.h|conio\.h|psapi\.h|pdh[a-z]*\.h|dxgi[0-9_]*\.h|d3d[a-z0-9_]*\.h|dxcore[a-z_]*\.h|shlobj\.h|shellapi\.h|knownfolders\.h|tlhelp32\.h|winternl\.h|ntstatus\.h|objbase\.h|combaseapi\.h|wrl[a-z/]*\.h|versionhelpers\.h|[a-z]+api\.h|lmcons\.h|userenv\.h|setupapi\.h|cfgmgr32\.h|wbemidl\.h'

failures=0
report() {  # file:line:text, why
  echo "check-os-headers: $1"
  echo "    $2"
  failures=$((failures + 1))
}

files=$(git ls-files -co --exclude-standard -- "${SCOPE[@]}" 2>/dev/null || find "${SCOPE[@]}" -type f)
for file in $files; do
  case "$file" in
    *.cpp | *.h | *.hpp | *.cu | *.hip | *.cuh) ;;
    *) continue ;;
  esac
  [[ -f "$file" ]] || continue
  if [[ "$file" =~ $LAYER ]]; then
    continue
  fi
  while IFS= read -r hit; do
    report "$hit" "OS header outside the platform layer: use backend/common (Platform.h, OsFile.h, MappedFile.h, SharedLibrary.h, ChildProcess.h) or add to it"
  done < <(grep -HnEi "^[[:space:]]*#[[:space:]]*include[[:space:]]*<(${POSIX_HEADERS}|${WIN32_HEADERS})>" "$file" || true)
  if [[ "$file" != backend/common/Platform.h ]]; then
    while IFS= read -r hit; do
      report "$hit" "OS test in the preprocessor outside the platform layer: use common::kOsFamily or a function of backend/common/Platform.h"
    done < <(grep -HnE "^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)\b.*\b(_WIN32|_WIN64|__linux__|__unix__|__APPLE__|__MINGW32__|__MINGW64__)\b" "$file" || true)
  fi
  while IFS= read -r hit; do
    report "$hit" "POSIX-only function outside the platform layer (Windows has none of these): use standard C++ or add to backend/common"
  done < <(grep -HnE "(^|[^A-Za-z0-9_:.>])(gmtime_r|localtime_r|strerror_r|setenv|unsetenv|realpath|mkstemp|strcasecmp|strncasecmp|strtok_r)[[:space:]]*\(" "$file" || true)
  if [[ "$file" != backend/compute/cpu/lanes4.h ]]; then
    while IFS= read -r hit; do
      report "$hit" "GCC vector extension outside backend/compute/cpu/lanes4.h (its portable fallback lives there)"
    done < <(grep -HnE "__attribute__[[:space:]]*\(\([[:space:]]*vector_size" "$file" || true)
  fi
done

if ((failures > 0)); then
  echo "check-os-headers: $failures finding(s); see the top of scripts/check-os-headers.sh"
  exit 1
fi
echo "check-os-headers: no OS header, OS #if, POSIX-only function or vector extension outside" \
  "the platform layer"
