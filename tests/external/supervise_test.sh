#!/usr/bin/env bash
# supervise_test.sh BIN SOURCE_DIR formats|torch|limits|torchrun — `lorascope-train supervise`
# end to end.
#   formats  bad input is an error before anything runs (a command that does not exist, a regex
#            that does not compile, a profile with a forbidden variable); loss and step are read
#            from each built-in format (scripts/print_format.py) and a user regex, into a run
#            folder (config.json, metrics.jsonl), with the epoch hf and lightning give; --resume
#            DIR reruns a run's command; one writer per run folder, also while the command
#            restarts
#   torch    a real PyTorch training on the CPU (scripts/tiny_train.py): loss parsed; an injected
#            HIPBLAS_STATUS_INTERNAL_ERROR restarts it with the next profile and the resume
#            argument at the newest checkpoint; a hang is caught by --hang-after; the probe's
#            memory and step events arrive and say there is no GPU allocator
#   limits   a 32 MB line without a newline is read in linear time and cut at 1 MiB, marked; a
#            command that ignores SIGTERM is killed after --grace on Ctrl-C; a command that exits
#            leaving a child in its group, or a daemon (setsid) holding its output pipe, does not
#            keep supervise waiting past the grace period
#   torchrun a 2-process torchrun job (gloo, DistributedDataParallel): each step counted once
#            from rank 0 although both ranks print theirs; rank 1 killed with SIGKILL restarts the
#            group from the newest checkpoint
# Exit 77 (skipped) without python3, or for `torch`/`torchrun` without torch (Debian's
# python3-torch) or torchrun.
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

  # The folder rule of every run: a folder that holds something else is refused, naming what it
  # holds, and nothing is written into it.
  mkdir -p "$work/notarun"
  echo keep >"$work/notarun/notes.txt"
  if "$bin" supervise --telemetry=false --out "$work/notarun" -- "$py" -c 1 2>"$work/err"; then
    fail "a folder that is not a run was accepted"
  fi
  grep -q "notarun: is not empty and is not a supervised command's run: it holds notes.txt" \
    "$work/err" || fail "$(cat "$work/err")"
  [[ $(ls -A "$work/notarun") == notes.txt ]] || fail "notarun was written into: $(ls -A "$work/notarun")"
  echo "ok: a folder that is not a run refused, nothing written"

  # One writer per run: while a run is supervised, a second supervise of that folder is refused
  # naming the holder of its run.lock.
  "$bin" supervise --telemetry=false --grace 2 --out "$work/busy" -- \
    "$py" -c 'import time; time.sleep(60)' >/dev/null 2>&1 &
  first=$!
  for _ in $(seq 200); do
    [[ -s $work/busy/run.lock && -s $work/busy/config.json ]] && break
    sleep 0.1
  done
  if "$bin" supervise --telemetry=false --out "$work/busy" -- "$py" -c 1 2>"$work/err"; then
    kill "$first" 2>/dev/null || true
    fail "a second supervise of a run being supervised was accepted"
  fi
  kill "$first" 2>/dev/null || true
  wait "$first" 2>/dev/null || true
  grep -q "busy: is in use: pid $first, since .* supervises this run" "$work/err" ||
    fail "$(cat "$work/err")"
  echo "ok: a second supervise of a running run refused, naming pid $first"

  # Across a restart too: the command's first attempt dies by a signal; its second, started by
  # the same supervise, tries a second supervise of the folder, which supervise (its parent, the
  # lock's holder all along) keeps out. Once supervise has ended, the folder is free.
  "$bin" supervise --telemetry=false --out "$work/held" -- sh -c '
    if [ ! -e "$1/held.first" ]; then : >"$1/held.first"; kill -9 $$; fi
    echo "$PPID" >"$1/held.sup"
    "$2" supervise --telemetry=false --out "$1/held" -- true 2>"$1/held.err"
    echo $? >"$1/held.rc"' sh "$work" "$bin" >/dev/null 2>&1 || fail "held: exit $?"
  [[ -s $work/held.rc && $(cat "$work/held.rc") != 0 ]] ||
    fail "a second supervise during the restarted attempt was accepted: $(cat "$work/held.err")"
  grep -q "held: is in use: pid $(cat "$work/held.sup"), since .* supervises this run" \
    "$work/held.err" || fail "$(cat "$work/held.err")"
  grep -q '"type":"incident"' "$work/held/events.jsonl" || fail "held: the command was not restarted"
  "$bin" supervise --telemetry=false --out "$work/held" -- true >/dev/null 2>"$work/err" ||
    fail "the folder stayed locked after supervise ended: $(cat "$work/err")"
  echo "ok: the run stays locked by supervise across the command's restart, free after it"

  want="1:2.5 2:2.4 3:2.3 4:2.2 5:2.1"
  for format in hf tqdm kohya lightning regex; do
    parser=$format
    [[ $format == regex ]] && parser='regex:it (?<step>\d+): objective (?<loss>[0-9.]+)'
    "$bin" supervise --telemetry=false --out "$work/$format" --parser "$parser" -- \
      "$py" "$scripts/print_format.py" "$format" >"$work/$format.out" ||
      fail "$format: exit $?"
    got=$(steps "$work/$format/events.jsonl")
    [[ $got == "$want" ]] || fail "$format: steps '$got', want '$want'"
    # A run folder the Runs page lists: config.json naming the command, a metrics line a step.
    grep -q '"kind": "supervised_command"' "$work/$format/config.json" &&
      grep -q 'print_format.py' "$work/$format/config.json" || fail "$format: config.json"
    [[ $(wc -l <"$work/$format/metrics.jsonl") == 5 ]] || fail "$format: metrics.jsonl"
    echo "ok: --parser $format: $got"
  done
  # The epoch the output gives (hf's 'epoch': 0.60, Lightning's epoch 0 at batch 3 of 5): in the
  # step line and the metrics line; a format that gives none has none.
  for format in hf lightning; do
    grep -q '^lorascope: step 3\(/5\)\? loss 2.3 .*epoch 0.6$' "$work/$format.out" &&
      grep -q '"epoch":0.6,' "$work/$format/metrics.jsonl" || fail "$format: no epoch 0.6 at step 3"
  done
  ! grep -q epoch "$work/tqdm.out" "$work/tqdm/metrics.jsonl" || fail "tqdm: an epoch it never gave"
  echo "ok: epoch 0.6 at step 3 from hf and lightning, none from tqdm"

  # --resume DIR: the run's command again, resuming from its newest checkpoint; steps go on.
  mkdir -p "$work/ck/checkpoint-2"
  "$bin" supervise --telemetry=false --out "$work/again" --resume-arg "--resume {checkpoint_dir}" \
    --checkpoint-glob "$work/ck/checkpoint-*" -- "$py" "$scripts/print_format.py" hf \
    >/dev/null || fail "again: exit $?"
  "$bin" supervise --telemetry=false --resume "$work/again" >"$work/again.out" ||
    fail "--resume: exit $?"
  grep -q "print_format.py hf --resume $work/ck/checkpoint-2" "$work/again.out" ||
    fail "--resume: the command lacks the resume argument"
  got=$(steps "$work/again/events.jsonl")
  [[ $got == "1:2.5 2:2.4 3:2.3 4:2.2 5:2.1 6:2.2 7:2.1" ]] || fail "--resume: steps '$got'"
  [[ $(wc -l <"$work/again/metrics.jsonl") == 7 ]] || fail "--resume: metrics.jsonl"
  if "$bin" supervise --resume "$work/again" -- "$py" -c 1 2>"$work/err"; then
    fail "--resume with a command was accepted"
  fi
  grep -q "no command after --" "$work/err" || fail "$(cat "$work/err")"
  # The command's options are the recorded run's: one given beside --resume is refused, not
  # dropped.
  if "$bin" supervise --resume "$work/again" --max-restarts 1 2>"$work/err"; then
    fail "--resume with --max-restarts was accepted"
  fi
  grep -q -- "--max-restarts cannot change them" "$work/err" || fail "$(cat "$work/err")"
  echo "ok: --resume DIR reran the command from checkpoint-2: $got"
  exit 0
fi

# Ended: no such process, or a zombie (an orphan's, until init reaps it).
gone() { ! kill -0 "$1" 2>/dev/null || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
if [[ $mode == limits ]]; then
  # 32 MB without a newline, then a step: linear time (quadratic took minutes), the line cut.
  start=$(date +%s)
  timeout 120 "$bin" supervise --telemetry=false --out "$work/long" -- "$py" -c "
import sys
sys.stdout.write('x' * (32 << 20))
sys.stdout.write('\n{\'loss\': 1.5, \'step\': 1}\n')" >/dev/null || fail "long line: exit $?"
  took=$(($(date +%s) - start))
  ((took < 30)) || fail "a 32 MB line took $took s"
  cut=$(grep -c 'x \[line cut at 1 MiB\]$' "$work/long/command.log" || true)
  [[ $cut == 1 ]] || fail "the long line was not cut and marked"
  longest=$(awk '{ if (length($0) > n) n = length($0) } END { print n }' "$work/long/command.log")
  ((longest <= (1 << 20) + 32)) || fail "a line of $longest bytes was kept"
  [[ $(steps "$work/long/events.jsonl") == "1:1.5" ]] || fail "the step after the long line"
  echo "ok: a 32 MB line read in $took s, cut at 1 MiB and marked"

  # Ctrl-C on a command that ignores SIGTERM: SIGKILL after --grace 2.
  "$bin" supervise --telemetry=false --grace 2 --out "$work/stubborn" -- "$py" -c "
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], 'w').write(str(os.getpid()))
print('ready', flush=True)
time.sleep(300)" "$work/stubborn.pid" >"$work/stubborn.out" &
  sup=$!
  # The pid file, written once SIGTERM is ignored (supervise's own output echoes the command, its
  # 'ready' included, so a grep for the word there could pass before the command ran).
  for _ in $(seq 300); do [[ -s $work/stubborn.pid ]] && break; sleep 0.1; done
  [[ -s $work/stubborn.pid ]] || fail "the command did not start within 30 s"
  start=$(date +%s)
  kill -INT "$sup"
  rc=0
  timeout 30 tail --pid="$sup" -f /dev/null || fail "supervise did not end after Ctrl-C"
  wait "$sup" || rc=$?
  took=$(($(date +%s) - start))
  [[ $rc == 130 ]] || fail "Ctrl-C: exit $rc"
  gone "$(cat "$work/stubborn.pid")" || fail "the command that ignored SIGTERM still runs"
  grep -q 'did not end within 2 s of SIGTERM: killed' "$work/stubborn/events.jsonl" ||
    fail "no word of the kill"
  echo "ok: Ctrl-C: a command ignoring SIGTERM killed after the 2 s grace ($took s)"

  # A command that exits and leaves a child of its group holding the pipe: ended, at once.
  start=$(date +%s)
  timeout 60 "$bin" supervise --telemetry=false --grace 5 --out "$work/left" -- sh -c \
    "sleep 300 & echo \$! > '$work/left.pid'; echo started" >/dev/null || fail "left: exit $?"
  took=$(($(date +%s) - start))
  gone "$(cat "$work/left.pid")" || fail "the child left behind still runs"
  ((took < 5)) || fail "waited $took s for a child the command left behind"
  echo "ok: a child the command left behind was ended ($took s)"

  # A daemon (setsid: outside the group) holding the output pipe: not waited for past the grace.
  start=$(date +%s)
  timeout 60 "$bin" supervise --telemetry=false --grace 2 --out "$work/daemon" -- sh -c \
    "setsid sleep 300 & echo \$! > '$work/daemon.pid'; echo started" >/dev/null ||
    fail "daemon: exit $?"
  took=$(($(date +%s) - start))
  kill "$(cat "$work/daemon.pid")" 2>/dev/null || true
  ((took < 15)) || fail "waited $took s on a pipe a daemon holds"
  echo "ok: a daemon holding the output pipe kept supervise $took s (grace 2 s)"
  exit 0
fi

tpy=$(pick_python torch)
[[ -n $tpy ]] || { echo "SKIP: supervise_test $mode needs python3 with torch (python3-torch)"; exit 77; }

if [[ $mode == torchrun ]]; then
  torchrun=$(dirname "$tpy")/torchrun
  [[ -x $torchrun ]] || torchrun=$(command -v torchrun || true)
  [[ -n $torchrun ]] || { echo "SKIP: supervise_test torchrun needs torchrun"; exit 77; }
  # Both ranks print their steps (rank 1's losses + 100), prefixed [default0]: / [rank0]: by
  # torchrun's --tee; rank 1 kills itself at step 5; checkpoints every 2 steps.
  start=$(date +%s)
  "$bin" supervise --telemetry=false --grace 5 --out "$work/ddp" \
    --resume-arg "--resume {checkpoint_dir}" --checkpoint-glob "$work/ddp-out/checkpoint-*" -- \
    "$torchrun" --standalone --nproc_per_node 2 --monitor_interval 1 --redirects 0:2,1:2 \
    --tee 0:1,1:1 --log_dir "$work/ddp-logs" "$scripts/ddp_train.py" --out "$work/ddp-out" \
    --kill-rank 1 --kill-at 5 >"$work/ddp.out" || fail "torchrun: exit $?"
  # Steps once each with rank 0's losses, one incident naming rank 1's PID, resumed from
  # checkpoint-4, finished (the checks gpu-check.sh torchrun-nccl makes on 2 GPUs).
  "$tpy" "$scripts/check_ddp_run.py" "$work/ddp" "$work/ddp-out" 1 5 2 8 ||
    fail "torchrun: $(cat "$work/ddp.out")"
  echo "ok: torchrun, 2 ranks: steps once each (rank 0's), rank 1's SIGKILL restarted the group from checkpoint-4 ($(($(date +%s) - start)) s)"
  exit 0
fi

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
