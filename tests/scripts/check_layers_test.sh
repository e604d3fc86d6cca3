#!/usr/bin/env bash
# check_layers_test.sh — scripts/check-layers.sh on small trees made here: the GUI's folders
# within their allow-lists pass; app/gui including compute, train or job fails naming the engine
# boundary (every file, the setup page's too: there are no exceptions), widgets including a folder
# off its list (telemetry) fails naming the list, and an upward include still fails by rank.
# Usage: check_layers_test.sh CHECK_LAYERS_SCRIPT   (CTest: check_layers_selftest)
set -euo pipefail
check="$1"
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT

header() { mkdir -p "$tree/$(dirname "$1")" && echo '#pragma once' >"$tree/$1"; }
source_file() {  # FILE INCLUDE...
  local file="$1"
  shift
  mkdir -p "$tree/$(dirname "$file")"
  : >"$tree/$file"
  for include in "$@"; do echo "#include \"$include\"" >>"$tree/$file"; done
}
expect() {  # pass|fail FRAGMENT: runs the check on the tree
  local want="$1" fragment="$2" output status=0
  output="$("$check" "$tree" 2>&1)" || status=$?
  if [[ "$want" == pass && $status -ne 0 ]] || [[ "$want" == fail && $status -eq 0 ]]; then
    echo "FAIL: expected the check to $want; it said:"
    echo "$output"
    exit 1
  fi
  if [[ -n "$fragment" && "$output" != *"$fragment"* ]]; then
    echo "FAIL: expected \"$fragment\" in:"
    echo "$output"
    exit 1
  fi
  echo "ok: $want${fragment:+ ($fragment)}"
}

for h in common/Format.h compute/Tensor.h train/Lora.h job/EngineJob.h engine/Protocol.h \
  profiles/Profile.h telemetry/Sampler.h model/ModelFolder.h; do
  header "backend/$h"
done
header widgets/Format.h
source_file widgets/Chart.cpp "widgets/Format.h" "engine/Protocol.h" "profiles/Profile.h"
source_file app/gui/Page.cpp "widgets/Format.h" "engine/Protocol.h" "model/ModelFolder.h" \
  "telemetry/Sampler.h" "common/Format.h"
expect pass "within their allow-lists"

for behind in compute/Tensor.h train/Lora.h job/EngineJob.h; do
  source_file app/gui/Generate.cpp "$behind"
  expect fail "app/gui/Generate.cpp:1: includes \"$behind\": ${behind%%/*} is behind the engine boundary"
done
rm "$tree/app/gui/Generate.cpp"
source_file widgets/Chip.cpp "compute/Tensor.h"
expect fail "widgets/Chip.cpp:1: includes \"compute/Tensor.h\": compute is behind the engine boundary"
rm "$tree/widgets/Chip.cpp"

# No file is excepted: the setup page's includes of the trainer (a run's settings, the demo)
# fail like any other, in the file where they once were listed as still to move.
header backend/job/TrainRunConfig.h
header backend/train/DemoModel.h
for behind in job/TrainRunConfig.h train/DemoModel.h; do
  source_file app/gui/RunSetupPage.cpp "model/ModelFolder.h" "$behind"
  expect fail "app/gui/RunSetupPage.cpp:2: includes \"$behind\": ${behind%%/*} is behind the engine boundary"
done
rm "$tree/app/gui/RunSetupPage.cpp"

source_file widgets/Readings.cpp "telemetry/Sampler.h"
expect fail "widgets may include only common engine profiles settings"
rm "$tree/widgets/Readings.cpp"

source_file backend/model/Up.cpp "engine/Protocol.h"
expect fail "model may not include engine (ranked above it)"
rm "$tree/backend/model/Up.cpp"
expect pass ""
echo "check_layers_test: all cases as expected"
