#!/usr/bin/env bash
# bench_cpu.sh — the CPU trainer's benchmark next to PyTorch's, in one run on one machine (the
# issue's performance figures come from the device machine's Xeon, through the `run` tool):
#
#   scripts/reference/bench_cpu.sh [STEPS] [THREADS] [QWEN_STEPS] [QWEN_THREADS]
#
# builds lorascope-train (cpu preset, no GUI; .device/include supplies the OpenBLAS/PCRE2 headers
# that machine lacks, see scripts/gpu-check.sh prepare), then runs `lorascope-train bench` and
# scripts/reference/bench_lora_torch.py for the tiny Llama (STEPS timed steps, default 10) and the
# Qwen2.5-0.5B shape (QWEN_STEPS, default 2; 0 leaves that shape out), one model per process so
# that each peak RSS is that model's own, BENCH_RUNS times (default 3), ours and PyTorch's
# interleaved. Results go to $OUT (or ./bench-results): every table in bench.txt, and in
# bench-summary.txt the median tokens/s of the runs at each thread count with their spread
# (min-max), ours over PyTorch's, and the median of each run's own ratio
# (scripts/reference/bench_cpu_summary.py).
# LORASCOPE_TRAIN=PATH uses a lorascope-train built elsewhere instead (a Debian 12 cpu build runs
# on that machine; it saves the device's build minutes): no configure, no build.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
out="${OUT:-$repo/bench-results}"
steps="${1:-10}" threads="${2:-1,2,16}" qwen_steps="${3:-2}" qwen_threads="${4:-$threads}"
runs="${BENCH_RUNS:-3}"
mkdir -p "$out"
bench="${LORASCOPE_TRAIN:-}"
if [[ -z "$bench" ]]; then
  extra=()
  if [[ -d "$repo/.device/include" ]]; then
    extra=(-DLORASCOPE_EXTRA_INCLUDE_DIR="$repo/.device/include")
  fi
  cmake --preset cpu -B build/bench-cpu -DLORASCOPE_BUILD_GUI=OFF "${extra[@]}" >"$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; exit 1; }
  cmake --build build/bench-cpu --target lorascope-train --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error" "$out/build.log" | head -30; exit 1; }
  bench=build/bench-cpu/app/lorascope-train
elif [[ -d "$repo/.device/lib" ]]; then
  export LD_LIBRARY_PATH="$repo/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|Flags" | cut -c1-300 >"$out/cpu.txt"
for run in $(seq "$runs"); do
  echo "=== run $run of $runs ==="
  "$bench" bench --model tiny --threads "$threads" --steps "$steps" --profile
  python3 scripts/reference/bench_lora_torch.py --model tiny --threads "$threads" --steps "$steps"
  if ((qwen_steps > 0)); then
    "$bench" bench --model qwen --threads "$qwen_threads" --steps "$qwen_steps" --profile
    python3 scripts/reference/bench_lora_torch.py --model qwen --threads "$qwen_threads" \
      --steps "$qwen_steps"
  fi
done 2>&1 | tee "$out/bench.txt"
python3 scripts/reference/bench_cpu_summary.py "$out/bench.txt" | tee "$out/bench-summary.txt"
