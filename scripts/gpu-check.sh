#!/usr/bin/env bash
# gpu-check.sh — every GPU check in one command, for the NVIDIA machine of the `device` tool
# (Ubuntu 24.04, nvcc 13, no Qt and no -dev headers for OpenBLAS/PCRE2).
#
#   scripts/gpu-check.sh prepare   here: copy the headers that machine lacks into .device/include
#   scripts/gpu-check.sh run [REGEX]
#                                  there: build the hip-nvidia flavour without the GUI, run
#                                  `ctest -L gpu` (only the tests matching REGEX when given) and
#                                  the GPU benchmarks, and copy every result to $OUT (or
#                                  ./gpu-check-results when OUT is unset)
# The device call is: run(command="scripts/gpu-check.sh run", carry=[".device"]).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

prepare() {
  mkdir -p .device/include
  local openblas_dir=/usr/include/x86_64-linux-gnu/openblas-pthread
  cp "$openblas_dir"/cblas.h "$openblas_dir"/openblas_config.h .device/include/
  cp /usr/include/x86_64-linux-gnu/pcre2.h .device/include/ 2>/dev/null || cp /usr/include/pcre2.h .device/include/
  # utf8proc (backend/text's NFC normaliser): Ubuntu 24.04 there has no libutf8proc, so its
  # header and Debian's runtime library travel too; backend/text looks in .device/lib.
  cp /usr/include/utf8proc.h .device/include/
  mkdir -p .device/lib
  cp -L /usr/lib/x86_64-linux-gnu/libutf8proc.so.2 .device/lib/
  echo "gpu-check: headers and libraries for the device machine are in .device/ (git-ignored)"
}

run_checks() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  cmake --preset hip-nvidia -B build/device -DLORASCOPE_BUILD_GUI=OFF \
    -DLORASCOPE_EXTRA_INCLUDE_DIR="$repo/.device/include" >"$out/configure.log" 2>&1 ||
    { tail -40 "$out/configure.log"; exit 1; }
  cmake --build build/device --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  build/device/app/lorascope-train devices | tee "$out/devices.txt"
  # Telemetry cross-check: our readings as JSON, and nvidia-smi's for the same quantities
  # (appended to devices.txt so that the results stay within the 8 files that come back).
  build/device/app/lorascope-train devices --json >"$out/devices.json" || true
  {
    echo "--- nvidia-smi query, same instant as devices.json"
    nvidia-smi --query-gpu=index,name,memory.total,memory.used,temperature.gpu,power.draw,utilization.gpu,utilization.memory,clocks.gr,clocks.mem --format=csv
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  } >>"$out/devices.txt" 2>&1 || true
  local status=0
  local select=()
  if [[ -n "${1:-}" ]]; then
    select=(-R "$1")
  fi
  ctest --test-dir build/device -L gpu "${select[@]}" --output-on-failure 2>&1 |
    tee "$out/ctest-gpu.log" || status=1
  build/device/tests/parity/parity_ops --json "$out/parity.json" >/dev/null || status=1
  # GPU op benchmarks: one file for all of them (at most 8 files come back from the device).
  build/device/tests/parity/bench_attention | tee -a "$out/bench.txt" || status=1
  build/device/tests/parity/bench_gemm | tee -a "$out/bench.txt" || status=1
  exit "$status"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run_checks "${2:-}" ;;
  *)
    echo "usage: scripts/gpu-check.sh prepare | run [REGEX]" >&2
    exit 2
    ;;
esac
