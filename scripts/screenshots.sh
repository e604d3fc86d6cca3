#!/usr/bin/env bash
# screenshots.sh [BUILD_DIR] — renders the README's screenshots into docs/screenshots/: the setup
# page on first start, the runs page and the dashboard in a 1024×700 window after real steps of
# the built-in demo (trained on the CPU), that run resumed on the dashboard, the dashboard and
# memory map replaying a run recorded on an NVIDIA H100 (tests/widgets/fixtures/h100_gpu_run.jsonl,
# made by `scripts/gpu-check.sh record`), and the dashboard replaying that run recorded again on an
# NVIDIA H200 with an injected hang (h200_gpu_hang.jsonl), a run on two H200s on its second card
# (h200x2_gpu_run.jsonl), and the runs page listing a supervised command: `lorascope-train
# train --demo` run from the setup page's "Run a command" (a real trainer, its step lines read with
# a regex). Runs the window under Xvfb when xvfb-run is installed (Debian: xvfb), else with Qt's
# offscreen platform; both render the same widgets. Needs a cpu build with the GUI (targets
# lorascope_screenshots and lorascope-train).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/cpu}"
tool="$build/tests/app/lorascope_screenshots"
trainer="$build/app/lorascope-train"
out="$root/docs/screenshots"
steps="${SCREENSHOT_STEPS:-30}"
for program in "$tool" "$trainer"; do
  if [[ ! -x "$program" ]]; then
    echo "screenshots.sh: $program not found; build it: cmake --build $build --target" \
      "lorascope_screenshots lorascope-train" >&2
    exit 1
  fi
done
mkdir -p "$out"
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export LORASCOPE_CACHE_DIR="$cache"  # the demo model is written here, not into ~/.cache
export LORASCOPE_TEST_TRAIN="$trainer"  # the demo's files (tests/support/TestPaths.h)
fixture="$root/tests/widgets/fixtures/h100_gpu_run.jsonl"
hang="$root/tests/widgets/fixtures/h200_gpu_hang.jsonl"
group="$root/tests/widgets/fixtures/h200x2_gpu_run.jsonl"
if command -v xvfb-run >/dev/null; then
  xvfb-run -a -s "-screen 0 1280x800x24" "$tool" "$out" "$fixture" "$steps" light "$hang" "$trainer" \
    "$group"
else
  QT_QPA_PLATFORM=offscreen "$tool" "$out" "$fixture" "$steps" light "$hang" "$trainer" "$group"
fi
if command -v optipng >/dev/null; then
  optipng -quiet -o2 "$out"/*.png
fi
ls -l "$out"/*.png
