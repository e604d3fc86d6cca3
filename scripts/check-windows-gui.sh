#!/usr/bin/env bash
# check-windows-gui.sh MINGW_BUILD — lorascope.exe, the Windows GUI of the mingw cross-build with
# Qt (scripts/mingw-qt.sh), end to end under Wine on Xvfb, from its deployed folder alone:
#   1. `cmake --install` puts the build's install rules (lorascope.exe, lorascope-train.exe and
#      installers/WindowsQt.cmake's Qt files) into MINGW_BUILD/check-windows-gui/LoRAscope;
#   2. the deployment list both ways: every DLL that an installed .exe or .dll imports is either
#      installed there or one of Windows' own (in a fresh Wine prefix's system32), and every
#      installed Qt DLL is imported by something installed;
#   3. in that fresh Wine prefix (no Qt on its PATH, no QT_* variable), on a fresh Xvfb display,
#      lorascope.exe starts and its window is mapped;
#   4. Ctrl+Return (the Start action) trains the demo that the setup page preselects, through the
#      engine it supervises (lorascope-train.exe engine, beside it): steps reach the run's
#      metrics.jsonl; a screenshot of the window is taken (window-training.png);
#   5. the engine is killed (taskkill /F, Windows' TerminateProcess); the supervisor starts a new
#      one, which resumes the run from its checkpoint: new steps past the last one before the kill
#      reach metrics.jsonl while the same lorascope.exe runs on; a second screenshot
#      (window-resumed.png, README's "Windows" shows it).
# Everything stays in MINGW_BUILD/check-windows-gui/ (the logs, the run folder in the prefix, the
# screenshots). Needs Xvfb, xdotool, xwd and netpbm (scripts/install-deps.sh). About 3 minutes
# on a loaded 2-core machine, most of it Wine's and Qt's start and the demo's first steps.
#   WINE   the Wine loader (default: wine64 on PATH, else /usr/lib/wine/wine64)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 MINGW_BUILD" >&2; exit 2; }
build="$(realpath "$1")"
out="$build/check-windows-gui"
wine="${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}"
wineserver="$(dirname "$(realpath "$wine")")/wineserver"
[[ -x $wineserver ]] || wineserver="$(command -v wineserver || echo /usr/lib/wine/wineserver)"
objdump=x86_64-w64-mingw32-objdump
timeout_s=600  # each wait below; a loaded 2-core machine takes minutes for Wine's first start

fail() {
  echo "check-windows-gui: FAILED: $*" >&2
  for log in "$out"/lorascope.log; do
    [[ -s $log ]] && { echo "--- $log (last 40 lines)" >&2; tail -n 40 "$log" >&2; }
  done
  exit 1
}
say() { echo "check-windows-gui: [$((SECONDS))s] $*"; }
for tool in Xvfb xdotool xwd xwdtopnm pnmtopng "$objdump" "$wine"; do
  command -v "$tool" >/dev/null || [[ -x $tool ]] ||
    fail "$tool is missing (scripts/install-deps.sh --windows)"
done
[[ -f $build/app/lorascope.exe ]] ||
  fail "$build/app/lorascope.exe is missing: build the mingw preset with the GUI (scripts/mingw-qt.sh first)"

# ---- 1. the deployed folder ------------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out"
cmake --install "$build" --prefix "$out/LoRAscope" >"$out/install.log" 2>&1 ||
  { cat "$out/install.log"; fail "cmake --install failed (log above)"; }
bin="$out/LoRAscope/bin"
for f in lorascope.exe lorascope-train.exe; do
  [[ -f $bin/$f ]] || fail "the install rules put no $f into bin/"
done

# A Wine prefix of its own: nothing of the build's (no Qt on PATH) and a first start of the app.
export WINEPREFIX="$out/wineprefix" WINEDEBUG="${WINEDEBUG:--all}" LC_ALL=C.UTF-8
unset WINEPATH QT_PLUGIN_PATH QT_QPA_PLATFORM QT_QPA_PLATFORM_PLUGIN_PATH LORASCOPE_CACHE_DIR
"$wine" wineboot --init >"$out/wineboot.log" 2>&1 || { cat "$out/wineboot.log"; fail "wineboot"; }
"$wineserver" -w
system32="$WINEPREFIX/drive_c/windows/system32"
say "installed into $out/LoRAscope; Wine prefix ready"

# ---- 2. the deployment list both ways -------------------------------------------------------
declare -A installed=() imported=()
while IFS= read -r f; do
  installed["$(basename "${f,,}")"]="$f"
done < <(find "$out/LoRAscope" -type f \( -iname '*.dll' -o -iname '*.exe' \))
for f in "${installed[@]}"; do
  while IFS= read -r dll; do
    dll="${dll,,}"
    imported["$dll"]=1
    [[ -n ${installed[$dll]:-} ]] && continue
    [[ -n $(find "$system32" -maxdepth 1 -iname "$dll" -print -quit) ]] && continue
    fail "${f#"$out/"} imports $dll, which is neither installed nor Windows' own" \
      "(add it to installers/WindowsQt.cmake)"
  done < <("$objdump" -p "$f" | awk '/DLL Name:/ { print $3 }')
done
for name in "${!installed[@]}"; do
  if [[ $name == qt6*.dll && -z ${imported[$name]:-} ]]; then
    fail "$name is installed but nothing installed imports it (drop it from installers/WindowsQt.cmake)"
  fi
done
say "deployment list: ${#installed[@]} programs and DLLs, each import installed or Windows' own:" \
  "$(cd "$out/LoRAscope" && find . -type f \( -iname '*.dll' -o -iname '*.exe' \) | sort | tr '\n' ' ')"

# ---- 3. the window, from the installed folder alone -----------------------------------------
app_pid=""
xvfb_pid=""
cleanup() {
  "$wineserver" -k 2>/dev/null || true
  if [[ -n $app_pid ]]; then kill "$app_pid" 2>/dev/null || true; fi
  if [[ -n $xvfb_pid ]]; then kill "$xvfb_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
# shellcheck source=scripts/xvfb-lib.sh
source "$(dirname "$0")/xvfb-lib.sh"
start_xvfb "$out/xvfb.log" || fail "no X display could be started (Xvfb, $out/xvfb.log)"
(cd "$bin" && exec "$wine" lorascope.exe) >"$out/lorascope.log" 2>&1 &
app_pid=$!

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 2 s until it succeeds.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local until=$((SECONDS + seconds))
  until "$@"; do
    kill -0 "$app_pid" 2>/dev/null || fail "lorascope.exe exited while waiting for $what"
    ((SECONDS < until)) || fail "no $what after $seconds s"
    sleep 2
  done
}
window=""
find_window() { window="$(xdotool search --onlyvisible --name '^LoRAscope' 2>/dev/null | head -n 1)"; [[ -n $window ]]; }
wait_for "$timeout_s" "LoRAscope window on $DISPLAY" find_window
say "the window is mapped: X window $window, '$(xdotool getwindowname "$window")'"

# ---- 4. Start on the demo -------------------------------------------------------------------
runs="$WINEPREFIX/drive_c/users/$(id -un)/AppData/Local/LoRAscope/runs"
metrics() { find "$runs" -name metrics.jsonl -print -quit 2>/dev/null; }
max_step() { grep -o '"step": *[0-9]*' "$1" | grep -o '[0-9]*$' | sort -n | tail -n 1; }
steps_at_least() {  # steps_at_least N [ABOVE]: metrics.jsonl has N steps, the last above ABOVE
  local m
  m="$(metrics)"
  [[ -n $m ]] && (($(grep -c '"step"' "$m") >= $1)) && (($(max_step "$m") > ${2:-0}))
}
# The setup page inspects the demo model and validates its dataset first; until then Start is
# disabled. Ctrl+Return until a run folder exists (each press 20 s apart: one run, no second).
started() { [[ -n $(metrics) ]]; }
until_started=$((SECONDS + timeout_s))
until started; do
  kill -0 "$app_pid" 2>/dev/null || fail "lorascope.exe exited before a run started"
  ((SECONDS < until_started)) || fail "Ctrl+Return started no run in $timeout_s s"
  xdotool windowfocus --sync "$window" 2>/dev/null || xdotool windowfocus "$window"
  xdotool key --clearmodifiers ctrl+Return
  for _ in $(seq 10); do started && break; sleep 2; done
done
say "a run started: $(dirname "$(metrics)")"
wait_for "$timeout_s" "3 steps in metrics.jsonl" steps_at_least 3
xwd -id "$window" -silent | xwdtopnm 2>/dev/null | pnmtopng >"$out/window-training.png"
say "steps reach the run folder (last $(max_step "$(metrics)")); screenshot window-training.png"

# ---- 5. the engine killed, the run resumed --------------------------------------------------
before="$(max_step "$(metrics)")"
"$wine" taskkill /F /IM lorascope-train.exe >"$out/taskkill.log" 2>&1 ||
  { cat "$out/taskkill.log"; fail "taskkill /F /IM lorascope-train.exe failed"; }
say "the engine killed (taskkill /F) after step $before"
wait_for "$timeout_s" "step after $before once the engine was killed" steps_at_least 1 "$before"
kill -0 "$app_pid" 2>/dev/null || fail "lorascope.exe did not survive its engine's kill"
sleep 5  # a few more steps on the chart
xwd -id "$window" -silent | xwdtopnm 2>/dev/null | pnmtopng >"$out/window-resumed.png"
say "the run resumed: step $(max_step "$(metrics)") after the kill at $before;" \
  "screenshot window-resumed.png"
echo "check-windows-gui: passed (lorascope.exe from its installed folder under Wine, Start," \
  "steps, the engine killed and the run resumed)"
