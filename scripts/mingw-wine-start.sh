#!/usr/bin/env bash
# mingw-wine-start.sh [WINE] — readies Wine for the mingw build's tests (CTest's fixture
# wine_start, run before them; preset mingw): starts the wineserver of $WINEPREFIX and runs one
# program, with every output going nowhere, so that Wine's own services are started now.
#
# Why: the first program started in a Wine prefix starts Wine's services (services.exe,
# winedevice.exe, ...), and they keep that program's stdout and stderr open until the wineserver
# exits. A test program started first would hold CTest's pipe open, and CTest would wait for it
# until every other test had ended (a hang elsewhere made it time out too).
#   WINE  the Wine loader (default: wine64 on PATH, else /usr/lib/wine/wine64)
set -euo pipefail
wine="${1:-$(command -v wine64 || echo /usr/lib/wine/wine64)}"
wineserver="$(dirname "$wine")/wineserver"
[[ -x $wineserver ]] || wineserver="$(command -v wineserver || echo /usr/lib/wine/wineserver)"
export WINEDEBUG="${WINEDEBUG:--all}"
# Stays up 10 s after its last program ends (the tests follow one another within milliseconds).
# Exit status 2: a wineserver already runs in this prefix, with its services.
status=0
"$wineserver" -p10 </dev/null >/dev/null 2>&1 || status=$?
[[ $status -eq 0 || $status -eq 2 ]] ||
  { echo "mingw-wine-start: $wineserver -p10 failed (exit $status)" >&2; exit 1; }
# A first program (it also creates the prefix when there is none yet).
"$wine" cmd /c exit </dev/null >/dev/null 2>&1 ||
  { echo "mingw-wine-start: '$wine cmd /c exit' failed in ${WINEPREFIX:-~/.wine}" >&2; exit 1; }
echo "mingw-wine-start: Wine ready in ${WINEPREFIX:-~/.wine}"
