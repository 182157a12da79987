"""Batch scoring: a catalogue of clip pairs on every core, or on a Ray cluster.

    rows = vmafdnn.batch.batch("jobs.csv", "results.parquet")      # all cores
    rows = vmafdnn.batch.batch(jobs, "results.csv", ray="auto")     # a Ray cluster

A job list is a CSV file (a header row), a JSON Lines file (one object per
line) or, in Python, a list of dicts. Columns (see docs/batch.md):

    distorted       the clip to score (required)
    reference       its reference; empty or absent: no-reference models
    models          models of this job (";"-separated in CSV, a list in JSON);
                    empty: the batch's
    ref_offset, dist_offset, scale, width, height, pix_fmt, bitdepth
                    as for vmafdnn.score()
    anything else   a label (title, rendition, bitrate, ...) copied to the row

Relative paths are relative to the job file's folder (to ``base_dir`` for a
list). Each job gives one row: the labels, the pooled scores of every model
(``<key>`` is the mean, ``<key>_min``, ``<key>_max``, ``<key>_harmonic_mean``),
the frame count, the EP each model ran on, timings and ``error`` (empty when
the job succeeded). A job that fails (a missing file, a size mismatch, a
model error) fails its row only.

Workers keep their models open across jobs: a worker scores every job of one
model set in one :class:`vmafdnn.Context`, emptied between jobs
(:meth:`vmafdnn.Context.reset`), so the context is opened once per worker
instead of once per job, per-frame reports included (reset rewinds the
models that keep state, native-resolution and temporal ones, in place, see
docs/batch.md); each job is scored from frame 0 and gives the scores and
report of a fresh context. A worker that dies (a crash, SIGKILL, a lost Ray
node) has its job retried on another; results are journalled as they arrive,
so a batch re-run with the same output skips the jobs already done (keyed by
inputs, models and options), and a job failing in a re-run (its clips moved
away, say) keeps its earlier successful row: a failure never replaces a
success.

Shape: job lists are read (strictly, with located errors) by
:mod:`vmafdnn.jobs`; the results file, its journal and the job key belong
to :mod:`vmafdnn.results`, the only writer of results files; this module
holds the runners (local processes, Ray) and the ``vmafdnn batch`` command.
Every job has a time budget (``timeout``, :data:`DEFAULT_JOB_TIMEOUT`): a job
past it has its worker process or Ray actor killed and fails its row.
"""
import errno as _errno
import multiprocessing
import os
import re
import sys
import time
import types
from collections import OrderedDict, deque
from multiprocessing.connection import wait as _wait_any
from typing import Callable, Dict, List, Optional, Sequence, Union

__all__ = ["batch", "read_jobs", "read_results", "write_results", "BatchResult", "JOB_FIELDS",
           "POOL_SUFFIXES"]

from .jobs import JOB_FIELDS, POOL_SUFFIXES, label_clashes, read_jobs
from .jobs import labels as _labels  # noqa: F401
from .results import (_RESULT_HEAD, _RESULT_TAIL, Journal, _columns, _done_rows,  # noqa: F401
                      _file_identity, _format_of, _good_rows, _Hasher, _is_score,
                      _journal_path, _keep_good_rows, _pyarrow, _with_labels, job_key, key_files,
                      read_results, remove_journal, write_results)

#: Seconds one job may run (local worker or Ray actor) before it is stopped
#: (its process killed) and its row fails: generous for a long clip scored
#: by every built-in model on one core, short of "forever". 0 or None: no
#: limit.
DEFAULT_JOB_TIMEOUT = 3600.0

# Contexts one worker keeps open (one per model set and reference use).
_MAX_CONTEXTS = 4


class BatchResult(list):
    """The rows of a batch, one dict per job in job-list order, plus counts:
    ``ran`` (jobs scored now), ``skipped`` (done in an earlier run),
    ``failed`` (jobs that failed: rows with an error, and the jobs of
    ``kept``), ``retried`` (attempts lost to dead workers), ``elapsed``
    (seconds) and ``frames`` (frames scored now). ``kept``: job index ->
    the error of this run, for the jobs that failed now while the results
    file or its journal held a successful row for them: that earlier row
    is their row (a failure never replaces a success, see docs/batch.md)."""

    ran = skipped = failed = retried = frames = 0
    elapsed = 0.0

    def __init__(self, rows=()):
        super().__init__(rows)
        self.kept: Dict[int, str] = {}


# -- the worker side ------------------------------------------------------------------

class Scorer:
    """Scores jobs one after another, keeping a context (its attached
    models) open per model set and emptying it between jobs
    (:meth:`Context.reset`), so every job is scored from frame 0 as in a
    fresh context. One per worker process or Ray actor; ``run`` never
    raises: errors go into the row."""

    def __init__(self, options: dict):
        self.options = options
        self._contexts: "OrderedDict[tuple, object]" = OrderedDict()

    def close(self) -> None:
        while self._contexts:
            self._contexts.popitem()[1].close()

    def _context(self, key: tuple, models: Sequence[str], no_reference: bool):
        """(context, load seconds paid now): the empty context kept for
        ``key``, or a new one given its models."""
        ctx = self._contexts.get(key)
        if ctx is not None:
            self._contexts.move_to_end(key)
            return ctx, 0.0
        from .context import Context
        o = self.options
        t0 = time.perf_counter()
        ctx = Context(device=o["device"], device_index=o["device_index"], threads=o["threads"],
                      fp16_io=o["fp16_io"], resize=o["resize"], **o["policy"])
        try:
            for model in models:
                ctx.use_model(model, no_reference=no_reference)
            self._check_key_files(ctx, models)
        except BaseException:
            ctx.close()
            raise
        self._contexts[key] = ctx
        while len(self._contexts) > _MAX_CONTEXTS:
            self._contexts.popitem(last=False)[1].close()
        return ctx, time.perf_counter() - t0

    def _check_key_files(self, ctx, models) -> None:
        """Every file the library loaded (``ctx.models``: each model and the
        form that really scores) must be one the job key covers (the batch
        hashes the files the sidecars name, following the library's rules):
        a file outside the key would let a resumed batch keep a stale row."""
        covered = self.options.get("key_files")
        if covered is None:
            return
        allowed = set()
        for model in models:
            allowed.update(covered.get(os.fspath(model), ()))
        for info in ctx.models:
            for path in (info.path, info.form):
                if path and os.path.realpath(path) not in allowed:
                    raise RuntimeError(f"model file {path} was loaded but is not part of the "
                                       "job key (a sidecar rule the batch runner does not "
                                       "follow): refusing to score a row that resume could "
                                       "not tell stale")

    def _release(self, key: tuple) -> None:
        """Empties the context of ``key`` for the next job, or drops it."""
        ctx = self._contexts.get(key)
        if ctx is None:
            return
        if self.options["reuse"]:
            try:
                # Also after a failed job: reset leaves what a fresh open
                # would (models rewound, a pending frame failure dropped),
                # so a failure does not cost a reload.
                ctx.reset()
                return
            except Exception:
                # Nothing was dropped (out of memory): a new context
                # reports the cause in the next job's row.
                pass
        del self._contexts[key]
        ctx.close()

    def run(self, job: dict) -> dict:
        t0 = time.perf_counter()
        row = {"frames": 0, "load_s": 0.0, "score_s": 0.0, "error": ""}
        try:
            self._score(job, row)
        except Exception as e:  # the row carries it; the batch goes on
            row["error"] = _error_text(e)
        row["total_s"] = time.perf_counter() - t0
        row["worker"] = f"{os.uname().nodename}:{os.getpid()}"
        return row

    def _score(self, job: dict, row: dict) -> None:
        from fractions import Fraction

        from . import scoring
        o = self.options
        models = job["models"] or o["models"]
        no_reference = job["reference"] is None
        models = scoring._model_list(models, no_reference)
        row["models"] = ";".join(os.fspath(m) for m in models)
        pipes = o.get("allow_pipes", False)
        check_input(job["distorted"], "distorted clip", pipes)
        if not no_reference:
            check_input(job["reference"], "reference", pipes)
        for model in models:
            _check_model_file(model)
        raw = {"width": job.get("width"), "height": job.get("height"),
               "pix_fmt": job.get("pix_fmt")}
        row["file_kbps"] = None
        report = None
        if o["reports"]:
            report = report_path(o["reports"], job, job["job_key"], o["report_format"])
            scoring.refuse_overwrite(report, "report", {"reference input": job["reference"],
                                                        "distorted input": job["distorted"]})
        inputs = []
        try:
            dist = scoring._Input("distorted", job["distorted"], job.get("bitdepth"), raw,
                                  job.get("dist_offset") or 0)
            inputs.append(dist)
            ref = None
            if not no_reference:
                ref = scoring._Input("reference", job["reference"], job.get("bitdepth"), raw,
                                     job.get("ref_offset") or 0)
                inputs.append(ref)
                scoring._check_inputs(ref, dist, job["scale"])
                if job["scale"]:
                    dist.scale_like(ref)
            fps = float(Fraction(dist.fps)) if dist.fps is not None else None
            row.update(width=dist.width, height=dist.height, fps=fps)
            # Reset drops the first frame's size and rewinds native-resolution
            # models, so frame geometry need not be part of the key.
            key = (tuple(models), no_reference)
            ctx, row["load_s"] = self._context(key, models, no_reference)
            try:
                self._score_in(ctx, ref, dist, report, row)
            finally:
                self._release(key)
            if type(dist.reader).__name__ == "MediaReader":
                row["file_kbps"] = _file_kbps(job, row["frames"], fps)
        finally:
            for side in inputs:
                side.close()

    def _score_in(self, ctx, ref, dist, report: Optional[str], row: dict) -> None:
        """Scores the job in an empty context and fills the row (and the
        report, written by the C writer as vmafdnn.score() writes it)."""
        from . import scoring
        t1 = time.perf_counter()
        fmt = self.options["report_format"]
        scoring.score_frames(ctx, ref, dist, {}, None, scoring.Canceller(), report, fmt)
        row["frames"] = dist.count
        for model in ctx.models:
            for name in model.features:
                for method, suffix in POOL_SUFFIXES.items():
                    row[name + suffix] = ctx.pool(name, method)
        row["attached_ep"] = _ep_text(ctx.models)
        if report is not None:
            ctx.write(report, fmt)
            row["report"] = report
        row["score_s"] = time.perf_counter() - t1


class InputKindError(ValueError):
    """A job's input is not a file a batch reads (a FIFO not allowed, a
    device, a folder)."""


def check_input(path: str, role: str, allow_pipes: bool = False) -> None:
    """A job's clip must be a regular file, or a FIFO when ``allow_pipes``
    (a pipe the user feeds on purpose): a FIFO nobody writes, a terminal or
    a device would block a worker or never end. Checked before anything
    opens the path; the job timeout covers what changes in between."""
    import stat
    try:
        st = os.stat(path)
    except OSError:
        return  # opening it gives the error, with its message
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISFIFO(st.st_mode):
        if allow_pipes:
            return
        raise InputKindError(f"{role} {path} is a FIFO (named pipe): a batch "
                             "scores regular files; --allow-pipes (allow_pipes=True) accepts "
                             "pipes that a program feeds")
    kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
            "a character device" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
    raise InputKindError(f"{role} {path} is {kind}: a batch scores regular "
                         "files")


def _check_model_file(model) -> None:
    """A model file (and its sidecar) must be regular files, never a FIFO:
    the library reads them whole."""
    from . import models as _builtin
    try:
        path = _builtin.resolve(model)
    except (OSError, ValueError):
        return  # attaching it gives the library's message
    check_input(path, "model", False)
    check_input(os.path.splitext(path)[0] + ".json", "model sidecar", False)


def report_path(folder: str, job: dict, key: str, fmt: str) -> str:
    """``<folder>/<distorted name>-<key>.<fmt>``: stable across runs (resume
    finds it) and unique per job."""
    stem = os.path.splitext(os.path.basename(job["distorted"]))[0]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:80] or "job"
    return os.path.join(folder, f"{stem}-{key[:12]}.{fmt}")


def _file_kbps(job: dict, frames: int, fps) -> Optional[float]:
    """A compressed file's rate: its size over the duration of its frames
    (those dropped by dist_offset included)."""
    size = _file_identity(job["distorted"])
    if not fps or not size or not size[1]:
        return None
    return size[1] * 8 / 1000 / ((frames + (job.get("dist_offset") or 0)) / fps)


def _ep_text(models) -> str:
    eps = [m.attached_ep for m in models]
    if len(set(eps)) <= 1:
        return eps[0] if eps else ""
    return ";".join(f"{os.path.basename(m.path)}={m.attached_ep}" for m in models)


def _error_text(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, OSError) and e.filename and e.strerror:
        text = f"{e.filename}: {e.strerror}"
    return f"{type(e).__name__}: {text}"


# -- local worker processes ------------------------------------------------------------

def _worker_main(conn, options: dict) -> None:
    """A worker process: jobs in, rows out, until None or the pipe closes."""
    scorer = Scorer(options)
    try:
        conn.send(("ready", os.getpid()))  # imports done: a death from now on is a job's
        while True:
            try:
                message = conn.recv()
            except EOFError:
                break
            if message is None:
                break
            index, job = message
            conn.send(("row", index, scorer.run(job)))
    except KeyboardInterrupt:
        pass  # the parent handles Ctrl-C; a worker just ends
    finally:
        scorer.close()


class _LocalWorker:
    def __init__(self, mp, options: dict):
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_worker_main, args=(child, options), daemon=True,
                               name="vmafdnn-batch-worker")
        self.proc.start()
        child.close()
        self.job = None  # the index of the job in flight
        self.started = 0.0
        self.ready = False  # it said so: it imported vmafdnn and can score

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(5 if not kill else None)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _death_text(exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


class _Stop:
    """What a Canceller watching a batch cancels: the dispatch loops look at
    it between results (at least every _POLL_S) and stop."""

    def __init__(self):
        self.requested = False

    def cancel(self) -> None:
        self.requested = True


_POLL_S = 0.2


class _Dispatcher:
    """Attempts and retries, common to the local pool and Ray."""

    def __init__(self, todo: List[int], jobs: List[dict], options: dict, on_event, sink,
                 stop: _Stop):
        self.stop = stop
        self.queue = deque(todo)
        self.jobs = jobs
        self.attempts = {i: 0 for i in todo}
        self.max_attempts = 1 + options["retries"]
        self.on_event = on_event
        self.sink = sink  # sink(index, row)
        self.retried = 0

    def check_stop(self) -> None:
        if self.stop.requested:
            from .errors import RunCancelledError
            raise RunCancelledError(_errno.ECANCELED, "batch cancelled; the rows of finished "
                                    "jobs are kept: run it again with the same output to resume")

    def take(self, worker_id):
        index = self.queue.popleft()
        self.attempts[index] += 1
        if self.on_event:
            self.on_event("start", index, {"worker": worker_id, "attempt": self.attempts[index]})
        return index

    def lost(self, index: int, why: str) -> None:
        """A worker died with job ``index`` in flight: again elsewhere, or a
        failed row once it has taken every attempt."""
        if self.attempts[index] < self.max_attempts:
            self.retried += 1
            self.queue.appendleft(index)
            if self.on_event:
                self.on_event("retry", index, {"why": why})
        else:
            self.sink(index, {"frames": 0, "attempts": self.attempts[index],
                              "error": f"WorkerDied: the worker scoring this job {why} "
                                       f"({self.attempts[index]} attempt(s))"})

    def timed_out(self, index: int, timeout: float) -> None:
        """Job ``index`` ran past the job timeout and its worker was killed:
        its row fails (not retried: the same input would hang again)."""
        self.sink(index, {"frames": 0, "attempts": self.attempts[index],
                          "error": f"JobTimeout: the job ran past the {timeout:g} s job "
                                   "timeout (--job-timeout); its worker was killed"})

    def done(self, index: int, row: dict) -> None:
        row["attempts"] = self.attempts[index]
        self.sink(index, row)


# Workers in a row that die before they are ready (a broken install, say)
# before the batch gives up: their jobs are not charged an attempt.
_STARTUP_FAILURES = 3


def _run_local(todo, jobs, options, workers: int, on_event, sink, timeout, stop) -> int:
    # spawn, not fork: a forked child would share the parent's ONNX Runtime
    # threads and handles, which the library refuses (and which deadlock).
    mp = multiprocessing.get_context("spawn")
    d = _Dispatcher(todo, jobs, options, on_event, sink, stop)
    pool = [_LocalWorker(mp, options) for _ in range(min(workers, len(todo)))]
    startup_failures = 0
    try:
        while d.queue or any(w.job is not None for w in pool):
            for w in pool:
                # Only a worker that said it is ready gets a job, so a job is
                # charged an attempt only for deaths while it really ran.
                if w.ready and w.job is None and d.queue:
                    index = d.take(w.pid)
                    w.job, w.started = index, time.monotonic()
                    try:
                        w.conn.send((index, jobs[index]))
                    except OSError:
                        pass  # it died: its sentinel says so below
            wait_s = _POLL_S
            if timeout and any(w.job is not None for w in pool):
                first = min(w.started for w in pool if w.job is not None)
                wait_s = min(wait_s, max(0.0, first + timeout - time.monotonic()))
            d.check_stop()
            ready = set(_wait_any([w.conn for w in pool] + [w.proc.sentinel for w in pool],
                                  wait_s))
            for k, w in enumerate(pool):
                why = None
                if w.conn in ready:
                    try:
                        message = w.conn.recv()
                    except (EOFError, OSError):
                        pass  # it died: the exit status tells how
                    else:
                        if message[0] == "ready":
                            w.ready, startup_failures = True, 0
                        else:
                            w.job = None
                            d.done(message[1], message[2])
                        continue
                if w.conn in ready or w.proc.sentinel in ready:
                    w.proc.join(1)
                    why = _death_text(w.proc.exitcode)
                elif timeout and w.job is not None and time.monotonic() - w.started > timeout:
                    why = "timeout"
                if why is None:
                    continue
                index, w.job = w.job, None
                w.stop(kill=True)
                if not w.ready:
                    startup_failures += 1
                    if startup_failures >= _STARTUP_FAILURES:
                        raise RuntimeError(
                            f"batch workers cannot start: {startup_failures} in a row {why} "
                            "before they could score (their error is above)")
                pool[k] = _LocalWorker(mp, options)
                if index is not None:
                    if why == "timeout":
                        d.timed_out(index, timeout)
                    else:
                        d.lost(index, why)
    finally:
        for w in pool:
            w.stop(kill=w.job is not None or not w.ready)
    return d.retried


# -- Ray --------------------------------------------------------------------------------

class _RayWorker:
    """A Ray actor holding a Scorer (its sessions) across jobs."""

    def __init__(self, options: dict):
        self.scorer = Scorer(options)

    def pid(self) -> int:
        return os.getpid()

    def run(self, index: int, job: dict):
        return index, self.scorer.run(job)


def _run_ray(todo, jobs, options, address, workers, gpus_per_worker, on_event, sink, stop,
             timeout: Optional[float] = None, in_flight: int = 2) -> int:
    """The jobs on Ray actors, ``in_flight`` queued on each. A job running
    past ``timeout`` has its actor killed (ray.kill ends the process, so a
    read blocked in it stops) and fails its row; the jobs queued behind it
    go to other actors."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs Ray: pip install 'vmafdnn[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=None if address in (None, True, "", "local") else address,
                 logging_level="warning", log_to_driver=False)
    threads = max(1, options["threads"])
    resources = ray.cluster_resources()
    if gpus_per_worker:
        # Ray gives each actor its GPUs in CUDA_VISIBLE_DEVICES: index 0 is its own.
        options = dict(options, device=options["device"] if options["device"] != "auto"
                       else "cuda", device_index=0)
        slots = int(resources.get("GPU", 0) / gpus_per_worker)
        if slots < 1:
            raise RuntimeError(f"the Ray cluster has {resources.get('GPU', 0):g} GPU(s): "
                               f"none for a worker asking for {gpus_per_worker:g}")
    else:
        slots = max(1, int(resources.get("CPU", 1) // threads))
    workers = min(workers or slots, len(todo))
    actor_class = ray.remote(num_cpus=threads, num_gpus=gpus_per_worker or 0)(_RayWorker)
    d = _Dispatcher(todo, jobs, options, on_event, sink, stop)

    def start():
        actor = actor_class.remote(options)
        return {"actor": actor, "pid": None, "jobs": {}, "since": None}

    def replace(a):
        """Kills actor record ``a`` (its process: a hung read stops) and
        starts another in its place; returns the indices it had in flight."""
        lost = list(a["jobs"].values())
        for other in a["jobs"]:
            futures.pop(other, None)
        a["jobs"].clear()
        ray.kill(a["actor"], no_restart=True)
        actors.remove(a)
        replacement = start()
        try:
            replacement["pid"] = ray.get(replacement["actor"].pid.remote())
        except ray.exceptions.RayError:
            replacement["pid"] = None
        actors.append(replacement)
        return lost

    actors = [start() for _ in range(workers)]
    for a in actors:
        a["pid"] = ray.get(a["actor"].pid.remote())
    futures = {}  # future -> actor record
    try:
        while d.queue or futures:
            for a in actors:
                while d.queue and len(a["jobs"]) < in_flight:
                    index = d.take(a["pid"])
                    future = a["actor"].run.remote(index, jobs[index])
                    if not a["jobs"]:
                        a["since"] = time.monotonic()  # it starts now
                    a["jobs"][future] = index
                    futures[future] = a
            d.check_stop()
            ready, _ = ray.wait(list(futures), num_returns=1, timeout=_POLL_S)
            for future in ready:
                a = futures.pop(future, None)
                if a is None or future not in a["jobs"]:
                    continue  # its actor was replaced meanwhile
                index = a["jobs"].pop(future)
                try:
                    _, row = ray.get(future)
                except ray.exceptions.RayActorError as e:
                    # Everything in flight on that actor is lost: again on a new one.
                    why = "died (" + " ".join(str(e).split())[:200] + ")"
                    lost = [index] + replace(a)
                    for i in lost:
                        d.lost(i, why)
                else:
                    # An actor runs its tasks in order: the next one starts now.
                    a["since"] = time.monotonic()
                    d.done(index, row)
            if timeout:
                now = time.monotonic()
                for a in list(actors):
                    if a["jobs"] and now - a["since"] > timeout:
                        # The first job in flight is the one running: it fails; the
                        # others had not started and go back to the queue uncharged.
                        head, *waiting = replace(a)
                        d.timed_out(head, timeout)
                        for i in reversed(waiting):
                            d.attempts[i] -= 1
                            d.queue.appendleft(i)
    finally:
        for a in actors:
            try:
                ray.kill(a["actor"], no_restart=True)
            except Exception:
                pass
    return d.retried


# -- progress ----------------------------------------------------------------------------------

class _Progress:
    """Jobs done of all, failures, jobs and frames per second and an ETA on
    one stderr line, redrawn at most ten times a second."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.done = self.failed = self.frames = 0
        self._last = 0.0

    def __call__(self, row: dict) -> None:
        self.done += 1
        self.failed += bool(row.get("error"))
        self.frames += row.get("frames") or 0
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done != self.total:
            return
        self._last = now
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = ""
        if self.done < self.total and rate > 0:
            left = int((self.total - self.done) / rate + 0.5)
            eta = f", ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
        failed = f" ({self.failed} failed)" if self.failed else ""
        self.stream.write(f"\rvmafdnn batch: {self.done}/{self.total} jobs{failed}, "
                          f"{rate:.2f} jobs/s, {self.frames / elapsed:.1f} frames/s{eta} ")
        self.stream.flush()

    def end(self) -> None:
        if self.done:
            self.stream.write("\n")
            self.stream.flush()


# -- the batch -----------------------------------------------------------------------------------

def default_workers() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def batch(jobs, output=None, *, models=None, workers: Optional[int] = None, threads: int = 1,
          device: str = "auto", device_index: int = 0, fp16_io: bool = False,
          resize: str = "none", reports=None, report_format: str = "json", retries: int = 2,
          timeout: Optional[float] = DEFAULT_JOB_TIMEOUT, allow_pipes: bool = False, ray=None,
          gpus_per_worker: float = 0,
          reuse: bool = True, progress: Union[bool, Callable[[dict], None], None] = None,
          on_event: Optional[Callable[[str, int, dict], None]] = None,
          base_dir: Optional[str] = None, cancel=None, **policy) -> BatchResult:
    """Scores every job of ``jobs`` (a CSV / JSON Lines path or a list of
    dicts, see :func:`read_jobs`); returns a :class:`BatchResult`, one row per
    job in job-list order. With ``output`` (.parquet, .csv, .jsonl) the rows
    are also written there; rows are journalled to ``<output>.partial.jsonl``
    as jobs finish, and jobs whose successful row is already in ``output`` or
    the journal (same job key) are not run again. A job that fails keeps its
    earlier successful row, if any (say its clips were moved away): the row
    stays, the job counts as failed and its error is in ``kept``.

    ``models``: the models of jobs that name none (default: psnr_y and
    ssim_y, sharpness_nr without a reference). ``workers``: processes (or
    Ray actors); default every core (of the machine, or of the Ray cluster)
    divided by ``threads``. Local workers are started with ``spawn``: a
    script calling this needs the usual ``if __name__ == "__main__":``.
    ``threads``: ONNX Runtime threads of each model in each
    worker (default 1: whole jobs in parallel scale better than threads
    within a frame). ``device``, ``device_index``, ``fp16_io``, ``resize``
    and the ``policy`` keywords (``model_dir``, ``max_memory_bytes``,
    ``max_run_ms``, ...) are those of :func:`vmafdnn.score`.
    ``reports``: a folder for one per-frame report per job (``report_format``
    json, xml or csv), named by :func:`report_path`. ``retries``: how often
    a job whose worker died is tried again elsewhere. ``timeout``: seconds
    one job may take (default :data:`DEFAULT_JOB_TIMEOUT`, one hour; 0 or
    None: no limit) before its worker process or Ray actor is killed and its
    row fails (the job is not retried: it would hang again); the batch goes
    on. ``allow_pipes``: a job's clips may be FIFOs (named pipes a program
    feeds); by default a clip that is not a regular file fails its row
    before anything opens it (a FIFO nobody writes would block a worker).
    ``ray``: None (local processes), True (a local Ray instance, or
    the one already initialised) or a cluster address for ``ray.init``;
    ``gpus_per_worker`` > 0 asks Ray for GPUs per actor and binds the CUDA
    EP. ``reuse=False`` opens the models afresh for every job (for
    measurement). ``progress``: True for the stderr progress line, or a
    callable given each row; ``on_event(kind, index, info)`` sees "start"
    (info: worker, attempt), "retry", "done" and, once the jobs have run,
    "kept" (info: error, row) for a job that failed now but keeps its
    earlier successful row (:attr:`BatchResult.kept`). ``cancel``: a
    :class:`vmafdnn.Canceller`; cancelling it stops the batch within a
    fraction of a second (workers killed, RunCancelledError raised), the
    rows of finished jobs staying in the journal for a re-run.
    """
    t0 = time.perf_counter()
    from .context import OUTPUT_FORMATS, RESIZE_MODES
    from .session import DEVICES, MAX_THREADS
    if report_format not in OUTPUT_FORMATS:
        raise ValueError(f"report_format must be one of {', '.join(OUTPUT_FORMATS)}")
    if resize not in RESIZE_MODES:
        raise ValueError(f"resize must be one of {', '.join(RESIZE_MODES)}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}")
    if not 0 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be 0..{MAX_THREADS}")
    if workers is not None and workers < 1:
        raise ValueError("workers must be at least 1")
    if retries < 0:
        raise ValueError("retries must be at least 0")
    if timeout is not None and not (isinstance(timeout, (int, float))
                                    and 0 <= timeout < float("inf")):
        raise ValueError("timeout must be a finite number of seconds >= 0 (0 or None: no limit)")
    timeout = timeout or None
    if output is not None:
        output = os.fspath(output)
        _format_of(output)
        if _format_of(output) == "parquet":
            _pyarrow("write parquet")
    if isinstance(models, (str, os.PathLike)):
        models = [models]
    options = {"models": [os.fspath(m) for m in models] if models else None,
               "device": device, "device_index": device_index, "threads": threads,
               "fp16_io": fp16_io, "resize": resize, "policy": policy,
               "reports": os.path.abspath(reports) if reports else None,
               "report_format": report_format, "retries": retries, "reuse": reuse,
               "allow_pipes": bool(allow_pipes)}
    if options["reports"]:
        os.makedirs(options["reports"], exist_ok=True)
    job_list = read_jobs(jobs, base_dir, options["models"] or _default_model_names())
    if output is not None:
        _refuse_overwrite(output, jobs, job_list)
    hasher = _Hasher()
    keys = [job_key(job, options, hasher) for job in job_list]
    from . import scoring
    options["key_files"] = {}
    for job in job_list:
        for model in scoring._model_list(job["models"] or options["models"],
                                         job["reference"] is None):
            name = os.fspath(model)
            if name not in options["key_files"]:
                options["key_files"][name] = key_files(name, hasher)
    for job, key in zip(job_list, keys):
        job["job_key"] = key
    earlier = _good_rows(output)
    done = _done_rows(earlier, options["reports"])
    result = BatchResult([None] * len(job_list))
    todo = []
    for i, (job, key) in enumerate(zip(job_list, keys)):
        if key in done:
            result[i] = _with_labels(done[key], job)
            result.skipped += 1
        else:
            todo.append(i)

    meter = _Progress(len(todo)) if progress is True else progress or None
    journal = Journal(output) if output and todo else None

    def sink(index: int, row: dict) -> None:
        job = job_list[index]
        clashes = label_clashes(job, row)
        if clashes:
            # A label would replace a score (or the reverse): neither is written.
            names = ", ".join(f'"{c}"' for c in clashes)
            row = {k: row[k] for k in ("load_s", "score_s", "total_s", "worker", "attempts")
                   if k in row}
            row.update(frames=0, error=f"ColumnClash: the job list's label column(s) {names} "
                                       "are also written by the job's models; rename the "
                                       "label column(s)")
        row = dict(row, job_key=job["job_key"], reference=job["reference"],
                   distorted=job["distorted"])
        row.setdefault("models", ";".join(job["models"] or options["models"] or []))
        row = _with_labels(row, job)
        result[index] = row
        result.ran += 1
        result.frames += row.get("frames") or 0
        if journal is not None:
            journal.append(row)
        if meter:
            meter(row)
        if on_event:
            on_event("done", index, row)

    stop = _Stop()
    if cancel is not None:
        cancel.watch(stop)
    try:
        if todo:
            if ray is not None and ray is not False:
                result.retried = _run_ray(todo, job_list, options, ray, workers,
                                          gpus_per_worker, on_event, sink, stop, timeout)
            else:
                if gpus_per_worker:
                    raise ValueError("gpus_per_worker is for Ray; locally use device=")
                result.retried = _run_local(todo, job_list, options,
                                            workers or max(1, default_workers() //
                                                           max(1, threads)), on_event, sink,
                                            timeout, stop)
    finally:
        if cancel is not None:
            cancel.unwatch(stop)
        if journal is not None:
            journal.close()
        if isinstance(meter, _Progress):
            meter.end()
    _keep_good_rows(result, job_list, todo, earlier, options, on_event)
    result.failed = sum(1 for row in result if row.get("error")) + len(result.kept)
    if output is not None:
        write_results(result, output)
        remove_journal(output)
    result.elapsed = time.perf_counter() - t0
    return result


def _refuse_overwrite(output: str, jobs, job_list: List[dict]) -> None:
    """UsageError, before any work, when the results file or its journal is
    the job list or a job's clip, by any spelling (``vmafdnn batch jobs.csv
    -o jobs.csv`` replaced the job list with the results), as the scoring
    command refuses ``-o ref.y4m``."""
    from .scoring import refuse_overwrite
    inputs = {}
    if isinstance(jobs, (str, os.PathLike)):
        inputs["job list"] = os.fspath(jobs)
    for n, job in enumerate(job_list, 1):
        inputs[f"reference of job {n}"] = job["reference"]
        inputs[f"distorted clip of job {n}"] = job["distorted"]
    refuse_overwrite(output, "results file", inputs)
    refuse_overwrite(_journal_path(output), "results journal", inputs)


class _CallableModule(types.ModuleType):
    """``vmafdnn.batch(jobs, ...)`` calls :func:`batch`, while
    ``vmafdnn.batch.read_results`` & co. stay reachable: the package can
    expose the module under the function's name without hiding either."""

    def __call__(self, *args, **kwargs):
        return batch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


# -- the command line (vmafdnn batch) ------------------------------------------------------

def _default_model_names() -> List[str]:
    """The models of a job that names none, with or without a reference."""
    from . import scoring
    return list(scoring._model_list(None, False)) + list(scoring._model_list(None, True))


def _default_models(no_reference: bool = False) -> List[str]:
    from . import models  # the library's set; loads it, which --help may do
    return models.default_models(no_reference)


def add_arguments(parser) -> None:
    """The ``vmafdnn batch`` arguments (cli.py adds the policy flags)."""
    from . import cli
    from .context import OUTPUT_FORMATS, RESIZE_MODES
    from .session import DEVICES, MAX_THREADS
    parser.add_argument("jobs", metavar="JOBS",
                        help="job list: CSV with a header row, or JSON Lines (.jsonl)")
    parser.add_argument("-o", "--output", metavar="RESULTS",
                        help="results: .parquet, .csv or .jsonl; re-running with the same file "
                             "skips the jobs already done")
    parser.add_argument("--workers", type=cli._positive_int, metavar="N",
                        help=f"worker processes or Ray actors (default: the cores, here "
                             f"{default_workers()}, or the Ray cluster's CPUs, over --threads)")
    parser.add_argument("--threads", type=cli._thread_count, default=1, metavar="N",
                        help=f"ONNX Runtime threads per model in each worker, 0..{MAX_THREADS} "
                             "(default 1)")
    parser.add_argument("--tiny-model", action="append", dest="models", metavar="PATH",
                        help="model of jobs without a 'models' column; repeatable (default: "
                             f"{', '.join(_default_models())}; "
                             f"{', '.join(_default_models(True))} without a reference)")
    parser.add_argument("--tiny-device", default="auto", type=str.lower, choices=list(DEVICES))
    parser.add_argument("--tiny-device-index", type=cli._non_negative_int, default=0,
                        metavar="N")
    parser.add_argument("--tiny-fp16", action="store_true")
    parser.add_argument("--tiny-resize", default="none", type=str.lower,
                        choices=list(RESIZE_MODES))
    parser.add_argument("--reports", metavar="DIR",
                        help="also write one per-frame report per job into DIR")
    parser.add_argument("--report-format", default="json", choices=list(OUTPUT_FORMATS))
    parser.add_argument("--retries", type=cli._non_negative_int, default=2, metavar="N",
                        help="tries more of a job whose worker died (default 2)")
    parser.add_argument("--job-timeout", type=cli._seconds, default=DEFAULT_JOB_TIMEOUT,
                        metavar="SECONDS",
                        help="stop a job running longer (its worker process or Ray actor is "
                             "killed) and fail its row; the batch goes on (default "
                             f"{DEFAULT_JOB_TIMEOUT:g}; 0: no limit)")
    parser.add_argument("--allow-pipes", action="store_true",
                        help="accept FIFOs (named pipes a program feeds) as clips; by default a "
                             "clip that is not a regular file fails its row")
    parser.add_argument("--ray", nargs="?", const=True, default=None, metavar="ADDRESS",
                        help="run on Ray: ray.init(address=ADDRESS) ('auto': the running "
                             "cluster), without ADDRESS a local instance")
    parser.add_argument("--gpus-per-worker", type=float, default=0, metavar="G",
                        help="Ray: GPUs each actor asks for; binds the CUDA EP")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line and no summary")


def run_command(args, policy: dict, printable=str) -> int:
    """``vmafdnn batch``: 0 when every job succeeded, 1 when some failed
    (a job that failed now but kept its earlier successful row included:
    one line each on stderr says so)."""
    if args.output is None and args.reports is None:
        from .scoring import UsageError
        raise UsageError("give -o RESULTS (and/or --reports DIR): the rows go nowhere else")
    progress = not args.quiet and sys.stderr.isatty()
    rows = batch(args.jobs, args.output, models=args.models, workers=args.workers,
                 threads=args.threads, device=args.tiny_device,
                 device_index=args.tiny_device_index, fp16_io=args.tiny_fp16,
                 resize=args.tiny_resize, reports=args.reports,
                 report_format=args.report_format, retries=args.retries,
                 timeout=args.job_timeout, allow_pipes=args.allow_pipes, ray=args.ray,
                 gpus_per_worker=args.gpus_per_worker,
                 progress=progress, cancel=args.canceller,
                 **{k: v for k, v in policy.items() if v is not None})
    for index, error in sorted(rows.kept.items()):
        print(f"vmafdnn batch: job {index + 1} ({printable(rows[index]['distorted'])}) failed: "
              f"{printable(error)}; its earlier successful row is kept in the results",
              file=sys.stderr)
    if not args.quiet:
        rate = rows.ran / rows.elapsed if rows.elapsed > 0 else 0.0
        kept = f" ({len(rows.kept)} keeping an earlier successful row)" if rows.kept else ""
        print(f"jobs: {len(rows)} ({rows.ran} scored, {rows.skipped} already done, "
              f"{rows.failed} failed{kept}, {rows.retried} retried after a worker died); "
              f"{rows.frames} frames in {rows.elapsed:.1f} s ({rate:.2f} jobs/s)")
        for index, row in enumerate(rows):
            error = rows.kept.get(index) or row.get("error")
            if error:
                note = " (its earlier successful row is kept)" if index in rows.kept else ""
                print(f"failed: {printable(row['distorted'])}: {printable(error)}{note}")
        if args.output:
            print(f"results: {printable(args.output)}")
    return 1 if rows.failed else 0
