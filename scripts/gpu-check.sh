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
#   scripts/gpu-check.sh parity [OP ...]
#                                  there: build parity_ops only and run it once per OP (a substring
#                                  of the op names, e.g. attention geglu softcap; every op when
#                                  none is given); the results go to $OUT/parity-OP.json and the
#                                  table to parity.txt. The quick check of new kernels (~2 min).
#   scripts/gpu-check.sh bench [SHAPE ...]
#                                  there: build bench_gpu_train only (or use BENCH_PROGRAM, one
#                                  built here for hip-nvidia and carried) and run it beside
#                                  scripts/reference/bench_lora_gpu_torch.py on each shape
#                                  (default: qwen2.5-0.5b llama-3.2-1b), one process per run, every
#                                  configuration BENCH_RUNS times (default 3), the runs interleaved;
#                                  results go to $OUT/bench.jsonl, the logs to bench.log, the
#                                  comparison (medians, spread, peaks, share of the physical limit;
#                                  scripts/reference/bench_gpu_summary.py) to bench-summary.txt.
#                                  BENCH_IMPLS names the configurations (default: vendor
#                                  eager-plain compile; also built-in, eager (PEFT's input casts
#                                  on), compile-plain, baseline: BENCH_BASELINE, a second
#                                  bench_gpu_train, e.g. main's, run as lorascope-baseline).
#                                  BENCH_WARMUP, BENCH_STEPS and BENCH_PROFILE_STEPS set the step
#                                  counts (default 3, 20, 3).
#   scripts/gpu-check.sh ncu [REGEX]
#                                  there: build bench_gpu_train only (or use BENCH_PROGRAM) and run
#                                  Nsight Compute (/usr/local/cuda/bin/ncu) on launches of
#                                  `bench_gpu_train --shape NCU_SHAPE (llama-3.2-1b)
#                                  --prompt-percent 50 --warmup 1 --steps 1`: with REGEX, NCU_COUNT
#                                  (default 8) launches of the kernels whose name matches it after
#                                  the first NCU_SKIP (default 0) of them; without, NCU_COUNT (40)
#                                  launches after the first NCU_SKIP (1100, inside the timed
#                                  step's forward). Sections: speed of light, occupancy, launch
#                                  statistics, warp state, scheduler, compute and memory workload.
#                                  ncu.csv and its table by scripts/ncu_summary.py (ncu.txt: time,
#                                  SM and DRAM throughput, occupancy, registers, issue slots,
#                                  eligible warps, the busiest pipeline) go to $OUT. ncu locks the
#                                  clocks, so compare launches within one run.
#   scripts/gpu-check.sh memory [ARGS]
#                                  there: build bench_memory_model only and run it: the memory
#                                  model's estimate (model/MemoryEstimate.h) beside real steps'
#                                  peak allocated and peak reserved, both reference shapes, with
#                                  and without activation checkpointing (ARGS go to the program,
#                                  e.g. --batch 4 --seq 1024); table in $OUT/memory.txt
#   scripts/gpu-check.sh doctor    there: build lorascope-train only and run `lorascope-train
#                                  doctor --bundle` as a user would; the report and the bundle
#                                  (report.json inside) land in $OUT/doctor.txt, doctor-bundle.tar
#   scripts/gpu-check.sh hf RUN_DIR TEMPLATES_DIR
#                                  there, no build: the Hugging Face ecosystem checks in Python —
#                                  TensorBoard, transformers and huggingface_hub read RUN_DIR (a run
#                                  folder made here by `lorascope-train train`;
#                                  scripts/reference/hf_run_check.py), and transformers renders
#                                  TEMPLATES_DIR/*.jinja (../shared/fixtures/chat_templates, copied
#                                  in: shared/ does not travel) into
#                                  $OUT/chat_template_reference.json
#                                  (scripts/reference/chat_templates.py; commit it as
#                                  tests/text/data/chat_template_reference.json)
#   scripts/gpu-check.sh peft-adapter BASE_DIR ADAPTER_DIR [ADAPTER_DIR ...]
#                                  there, no build: Hugging Face PEFT loads each adapter a run wrote
#                                  (e.g. the Windows cross-build's demo run under Wine and the Linux
#                                  build's, from scripts/check-windows-demo.sh) onto BASE_DIR on the
#                                  GPU, against W + scale·B·A applied by hand and against each
#                                  other (scripts/reference/peft_adapter_check.py); report in
#                                  $OUT/peft_adapter_check.json
#   scripts/gpu-check.sh record [PROGRAM]
#                                  there: build lorascope-train only (or use PROGRAM, a
#                                  hip-nvidia lorascope-train built here — `cmake --preset
#                                  hip-nvidia -B build/nv -DLORASCOPE_BUILD_GUI=OFF`, stripped —
#                                  which saves the device's build minutes) and run
#                                  scripts/record_gpu_run.py: a real run driven over the engine's
#                                  stdio protocol (queue depth, memory, toggles, a snapshot, an
#                                  injected hang); the event streams, the snapshot and a summary go
#                                  to $OUT (to be replayed here by scripts/screenshots.sh).
#                                  RECORD_GPUS=0,1 (the nvidia-h200-x2 kind): the same as a group,
#                                  `train --gpus 0,1 --json` driven over stdin, the hang in rank 1
#                                  (tests/widgets/fixtures/h200x2_*.jsonl)
#   scripts/gpu-check.sh supervise
#                                  there: build lorascope-train only, in the cpu flavour (the
#                                  supervisor runs no GPU code of ours: PyTorch computes), and run
#                                  scripts/reference/cuda_lora.py (a plain PyTorch LoRA on CUDA)
#                                  under `lorascope-train supervise` with the probe, its batch too
#                                  large for its 4 GiB memory cap: the OOM is classified and the
#                                  ladder halves the batch through --batch-arg until it fits;
#                                  scripts/reference/probe_snapshot_fixture.py writes the snapshot
#                                  fixtures (commit them as tests/external/data/). Output, events,
#                                  fixtures and a summary (supervise_summary.py) go to $OUT.
#                                  LORASCOPE_TRAIN=PATH: a lorascope-train built elsewhere (a
#                                  Debian 12 build runs there with .device/lib), used when it
#                                  starts
#   scripts/gpu-check.sh trainers  there: the trainer output fixtures and the supervised Trainer
#                                  jobs of tests/external/fixtures in one call: `pip show`,
#                                  record_trainers.sh (transformers Trainer + PEFT, accelerate,
#                                  Lightning: raw stdout/stderr and log_history) into
#                                  $OUT/recorded, then supervise_gpu.sh (an OOM ladder and an
#                                  illegal access resumed, with and without the probe, checked by
#                                  compare_steps.py) into $OUT/supervised; LORASCOPE_TRAIN as for
#                                  supervise (required: no build there). Tar $OUT: it holds more
#                                  files than come back one by one.
#   scripts/gpu-check.sh group [PROGRAM]
#                                  there: the data-parallel group through the real NCCL path
#                                  (tests/group/gpu_group_nccl: PROGRAM, a hip-nvidia build carried
#                                  in, or built there): one rank's collectives and trainer; with
#                                  2 GPUs or more (nvidia-h200-x2), two processes, one per GPU,
#                                  first over NCCL's default transports, then over its socket
#                                  transport alone (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1), each
#                                  rank's curve against the one-GPU curve, then the trainer's
#                                  tokens/s alone and as 2 ranks on the Qwen2.5-0.5B and
#                                  Llama-3.2-1B shapes (micro-batch 8 x 512 per GPU), then the
#                                  product as a user runs it: `lorascope-train train --demo --gpus
#                                  0,1` (one engine per GPU under the supervisor) against `--gpus 0`
#                                  at the same effective batch, 50 steps, each loss within 1e-3
#                                  relative (tests/group/compare_curves.py; LORASCOPE_TRAIN: a
#                                  hip-nvidia lorascope-train carried in, else built there). NCCL
#                                  refuses two ranks on one GPU, so one GPU runs the one-rank checks
#                                  only and says so. Report in $OUT/group.txt
#   scripts/gpu-check.sh torchrun-nccl
#                                  there (2 GPUs: the nvidia-h200-x2 kind): a 2-process torchrun job
#                                  of tests/external/scripts/ddp_train.py (DistributedDataParallel,
#                                  nccl, rank r on cuda:r, a checkpoint every DDP_SAVE_EVERY (3)
#                                  steps of DDP_STEPS (12)) under `lorascope-train supervise`;
#                                  rank 1 kills itself with SIGKILL at step DDP_KILL_AT (7).
#                                  check_ddp_run.py asserts steps 1..N once each with rank 0's
#                                  losses, one incident naming the killed process, the group
#                                  restarted from the newest checkpoint, the run finished (the
#                                  checks of ctest cli_supervise_torchrun on the CPU). Report,
#                                  events, metrics and the command's log in $OUT; LORASCOPE_TRAIN
#                                  as for supervise (else built there, in the cpu flavour).
#   scripts/gpu-check.sh qlora     there: the 4-bit (QLoRA) checks in one call, results to $OUT:
#                                  `pip show bitsandbytes`; scripts/reference/nf4.py's NF4
#                                  reference (nf4_reference.json; commit it as
#                                  tests/compute/data/nf4_reference.json); the nf4 parity cases
#                                  (parity.json); a Llama-3.1-8B-shaped random model
#                                  (scripts/reference/random_model.py) trained by bench_gpu_train
#                                  at B1 x S2048 with activation checkpointing, --quantize nf4 and
#                                  bf16 (tokens/s, peak reserved, the memory model's estimate;
#                                  bench.jsonl); bench_gemm's NF4 lines; the QLoRA loss curve
#                                  against scripts/reference/qlora_curve.py's committed NF4
#                                  reference and `generate --quantize nf4` (ctest gpu_train_qlora,
#                                  gpu_generate_nf4); the log in qlora.txt.
#                                  QLORA_STEPS sets the timed steps (default 4).
#   scripts/gpu-check.sh generate  there: scripts/reference/generate.py writes transformers' greedy
#                                  generate references (and the reference adapter) into
#                                  tests/model/data (tarred to $OUT/generate-reference.tar: commit
#                                  its files), then builds gpu_generate and parity_ops only and runs
#                                  the attention_cached parity cases and gpu_generate: the KV-cache
#                                  decoder and an adapter on the GPU against those references
#   scripts/gpu-check.sh mirror    there: build gpu_train and bench_gpu_train only and run what the
#                                  state mirror's download touches (ctest gpu_train_mirror, _resume,
#                                  _engine, _parity), then bench_gpu_train --mirror on the Qwen
#                                  shape: the engine thread's time between steps before and now,
#                                  the writer's, and a step beside the download (mirror.txt,
#                                  bench.jsonl). MIRROR_BOUNDARIES sets the step boundaries timed
#                                  (default 5). MIRROR_PROGRAMS=DIR: gpu_train and bench_gpu_train
#                                  built here for hip-nvidia (stripped) and carried, run as they
#                                  are instead of built there (gpu_train reads its fixtures from
#                                  this checkout: LORASCOPE_TEST_SOURCE_DIR). About 3 minutes
#                                  with the build, 1 without.
#   scripts/gpu-check.sh loop [NAME=PROGRAM ...]
#                                  there: the product's loop timed from outside
#                                  (scripts/bench_engine_loop.py): `lorascope-train engine` over
#                                  stdio on a random Qwen2.5-0.5B-shaped folder saved by
#                                  transformers and the alpaca fixture (LOOP_DATA, default
#                                  ../shared/fixtures/datasets/alpaca_en_demo.json, which prepare
#                                  copies into .device/data), B8 x S512:
#                                  delivered real tokens/s over the wall-clock time between
#                                  step completions (metrics.jsonl's cycle_seconds; the events'
#                                  arrivals beside it), the step cycle against the step's own
#                                  time, the shown
#                                  and the compute-only tokens/s, the engine's breakdown of each
#                                  cycle (with LORASCOPE_OP_TIMING=1 in the environment also its
#                                  device time per op); beside it the kernel-only figure
#                                  (bench_gpu_train on the same folder, every position a real
#                                  token). Each PROGRAM is a
#                                  hip-nvidia lorascope-train built here and carried (e.g.
#                                  before=build/nv-main/lorascope-train
#                                  after=build/nv/lorascope-train); none: lorascope-train and
#                                  bench_gpu_train are built there. LOOP_BENCH: a carried
#                                  bench_gpu_train; LOOP_RUNS (3), LOOP_STEPS (40), LOOP_PACKING=1
#                                  (--packing: causal) or =documents (--packing documents),
#                                  LOOP_COMPARE="OPTION ..." (boolean run options, e.g. graph:
#                                  each program also runs with each on, interleaved),
#                                  LOOP_SHAPES (default qwen2.5-0.5b; also llama-3.2-1b: each in
#                                  its own folder under the output), LOOP_TORCH="IMPL ..." (PyTorch
#                                  beside it, interleaved: compile, compile-plain, eager,
#                                  eager-plain; the ratios and the share of the physical limit
#                                  in the summary), LOOP_GPUS="LIST ..." (e.g. "0 0,1": each
#                                  program as `train --gpus LIST --json`, B x S per GPU, and
#                                  each LOOP_TORCH on those GPUs, torchrun + DDP for several;
#                                  the scaling over the first list in the summary: the
#                                  nvidia-h200-x2 kind), LOOP_DATA (a dataset carried in, e.g. in
#                                  .device/: shared/ does not travel), LOOP_OUT (default $OUT).
#                                  Results in summary.txt and runs.jsonl.
#   scripts/gpu-check.sh try-it [DIR]
#                                  there: Try it's GPU fault test (ctest gpu_try_it_fault, also in
#                                  `run`): Try it's supervised engine generating on the GPU, an
#                                  injected illegal address and a SIGSEGV while generating; each
#                                  ends the generation as failed, restarts the engine, and the
#                                  caller stays up and generates again (tests/engine/
#                                  try_it_engine_fault.cpp). DIR holds lorascope-train and
#                                  try_it_engine_fault built here for hip-nvidia (stripped) and
#                                  carried; none: both are built there. The log in $OUT/try-it.txt.
# The device call is: run(command="scripts/gpu-check.sh run", carry=[".device"]).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# The test programs run directly below (gpu_train, gpu_group_nccl, ...) find tests/*/data here, as
# CTest tells them (tests/support/TestPaths.h).
export LORASCOPE_TEST_SOURCE_DIR="$repo"

prepare() {
  mkdir -p .device/include
  local openblas_dir=/usr/include/x86_64-linux-gnu/openblas-pthread
  cp "$openblas_dir"/cblas.h "$openblas_dir"/openblas_config.h .device/include/
  cp /usr/include/x86_64-linux-gnu/pcre2.h .device/include/ 2>/dev/null || cp /usr/include/pcre2.h .device/include/
  # utf8proc (backend/text's NFC normaliser, backend/jinja's case mappings): Ubuntu 24.04 there
  # has no libutf8proc, so its header and Debian's runtime library travel too; backend/ looks in
  # .device/lib.
  cp /usr/include/utf8proc.h .device/include/
  mkdir -p .device/lib
  cp -L /usr/lib/x86_64-linux-gnu/libutf8proc.so.2 .device/lib/
  # The loop benchmark's dataset: ../shared does not travel to the device machine.
  mkdir -p .device/data
  cp ../shared/fixtures/datasets/alpaca_en_demo.json .device/data/
  echo "gpu-check: headers, libraries and data for the device machine are in .device/ (git-ignored)"
}

run_checks() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  configure_device_build "$out"
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
  # The same shapes on the vector-ALU attention kernels: the matrix cores' speed-up.
  LORASCOPE_ATTENTION_KERNEL=vector build/device/tests/parity/bench_attention |
    tee -a "$out/bench.txt" || status=1
  build/device/tests/parity/bench_gemm | tee -a "$out/bench.txt" || status=1
  exit "$status"
}

configure_device_build() {
  local out="$1"
  cmake --preset hip-nvidia -B build/device -DLORASCOPE_BUILD_GUI=OFF \
    -DLORASCOPE_EXTRA_INCLUDE_DIR="$repo/.device/include" >"$out/configure.log" 2>&1 ||
    { tail -40 "$out/configure.log"; exit 1; }
}

run_try_it() {
  local out="${OUT:-$repo/gpu-check-results}" dir="${1:-}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  if [[ -z "$dir" ]]; then
    configure_device_build "$out"
    cmake --build build/device --target lorascope-train try_it_engine_fault \
      --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
      { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
    rm -f "$out/build.log" "$out/configure.log"
    dir=build/device
    cp build/device/app/lorascope-train build/device/tests/engine/try_it_engine_fault "$dir"/
  fi
  # utf8proc travels in .device/lib (prepare); cuBLAS is the toolkit's.
  LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$dir/try_it_engine_fault" gpu "$(cd "$dir" && pwd)/lorascope-train" 2>&1 |
    tee "$out/try-it.txt"
  exit "${PIPESTATUS[0]}"
}

run_parity() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  configure_device_build "$out"
  cmake --build build/device --target parity_ops --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  rm -f "$out/build.log" "$out/configure.log"
  local status=0 op
  local ops=("$@")
  ((${#ops[@]})) || ops=("")
  for op in "${ops[@]}"; do
    build/device/tests/parity/parity_ops --json "$out/parity-${op:-all}.json" --filter "$op" |
      tee -a "$out/parity.txt" || status=1
  done
  exit "$status"
}

run_record() {
  local out="${OUT:-$repo/gpu-check-results}" program="${1:-}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  if [[ -z "$program" ]]; then
    configure_device_build "$out"
    cmake --build build/device --target lorascope-train --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
      { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
    rm -f "$out/build.log" "$out/configure.log"
    program=build/device/app/lorascope-train
  fi
  # utf8proc travels in .device/lib (prepare); cuBLAS is the toolkit's.
  LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    python3 scripts/record_gpu_run.py "$program" "$out"
}

run_loop() {
  local out="${LOOP_OUT:-${OUT:-$repo/gpu-check-results}}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  local programs=("$@") bench="${LOOP_BENCH:-}"
  if [[ ${#programs[@]} -eq 0 ]]; then
    configure_device_build "$out"
    cmake --build build/device --target lorascope-train bench_gpu_train --parallel "$(nproc)" \
      >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
    rm -f "$out/build.log" "$out/configure.log"
    programs=("lorascope-train=build/device/app/lorascope-train")
    bench=build/device/tests/bench/bench_gpu_train
  fi
  local args=()
  for program in "${programs[@]}"; do
    args+=(--program "$program")
  done
  [[ -n "$bench" ]] && args+=(--kernel-bench "$bench")
  case "${LOOP_PACKING:-0}" in
    0 | off) ;;
    1 | causal) args+=(--packing causal) ;;
    documents) args+=(--packing documents) ;;
    *)
      echo "gpu-check: LOOP_PACKING must be 0, 1, causal or documents (got '$LOOP_PACKING')" >&2
      exit 2
      ;;
  esac
  local option impl shape status=0
  for option in ${LOOP_COMPARE:-}; do
    args+=(--compare "$option")
  done
  for impl in ${LOOP_TORCH:-}; do
    args+=(--torch "$impl")
  done
  local gpus
  for gpus in ${LOOP_GPUS:-}; do
    args+=(--gpus "$gpus")
  done
  local shapes
  read -ra shapes <<<"${LOOP_SHAPES:-qwen2.5-0.5b}"
  for shape in "${shapes[@]}"; do
    local shape_out="$out"
    ((${#shapes[@]} == 1)) || shape_out="$out/$shape"
    LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      python3 scripts/bench_engine_loop.py "$shape_out" --shape "$shape" \
      --data "${LOOP_DATA:-.device/data/alpaca_en_demo.json}" \
      --runs "${LOOP_RUNS:-3}" --steps "${LOOP_STEPS:-40}" "${args[@]}" || status=1
  done
  exit "$status"
}

run_doctor() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  configure_device_build "$out"
  local started=$SECONDS
  cmake --build build/device --target lorascope-train --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  echo "gpu-check: lorascope-train built in $((SECONDS - started)) s"
  local status=0
  started=$SECONDS
  build/device/app/lorascope-train doctor --bundle "$out/doctor-bundle.tar" 2>&1 |
    tee "$out/doctor.txt" || status=1
  echo "gpu-check: doctor took $((SECONDS - started)) s"
  exit "$status"
}

# Builds bench_gpu_train alone into build/device and prints its path (the build's errors go to
# stderr and the status is 1 when it fails).
build_bench_program() {
  local out="$1"
  configure_device_build "$out" >&2
  cmake --build build/device --target bench_gpu_train --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40 >&2; return 1; }
  rm -f "$out/build.log" "$out/configure.log"
  echo build/device/tests/bench/bench_gpu_train
}

run_bench() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  local shapes=("$@")
  ((${#shapes[@]})) || shapes=(qwen2.5-0.5b llama-3.2-1b)
  local warmup="${BENCH_WARMUP:-3}" steps="${BENCH_STEPS:-20}" profile="${BENCH_PROFILE_STEPS:-3}"
  local runs="${BENCH_RUNS:-3}" program="${BENCH_PROGRAM:-}" baseline="${BENCH_BASELINE:-}"
  local impls
  read -ra impls <<<"${BENCH_IMPLS:-vendor eager-plain compile}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  export LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -n "$program" ]] || program="$(build_bench_program "$out")" || exit 1
  local status=0 log="$out/bench.log" results="$out/bench.jsonl" run shape impl
  for shape in "${shapes[@]}"; do
    for ((run = 1; run <= runs; ++run)); do
      for impl in "${impls[@]}"; do
        echo "=== $shape $impl run $run/$runs ($warmup warm-up, $steps timed, $profile profiled steps)" |
          tee -a "$log"
        local started=$SECONDS
        local ours=(--shape "$shape" --warmup "$warmup" --steps "$steps" --profile-steps "$profile"
          --json "$results")
        case "$impl" in
          vendor | built-in)
            "$program" "${ours[@]}" --gemm "$impl" 2>&1 | tee -a "$log" || status=1
            ;;
          baseline)
            [[ -x "$baseline" ]] || { echo "BENCH_BASELINE is not a program: '$baseline'" | tee -a "$log"; status=1; continue; }
            "$baseline" "${ours[@]}" --gemm vendor --label lorascope-baseline 2>&1 | tee -a "$log" ||
              status=1
            ;;
          eager | compile | eager-plain | compile-plain)
            local lora=peft
            [[ "$impl" == *-plain ]] && lora=plain
            PYTHONUNBUFFERED=1 python3 scripts/reference/bench_lora_gpu_torch.py --shape "$shape" \
              --mode "${impl%-plain}" --lora "$lora" --warmup "$warmup" --steps "$steps" \
              --json "$results" 2>&1 | tee -a "$log" || status=1
            ;;
          *) echo "unknown BENCH_IMPLS entry: $impl" | tee -a "$log"; status=1 ;;
        esac
        echo "    ($((SECONDS - started)) s)" | tee -a "$log"
      done
    done
  done
  python3 scripts/reference/bench_gpu_summary.py "$results" | tee "$out/bench-summary.txt" ||
    status=1
  exit "$status"
}

run_ncu() {
  local out="${OUT:-$repo/gpu-check-results}" regex="${1:-}" program="${BENCH_PROGRAM:-}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  local ncu=/usr/local/cuda/bin/ncu
  [[ -x "$ncu" ]] || { echo "gpu-check: Nsight Compute is not at $ncu on this machine" >&2; exit 1; }
  export LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -n "$program" ]] || program="$(build_bench_program "$out")" || exit 1
  local select=(--launch-skip "${NCU_SKIP:-1100}" --launch-count "${NCU_COUNT:-40}")
  if [[ -n "$regex" ]]; then
    select=(--kernel-name "regex:$regex" --launch-skip "${NCU_SKIP:-0}" --launch-count "${NCU_COUNT:-8}")
  fi
  local sections=()
  local section
  for section in SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats \
    ComputeWorkloadAnalysis MemoryWorkloadAnalysis; do
    sections+=(--section "$section")
  done
  "$ncu" "${sections[@]}" "${select[@]}" --csv --page details "$program" \
    --shape "${NCU_SHAPE:-llama-3.2-1b}" --prompt-percent 50 --warmup 1 --steps 1 \
    --profile-steps 0 >"$out/ncu.csv" 2>"$out/ncu.log" ||
    { tail -20 "$out/ncu.log" >&2; exit 1; }
  python3 scripts/ncu_summary.py "$out/ncu.csv" | tee "$out/ncu.txt"
  exit "${PIPESTATUS[0]}"
}

run_memory() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  configure_device_build "$out"
  cmake --build build/device --target bench_memory_model --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  build/device/tests/bench/bench_memory_model "$@" 2>&1 | tee "$out/memory.txt"
  exit "${PIPESTATUS[0]}"
}

# The supervisor's lorascope-train into $bin: LORASCOPE_TRAIN when it starts, else the cpu flavour
# built here (the supervisor runs no GPU code of ours). Logs go to $1.
supervise_program() {
  local out=$1 started=$SECONDS
  bin=build/device-cpu/app/lorascope-train
  export LD_LIBRARY_PATH="$repo/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [[ -n ${LORASCOPE_TRAIN:-} ]] && "$LORASCOPE_TRAIN" --version >/dev/null 2>&1; then
    bin=$LORASCOPE_TRAIN  # built elsewhere and carried in (saves the device's time)
    echo "gpu-check: using $bin"
    return
  fi
  cmake --preset cpu -B build/device-cpu -DLORASCOPE_BUILD_GUI=OFF \
    -DLORASCOPE_EXTRA_INCLUDE_DIR="$repo/.device/include" >"$out/configure.log" 2>&1 ||
    { tail -40 "$out/configure.log"; exit 1; }
  cmake --build build/device-cpu --target lorascope-train --parallel "$(nproc)" \
    >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  rm -f "$out/build.log" "$out/configure.log"
  echo "gpu-check: lorascope-train (cpu flavour) built in $((SECONDS - started)) s"
}

run_supervise() {
  local out="${OUT:-$repo/gpu-check-results}" bin
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  supervise_program "$out"
  local started status=0 work
  work=$(mktemp -d)
  PYTHONPATH=python python3 scripts/reference/probe_snapshot_fixture.py "$out" || status=1
  started=$SECONDS
  PYTHONPATH=python "$bin" supervise --out "$work/run" \
    --batch-arg "--batch-size {batch}" --batch 512 --resume-arg "--resume {checkpoint_dir}" \
    --checkpoint-glob "$work/ck/checkpoint-*" -- \
    python3 -m lorascope_probe scripts/reference/cuda_lora.py --out "$work/ck" --steps 12 \
    >"$out/supervise.txt" 2>&1 || status=1
  echo "gpu-check: supervised run took $((SECONDS - started)) s (exit status $status)"
  cp "$work/run/events.jsonl" "$out/events.jsonl"
  python3 scripts/reference/supervise_summary.py "$out/events.jsonl" | tee "$out/summary.txt" ||
    status=1
  exit "$status"
}

run_trainers() {
  local out="${OUT:-$repo/gpu-check-results}" fixtures=$repo/tests/external/fixtures
  [[ -n ${LORASCOPE_TRAIN:-} ]] || { echo "gpu-check: set LORASCOPE_TRAIN" >&2; exit 2; }
  export LD_LIBRARY_PATH="$repo/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONUNBUFFERED=1
  local status=0
  bash "$fixtures/record_trainers.sh" "$out/recorded" || status=1
  bash "$fixtures/supervise_gpu.sh" "$LORASCOPE_TRAIN" "$repo/python" "$out/supervised" ||
    status=1
  exit "$status"
}

run_torchrun_nccl() {
  local out="${OUT:-$repo/gpu-check-results}" bin
  mkdir -p "$out"
  local report=$out/report.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  (($(nvidia-smi -L | wc -l) >= 2)) || { echo "gpu-check: torchrun-nccl needs 2 GPUs" | tee "$report"; exit 2; }
  supervise_program "$out"
  local steps=${DDP_STEPS:-12} save=${DDP_SAVE_EVERY:-3} kill_at=${DDP_KILL_AT:-7} status=0 work
  work=$(mktemp -d)
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version(), \
'gpus', torch.cuda.device_count())" | tee "$report"
  local command=("$bin" supervise --telemetry=false --grace 5 --out "$work/run"
    --resume-arg "--resume {checkpoint_dir}" --checkpoint-glob "$work/ddp-out/checkpoint-*" --
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 --monitor_interval 1
    --redirects "0:2,1:2" --tee "0:1,1:1" --log_dir "$work/logs" tests/external/scripts/ddp_train.py
    --out "$work/ddp-out" --backend nccl --device cuda --steps "$steps" --save-every "$save"
    --kill-rank 1 --kill-at "$kill_at")
  echo "command: ${command[*]}" | tee -a "$report"
  local started=$SECONDS
  PYTHONUNBUFFERED=1 timeout 240 "${command[@]}" >"$out/supervise.txt" 2>&1 || status=1
  echo "supervise: exit status $status in $((SECONDS - started)) s" | tee -a "$report"
  cp "$work/run/events.jsonl" "$work/run/metrics.jsonl" "$work/run/command.log" \
    "$work/run/config.json" "$work/ddp-out/truth-rank0.json" "$out/" 2>/dev/null || status=1
  python3 tests/external/scripts/check_ddp_run.py "$work/run" "$work/ddp-out" 1 "$kill_at" \
    "$save" "$steps" 2>&1 | tee -a "$report" || status=1
  {
    echo "--- events.jsonl: incidents, errors, states, profile switches"
    grep -E '"type":"(incident|error|state|profile_switch)"' "$out/events.jsonl" || true
    echo "--- command.log: the PIDs, torchrun's report of the failure, the restart"
    grep -E "rank [01] pid|SIGKILL|--resume|Signal|exitcode" "$out/command.log" | head -20 || true
  } >>"$report"
  echo "gpu-check: torchrun-nccl $( ((status == 0)) && echo passed || echo FAILED)" | tee -a "$report"
  exit "$status"
}

run_group() {
  local out="${OUT:-$repo/gpu-check-results}" program=${1:-} status=0
  mkdir -p "$out"
  local report=$out/group.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  if [[ -z $program ]]; then
    cmake --preset hip-nvidia -DLORASCOPE_BUILD_GUI=OFF \
      -DLORASCOPE_EXTRA_INCLUDE_DIR="$repo/.device/include" >"$out/configure.log" 2>&1 ||
      { tail -40 "$out/configure.log"; exit 1; }
    cmake --build build/hip-nvidia --target gpu_group_nccl lorascope-train --parallel "$(nproc)" \
      >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
    program=build/hip-nvidia/tests/group/gpu_group_nccl
  fi
  # libnccl.so.2 of the CUDA toolkit, where the loader may not look by itself.
  export LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local model=tests/model/data/llama_f32_legacy_rope
  for mode in collectives train; do
    echo "--- 1 rank: gpu_group_nccl $mode" | tee -a "$report"
    "$program" "$mode" --model "$model" 2>&1 | tee -a "$report" || status=1
  done
  local gpus
  gpus=$(nvidia-smi -L | wc -l)
  if ((gpus < 2)); then
    echo "--- 2 ranks: not run: this machine has $gpus GPU, and NCCL refuses two ranks on one" \
      "GPU; the two-process checks (default and socket transport), the scaling and" \
      "lorascope-train train --gpus 0,1 against --gpus 0 need nvidia-h200-x2" |
      tee -a "$report"
  else
    local transport
    for transport in default socket; do
      echo "--- 2 ranks, 2 processes, GPUs 0 and 1, transport: $transport" | tee -a "$report"
      local rendezvous pids=() r
      rendezvous=$(mktemp -u)
      for r in 0 1; do
        if [[ $transport == socket ]]; then
          NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
            "$program" rank "$r" 2 "$r" "$rendezvous" --model "$model" >"$out/rank$r-$transport.txt" 2>&1 &
        else
          "$program" rank "$r" 2 "$r" "$rendezvous" --model "$model" >"$out/rank$r-$transport.txt" 2>&1 &
        fi
        pids+=($!)
      done
      for r in 0 1; do
        wait "${pids[$r]}" || status=1
        grep -E "^(rank|PASS|FAIL|[0-9]+ steps)" "$out/rank$r-$transport.txt" | tee -a "$report"
      done
      grep -hE "NET/Socket|Using network|via P2P|via SHM" "$out"/rank*-"$transport".txt | sort -u |
        head -6 | tee -a "$report" || true
    done
    local shape
    for shape in qwen2.5-0.5b llama-3.2-1b; do
      echo "--- scaling, $shape: the trainer's loop alone and as rank 0 and 1 of 2" | tee -a "$report"
      local rendezvous pids=() r
      rendezvous=$(mktemp -u)
      for r in 0 1; do
        "$program" scale "$shape" "$r" 2 "$r" "$rendezvous" >"$out/scale-$shape-rank$r.txt" 2>&1 &
        pids+=($!)
      done
      for r in 0 1; do wait "${pids[$r]}" || status=1; done
      grep -hE "tokens/s|FAIL" "$out"/scale-"$shape"-rank*.txt | tee -a "$report"
    done
    # The product: the supervisor forms the group (one engine per GPU), rank 0 writes the run.
    local train_bin=${LORASCOPE_TRAIN:-$(dirname "$program")/../../app/lorascope-train}
    local demo=(train --demo --steps 50 --batch-size 4 --grad-accum 2 --lora-dropout 0.1 --seed 7
      --checkpoint-every 0)
    local gpus_list
    for gpus_list in 0 0,1; do
      local run=$out/train-gpus-${gpus_list//,/-}  # no comma: $OUT's names come back plain
      echo "--- lorascope-train ${demo[*]} --gpus $gpus_list" | tee -a "$report"
      rm -rf "$run"
      "$train_bin" "${demo[@]}" --gpus "$gpus_list" --out "$run" >"$run.txt" 2>&1 || status=1
      tail -3 "$run.txt" | tee -a "$report"
    done
    python3 tests/group/compare_curves.py "$out/train-gpus-0/metrics.jsonl" \
      "$out/train-gpus-0-1/metrics.jsonl" 1e-3 | tee -a "$report" || status=1
  fi
  echo "gpu-check: group $( ((status == 0)) && echo passed || echo FAILED)" | tee -a "$report"
  exit "$status"
}

run_generate() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
  local started=$SECONDS
  python3 scripts/reference/generate.py tests/model/data 2>&1 | tee "$out/generate-reference.txt"
  tar -cf "$out/generate-reference.tar" tests/model/data/*/generate.json \
    tests/model/data/*/adapter
  echo "gpu-check: references in $((SECONDS - started)) s"
  configure_device_build "$out"
  started=$SECONDS
  cmake --build build/device --target gpu_generate parity_ops --parallel "$(nproc)" \
    >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
  echo "gpu-check: gpu_generate and parity_ops built in $((SECONDS - started)) s"
  rm -f "$out/build.log" "$out/configure.log"
  local status=0
  build/device/tests/parity/parity_ops --filter attention_cached 2>&1 |
    tee "$out/parity-attention-cached.txt" || status=1
  ctest --test-dir build/device -L gpu -R gpu_generate --output-on-failure 2>&1 |
    tee "$out/ctest-generate.log" || status=1
  exit "$status"
}

run_hf() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  local status=0
  # Not fatal: the Python checks below print the versions they import, too.
  local python="${PYTHON:-python3}"  # the Python that has tensorboard and transformers
  { "$python" -m pip show tensorboard transformers huggingface_hub jinja2 2>&1 || true; } |
    grep -E "^(Name|Version|Location):|WARNING|No module" | tee "$out/hf-versions.txt" || true
  "$python" scripts/reference/hf_run_check.py "$1" 2>&1 | tee "$out/hf_run_check.txt" ||
    status=1
  "$python" scripts/reference/chat_templates.py --fixtures "$2" \
    --out "$out/chat_template_reference.json" || status=1
  exit "$status"
}

run_qlora() {
  local out="${OUT:-$repo/gpu-check-results}"
  mkdir -p "$out"
  local log="$out/qlora.txt" status=0 steps="${QLORA_STEPS:-4}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$log"
  { python3 -m pip show bitsandbytes 2>&1 || true; } | head -3 | tee -a "$log"
  python3 scripts/reference/nf4.py "$out/nf4_reference.json" 2>&1 | tee -a "$log" || status=1
  configure_device_build "$out"
  local started=$SECONDS
  cmake --build build/device --target parity_ops bench_gpu_train bench_gemm gpu_train \
    gpu_generate --parallel "$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -E "error|Error" "$out/build.log" | head -40 | tee -a "$log"; exit 1; }
  rm -f "$out/build.log" "$out/configure.log"
  echo "gpu-check: built in $((SECONDS - started)) s" | tee -a "$log"
  build/device/tests/parity/parity_ops --filter nf4 --json "$out/parity.json" 2>&1 |
    tail -40 | tee -a "$log" || status=1
  local model=/tmp/lorascope-llama-3.1-8b
  [[ -f "$model/config.json" ]] ||
    python3 scripts/reference/random_model.py "$model" 2>&1 | tail -3 | tee -a "$log"
  for quantize in nf4 none; do
    echo "=== llama-3.1-8b-shaped, --quantize $quantize, B1 x S2048, checkpointing" | tee -a "$log"
    build/device/tests/bench/bench_gpu_train --model "$model" --quantize "$quantize" --batch 1 \
      --seq 2048 --checkpointing --warmup 1 --steps "$steps" --profile-steps 1 \
      --json "$out/bench.jsonl" 2>&1 | grep -Ev "^    .*  (gemm|attention|loss|optimizer|norms/elementwise)$" |
      tee -a "$log" || status=1
  done
  build/device/tests/parity/bench_gemm --iterations 5 2>&1 | grep -A8 "^NF4" | tee -a "$log" ||
    status=1
  ctest --test-dir build/device -L gpu -R "gpu_train_qlora|gpu_generate_nf4" --output-on-failure \
    2>&1 | tee -a "$log" || status=1
  exit "$status"
}

run_mirror() {
  local out="${OUT:-$repo/gpu-check-results}" programs="${MIRROR_PROGRAMS:-}"
  mkdir -p "$out"
  local log="$out/mirror.txt" status=0 case programs_bench
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$log"
  export LD_LIBRARY_PATH="$repo/.device/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [[ -z "$programs" ]]; then
    configure_device_build "$out"
    local started=$SECONDS
    cmake --build build/device --target gpu_train bench_gpu_train --parallel "$(nproc)" \
      >"$out/build.log" 2>&1 ||
      { grep -E "error|Error" "$out/build.log" | head -40 | tee -a "$log"; exit 1; }
    rm -f "$out/build.log" "$out/configure.log"
    echo "gpu-check: built in $((SECONDS - started)) s" | tee -a "$log"
    ctest --test-dir build/device -L gpu -R "gpu_train_(mirror|resume|engine|parity)" \
      --output-on-failure 2>&1 | tee -a "$log" || status=1
    programs=build/device/tests
    programs_bench="$programs/bench/bench_gpu_train"
  else
    for case in mirror resume engine parity; do
      echo "=== gpu_train $case" | tee -a "$log"
      "$programs/gpu_train" "$case" 2>&1 | tee -a "$log" || status=1
    done
    programs_bench="$programs/bench_gpu_train"
  fi
  "$programs_bench" --shape qwen2.5-0.5b --warmup 2 --steps 3 --profile-steps 0 \
    --mirror "${MIRROR_BOUNDARIES:-5}" --json "$out/bench.jsonl" 2>&1 | tee -a "$log" || status=1
  exit "$status"
}

case "${1:-}" in
  prepare) prepare ;;
  mirror) run_mirror ;;
  qlora) run_qlora ;;
  hf)
    [[ $# -eq 3 ]] || { echo "usage: scripts/gpu-check.sh hf RUN_DIR TEMPLATES_DIR" >&2; exit 2; }
    run_hf "$2" "$3"
    ;;
  run) run_checks "${2:-}" ;;
  generate) run_generate ;;
  doctor) run_doctor ;;
  record) run_record "${2:-}" ;;
  loop)
    shift
    run_loop "$@"
    ;;
  peft-adapter)
    [[ $# -ge 3 ]] ||
      { echo "usage: scripts/gpu-check.sh peft-adapter BASE_DIR ADAPTER_DIR..." >&2; exit 2; }
    shift
    out="${OUT:-$repo/gpu-check-results}"
    mkdir -p "$out"
    "${PYTHON:-python3}" scripts/reference/peft_adapter_check.py "$1" \
      "$out/peft_adapter_check.json" "${@:2}" 2>&1 | tee "$out/peft_adapter_check.txt"
    exit "${PIPESTATUS[0]}"
    ;;
  bench)
    shift
    run_bench "$@"
    ;;
  memory)
    shift
    run_memory "$@"
    ;;
  ncu)
    shift
    run_ncu "$@"
    ;;
  supervise) run_supervise ;;
  try-it) run_try_it "${2:-}" ;;
  trainers) run_trainers ;;
  torchrun-nccl) run_torchrun_nccl ;;
  group) run_group "${2:-}" ;;
  parity)
    shift
    run_parity "$@"
    ;;
  *)
    echo "usage: scripts/gpu-check.sh prepare | run [REGEX] | parity [OP ...] | doctor |" \
      "record [PROGRAM] | loop [NAME=PROGRAM ...] | bench [SHAPE ...] | memory [ARGS] |" \
      "ncu [REGEX] |" \
      "supervise | trainers | torchrun-nccl | try-it [DIR] |" \
      "hf RUN_DIR TEMPLATES_DIR | qlora | generate | mirror | peft-adapter BASE_DIR ADAPTER_DIR..." >&2
    exit 2
    ;;
esac
