#!/usr/bin/env bash
# check-windows-demo.sh LINUX_BUILD MINGW_BUILD [WORK_DIR] — the built-in demo run of the Windows
# cross-build (lorascope-train.exe under Wine) against the Linux build's: `train --demo --steps 20`
# in each, every step's loss within 1e-5 relative of the other's, and both runs' final adapters
# complete; then `validate-data` of the Wine run's demo dataset with its model, which must read it
# and name it in its report exactly as given. Each build makes its own demo model and dataset (separate caches), so the Windows
# build's generators are compared too. Both runs, and their caches, are under a folder with
# non-ASCII letters, WORK_DIR/Łukasz/日本/ (a user name like that is where Windows users keep their
# files): the arguments and LORASCOPE_CACHE_DIR must reach the programs as UTF-8 (read as UTF-16
# on Windows), and every path stay a path on the way. The runs stay there (WORK_DIR defaults to
# build/windows-demo): WORK_DIR/Łukasz/日本/wine-run/adapter is the adapter to load in PEFT, onto
# WORK_DIR/Łukasz/日本/cache-wine/demo-*/ (scripts/gpu-check.sh peft-adapter).
#   WINE        the Wine loader (default: wine64 on PATH, else /usr/lib/wine/wine64)
#   WINEPREFIX  Wine's prefix (default: MINGW_BUILD/wineprefix, the one `ctest --preset mingw` uses)
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 LINUX_BUILD MINGW_BUILD [WORK_DIR]" >&2; exit 2; }
linux_train="$1/app/lorascope-train"
windows_train="$2/app/lorascope-train.exe"
work="${3:-build/windows-demo}"
wine="${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}"
steps=20
tolerance=1e-5
for f in "$linux_train" "$windows_train" "$wine"; do
  [[ -x $f || -f $f ]] || { echo "check-windows-demo: $f is missing" >&2; exit 1; }
done
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEPREFIX="${WINEPREFIX:-$(realpath "$2")/wineprefix}"

rm -rf "$work"
logs="$work"
work="$work/Łukasz/日本"  # UTF-8 in this script, as the folder names on disk
mkdir -p "$work"
start=$SECONDS
# The same GEMM kernels on both sides: the Windows build's OpenBLAS is built for one target
# (scripts/mingw-deps.sh: HASWELL, AVX2 + FMA), while Debian's picks the processor's own at run
# time (DYNAMIC_ARCH). On an AVX-512 processor that is Cooperlake or SkylakeX, whose sgemm sums in
# another order, and the 20 losses then drift apart by up to 5e-4 relative (seen on an AMD EPYC
# with AVX-512: OpenBLAS 0.3.21 chose Cooperlake); OPENBLAS_CORETYPE holds the Linux run to the
# Windows build's kernels, so what is compared is this project's code on both systems.
OPENBLAS_CORETYPE=Haswell LORASCOPE_CACHE_DIR="$work/cache-linux" "$linux_train" train --demo \
  --steps "$steps" --out "$work/linux-run" >"$logs/linux.log" 2>&1 ||
  { cat "$logs/linux.log"; echo "check-windows-demo: the Linux run failed" >&2; exit 1; }
echo "check-windows-demo: Linux run: $((SECONDS - start)) s"
start=$SECONDS
# Wine turns the Unix side's arguments and environment into UTF-16 by the locale's charset: a
# UTF-8 locale, whatever the machine's default (C.UTF-8 is in every Debian 12).
LC_ALL=C.UTF-8 LORASCOPE_CACHE_DIR="$work/cache-wine" "$wine" "$windows_train" train --demo \
  --steps "$steps" --out "$work/wine-run" >"$logs/wine.log" 2>&1 ||
  { cat "$logs/wine.log"; echo "check-windows-demo: the Wine run failed" >&2; exit 1; }
echo "check-windows-demo: Wine run: $((SECONDS - start)) s"

# "step" and "loss" of each metrics.jsonl line (the writer's own flat JSON objects).
losses() {
  awk '{
    if (match($0, /"step":[0-9]+/)) step = substr($0, RSTART + 7, RLENGTH - 7); else step = "?"
    if (match($0, /"loss":[-+0-9.eE]+/)) loss = substr($0, RSTART + 7, RLENGTH - 7); else loss = "?"
    print step, loss
  }' "$1/metrics.jsonl"
}
losses "$work/linux-run" >"$logs/linux-losses.txt"
losses "$work/wine-run" >"$logs/wine-losses.txt"
status=0
paste "$logs/linux-losses.txt" "$logs/wine-losses.txt" | awk -v tol="$tolerance" -v steps="$steps" '
  function abs(x) { return x < 0 ? -x : x }
  {
    n++
    if ($1 != $3 || $2 == "?" || $4 == "?") { printf "line %d: steps %s and %s, losses %s and %s\n", n, $1, $3, $2, $4; bad++; next }
    rel = abs($2 - $4) / (abs($2) > 0 ? abs($2) : 1)
    if (rel > worst) worst = rel
    if (rel > tol) { printf "step %s: Linux %s, Wine %s (relative %.3g > %g)\n", $1, $2, $4, rel, tol; bad++ }
  }
  END {
    if (n != steps) { printf "%d steps compared, %d expected\n", n, steps; bad++ }
    printf "check-windows-demo: %d steps, worst relative loss difference %.3g (limit %g)\n", n, worst, tol
    exit bad > 0
  }' || status=1
for run in linux-run wine-run; do
  for f in adapter_model.safetensors adapter_config.json; do
    [[ -s $work/$run/adapter/$f ]] || { echo "check-windows-demo: $run/adapter/$f is missing"; status=1; }
  done
done
# A command's file arguments under that folder: validate-data on the Wine run's demo dataset with
# its model (a UTF-8 argument made into a path through the ANSI code page opens nothing).
data="$(find "$work/cache-wine" -maxdepth 1 -name 'lorascope-demo-tasks-*.jsonl' | head -n 1)"
model="$(find "$work/cache-wine" -maxdepth 1 -type d -name 'lorascope-demo-llama-*' | head -n 1)"
if LC_ALL=C.UTF-8 "$wine" "$windows_train" validate-data "$data" --model "$model" --json \
  >"$logs/validate-data.json" 2>&1 && grep -q '"valid_examples": *[1-9]' "$logs/validate-data.json" &&
  grep -qF "\"file\": \"$data\"" "$logs/validate-data.json"; then
  echo "check-windows-demo: validate-data read the demo dataset under Łukasz/日本 and named it"
else
  head -c 2000 "$logs/validate-data.json"
  echo "check-windows-demo: validate-data on $data failed under Wine" >&2
  status=1
fi
# Not required (the losses decide), but worth knowing: whether both builds wrote the same bytes.
if cmp -s "$work/linux-run/adapter/adapter_model.safetensors" \
  "$work/wine-run/adapter/adapter_model.safetensors"; then
  echo "check-windows-demo: the two adapters' weights are bit-identical"
else
  echo "check-windows-demo: the two adapters' weights differ in their bytes (within the losses' limit)"
fi
exit "$status"
