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
"""
import csv
import errno as _errno
import hashlib
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
import types
from collections import OrderedDict, deque
from multiprocessing.connection import wait as _wait_any
from typing import Callable, Dict, List, Optional, Sequence, Union

__all__ = ["batch", "read_jobs", "read_results", "write_results", "BatchResult", "JOB_FIELDS",
           "POOL_SUFFIXES"]

#: Job columns the runner reads; every other column is a label.
JOB_FIELDS = ("reference", "distorted", "models", "ref_offset", "dist_offset", "scale",
              "width", "height", "pix_fmt", "bitdepth")

#: Column suffix of each pooling method ("" is the mean, the headline score).
POOL_SUFFIXES = {"mean": "", "min": "_min", "max": "_max", "harmonic_mean": "_harmonic_mean"}

#: Result columns the runner writes (labels go first, the scores after them).
_RESULT_HEAD = ("reference", "distorted", "models", "frames", "width", "height", "fps")
_RESULT_TAIL = ("attached_ep", "file_kbps", "load_s", "score_s", "total_s", "worker",
                "attempts", "error", "job_key")

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


# -- job lists ------------------------------------------------------------------------

def read_jobs(source, base_dir: Optional[str] = None) -> List[dict]:
    """The jobs of a CSV / JSON Lines file (by extension: .jsonl/.ndjson/.json
    are JSON Lines, else CSV), or of a list of dicts; relative paths resolved
    against the file's folder (``base_dir`` for a list, default the current
    folder). Raises ValueError naming the line of a malformed job."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        base_dir = base_dir or os.path.dirname(os.path.abspath(name))
        with open(name, newline="", encoding="utf-8") as f:
            if name.lower().endswith((".jsonl", ".ndjson", ".json")):
                raw = []
                for n, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            item = json.loads(line)
                        except json.JSONDecodeError as e:
                            raise ValueError(f"{name}:{n}: invalid JSON: {e}") from None
                        raw.append((f"{name}:{n}", item))
            else:
                reader = csv.DictReader(f)
                if not reader.fieldnames or "distorted" not in reader.fieldnames:
                    raise ValueError(f"{name}: the header row needs a 'distorted' column "
                                     f"(found: {', '.join(reader.fieldnames or [])})")
                raw = [(f"{name}:{reader.line_num}", row) for row in reader]
    else:
        base_dir = base_dir or os.getcwd()
        raw = [(f"job {n}", item) for n, item in enumerate(source)]
    return [_normalise_job(item, where, base_dir) for where, item in raw]


def _normalise_job(item, where: str, base_dir: str) -> dict:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a job is an object with a 'distorted' entry, got "
                         f"{type(item).__name__}")
    if None in item:  # csv.DictReader: more cells than header names
        raise ValueError(f"{where}: more cells than columns in the header")
    job = {}
    for key, value in item.items():
        if isinstance(value, str):
            value = value.strip()
            if value == "":
                value = None
        job[key] = value
    if not job.get("distorted"):
        raise ValueError(f"{where}: no 'distorted' clip")

    def path(value):
        value = os.fspath(value)
        return value if value == "-" or os.path.isabs(value) else os.path.join(base_dir, value)

    job["distorted"] = path(job["distorted"])
    job["reference"] = path(job["reference"]) if job.get("reference") else None
    models = job.get("models")
    if isinstance(models, str):
        models = [m.strip() for m in models.split(";") if m.strip()]
    if models:
        from . import models as _builtin
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ValueError(f"{where}: 'models' is a list of model paths or built-in names")
        models = [path(m) if _builtin.is_path(m) else m for m in models]
    job["models"] = models or None
    for key in ("ref_offset", "dist_offset", "width", "height", "bitdepth"):
        value = job.get(key)
        if value is not None:
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: '{key}' must be an integer, got {value!r}") from None
            if number < 0 or isinstance(value, bool):
                raise ValueError(f"{where}: '{key}' must be a non-negative integer")
            job[key] = number
    scale = job.get("scale")
    if isinstance(scale, str):
        if scale.lower() not in ("0", "1", "true", "false", "yes", "no"):
            raise ValueError(f"{where}: 'scale' is true or false, got {scale!r}")
        scale = scale.lower() in ("1", "true", "yes")
    job["scale"] = bool(scale)
    if job.get("pix_fmt") is not None:
        job["pix_fmt"] = str(job["pix_fmt"])
    return job


def _labels(job: dict) -> dict:
    return {k: v for k, v in job.items() if k not in JOB_FIELDS}


# -- what identifies a job -------------------------------------------------------------

def _file_identity(path: Optional[str]):
    """Path, size and modification time: a re-encoded clip is a new job."""
    if path is None or path == "-":
        return path
    try:
        st = os.stat(path)
    except OSError:
        return [os.path.abspath(path), None]
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def _model_identity(model: str):
    """The file a model name or path stands for, and its sidecar: a
    regenerated or replaced model is a new job."""
    from . import models as _builtin
    try:
        model = _builtin.resolve(model)
    except (OSError, ValueError):
        return model  # fails in the worker, with the library's message
    identity = _file_identity(model)
    sidecar = os.path.splitext(model)[0] + ".json"
    return [identity, _file_identity(sidecar) if os.path.exists(sidecar) else None]


def job_key(job: dict, options: dict) -> str:
    """A digest of everything that decides a job's scores: its inputs (path,
    size, mtime), models (and sidecars), alignment and raw geometry, and the
    batch options that change results (device, fp16, resize)."""
    models = job["models"] or options["models"] or []
    ident = {
        "reference": _file_identity(job["reference"]),
        "distorted": _file_identity(job["distorted"]),
        "models": [_model_identity(m) for m in models] or None,
        "options": {k: job.get(k) for k in JOB_FIELDS if k not in ("reference", "distorted",
                                                                  "models")},
        "run": {k: options[k] for k in ("device", "fp16_io", "resize")},
    }
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


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
        except BaseException:
            ctx.close()
            raise
        self._contexts[key] = ctx
        while len(self._contexts) > _MAX_CONTEXTS:
            self._contexts.popitem(last=False)[1].close()
        return ctx, time.perf_counter() - t0

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
                    why = f"ran past the {timeout:g} s job timeout and was stopped"
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
                    if "timeout" in why:  # the same input would hang again
                        d.attempts[index] = d.max_attempts
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
             in_flight: int = 2) -> int:
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
        return {"actor": actor, "pid": None, "jobs": {}}

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
                    a["jobs"][future] = index
                    futures[future] = a
            d.check_stop()
            ready, _ = ray.wait(list(futures), num_returns=1, timeout=_POLL_S)
            for future in ready:
                a = futures.pop(future)
                index = a["jobs"].pop(future)
                try:
                    _, row = ray.get(future)
                except ray.exceptions.RayActorError as e:
                    # Everything in flight on that actor is lost: again on a new one.
                    why = "died (" + " ".join(str(e).split())[:200] + ")"
                    lost = [index] + list(a["jobs"].values())
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
                    for i in lost:
                        d.lost(i, why)
                else:
                    d.done(index, row)
    finally:
        for a in actors:
            try:
                ray.kill(a["actor"], no_restart=True)
            except Exception:
                pass
    return d.retried


# -- results files -------------------------------------------------------------------------

def _format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext == ".parquet":
        return "parquet"
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".csv":
        return "csv"
    raise ValueError(f"results file {path}: unknown format; use .parquet, .csv or .jsonl")


def read_results(path) -> List[dict]:
    """The rows of a results file (.parquet, .csv, .jsonl). CSV cells are
    strings, as written (numbers in Python's round-trip form)."""
    path = os.fspath(path)
    fmt = _format_of(path)
    if fmt == "parquet":
        return _pyarrow("read parquet").parquet.read_table(path).to_pylist()
    with open(path, newline="", encoding="utf-8") as f:
        if fmt == "csv":
            return [dict(row) for row in csv.DictReader(f)]
        return [json.loads(line) for line in f if line.strip()]


def _pyarrow(what: str):
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise RuntimeError(f"to {what} files install pyarrow (pip install 'vmafdnn[parquet]')"
                           ) from None
    return pyarrow


def _columns(rows: Sequence[dict]) -> List[str]:
    seen = OrderedDict()
    for row in rows:
        for key in row:
            seen[key] = None
    head = [c for c in seen if c not in _RESULT_HEAD and c not in _RESULT_TAIL
            and not _is_score(c, seen)]
    scores = [c for c in seen if _is_score(c, seen) and c not in _RESULT_TAIL]
    return head + [c for c in _RESULT_HEAD if c in seen] + scores + \
        [c for c in _RESULT_TAIL if c in seen] + (["report"] if "report" in seen and
                                                  "report" not in head else [])


def _is_score(column: str, seen) -> bool:
    """A pooled-score column: <key> with its <key>_min beside it, or one of those."""
    for suffix in POOL_SUFFIXES.values():
        if suffix and column.endswith(suffix) and column[:-len(suffix)] + "_min" in seen:
            return True
    return column + "_min" in seen and column + "_harmonic_mean" in seen


def _umask() -> int:
    """The process umask, read without setting it (os.umask would change it
    for every thread for a moment); 0o022 where /proc cannot tell."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_results(rows: Sequence[dict], path) -> None:
    """Writes ``rows`` to ``path`` (.parquet, .csv or .jsonl) atomically:
    a reader sees the old file or the new one. As the C report writer does, a
    symlink is written through (its target replaced, the link kept) and an
    existing file keeps its mode."""
    fmt = _format_of(os.fspath(path))
    path = os.path.realpath(path)
    columns = _columns(rows)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # what a plain open() would give
    # A unique name beside the target: two batch() calls in one process may
    # aim at the same results file.
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        os.close(fd)
        os.chmod(tmp, mode)
        if fmt == "parquet":
            pa = _pyarrow("write parquet")
            data = {}
            for c in columns:
                values = [row.get(c) for row in rows]
                kinds = {type(v) for v in values if v is not None}
                if len(kinds) > 1 and not kinds <= {int, float}:
                    values = [None if v is None else str(v) for v in values]
                elif kinds == {int, float}:
                    values = [None if v is None else float(v) for v in values]
                data[c] = values
            pa.parquet.write_table(pa.table(data), tmp)
        else:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                if fmt == "csv":
                    w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
                    w.writeheader()
                    for row in rows:
                        w.writerow({k: _csv_cell(row.get(k)) for k in columns})
                else:
                    for row in rows:
                        f.write(json.dumps({k: row.get(k) for k in columns},
                                           allow_nan=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def _journal_path(output: str) -> str:
    return output + ".partial.jsonl"


def _good_rows(output: Optional[str]) -> List[dict]:
    """The successful rows of earlier runs, in the results file and its
    journal: one per job key (the journal's, newer, where both have one),
    in the order they were first found."""
    if output is None:
        return []
    found = []
    if os.path.exists(output):
        found += read_results(output)
    journal = _journal_path(output)
    if os.path.exists(journal):
        with open(journal, encoding="utf-8") as f:
            for line in f:
                try:
                    found.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # the line a killed run was writing
    good: Dict[str, dict] = {}
    for row in found:
        key = row.get("job_key") if isinstance(row, dict) else None
        if key and not row.get("error"):
            good[key] = row
    return list(good.values())


def _done_rows(good: List[dict], reports: Optional[str]) -> Dict[str, dict]:
    """The earlier successful rows that need no new work, by job key: with
    their report file when reports are asked for."""
    return {row["job_key"]: row for row in good
            if not reports or (row.get("report") and os.path.exists(row["report"]))}


def _job_models(job: dict, options: dict) -> str:
    """The ``models`` cell a worker writes for the job."""
    from . import scoring
    try:
        models = scoring._model_list(job["models"] or options["models"], job["reference"] is None)
    except Exception:
        return ";".join(job["models"] or options["models"] or [])
    return ";".join(os.fspath(m) for m in models)


def _keep_good_rows(result: BatchResult, jobs: List[dict], ran: List[int], good: List[dict],
                    options: dict, on_event) -> None:
    """A failure never replaces a success: each job that failed now and
    whose earlier row succeeded gets that row back (with the job's current
    labels, as a skipped job), its error going to ``result.kept``.

    The earlier row is the one of the same job key (a job run again for a
    missing report), else, since a key changes with its inputs (a clip
    moved away has no size or mtime), one of a job no longer in the list
    (its key is no current job's) that scored the same reference, distorted
    clip and models: paired in job-list order, the rows of the same labels
    first, so that two jobs of one pair (other offsets, say) each find
    their own row when the list kept its order."""
    if not good:
        return
    by_key = {row["job_key"]: row for row in good}
    current = {job["job_key"] for job in jobs}
    pool = [row for row in good if row["job_key"] not in current]

    def ident(reference, distorted, models):
        return (reference or None, os.fspath(distorted) if distorted else None, models or "")

    def labels_match(row, job) -> bool:
        return all(_label_text(row.get(k)) == _label_text(v) for k, v in _labels(job).items()
                   if k != "job_key")

    pairs: Dict[int, dict] = {}
    unkeyed = [i for i in ran if jobs[i]["job_key"] not in by_key]
    idents = {i: ident(jobs[i]["reference"], jobs[i]["distorted"],
                       _job_models(jobs[i], options)) for i in unkeyed}
    taken = set()
    for same_labels in (True, False):
        for i in unkeyed:
            if i in pairs:
                continue
            for n, row in enumerate(pool):
                if n in taken or ident(row.get("reference"), row.get("distorted"),
                                       row.get("models")) != idents[i]:
                    continue
                if same_labels and not labels_match(row, jobs[i]):
                    continue
                pairs[i] = row
                taken.add(n)
                break
    for i in ran:
        row = result[i]
        if row is None or not row.get("error"):
            continue
        earlier = by_key.get(jobs[i]["job_key"]) or pairs.get(i)
        if earlier is None:
            continue
        result.kept[i] = row["error"]
        result[i] = _with_labels(earlier, jobs[i])
        if on_event:
            on_event("kept", i, {"error": row["error"], "row": result[i]})


def _label_text(value) -> str:
    return "" if value is None else str(value)


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
          timeout: Optional[float] = None, ray=None, gpus_per_worker: float = 0,
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
    script calling this needs the usual ``if __name__ == "__main__":``. ``threads``: ONNX Runtime threads of each model in each
    worker (default 1: whole jobs in parallel scale better than threads
    within a frame). ``device``, ``device_index``, ``fp16_io``, ``resize``
    and the ``policy`` keywords (``model_dir``, ``max_memory_bytes``,
    ``max_run_ms``, ...) are those of :func:`vmafdnn.score`.
    ``reports``: a folder for one per-frame report per job (``report_format``
    json, xml or csv), named by :func:`report_path`. ``retries``: how often
    a job whose worker died is tried again elsewhere. ``timeout``: seconds
    one job may take (local pool) before its worker is killed and its row
    fails. ``ray``: None (local processes), True (a local Ray instance, or
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
               "report_format": report_format, "retries": retries, "reuse": reuse}
    if options["reports"]:
        os.makedirs(options["reports"], exist_ok=True)
    job_list = read_jobs(jobs, base_dir)
    if output is not None:
        _refuse_overwrite(output, jobs, job_list)
    keys = [job_key(job, options) for job in job_list]
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
    journal = open(_journal_path(output), "a", encoding="utf-8") if output and todo else None

    def sink(index: int, row: dict) -> None:
        job = job_list[index]
        row = dict(row, job_key=job["job_key"], reference=job["reference"],
                   distorted=job["distorted"])
        row.setdefault("models", ";".join(job["models"] or options["models"] or []))
        row = _with_labels(row, job)
        result[index] = row
        result.ran += 1
        result.frames += row.get("frames") or 0
        if journal is not None:
            journal.write(json.dumps(row) + "\n")
            journal.flush()
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
                                          gpus_per_worker, on_event, sink, stop)
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
        try:
            os.unlink(_journal_path(output))
        except FileNotFoundError:
            pass
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


def _with_labels(row: dict, job: dict) -> dict:
    """The row with the job's current labels (they are not part of the key:
    relabelling a done job needs no new scoring)."""
    labels = {k: v for k, v in _labels(job).items() if k != "job_key"}
    rest = {k: v for k, v in row.items() if k not in labels}
    return {**labels, **rest}


# -- the command line (vmafdnn batch) ------------------------------------------------------

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
    parser.add_argument("--job-timeout", type=cli._seconds, metavar="SECONDS",
                        help="local workers: kill a job running longer and fail its row")
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
                 timeout=args.job_timeout, ray=args.ray, gpus_per_worker=args.gpus_per_worker,
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
