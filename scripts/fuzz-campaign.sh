#!/usr/bin/env bash
# fuzz-campaign.sh — the long fuzzing runs outside CI: each libFuzzer target of a build with
# LORASCOPE_FUZZ on (the sanitize preset) runs once until 1,000,000 executions or 30 minutes,
# whichever comes first, on a corpus seeded from the target's committed seeds; a crash stops
# that target and keeps the input. CI runs the same targets for seconds (ctest -L fuzz).
#
#   scripts/fuzz-campaign.sh BUILD_DIR OUT_DIR [TARGET ...]
#
# TARGET is a fuzzer's name without the fuzz_ prefix (protocol, jinja_template, ...); all of
# them when none is given. Each target's libFuzzer log goes to OUT_DIR/NAME.log, its corpus to
# OUT_DIR/corpus_NAME, a crashing input to OUT_DIR/crash-NAME-*; OUT_DIR/summary.tsv gets one
# line per target: name, executions, seconds, exec/s, result. FUZZ_RUNS and FUZZ_SECONDS
# change the limits (default 1000000 and 1800).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
build=$1
out=$2
shift 2
runs=${FUZZ_RUNS:-1000000}
seconds=${FUZZ_SECONDS:-1800}
root=$(cd "$(dirname "$0")/.." && pwd)

# name → its committed seeds under tests/
declare -A seeds=(
  [protocol]=engine/fuzz_seeds
  [jinja_template]=jinja/fuzz_seeds
  [tokenizer_json]=text/fuzz_seeds
  [dataset_lines]=data/fuzz_seeds
  [safetensors_header]=model/fuzz_seeds
  [model_config]=model/fuzz_seeds
  [fault_spec]=runtime/fuzz_seeds
  [allocator_ops]=memory/fuzz_seeds
)
# Memory caps other than libFuzzer's 2048 MB (as tests/*/CMakeLists.txt give CTest's runs):
# chat templates are untrusted input and must stay within 512 MB under the sanitizer.
declare -A rss_limits=([jinja_template]=512)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(protocol jinja_template tokenizer_json dataset_lines safetensors_header model_config
    fault_spec allocator_ops)
fi

mkdir -p "$out"
for name in "${targets[@]}"; do
  if [[ -z ${seeds[$name]+x} ]]; then
    echo "fuzz-campaign: unknown target '$name' (known: ${!seeds[*]})" >&2
    exit 2
  fi
  # The program wherever BUILD_DIR's CMake put it (tests/<folder>/fuzz_NAME), the newest when a
  # tree built before a fuzzer moved folders holds two.
  binary=$(find "$build/tests" -type f -perm -u+x -name "fuzz_$name" -printf '%T@ %p\n' \
    2> /dev/null | sort -rn | head -n 1 | cut -d' ' -f2-)
  if [[ -z $binary ]]; then
    echo "fuzz-campaign: fuzz_$name is missing under $build/tests: configure $build with" \
      "LORASCOPE_FUZZ=ON (the sanitize preset) and build fuzz_$name" >&2
    exit 1
  fi
  corpus=$out/corpus_$name
  mkdir -p "$corpus"
  start=$(date +%s)
  result=clean
  "$binary" -runs="$runs" -max_total_time="$seconds" -rss_limit_mb="${rss_limits[$name]:-2048}" \
    -print_final_stats=1 -artifact_prefix="$out/crash-$name-" "$corpus" "$root/tests/${seeds[$name]}" \
    > "$out/$name.log" 2>&1 || result="crash (see $out/$name.log)"
  elapsed=$(($(date +%s) - start))
  log=$(cat "$out/$name.log")
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' <<< "$log")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${executions:-?}" "$elapsed" "${rate:-?}" "$result" \
    | tee -a "$out/summary.tsv"
done
