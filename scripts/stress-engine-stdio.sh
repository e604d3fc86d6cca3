#!/usr/bin/env bash
# stress-engine-stdio.sh — the engine's event stream under a busy command input: N engines
# (`lorascope-train engine`) each train the demo for SECONDS while their stdin carries blank lines
# as fast as they can be written, and every event line they print must be one JSON object.
# Before StdioEngine untied its input from its output, each read of a command flushed the events
# from the reader thread outside the writers' lock: events came out doubled and glued together
# (and once a stray "{" before the hello, failing test_fault_suite under ctest -j2).
#   scripts/stress-engine-stdio.sh LORASCOPE_TRAIN [N (3)] [SECONDS (20)]
# Exit 1 when a line is not one JSON object (each is printed).
set -uo pipefail
train="$1"
engines="${2:-3}"
seconds="${3:-20}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
lines=0
bad=0
for i in $(seq 1 "$engines"); do
  run="$scratch/$i"
  mkdir -p "$run"
  {
    printf '{"v":1,"type":"start","config":{"demo":true,"out":"%s/run","options":{"steps":200,"batch-size":2,"grad-accum":1,"max-seq-len":80,"lora-r":4,"checkpoint-every":1000}}}\n' "$run"
    timeout "$seconds" yes ''
  } | XDG_CONFIG_HOME="$run/config" LORASCOPE_CACHE_DIR="$scratch/cache" "$train" engine \
    >"$run/events" 2>/dev/null
  counts="$(python3 - "$run/events" <<'PY'
import json, sys
lines = bad = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    lines += 1
    try:
        event = json.loads(line)
        assert isinstance(event, dict) and "type" in event
    except Exception:
        bad += 1
        print("not one JSON object:", repr(line[:400]), file=sys.stderr)
print(lines, bad)
PY
)"
  lines=$((lines + ${counts% *}))
  bad=$((bad + ${counts#* }))
done
echo "$train: $engines engines, $lines event lines, $bad not one JSON object"
((bad == 0))
