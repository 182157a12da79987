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
to :mod:`vmafdnn.results`, the only writer of results files; the runners
(local processes, Ray) are in :mod:`vmafdnn.runners`. This module ties them
together (:func:`batch`) and holds the ``vmafdnn batch`` command.
Every job has a time budget (``timeout``, :data:`DEFAULT_JOB_TIMEOUT`): a job
past it has its worker process or Ray actor killed and fails its row.
"""
import os
import sys
import time
import types
from typing import Callable, Dict, List, Optional, Union

__all__ = ["batch", "read_jobs", "read_results", "write_results", "BatchResult", "JOB_FIELDS",
           "POOL_SUFFIXES"]

from .jobs import JOB_FIELDS, POOL_SUFFIXES, label_clashes, read_jobs
from .results import (Hasher, Journal, done_rows, format_of, good_rows, job_key, journal_path,
                      keep_good_rows, key_files, pyarrow_module, read_results, with_labels,
                      write_results)
from .runners import Stop, report_path, run_local, run_ray

#: Seconds one job may run (local worker or Ray actor) before it is stopped
#: (its process killed) and its row fails: generous for a long clip scored
#: by every built-in model on one core, short of "forever". 0 or None: no
#: limit.
DEFAULT_JOB_TIMEOUT = 3600.0



#: The most worker processes or Ray actors one batch starts, and the most
#: tries more a job whose worker died may take.
MAX_WORKERS = 4096
MAX_RETRIES = 100
#: The most GPUs one Ray actor may ask for.
MAX_GPUS_PER_WORKER = 1024


def _number_option(name: str, value, hi: float, unit: str = "") -> float:
    """A finite number 0..hi (TypeError / InvalidArgumentError)."""
    import errno
    import math
    import numbers

    from .errors import InvalidArgumentError
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and 0 <= number <= hi):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise InvalidArgumentError(errno.EINVAL, f"{name} must be a finite number 0..{hi}"
                                   f"{unit} (got {shown})")
    return number


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
    from .errors import check_int
    from .session import MAX_DEVICE_INDEX
    threads = check_int("threads", threads, 0, MAX_THREADS)
    device_index = check_int("device_index", device_index, 0, MAX_DEVICE_INDEX)
    if workers is not None:
        workers = check_int("workers", workers, 1, MAX_WORKERS)
    retries = check_int("retries", retries, 0, MAX_RETRIES)
    gpus_per_worker = _number_option("gpus_per_worker", gpus_per_worker, MAX_GPUS_PER_WORKER)
    if timeout is not None:
        timeout = _number_option("timeout", timeout, 0xFFFFFFFF // 1000,
                                 " seconds (0 or None: no limit)")
    timeout = timeout or None
    if output is not None:
        output = _check_results_path(output)
    if isinstance(models, (str, os.PathLike)):
        models = [models]
    if reports is not None:
        reports = _check_reports_dir(reports)
    options = {"models": [os.fspath(m) for m in models] if models else None,
               "device": device, "device_index": device_index, "threads": threads,
               "fp16_io": fp16_io, "resize": resize, "policy": policy,
               "reports": reports,
               "report_format": report_format, "retries": retries, "reuse": reuse,
               "allow_pipes": bool(allow_pipes), "gpus_per_worker": gpus_per_worker}
    job_list = read_jobs(jobs, base_dir, options["models"] or _default_model_names())
    if not job_list:
        # A truncated list (its header alone) would otherwise score nothing and
        # replace the results file, every row of it, with an empty one.
        from .jobs import JobListError
        source = os.fspath(jobs) if isinstance(jobs, (str, os.PathLike)) else "jobs"
        raise JobListError(f"{source}: no jobs (a job list needs at least one job)")
    hasher = Hasher()
    keys = [job_key(job, options, hasher) for job in job_list]
    from . import scoring
    options["key_files"] = {}
    for job in job_list:
        for model in scoring.resolve_models(job["models"] or options["models"],
                                         job["reference"] is None):
            name = os.fspath(model)
            if name not in options["key_files"]:
                options["key_files"][name] = key_files(name, hasher)
    if output is not None:
        _refuse_overwrite(output, jobs, job_list, options["key_files"])
    if reports is not None:
        from .runners import refuse_report_overwrites
        refuse_report_overwrites(reports, report_format, job_list, keys, {
            "job list": os.fspath(jobs) if isinstance(jobs, (str, os.PathLike)) else None,
            "results file": output,
            "results journal": journal_path(output) if output is not None else None})
    for job, key in zip(job_list, keys):
        job["job_key"] = key
    # The journal is this run's lock on the results file (a second batch on
    # it is refused), held from before the earlier rows are read until the
    # results are written.
    journal = Journal(output) if output is not None else None
    try:
        return _run_batch(job_list, keys, options, output, journal, t0, ray, workers, threads,
                          gpus_per_worker, timeout, progress, on_event, cancel)
    finally:
        if journal is not None:
            journal.close()


def _run_batch(job_list, keys, options, output, journal, t0, ray, workers, threads,
               gpus_per_worker, timeout, progress, on_event, cancel) -> BatchResult:
    earlier = good_rows(output, journal)
    done = done_rows(earlier, options["reports"])
    result = BatchResult([None] * len(job_list))
    todo = []
    for i, (job, key) in enumerate(zip(job_list, keys)):
        if key in done:
            result[i] = with_labels(done[key], job)
            result.skipped += 1
        else:
            todo.append(i)

    meter = _Progress(len(todo)) if progress is True else progress or None

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
        row = with_labels(row, job)
        result[index] = row
        result.ran += 1
        result.frames += row.get("frames") or 0
        if journal is not None:
            journal.append(row)
        if meter:
            meter(row)
        if on_event:
            on_event("done", index, row)

    stop = Stop()
    if cancel is not None:
        cancel.watch(stop)
    try:
        if todo:
            if ray is not None and ray is not False:
                result.retried = run_ray(todo, job_list, options, ray, workers,
                                          gpus_per_worker, on_event, sink, stop, timeout)
            else:
                if gpus_per_worker:
                    raise ValueError("gpus_per_worker is for Ray; locally use device=")
                result.retried = run_local(todo, job_list, options,
                                            workers or max(1, default_workers() //
                                                           max(1, threads)), on_event, sink,
                                            timeout, stop)
    finally:
        if cancel is not None:
            cancel.unwatch(stop)
        if isinstance(meter, _Progress):
            meter.end()
    keep_good_rows(result, job_list, todo, earlier, options, on_event)
    result.failed = sum(1 for row in result if row.get("error")) + len(result.kept)
    if output is not None:
        write_results(result, output)
        journal.remove()
    result.elapsed = time.perf_counter() - t0
    return result


def _check_reports_dir(reports) -> str:
    """The reports folder as an absolute path, made if missing, checked
    before any job: before, ``--reports ''`` was taken as "no reports" (with
    no -o the batch scored every job and kept nothing) and a file given as
    the folder failed with a bare "File exists"."""
    import stat

    from .paths import UsageError, file_kind
    text = os.fsdecode(os.fspath(reports))
    if text == "" or "\0" in text:
        raise UsageError(f"the reports folder (--reports) path {text!r} is empty or contains "
                         "a NUL character: give a folder")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = "a file" if stat.S_ISREG(st.st_mode) else file_kind(st.st_mode)
        raise UsageError(f"the reports folder (--reports) {text} is {kind}: "
                         "give a folder (it is made if missing)")
    try:
        os.makedirs(text, exist_ok=True)
    except OSError as e:
        err = type(e)(f"cannot make the reports folder (--reports) {text}: "
                      f"{e.strerror or e}")
        err.errno = e.errno
        raise err from None
    if not os.access(text, os.W_OK | os.X_OK):
        raise PermissionError(f"the reports folder (--reports) {text} is not writable")
    return os.path.abspath(text)


def _check_results_path(output) -> str:
    """The results path as text, checked before any work: a known format
    (and pyarrow for .parquet), the output checks of every writer
    (vmafdnn.paths.check_output: not empty, not a directory, its folder
    exists and is writable), and a regular file or none yet: results are
    replaced whole and read back to resume, which a FIFO or a device cannot
    be (before, a folder named results.csv was found after every job had
    run, and a FIFO was replaced by a regular file)."""
    import stat

    from .paths import UsageError, check_output, file_kind
    output = os.fspath(output)
    if isinstance(output, bytes):
        output = os.fsdecode(output)
    check_output(output, "results file (-o)")
    if format_of(output) == "parquet":
        pyarrow_module("write parquet")
    try:
        st = os.stat(output)
    except FileNotFoundError:
        return output
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"the results file (-o) {output} is {file_kind(st.st_mode)}: results "
                         "are written whole and read back to resume: give a regular file")
    return output


def _refuse_overwrite(output: str, jobs, job_list: List[dict], model_files: dict) -> None:
    """UsageError, before any work, when the results file or its journal is
    the job list, a job's clip or a file of a job's models (the model, its
    sidecar, the models it requires and its forms: ``model_files``, {model:
    files} as the job keys cover them), by any spelling (``vmafdnn batch
    jobs.csv -o jobs.csv`` replaced the job list with the results), as the
    scoring command refuses ``-o ref.y4m``."""
    from .scoring import refuse_overwrite
    inputs = {}
    if isinstance(jobs, (str, os.PathLike)):
        inputs["job list"] = os.fspath(jobs)
    for n, job in enumerate(job_list, 1):
        inputs[f"reference of job {n}"] = job["reference"]
        inputs[f"distorted clip of job {n}"] = job["distorted"]
    for model, files in model_files.items():
        for path in files:
            inputs[f"file {path} of model {model}"] = path
    refuse_overwrite(output, "results file", inputs)
    refuse_overwrite(journal_path(output), "results journal", inputs)


class _CallableModule(types.ModuleType):
    """``vmafdnn.batch(jobs, ...)`` calls :func:`batch`, while
    ``vmafdnn.batch.read_results`` & co. stay reachable: the package can
    expose the module under the function's name without hiding either."""

    def __call__(self, *args, **kwargs):
        return batch(*args, **kwargs)

    def __reduce__(self):
        # Pickled (and copied) by name, as a function is: partial(vmafdnn.batch,
        # ...) handed to a process pool failed with "cannot pickle
        # '_CallableModule' object".
        import importlib
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _CallableModule


# -- the command line (vmafdnn batch) ------------------------------------------------------

def _default_model_names() -> List[str]:
    """The models of a job that names none, with or without a reference."""
    from . import scoring
    return list(scoring.resolve_models(None, False)) + list(scoring.resolve_models(None, True))


def _default_models(no_reference: bool = False) -> List[str]:
    from . import models  # the library's set; loads it, which --help may do
    return models.default_models(no_reference)


def add_arguments(parser) -> None:
    """The ``vmafdnn batch`` arguments (cli.py adds the policy flags)."""
    from .cliargs import device_index, gpu_share, int_at_least, seconds, thread_count
    from .context import OUTPUT_FORMATS, RESIZE_MODES
    from .session import DEVICES, MAX_THREADS
    parser.add_argument("jobs", metavar="JOBS",
                        help="job list: CSV with a header row, or JSON Lines (.jsonl)")
    parser.add_argument("-o", "--output", metavar="RESULTS",
                        help="results: .parquet, .csv or .jsonl; re-running with the same file "
                             "skips the jobs already done")
    parser.add_argument("--workers", type=int_at_least(1, MAX_WORKERS), metavar="N",
                        help=f"worker processes or Ray actors (default: the cores, here "
                             f"{default_workers()}, or the Ray cluster's CPUs, over --threads)")
    parser.add_argument("--threads", type=thread_count, default=1, metavar="N",
                        help=f"ONNX Runtime threads per model in each worker, 0..{MAX_THREADS} "
                             "(default 1)")
    parser.add_argument("--tiny-model", action="append", dest="models", metavar="PATH",
                        help="model of jobs without a 'models' column; repeatable (default: "
                             f"{', '.join(_default_models())}; "
                             f"{', '.join(_default_models(True))} without a reference)")
    parser.add_argument("--tiny-device", default="auto", type=str.lower, choices=list(DEVICES))
    parser.add_argument("--tiny-device-index", type=device_index, default=0,
                        metavar="N", help="GPU ordinal (default 0)")
    parser.add_argument("--tiny-fp16", action="store_true")
    parser.add_argument("--tiny-resize", default="none", type=str.lower,
                        choices=list(RESIZE_MODES))
    parser.add_argument("--reports", metavar="DIR",
                        help="also write one per-frame report per job into DIR")
    parser.add_argument("--report-format", default="json", choices=list(OUTPUT_FORMATS))
    parser.add_argument("--retries", type=int_at_least(0, MAX_RETRIES), default=2,
                        metavar="N",
                        help="tries more of a job whose worker died (default 2)")
    parser.add_argument("--job-timeout", type=seconds, default=DEFAULT_JOB_TIMEOUT,
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
    parser.add_argument("--gpus-per-worker", type=gpu_share(MAX_GPUS_PER_WORKER), default=0,
                        metavar="G",
                        help="Ray: GPUs each actor asks for; binds the CUDA EP")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress line and no summary")


def run_command(args, policy: dict) -> int:
    """``vmafdnn batch``: 0 when every job succeeded, 1 when some failed
    (a job that failed now but kept its earlier successful row included:
    one line each on stderr says so)."""
    from .cliargs import printable
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
