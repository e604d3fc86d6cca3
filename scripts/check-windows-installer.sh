#!/usr/bin/env bash
# check-windows-installer.sh MINGW_BUILD — the Windows installer, end to end under Wine: CPack's
# NSIS generator (makensis, Debian's nsis package) packs the mingw build's install rules into
# MINGW_BUILD/package/lorascope-VERSION-win64.exe; the installer runs silently into
# C:\LoRAscope-check\Łukasz (a folder with a non-ASCII letter); the installed lorascope-train.exe
# answers --version and trains the built-in demo for 3 steps with an adapter written; "Apps &
# features" (the uninstall registry key) shows the version. With the GUI (a build configured with
# LORASCOPE_BUILD_GUI=ON and Qt from scripts/mingw-qt.sh) also: lorascope.exe, Qt's DLLs and
# plugins, Qt's licence texts and SOURCES.txt are installed; the Start menu has LoRAscope.lnk
# (lorascope.exe, its icon) and "Qt licence and sources.lnk"; the installed lorascope.exe, started
# the way the Start-menu entry starts it, maps its window on a fresh Xvfb display and closes when
# asked to (WM_CLOSE: taskkill without /F), its engine with it. The uninstaller runs silently and
# leaves neither a file, nor the folder, nor the registry key, nor a Start-menu entry behind (what
# the app's start wrote into the user's profile, its settings and data folder, is the user's and
# stays, as on Linux; the check lists it). About 30 s, 1 min with the GUI.
#   WINE        the Wine loader (default: wine64 on PATH, else /usr/lib/wine/wine64)
#   WINEPREFIX  Wine's prefix (default: MINGW_BUILD/wineprefix, the one `ctest --preset mingw` uses)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 MINGW_BUILD" >&2; exit 2; }
build="$(realpath "$1")"
wine="${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}"
wineserver="$(dirname "$(realpath "$wine")")/wineserver"
fail() {
  echo "check-windows-installer: $*" >&2
  exit 1
}
command -v makensis >/dev/null || fail "makensis is missing (Debian: nsis; scripts/install-deps.sh --windows)"
[[ -f "$build/CPackConfig.cmake" ]] || fail "$build has no CPackConfig.cmake: configure it (cmake --preset mingw)"
[[ -x "$wineserver" ]] || wineserver="$(command -v wineserver || true)"
[[ -n "$wineserver" ]] || fail "no wineserver beside $wine or on PATH"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEPREFIX="${WINEPREFIX:-$build/wineprefix}"
# Wine turns the Unix side's arguments into UTF-16 by the locale's charset: a UTF-8 locale.
export LC_ALL=C.UTF-8

version="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"
rm -rf "$build/package"
cpack --config "$build/CPackConfig.cmake" -B "$build/package" >"$build/cpack-nsis.log" 2>&1 ||
  { cat "$build/cpack-nsis.log"; fail "cpack -G NSIS failed (log above)"; }
installer="$build/package/lorascope-$version-win64.exe"
[[ -f "$installer" ]] || fail "cpack made no $installer"
echo "check-windows-installer: $(basename "$installer"), $(($(stat -c %s "$installer") / 1024)) KiB"

# /D= must be the last argument, unquoted: no spaces in the folder.
windir='C:\LoRAscope-check\Łukasz'
dir="$WINEPREFIX/drive_c/LoRAscope-check/Łukasz"
startmenu="$WINEPREFIX/drive_c/ProgramData/Microsoft/Windows/Start Menu/Programs/LoRAscope"
uninstallKey='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\LoRAscope'
rm -rf "$WINEPREFIX/drive_c/LoRAscope-check"
"$wine" "$installer" /S "/D=$windir"
"$wineserver" -w
for f in bin/lorascope-train.exe Uninstall.exe; do
  [[ -f "$dir/$f" ]] || fail "the installer left no $windir\\$f (installed: $(find "$WINEPREFIX/drive_c/LoRAscope-check" -type f | tr '\n' ' '))"
done
installed_version="$("$wine" reg query "$uninstallKey" /v DisplayVersion 2>/dev/null |
  awk '$1 == "DisplayVersion" { print $3 }' | tr -d '\r')"
[[ "$installed_version" == "$version" ]] ||
  fail "Apps & features shows version '$installed_version', not $version ($uninstallKey)"
"$wine" "$windir\\bin\\lorascope-train.exe" --version >"$build/installed-version.txt" 2>&1 ||
  { cat "$build/installed-version.txt"; fail "the installed lorascope-train.exe --version failed"; }
grep -q "^LoRAscope $version" "$build/installed-version.txt" ||
  { cat "$build/installed-version.txt"; fail "the installed program does not say LoRAscope $version"; }
run='C:\LoRAscope-check\run'
LORASCOPE_CACHE_DIR="$WINEPREFIX/drive_c/LoRAscope-check/cache" \
  "$wine" "$windir\\bin\\lorascope-train.exe" train --demo --steps 3 --out "$run" \
  >"$build/installed-train.log" 2>&1 ||
  { cat "$build/installed-train.log"; fail "the installed lorascope-train.exe train --demo failed"; }
[[ -f "$WINEPREFIX/drive_c/LoRAscope-check/run/adapter/adapter_model.safetensors" ]] ||
  { cat "$build/installed-train.log"; fail "the installed program's demo run wrote no adapter"; }
echo "check-windows-installer: installed into $windir; --version and a 3-step demo run pass"

if grep -q '^LORASCOPE_BUILD_GUI:BOOL=ON' "$build/CMakeCache.txt"; then
  for f in bin/lorascope.exe bin/Qt6Core.dll bin/Qt6Gui.dll bin/Qt6Widgets.dll bin/Qt6Charts.dll \
    bin/platforms/qwindows.dll bin/styles/qwindowsvistastyle.dll \
    share/doc/LoRAscope/qt/LGPL-3.0-only.txt share/doc/LoRAscope/qt/SOURCES.txt; do
    [[ -f "$dir/$f" ]] || fail "the installer left no $windir\\$f"
  done
  grep -q "Debian's source package qt6-base" "$dir/share/doc/LoRAscope/qt/SOURCES.txt" ||
    fail "the installed SOURCES.txt does not say where Qt's source comes from"
  for lnk in LoRAscope.lnk "Qt licence and sources.lnk"; do
    [[ -f "$startmenu/$lnk" ]] || fail "the installer made no Start-menu entry $lnk in $startmenu"
  done
  # The installed window, started from its folder as the Start-menu entry starts it.
  # shellcheck source=scripts/xvfb-lib.sh
  source "$(dirname "$0")/xvfb-lib.sh"
  start_xvfb "$build/installed-xvfb.log" || fail "no X display could be started (Xvfb)"
  trap 'kill "$xvfb_pid" 2>/dev/null || true' EXIT
  (cd "$dir/bin" && exec "$wine" lorascope.exe) >"$build/installed-gui.log" 2>&1 &
  gui_pid=$!
  window=""
  for _ in $(seq 300); do
    window="$(xdotool search --onlyvisible --name '^LoRAscope' 2>/dev/null | head -n 1)"
    [[ -n $window ]] && break
    kill -0 "$gui_pid" 2>/dev/null ||
      { cat "$build/installed-gui.log"; fail "the installed lorascope.exe exited before its window showed"; }
    sleep 2
  done
  [[ -n $window ]] || fail "the installed lorascope.exe showed no window in 600 s"
  "$wine" taskkill /IM lorascope.exe >"$build/installed-close.log" 2>&1 ||
    { cat "$build/installed-close.log"; fail "taskkill /IM lorascope.exe (WM_CLOSE) failed"; }
  for _ in $(seq 120); do
    kill -0 "$gui_pid" 2>/dev/null || break
    sleep 1
  done
  ! kill -0 "$gui_pid" 2>/dev/null || fail "the installed lorascope.exe did not close when asked"
  "$wineserver" -w
  kill "$xvfb_pid" 2>/dev/null || true
  unset DISPLAY
  echo "check-windows-installer: the installed lorascope.exe showed its window and closed;" \
    "Start-menu entries, Qt's DLLs, plugins, licence and SOURCES.txt are installed"
fi

"$wine" "$dir/Uninstall.exe" /S
"$wineserver" -w  # the uninstaller runs on from a copy of itself in the temporary folder
[[ ! -e "$dir" ]] || fail "the uninstaller left $windir behind: $(find "$dir" | tr '\n' ' ')"
if "$wine" reg query "$uninstallKey" >/dev/null 2>&1; then
  fail "the uninstaller left the registry key $uninstallKey"
fi
[[ ! -e "$startmenu" ]] || fail "the uninstaller left the Start-menu folder $startmenu"
rm -rf "$WINEPREFIX/drive_c/LoRAscope-check"
echo "check-windows-installer: uninstalled; nothing left behind"
userdata="$(find "$WINEPREFIX/drive_c/users" -maxdepth 4 -path '*/AppData/*' -name 'LoRAscope' 2>/dev/null |
  tr '\n' ' ')"
[[ -z $userdata ]] || echo "check-windows-installer: the user's own, kept: $userdata"
