"""The runners of ``vmafdnn batch``: the scorer a worker holds, the local
process pool and the Ray actors, and the dispatch (attempts, retries, the
per-job time budget) common to both. They score jobs given by
:mod:`vmafdnn.jobs` and hand rows to a sink; they read no job list and write
no results file (:mod:`vmafdnn.results` owns those).
"""
import ctypes
import errno as _errno
import multiprocessing
import os
import re
import signal
import sys
import time
from collections import OrderedDict, deque
from multiprocessing.connection import wait as _wait_any
from typing import List, Optional, Sequence

from .jobs import POOL_SUFFIXES
from .paths import InputFileError, open_input
from .results import _file_identity

__all__ = ["Scorer", "check_input", "open_clip", "InputKindError", "report_path", "run_local",
           "run_ray", "Stop"]

# Contexts one worker keeps open (one per model set and reference use).
_MAX_CONTEXTS = 4


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
        models = scoring.resolve_models(models, no_reference)
        row["models"] = ";".join(os.fspath(m) for m in models)
        pipes = o.get("allow_pipes", False)
        for model in models:
            _check_model_file(model)
        raw = {"width": job.get("width"), "height": job.get("height"),
               "pix_fmt": job.get("pix_fmt")}
        row["file_kbps"] = None
        report = None
        if o["reports"]:
            report = report_path(o["reports"], job, job["job_key"], o["report_format"])
            reads = {"reference input": job["reference"], "distorted input": job["distorted"]}
            for model in models:
                for path in o.get("key_files", {}).get(os.fspath(model), []):
                    reads[f"file {path} of model {model}"] = path
            scoring.refuse_overwrite(report, "report", reads)
        inputs, files = [], []
        try:
            # Each clip is opened once, checked on that descriptor and read
            # from it (open_clip): a path swapped in between cannot be read.
            files.append(open_clip(job["distorted"], "distorted clip", pipes))
            if not no_reference:
                files.append(open_clip(job["reference"], "reference", pipes))
            dist = scoring._Input("distorted", files[0], job.get("bitdepth"), raw,
                                  job.get("dist_offset") or 0)
            inputs.append(dist)
            ref = None
            if not no_reference:
                ref = scoring._Input("reference", files[1], job.get("bitdepth"), raw,
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
            for f in files:
                f.close()

    def _score_in(self, ctx, ref, dist, report: Optional[str], row: dict) -> None:
        """Scores the job in an empty context and fills the row (and the
        report, written by the C writer as vmafdnn.score() writes it)."""
        from . import scoring
        t1 = time.perf_counter()
        fmt = self.options["report_format"]
        if report is not None:
            ctx.check_output(fmt)  # a name the report cannot carry: before any frame
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


class InputKindError(InputFileError):
    """A job's input is not a file a batch reads (a FIFO not allowed, a
    device, a folder); ``errno`` EINVAL or EISDIR."""


_NOT_A_PIPE = ("a batch scores regular files; --allow-pipes (allow_pipes=True) accepts "
               "pipes that a program feeds")


def open_clip(path: str, role: str, allow_pipes: bool = False, wait: bool = True):
    """A job's clip, opened for reading: a regular file, or a FIFO when
    ``allow_pipes`` (a pipe the user feeds on purpose: with ``wait`` the open
    then waits for its writer, the job timeout bounding the wait). The path
    is opened without blocking and the descriptor checked (fstat), so what
    was checked is what is read: a FIFO nobody writes, a terminal or a
    device never blocks a worker, even when swapped in after a check by
    name. InputKindError otherwise; an OSError (its message naming the
    clip) when it cannot be opened."""
    try:
        return open_input(path, role, fifo_ok=allow_pipes, wait_for_writer=wait)
    except InputFileError as e:
        hint = _NOT_A_PIPE if "is a FIFO" in str(e) else "a batch scores regular files"
        raise InputKindError(f"{e}: {hint}", e.errno, e.filename) from None


def check_input(path: str, role: str, allow_pipes: bool = False) -> None:
    """Raises InputKindError unless ``path`` is a file :func:`open_clip`
    takes; a path that cannot be opened is left to its reader's error. For
    files something else opens by name later (model files: the C library
    opens them and itself refuses what is not a regular file, on its own
    descriptor); clips are read from :func:`open_clip`'s file instead."""
    try:
        open_clip(path, role, allow_pipes, wait=False).close()
    except InputKindError:
        raise
    except OSError:
        pass


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


def refuse_report_overwrites(reports: str, fmt: str, jobs: Sequence[dict],
                             keys: Sequence[str], others: dict) -> None:
    """UsageError, before any work, when a job's per-job report would replace
    one of ``others`` ({role: path}: the job list, the results file and its
    journal). Their names are not in the job key, so a job list or results
    file named like a report (``<clip>-<key>.<fmt>``) was replaced by it. A
    job's own clips and model files are checked again by the worker (run),
    though the key covers their paths: a report named like one of them takes
    a SHA-256 fixed point on the key's first 12 hex digits."""
    from .paths import Inputs
    inputs = Inputs(others)
    for n, (job, key) in enumerate(zip(jobs, keys), 1):
        path = report_path(reports, job, key, fmt)
        inputs.refuse(path, f"report of job {n}")


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

_PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def _die_with_parent() -> None:
    """Linux: the worker gets SIGTERM when the thread that started it ends. A batch's
    process killed by SIGKILL cannot stop its workers: they went on with their jobs as
    orphans, up to the job timeout (an hour by default)."""
    parent = multiprocessing.parent_process()
    if not sys.platform.startswith("linux") or parent is None:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent.pid:  # it was gone before the prctl
        os._exit(1)


def _worker_main(conn, options: dict) -> None:
    """A worker process: jobs in, rows out, until None or the pipe closes."""
    _die_with_parent()
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


run_local = _run_local
run_ray = _run_ray
Stop = _Stop
