"""check_ddp_run.py RUN_DIR DDP_OUT KILL_RANK KILL_AT SAVE_EVERY STEPS — checks a supervised
2-process ddp_train.py job (the run folder RUN_DIR of `lorascope-train supervise`, the script's
--out DDP_OUT) against what the job itself recorded; used by supervise_test.sh's `torchrun` mode
(CPU, gloo) and scripts/gpu-check.sh's `torchrun-nccl` mode (2 GPUs, nccl):
  - events.jsonl's step events are steps 1..STEPS, each once, with rank 0's losses
    (DDP_OUT/truth-rank0.json; the script prints 6 decimals), and metrics.jsonl has one line a
    step with the same losses;
  - exactly one incident, saying a process was killed by SIGKILL, and the torchrun line in
    command.log names the PID that rank KILL_RANK printed ("rank R pid P");
  - the incident resumed from the newest checkpoint at the kill (DDP_OUT/checkpoint-K, K the last
    multiple of SAVE_EVERY before KILL_AT), and the second attempt's first step is K+1;
  - the run finished (its last state event: finished, the command exited with code 0).
Prints what it found; exits 1 naming the first assertion that fails.
"""
import json
import os
import re
import sys


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


run_dir, ddp_out = sys.argv[1], sys.argv[2]
kill_rank, kill_at, save_every, steps = (int(a) for a in sys.argv[3:7])
for path in ("events.jsonl", "metrics.jsonl", "command.log"):
    if not os.path.isfile(os.path.join(run_dir, path)):
        fail("%s: no such file (did supervise run?)" % os.path.join(run_dir, path))
if not os.path.isfile(os.path.join(ddp_out, "truth-rank0.json")):
    fail("%s: no such file (rank 0 did no step)" % os.path.join(ddp_out, "truth-rank0.json"))
events = [json.loads(line) for line in open(os.path.join(run_dir, "events.jsonl"))]
truth = {int(k): v for k, v in json.load(open(os.path.join(ddp_out, "truth-rank0.json"))).items()}


def close(a, b):
    return a is not None and abs(a - b) <= 1e-6 + 1e-6 * abs(b)


step_events = [e for e in events if e["type"] == "step"]
got = [e["step"] for e in step_events]
if got != list(range(1, steps + 1)):
    fail("steps %s, want 1..%d each once" % (got, steps))
if sorted(truth) != got:
    fail("rank 0 recorded steps %s" % sorted(truth))
for e in step_events:
    if not close(e["loss"], truth[e["step"]]):
        fail("step %d: loss %s, rank 0's %.8f" % (e["step"], e["loss"], truth[e["step"]]))
print("ok: steps 1..%d each once, losses = rank 0's (%s)"
      % (steps, " ".join("%d:%.4f" % (e["step"], e["loss"]) for e in step_events)))

metrics = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
metric_steps = [m.get("step") for m in metrics]
if metric_steps != got:
    fail("metrics.jsonl steps %s" % metric_steps)
for m in metrics:
    if not close(m.get("loss"), truth[m["step"]]):
        fail("metrics.jsonl step %d: loss %s, rank 0's %.8f" % (m["step"], m.get("loss"),
                                                              truth[m["step"]]))
print("ok: metrics.jsonl: one line a step, the same losses")

incidents = [e for e in events if e["type"] == "incident"]
if len(incidents) != 1:
    fail("%d incidents, want 1: %s" % (len(incidents), incidents))
incident = incidents[0]
text = incident["what"] + "; " + incident["action"]
if "a process of the command was killed by SIGKILL" not in text:
    fail("the incident does not name the killed process: " + text)
log = open(os.path.join(run_dir, "command.log"), errors="replace").read()
pids = re.findall(r"rank %d pid (\d+)" % kill_rank, log)
reported = re.findall(r"Signal 9 \(SIGKILL\) received by PID (\d+)", log)
if not pids or not reported or reported[0] != pids[0]:
    fail("torchrun reported SIGKILL of PID %s, rank %d's first PID is %s" % (reported, kill_rank,
                                                                          pids))
print("ok: one incident: %s" % text)
print("ok: torchrun named PID %s, rank %d's, as killed by SIGKILL" % (pids[0], kill_rank))

newest = (kill_at - 1) // save_every * save_every
checkpoint = os.path.join(ddp_out, "checkpoint-%d" % newest)
if "resuming from " + checkpoint not in text:
    fail("the incident does not resume from %s: %s" % (checkpoint, text))
after = [e["step"] for e in events[events.index(incident):] if e["type"] == "step"]
if not after or after[0] != newest + 1:
    fail("the restarted group's first step is %s, want %d" % (after[:1], newest + 1))
print("ok: restarted from the newest checkpoint, %s; its first step %d" % (checkpoint, after[0]))

states = [e for e in events if e["type"] == "state"]
last = states[-1] if states else {}
if last.get("state") != "finished" or last.get("detail") != "the command exited with code 0":
    fail("the run did not finish well: last state %s" % last)
print("ok: finished: %s at step %s" % (last["detail"], last.get("step")))
