#!/usr/bin/env bash
# supervise_test.sh BIN SOURCE_DIR formats|torch — `lorascope-train supervise` end to end.
#   formats  bad input is an error before anything runs (a command that does not exist, a regex
#            that does not compile, a profile with a forbidden variable); loss and step are read
#            from each built-in format (scripts/print_format.py) and a user regex
#   torch    a real PyTorch training on the CPU (scripts/tiny_train.py): loss parsed; an injected
#            HIPBLAS_STATUS_INTERNAL_ERROR restarts it with the next profile and the resume
#            argument at the newest checkpoint; a hang is caught by --hang-after; the probe's
#            memory and step events arrive and say there is no GPU allocator
# Exit 77 (skipped) without python3, or for `torch` without torch (Debian's python3-torch).
set -euo pipefail
bin=$1
src=$2
mode=$3
scripts=$src/tests/external/scripts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

pick_python() {  # the first python3 that imports $1 (nothing: any)
  for c in "${LORASCOPE_PYTHON:-}" /usr/bin/python3 python3; do
    [[ -n $c ]] && command -v "$c" >/dev/null || continue
    if [[ -z ${1:-} ]] || "$c" -c "import $1" 2>/dev/null; then
      command -v "$c"
      return
    fi
  done
}
py=$(pick_python)
[[ -n $py ]] || { echo "SKIP: supervise_test needs python3"; exit 77; }

# "step:loss" for each step event of an events.jsonl, space-separated.
steps() {
  "$py" - "$1" <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "step":
        out.append("%d:%s" % (e["step"], "nan" if e["loss"] is None else round(e["loss"], 4)))
print(" ".join(out))
EOF
}
count() { grep -c "\"type\":\"$2\"" "$1" || true; }

if [[ $mode == formats ]]; then
  # Bad input: an error naming the problem, exit 1, nothing started (no run directory).
  if "$bin" supervise --out "$work/bad" -- no-such-trainer-xyz 2>"$work/err"; then
    fail "a missing command was accepted"
  fi
  grep -q "no-such-trainer-xyz: not found in PATH" "$work/err" || fail "$(cat "$work/err")"
  if "$bin" supervise --out "$work/bad" --parser 'regex:(?<step' -- "$py" -c 1 2>"$work/err"; then
    fail "a bad regex was accepted"
  fi
  grep -q "invalid regex '(?<step' at offset" "$work/err" || fail "$(cat "$work/err")"
  echo '{"name": "evil", "description": "d", "environment": {"LD_PRELOAD": "/tmp/x.so"}}' \
    >"$work/evil.json"
  if "$bin" supervise --out "$work/bad" --profile "$work/evil.json" -- "$py" -c 1 2>"$work/err"
  then
    fail "a profile with LD_PRELOAD was accepted"
  fi
  grep -q "evil.json: environment.LD_PRELOAD: not allowed: LD_PRELOAD loads a library" \
    "$work/err" || fail "$(cat "$work/err")"
  [[ ! -e $work/bad ]] || fail "a run directory was made for bad input"
  echo "ok: bad input refused before anything ran"

  want="1:2.5 2:2.4 3:2.3 4:2.2 5:2.1"
  for format in hf tqdm kohya lightning regex; do
    parser=$format
    [[ $format == regex ]] && parser='regex:it (?<step>\d+): objective (?<loss>[0-9.]+)'
    "$bin" supervise --telemetry=false --out "$work/$format" --parser "$parser" -- \
      "$py" "$scripts/print_format.py" "$format" >"$work/$format.out" ||
      fail "$format: exit $?"
    got=$(steps "$work/$format/events.jsonl")
    [[ $got == "$want" ]] || fail "$format: steps '$got', want '$want'"
    echo "ok: --parser $format: $got"
  done
  exit 0
fi

tpy=$(pick_python torch)
[[ -n $tpy ]] || { echo "SKIP: supervise_test torch needs python3 with torch (python3-torch)"; exit 77; }

# A real training run, loss parsed from its Hugging Face-style lines.
"$bin" supervise --telemetry=false --out "$work/real" -- \
  "$tpy" "$scripts/tiny_train.py" --out "$work/real-ck" >"$work/real.out" || fail "real: exit $?"
got=$(steps "$work/real/events.jsonl")
printed=$(grep -o "'loss': [0-9.]*" "$work/real/command.log" | awk '{printf "%s ", $2}')
[[ $(wc -w <<<"$got") == 12 ]] || fail "real: steps '$got'"
for loss in $printed; do
  grep -q ":$(awk -v l="$loss" 'BEGIN{printf "%g", l}')\b" <<<"$got" || fail "real: loss $loss not parsed"
done
echo "ok: real PyTorch run on the CPU: $got"

# An injected HIPBLAS error: restarted on the next profile, resumed from checkpoint-4.
"$bin" supervise --telemetry=false --out "$work/fail" --resume-arg "--resume {checkpoint_dir}" \
  --checkpoint-glob "$work/fail-ck/checkpoint-*" -- \
  "$tpy" "$scripts/tiny_train.py" --out "$work/fail-ck" --fail-at 6 >"$work/fail.out" ||
  fail "fail: exit $?"
grep -q '"category":"blas_failure"' "$work/fail/events.jsonl" || fail "no blas_failure error"
grep '"type":"incident"' "$work/fail/events.jsonl" |
  grep -q "restarted with profile 'Built-in GEMM'.*resuming from $work/fail-ck/checkpoint-4" ||
  fail "incident: $(grep incident "$work/fail/events.jsonl")"
grep -q "tiny_train.py --out $work/fail-ck --fail-at 6 --resume $work/fail-ck/checkpoint-4" \
  "$work/fail.out" || fail "the restart lacks the resume argument"
grep -q "environment set: TORCH_BLAS_PREFER_HIPBLASLT=0" "$work/fail.out" || fail "no profile env"
grep -q "resumed from $work/fail-ck/checkpoint-4 at step 4" "$work/fail/command.log" ||
  fail "the script did not resume"
[[ $(steps "$work/fail/events.jsonl") == *" 12:"* ]] || fail "fail: did not reach step 12"
echo "ok: HIPBLAS_STATUS_INTERNAL_ERROR -> Built-in GEMM profile, --resume $work/fail-ck/checkpoint-4"

# A hang (the script sleeps at step 3): killed after 10 s of silence, resumed from checkpoint-2.
start=$(date +%s)
"$bin" supervise --telemetry=false --out "$work/hang" --hang-after 10 \
  --resume-arg "--resume {checkpoint_dir}" --checkpoint-glob "$work/hang-ck/checkpoint-*" -- \
  "$tpy" "$scripts/tiny_train.py" --out "$work/hang-ck" --save-every 2 --hang-at 3 --steps 6 \
  >"$work/hang.out" || fail "hang: exit $?"
incident=$(grep '"type":"incident"' "$work/hang/events.jsonl" || true)
grep -q "no step for 10 s (hang) after step 2" <<<"$incident" &&
  grep -q "restarted with profile 'Debug: serialize + blocking'.*resuming from $work/hang-ck/checkpoint-2" \
    <<<"$incident" || fail "hang incident: $incident"
echo "ok: hang caught and restarted in $(($(date +%s) - start)) s"

# The probe: memory events (host memory only on the CPU, and it says so) and its own steps (the
# output's dicts are not tqdm bars, so the steps come from the optimizer.step hook).
PYTHONPATH=$src/python "$bin" supervise --telemetry=false --out "$work/probe" --parser tqdm -- \
  "$tpy" -m lorascope_probe "$scripts/tiny_train.py" --out "$work/probe-ck" >"$work/probe.out" ||
  fail "probe: exit $?"
events=$work/probe/events.jsonl
[[ $(count "$events" memory) -ge 1 ]] || fail "no memory event from the probe"
grep -q '"type":"memory".*"host_rss_bytes":[1-9]\|"host_rss_bytes":[1-9].*"type":"memory"' "$events" ||
  fail "no host memory"
grep -q 'lorascope_probe: attached: torch .* sees no GPU.*there is no GPU allocator' "$events" ||
  fail "the probe did not say there is no GPU allocator"
got=$(steps "$events")
[[ $(wc -w <<<"$got") == 12 && $got != *nan* ]] || fail "probe steps '$got'"
echo "ok: probe: $(count "$events" memory) memory events, steps $got"
