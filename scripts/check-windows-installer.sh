#!/usr/bin/env bash
# check-windows-installer.sh MINGW_BUILD — the Windows installer of the command-line trainer, end
# to end under Wine: CPack's NSIS generator (makensis, Debian's nsis package) packs the mingw
# build's install rules into MINGW_BUILD/package/lorascope-VERSION-win64.exe; the installer runs
# silently into C:\LoRAscope-check\Łukasz (a folder with a non-ASCII letter); the installed
# lorascope-train.exe answers --version and trains the built-in demo for 3 steps with an adapter
# written; "Apps & features" (the uninstall registry key) shows the version; the uninstaller runs
# silently and leaves neither a file, nor the folder, nor the registry key, nor a Start-menu
# entry behind. About 30 s.
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

"$wine" "$dir/Uninstall.exe" /S
"$wineserver" -w  # the uninstaller runs on from a copy of itself in the temporary folder
[[ ! -e "$dir" ]] || fail "the uninstaller left $windir behind: $(find "$dir" | tr '\n' ' ')"
if "$wine" reg query "$uninstallKey" >/dev/null 2>&1; then
  fail "the uninstaller left the registry key $uninstallKey"
fi
[[ ! -e "$startmenu" ]] || fail "the uninstaller left the Start-menu folder $startmenu"
rm -rf "$WINEPREFIX/drive_c/LoRAscope-check"
echo "check-windows-installer: uninstalled; nothing left behind"
