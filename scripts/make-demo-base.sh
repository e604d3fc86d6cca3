#!/usr/bin/env bash
# make-demo-base.sh [BUILD_DIR] — trains the demo base's pretraining adapter again and writes it
# to backend/train/demo_base/pretraining_adapter.safetensors, the file every build compiles in
# (train/DemoModel.h). Run it when the demo's model or pretraining tasks change, then bump
# kDemoModelName and the fingerprints of tests/train/test_demo, and check the demo with
# `ctest -R test_demo_learns`. BUILD_DIR (default build/cpu) must be configured; the tool
# lorascope-make-demo-base is built there. Extra arguments go to the tool (--steps, --lr,
# --batch-size). On the CPU, like the demo: 10 minutes on 2 busy cores (2.2 CPU-minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/cpu}"
shift || true
cmake --build "$build" --target lorascope-make-demo-base
"$build/app/lorascope-make-demo-base" backend/train/demo_base/pretraining_adapter.safetensors "$@"
