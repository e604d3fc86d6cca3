"""lorascope_probe — tells `lorascope-train supervise` what PyTorch's allocator is doing.

    python -m lorascope_probe train.py ARGS...      (python/ of LoRAscope's source on PYTHONPATH)
or, inside a script:
    import lorascope_probe; lorascope_probe.attach()

Under `supervise` the environment names a file (LORASCOPE_PROBE_FILE); the probe appends one JSON
line per event in LoRAscope's protocol (backend/engine/Protocol.h, version 1):
  memory    every `interval` seconds: torch.cuda.memory_stats() (allocated, reserved, inactive
            split bytes, the largest request), torch.cuda.mem_get_info() (the driver's used and
            total bytes), this process's resident memory
  step      after every optimizer.step(): the step; the loss: the sum of the one-element
            tensors .backward() was called on since the last step, as the training loop computed
            them (without gradient accumulation: the step's loss); the learning rate; the
            gradient accumulation (those backward() calls); the micro-batch (the leading size of
            the last batch a torch DataLoader gave before them; unknown, 0, when none did)
  snapshot  torch.cuda.memory._snapshot() converted to the memory-map format (snapshot.py),
            after the first step, every `snapshot_every` seconds, and when the file named by
            LORASCOPE_PROBE_REQUEST changes
  log       what the probe has to say (where torch has no GPU: that there is no GPU allocator)
Standard library and torch only. Without LORASCOPE_PROBE_FILE, or without torch, attach() does
nothing (and says why on stderr when torch is missing). In a multi-process job (torchrun,
accelerate launch: RANK in the environment) only rank 0 reports: the ranks share one file, and
rank 0's steps are the job's.
"""

import atexit
import json
import math
import os
import sys
import threading
import time

from .snapshot import convert_snapshot, largest_free_and_total_free

PROTOCOL_VERSION = 1
_probe = None


class _Probe:
    def __init__(self, path, request_path, interval, snapshot_every):
        self._out = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._request_path = request_path
        self._last_request = None
        self._interval = interval
        self._snapshot_every = snapshot_every
        self._last_snapshot = None
        self._step = 0
        self._loss = None        # the sum of this step's backward() losses (a tensor)
        self._backwards = 0      # backward() calls since the last step
        self._batch = 0          # the leading size of the last batch a DataLoader gave
        self._step_batch = 0     # that size when the step's first backward() ran
        self._want_snapshot = False
        self._stop = threading.Event()
        import torch
        self._torch = torch
        self._gpu = bool(torch.cuda.is_available())
        self._device = torch.cuda.current_device() if self._gpu else None

    # --- output ---------------------------------------------------------------------------------
    def emit(self, kind, **fields):
        message = {"v": PROTOCOL_VERSION, "type": kind,
                   "t_ms": int((time.monotonic() - self._t0) * 1000)}
        message.update(fields)
        line = json.dumps(message, allow_nan=False)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()

    def log(self, text, level="info"):
        self.emit("log", level=level, text="lorascope_probe: " + text)

    # --- readings -------------------------------------------------------------------------------
    @staticmethod
    def _rss_bytes():
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    def memory_event(self):
        fields = {"host_rss_bytes": self._rss_bytes()}
        if self._gpu:
            cuda = self._torch.cuda
            stats = cuda.memory_stats(self._device)
            fields["allocated_bytes"] = int(stats.get("allocated_bytes.all.current", 0))
            fields["reserved_bytes"] = int(stats.get("reserved_bytes.all.current", 0))
            fields["inactive_split_bytes"] = int(stats.get("inactive_split_bytes.all.current", 0))
            free, total = cuda.mem_get_info(self._device)
            fields["driver_used_bytes"] = int(total - free)
            fields["driver_total_bytes"] = int(total)
        self.emit("memory", **fields)

    def snapshot_event(self):
        if not self._gpu:
            self.log("no GPU allocator to snapshot: torch.cuda is not available here", "warning")
            return
        cuda = self._torch.cuda
        raw = cuda.memory._snapshot()
        free, total = cuda.mem_get_info(self._device)
        converted = convert_snapshot(
            raw,
            device={"name": cuda.get_device_name(self._device), "total_bytes": int(total),
                    "free_bytes": int(free)},
            source="torch %s memory._snapshot()" % self._torch.__version__)
        self.emit("snapshot", snapshot=converted)
        largest, free_total = largest_free_and_total_free(converted)
        if free_total > 0:
            self.emit("memory", largest_free_bytes=largest,
                      fragmentation=1.0 - largest / free_total)
        self._last_snapshot = time.monotonic()

    # --- hooks ----------------------------------------------------------------------------------
    def after_step(self, optimizer):
        self._step += 1
        loss = None
        if self._loss is not None:
            try:
                loss = float(self._loss)
            except (RuntimeError, ValueError, TypeError):
                loss = None
            if loss is not None and not math.isfinite(loss):
                loss = None
        lr = 0.0
        try:
            lr = float(optimizer.param_groups[0]["lr"])
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            pass
        self.emit("step", step=self._step, loss=loss, lr=lr, grad_norm=None, tokens_per_s=0,
                  micro_batch=self._step_batch, accumulation=self._backwards)
        self._loss = None
        self._backwards = 0
        if self._step == 1:
            self._want_snapshot = True

    def install_hooks(self):
        torch = self._torch
        probe = self
        original_backward = torch.Tensor.backward

        def backward(tensor, *args, **kwargs):
            if tensor.numel() == 1:
                loss = tensor.detach().reshape(())
                probe._loss = loss if probe._loss is None else probe._loss + loss
                if probe._backwards == 0:
                    probe._step_batch = probe._batch
                probe._backwards += 1
            return original_backward(tensor, *args, **kwargs)

        torch.Tensor.backward = backward
        loader_iter = torch.utils.data.dataloader._BaseDataLoaderIter
        original_next = loader_iter.__next__

        def next_batch(iterator):
            batch = original_next(iterator)
            size = _leading_size(batch)
            if size:
                probe._batch = size
            return batch

        loader_iter.__next__ = next_batch
        import importlib
        module = importlib.import_module("torch.optim.optimizer")
        register = getattr(module, "register_optimizer_step_post_hook", None)
        if register is not None:  # torch 2.x: one hook for every optimizer
            register(lambda optimizer, args, kwargs: probe.after_step(optimizer))
            return
        # torch 1.13: wrap each optimizer's step as it is made.
        original_init = torch.optim.Optimizer.__init__

        def init(optimizer, *args, **kwargs):
            original_init(optimizer, *args, **kwargs)
            step = optimizer.step

            def stepped(*a, **k):
                result = step(*a, **k)
                probe.after_step(optimizer)
                return result

            optimizer.step = stepped

        torch.optim.Optimizer.__init__ = init

    # --- the sampling thread --------------------------------------------------------------------
    def _requested(self):
        if not self._request_path:
            return False
        try:
            with open(self._request_path) as f:
                content = f.read()
        except OSError:
            return False
        if content != self._last_request:
            self._last_request = content
            return True
        return False

    def run(self):
        while not self._stop.wait(self._interval):
            self.tick()

    def tick(self):
        try:
            self.memory_event()
            due = (self._gpu and self._last_snapshot is not None and
                   time.monotonic() - self._last_snapshot >= self._snapshot_every)
            if self._requested() or self._want_snapshot or due:
                self._want_snapshot = False
                self.snapshot_event()
        except Exception as error:  # a probe must never take the training down
            self.log("reading failed: %r" % (error,), "warning")

    def close(self):
        self._stop.set()
        self.tick()
        with self._lock:
            self._out.close()


def _leading_size(batch, depth=0):
    """The first dimension of the first tensor in a batch (a tensor, dict, list or tuple)."""
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if depth < 3:
        items = batch.values() if isinstance(batch, dict) else (
            batch if isinstance(batch, (list, tuple)) else ())
        for item in items:
            size = _leading_size(item, depth + 1)
            if size:
                return size
    return 0


def attach(interval=0.5, snapshot_every=60.0):
    """Starts the probe when LORASCOPE_PROBE_FILE is set; True when it runs."""
    global _probe
    if _probe is not None:
        return True
    path = os.environ.get("LORASCOPE_PROBE_FILE")
    if not path or os.environ.get("RANK", "0") != "0":
        return False
    try:
        import torch  # noqa: F401
    except ImportError as error:
        print("lorascope_probe: not attached: torch cannot be imported (%s)" % error,
              file=sys.stderr)
        return False
    _probe = _Probe(path, os.environ.get("LORASCOPE_PROBE_REQUEST"), interval, snapshot_every)
    torch = _probe._torch
    if _probe._gpu:
        _probe.log("attached: torch %s, %s" % (torch.__version__,
                                               torch.cuda.get_device_name(_probe._device)))
    else:
        _probe.log("attached: torch %s sees no GPU (torch.cuda.is_available() is False): there "
                   "is no GPU allocator to report; memory events carry host memory only"
                   % torch.__version__, "warning")
    _probe.install_hooks()
    _probe.memory_event()
    threading.Thread(target=_probe.run, name="lorascope_probe", daemon=True).start()
    atexit.register(_probe.close)
    return True


def _main(argv):
    import runpy
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m lorascope_probe SCRIPT.py [ARGS...]\n"
              "       python -m lorascope_probe -m MODULE [ARGS...]", file=sys.stderr)
        return 2
    attach()
    if argv[0] == "-m" and len(argv) >= 2:
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    return 0
