"""The ``vmafdnn`` command line tool.

    vmafdnn -r REF -d DIST [options]           score a clip pair (like libvmaf's vmaf)
    vmafdnn -d DIST --no-reference [options]   no-reference scoring
    vmafdnn info MODEL [--device D]            ORT version, attached EP, I/O table
    vmafdnn info --devices [--device D]        plugin EPs, EP devices, D's chain
    vmafdnn bench MODEL [--device D] [--threads N] [--runs N]
                                               per-run latency
    vmafdnn plot REPORT.json [...] -o OUT.png  per-frame curves of reports
    vmafdnn batch JOBS.csv -o RESULTS.parquet  a job list on every core or Ray
    vmafdnn bdrate RESULTS --anchor A --test B BD-rate between two ladders

Errors are one line on stderr ("vmafdnn: error: ..."); the exit status is 2
for a usage error and 1 for anything that fails while running. Output paths
are checked before the first frame and never replace an input
(vmafdnn.paths); "-o -" is the report on stdout, the summary then on stderr. SIGINT and
SIGTERM stop every command within a second, even inside a model run (exit
status 130 and 143); an interrupted scoring run writes no report.
Names that come from models, sidecars or inputs are printed with control
characters escaped (vmafdnn.cliargs.printable, the rule batch and bdrate use too).
"""
import argparse
import math
import os
import signal
import sys
import threading
import time
from typing import Dict

import numpy as np

from . import (__version__, available, cpu_kernels, ort_library_path, ort_version,
               source_digest, unavailable_reason)
from . import models as builtin_models
from . import _gpu_libraries, names
from ._native import ensure_ort, ffi, lib
from .cliargs import (batch_size, byte_size, device_index, dimension, frame_offset,
                      int_at_least, name_of, printable, seconds, thread_count)
from .errors import DnnError
from .paths import STDIO, Inputs, check_output
from .scoring import MAX_FEATURES_FILE_BYTES, Canceller, UsageError, score
from .session import (EP_PACKAGE_ERRORS, MAX_BATCH, MAX_THREADS, Session, ep_devices,
                      ep_libraries, explain_device)

USAGE_EXIT = 2
RUNTIME_EXIT = 1


class _UsageExit(Exception):
    """An argument error found by a parser (exit status 2)."""


MAX_BENCH_RUNS = 1_000_000
MAX_SYMBOLIC_DIM = 1 << 16
MAX_BENCH_ELEMENTS = 1 << 28  # per input: 1 GiB of float32
_bench_runs = int_at_least(1, MAX_BENCH_RUNS)
_symbolic_dim = int_at_least(1, MAX_SYMBOLIC_DIM)


def _size_text(n: int) -> str:
    if n == 0:
        return "no limit"
    for shift, unit in ((40, "T"), (30, "G"), (20, "M"), (10, "K")):
        if n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def _policy_args(parser) -> None:
    """The model policy flags, shared by every command that opens models."""
    default = ffi.new("VmafDnnModelPolicy *")
    lib.vmaf_dnn_default_model_policy(default)  # the environment's overrides included
    group = parser.add_argument_group("model policy (see docs/security.md)")
    group.add_argument("--model-dir", metavar="DIR",
                       help="open models (their sidecars and external data) only beneath DIR "
                            "(default: $VMAFDNN_MODEL_DIR, else anywhere)")
    group.add_argument("--max-model-bytes", type=byte_size, metavar="SIZE",
                       help=f"size cap of a model file (default "
                            f"{_size_text(default.max_model_bytes)})")
    group.add_argument("--max-memory", type=byte_size, metavar="SIZE",
                       help=f"memory one model may use, e.g. 512M or 2G (binary units); 0: no "
                            f"limit (default {_size_text(default.max_memory_bytes)})")
    group.add_argument("--max-run-time", type=seconds, metavar="SECONDS",
                       help="time one model run (one frame) may take before it is stopped "
                            f"with an error; 0: no limit (default {default.max_run_ms / 1000:g})")


def _policy(args) -> dict:
    """The policy keywords of Session / Context / score() from the flags."""
    policy = {"model_dir": args.model_dir, "max_model_bytes": args.max_model_bytes,
              "max_memory_bytes": args.max_memory}
    if args.max_run_time is not None:
        # Rounded up, so that a small budget never becomes 0 ("no limit").
        policy["max_run_ms"] = math.ceil(args.max_run_time * 1000)
    return policy


# -- SIGINT / SIGTERM ---------------------------------------------------------------

_SIGNAL_GRACE_S = 0.5  # how long a cancelled command may take to wind down


class _Interrupted(Exception):
    def __init__(self, signum: int, finished: bool):
        super().__init__(signum)
        self.signum = signum
        self.finished = finished


def _run_interruptibly(work, canceller: Canceller):
    """Runs ``work()`` in a worker thread and returns its result (or raises
    its exception), while the main thread waits for SIGINT and SIGTERM.

    Python runs signal handlers only in the main thread between bytecodes, so
    a main thread blocked in a model run (or a pipe read) would never see
    them. Here the main thread only waits; on a signal it cancels the model
    run in flight (``canceller``), gives the worker a moment to wind down and
    raises _Interrupted (see _interrupted for what happens to a worker that
    is still blocked).
    """
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals cannot be handled here: the caller's thread decides
    outcome = {}

    def target():
        try:
            outcome["result"] = work()
        except BaseException as e:  # handed to the main thread
            outcome["error"] = e

    received = []

    def on_signal(signum, frame):
        if not received:
            received.append(signum)
            canceller.cancel()

    worker = threading.Thread(target=target, name="vmafdnn-work", daemon=True)
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker.start()
        while worker.is_alive() and not received:
            worker.join(0.05)
        if received:
            worker.join(_SIGNAL_GRACE_S)
            raise _Interrupted(received[0], "result" in outcome)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _interrupted(e: _Interrupted, report_written: bool = False) -> int:
    """Reports a SIGINT / SIGTERM and returns 128 + its number. A worker still
    blocked (in a pipe read, say) is not waited for: the process ends now.
    ``report_written``: the scoring had finished and written its report (the
    plot or the summary was under way)."""
    name = signal.Signals(e.signum).name
    what = ("the command had finished" if e.finished
            else "the report was written, the rest not done" if report_written
            else "no report written")
    print(f"\nvmafdnn: error: interrupted by {name}; {what}", file=sys.stderr)
    code = 128 + e.signum
    if threading.active_count() > 1:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing its usage and exiting, so that
    every error becomes the same one line; and that takes no abbreviations:
    `batch --model m.onnx` was read as --model-dir m.onnx, and the default
    models scored."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise _UsageExit(message)


# -- info / bench ---------------------------------------------------------------

def _device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="auto", type=name_of("device"),
                        choices=names.DEVICE_NAMES,
                        help="execution provider hint (default: auto)")
    parser.add_argument("--device-index", type=device_index, default=0, help="GPU ordinal")
    parser.add_argument("--threads", type=thread_count, default=0,
                        help=f"ORT intra-op threads, 0..{MAX_THREADS} (0: ORT's default)")
    parser.add_argument("--fp16", action="store_true", help="cast fp32 data to/from FLOAT16 model slots")
    _policy_args(parser)


def _open(args) -> Session:
    session = Session(builtin_models.resolve(args.model), device=args.device, device_index=args.device_index,
                      threads=args.threads, fp16_io=args.fp16, **_policy(args))
    args.canceller.watch(session)
    return session


def _shape(shape) -> str:
    if shape is None:
        return "(unknown rank)"
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def _print_devices(args) -> None:
    """Plugin EP libraries, the EP devices ORT offers and the chain of
    --device: what `vmafdnn info --devices` prints."""
    ensure_ort(args.device)  # before LOADED is printed: --device's chain may load CUDA
    print(f"ONNX Runtime {ort_version()} ({printable(ort_library_path())}), "
          f"API {lib.vmaf_dnn_ort_api_version()}")
    for path, state in _gpu_libraries.LOADED:
        print(f"  CUDA library of an nvidia-* wheel: {printable(path)}: {printable(state)}")
    libraries = ep_libraries()
    print(f"plugin EP libraries: {len(libraries) or 'none'}")
    for entry in libraries:
        state = "registered" if entry["status"] == 0 else f"not registered: {entry['reason']}"
        print(f"  {printable(entry['name'])} ({entry['source']}) {printable(entry['path'])}: "
              f"{printable(state)}")
    for package, why in sorted(EP_PACKAGE_ERRORS.items()):
        print(f"  {package} (package): not usable: {printable(why)}")
    devices = ep_devices()
    print(f"EP devices: {len(devices) or 'none (ONNX Runtime before 1.22 has no EP devices)'}")
    for d in devices:
        source = f"plugin {d['library']}" if d["library"] else "built into ORT"
        print(f"  {d['ep_name']} ({d['ep_vendor']}) on {d['device_type']} {d['device_index']} "
              f"({d['device_vendor']}, {d['vendor_id']:#06x}:{d['device_id']:#06x}), {source}"
              f" -> {d['attached_ep']}")
    print(f"device {args.device}:")
    for line in explain_device(args.device, args.device_index, args.fp16).splitlines():
        print(f"  {printable(line)}")


def _on_ep(attached_ep: str, ep_nodes) -> str:
    """The EP a model runs on, with the share of its nodes when the EP took
    only some (the rest run on ORT's CPU EP; the C fallback reason says so)."""
    if ep_nodes is None or attached_ep == "CPU" or ep_nodes[0] >= ep_nodes[1]:
        return attached_ep
    return f"{attached_ep} ({ep_nodes[0]} of {ep_nodes[1]} nodes; the rest on ORT's CPU EP)"


def cmd_info(args) -> int:
    if args.devices:
        _print_devices(args)
        if args.model is None:
            return 0
    elif args.model is None:
        raise _UsageExit("info: give a MODEL, or --devices")
    with _open(args) as session:
        print(f"libvmafdnn   {__version__} (sources {source_digest()}; CPU kernels "
              f"{cpu_kernels()})")
        print(f"ONNX Runtime {ort_version()} ({printable(ort_library_path())})")
        print(f"model        {printable(args.model)}")
        print(f"attached EP  {_on_ep(session.attached_ep, session.ep_nodes)}")
        for line in session.fallback_reason.splitlines():
            print(f"  fallback   {printable(line)}")
        for kind, infos in (("input", session.inputs), ("output", session.outputs)):
            for info in infos:
                print(f"{kind:<7}{printable(info.name):<24}{str(info.dtype):<10}"
                      f"{_shape(info.shape)}")
    _print_entry(builtin_models.describe(args.model))
    return 0


def _print_entry(entry) -> None:
    """What the catalog knows of a model (its sidecar): what a score means."""
    print(f"path         {printable(entry.path)}")
    if entry.kind:
        print(f"kind         {entry.kind}")
    if entry.outputs:
        print(f"scores       {', '.join(printable(o) for o in entry.outputs)}")
    if entry.range:
        better = {True: ", higher is better", False: ", lower is better"}.get(
            entry.higher_is_better, "")
        print(f"range        [{entry.range[0]:g}, {entry.range[1]:g}]{better}")
    if entry.min_size:
        print(f"min size     {entry.min_size[0]}x{entry.min_size[1]}")
    if entry.description:
        print(f"computes     {printable(entry.description)}")
    if entry.meaning:
        print(f"meaning      {printable(entry.meaning)}")


def cmd_models(args) -> int:
    entries = builtin_models.catalog()
    width = max([len(printable(e.name)) for e in entries] + [14]) + 2
    for entry in entries:
        # A feature-vector model reads no picture: no smallest frame size.
        size = (f"{entry.min_size[0]}x{entry.min_size[1]}" if entry.min_size else
                "-" if entry.kind == "features" else "?")
        print(f"{printable(entry.name):<{width}}{entry.kind or '?':<10}min {size:<8}"
              f"{printable(entry.path)}")
        if entry.meaning and args.verbose:
            print(f"    {printable(entry.meaning)}")
    if not entries:
        print("no models on the search path")
    print(f"search path: {':'.join(printable(d) for d in builtin_models.search_path())}")
    return 0


def _sidecar_values(session: Session) -> Dict[str, str]:
    """input -> the value its sidecar feeds it ("bpc", "width", "height",
    "device_type"), where the model has a readable sidecar that says so."""
    from .results import read_sidecar
    sidecar = read_sidecar(os.path.splitext(session.path)[0] + ".json") or {}
    sources = sidecar.get("input_sources")
    if not isinstance(sources, dict):
        return {}  # none, or one the library itself will judge where it reads it
    return {name: src["value"] for name, src in sources.items()
            if isinstance(src, dict) and isinstance(src.get("value"), str)}


def _example_feeds(session: Session, symbolic: int):
    """Example inputs, symbolic dims replaced by `symbolic`: random float32
    values, 8-bit samples for a UINT16 (samples) input, and what the model's
    sidecar feeds a "value" input (bpc 8; a run of the library's own
    operators refuses any other depth). An input of more than
    MAX_BENCH_ELEMENTS values is refused before it is made."""
    rng = np.random.default_rng(0)
    values = _sidecar_values(session)
    value_of = {"bpc": 8.0, "width": float(symbolic), "height": float(symbolic),
                "device_type": 0.0 if session.attached_ep == "CPU" else 1.0}
    feeds = {}
    for info in session.inputs:
        shape = tuple(symbolic if d < 0 else d for d in info.shape or ())
        if math.prod(shape) > MAX_BENCH_ELEMENTS:
            raise UsageError(f"input {printable(info.name)} would be {_shape(shape)} "
                             f"({math.prod(shape)} values, more than {MAX_BENCH_ELEMENTS}) "
                             f"with --symbolic-dim {symbolic}: give a smaller --symbolic-dim")
        if values.get(info.name) in value_of:
            feeds[info.name] = np.full(shape, value_of[values[info.name]], np.float32)
        elif info.dtype == np.uint16:
            feeds[info.name] = rng.integers(0, 256, shape).astype(np.uint16)
        else:
            feeds[info.name] = rng.random(shape, dtype=np.float32)
    return feeds


def cmd_bench(args) -> int:
    with _open(args) as session:
        feeds = _example_feeds(session, args.symbolic_dim)
        for done in range(min(args.runs, 10)):
            args.canceller.check(done)
            session.run(feeds)
        times = []
        for done in range(args.runs):
            args.canceller.check(done)
            t0 = time.perf_counter()
            session.run(feeds)
            times.append(time.perf_counter() - t0)
        times_us = np.array(times) * 1e6
        print(f"{printable(args.model)} on {_on_ep(session.attached_ep, session.ep_nodes)}, "
              f"{args.runs} runs: "
              f"median {np.median(times_us):.1f} us, p10 {np.percentile(times_us, 10):.1f} us, "
              f"p90 {np.percentile(times_us, 90):.1f} us")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``info`` and ``bench`` subcommands."""
    parser = _Parser(prog="vmafdnn", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"vmafdnn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="describe a model and where it runs")
    info.add_argument("model", nargs="?")
    info.add_argument("--devices", action="store_true",
                      help="list plugin EP libraries, the EP devices ONNX Runtime offers and "
                           "why --device's chain passes over each EP")
    _device_args(info)
    info.set_defaults(func=cmd_info)
    bench = sub.add_parser("bench", help="per-run latency of a model")
    bench.add_argument("model")
    _device_args(bench)
    bench.add_argument("--runs", type=_bench_runs, default=1000,
                       help=f"timed runs, 1..{MAX_BENCH_RUNS} (default 1000)")
    bench.add_argument("--symbolic-dim", type=_symbolic_dim, default=64,
                       help=f"size used for symbolic dims, 1..{MAX_SYMBOLIC_DIM} (default 64)")
    bench.set_defaults(func=cmd_bench)
    models = sub.add_parser("models", help="list the models found by name (the catalog)")
    models.add_argument("-v", "--verbose", action="store_true",
                        help="also say what each score means")
    models.set_defaults(func=cmd_models)
    plot = sub.add_parser("plot", help="per-frame curves of JSON reports (PNG or SVG)",
                          description="One panel per metric, one curve per report, the pooled "
                                      "mean dashed and the worst frame marked.")
    plot.add_argument("reports", nargs="+", metavar="REPORT.json",
                      help="JSON reports (vmafdnn -o X.json, or libvmaf's); several overlay")
    plot.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="image to write: .png or .svg")
    plot.add_argument("--label", action="append", dest="labels", metavar="NAME",
                      help="curve name of each report, in order (default: file names)")
    plot.add_argument("--metric", action="append", dest="metrics", metavar="NAME",
                      help="plot only this metric; repeatable (default: all)")
    plot.set_defaults(func=cmd_plot)
    from . import batch as _batch, bdrate as _bdrate
    batch = sub.add_parser("batch", help="score a job list (CSV / JSON Lines) on every core "
                                         "or on Ray (docs/batch.md)")
    _batch.add_arguments(batch)
    _policy_args(batch)
    batch.set_defaults(func=lambda args: _batch.run_command(args, _policy(args)))
    bdrate = sub.add_parser("bdrate", help="BD-rate (PCHIP) between two ladders of batch "
                                           "results")
    _bdrate.add_arguments(bdrate)
    bdrate.set_defaults(func=cmd_bdrate)
    return parser


def cmd_plot(args) -> int:
    from .plot import plot_reports
    check_output(args.output, "plot (-o)")
    Inputs({f"input report {r}": r for r in args.reports}).refuse(args.output, "plot")
    plot_reports(args.reports, args.output, labels=args.labels, metrics=args.metrics)
    print(f"plot: {printable(args.output)}")
    return 0


def cmd_bdrate(args) -> int:
    from . import bdrate as _bdrate
    if args.plot is not None:
        check_output(args.plot, "plot (--plot)")
        Inputs({"results file": args.results}).refuse(args.plot, "plot (--plot)")
    return _bdrate.run_command(args)


# -- scoring --------------------------------------------------------------------

_SCORE_EPILOG = f"""\
models: without --tiny-model the built-in {', '.join(builtin_models.default_models())} are used
(with --no-reference: {', '.join(builtin_models.default_models(True))}); a model name (see
'vmafdnn models') may also be given to --tiny-model. Other commands: 'vmafdnn info MODEL',
'vmafdnn models', 'vmafdnn bench MODEL',
'vmafdnn plot REPORT.json -o OUT.png' (see their --help).

inputs are recognised by content: Y4M, else anything FFmpeg's libraries decode
(mp4, mkv, webm, mov ...; through PyAV), or raw YUV when -w/-h/-p are given.

examples:
  vmafdnn -r ref.mp4 -d dist.mkv -o report.json --plot scores.png
  vmafdnn -r ref.y4m -d dist.y4m -o report.json --json
  vmafdnn -r ref.mp4 -d dist_720p.mp4 --scale --dist-offset 2
  vmafdnn -r ref.yuv -d dist.yuv -w 1920 -h 1080 -p 420 -b 10 --tiny-model model.onnx
  ffmpeg -i x.mp4 -f yuv4mpegpipe - | vmafdnn -d - --no-reference -o nr.json
"""


def build_score_parser() -> argparse.ArgumentParser:
    """The scoring command's parser. ``-h`` is the height, as in libvmaf's
    ``vmaf`` tool, so help is ``--help`` only."""
    p = _Parser(prog="vmafdnn", add_help=False,
                usage="vmafdnn [-r REF] -d DIST [options]  |  vmafdnn info|bench MODEL ...",
                description="Score a distorted clip (against a reference) with tiny ONNX "
                            "quality models.",
                epilog=_SCORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    io_group = p.add_argument_group("input")
    io_group.add_argument("-r", "--reference", metavar="REF",
                          help="reference video: Y4M, any container FFmpeg decodes, or raw "
                               "YUV ('-': stdin)")
    io_group.add_argument("-d", "--distorted", metavar="DIST",
                          help="distorted video: Y4M, any container FFmpeg decodes, or raw "
                               "YUV ('-': stdin)")
    io_group.add_argument("-w", "--width", type=dimension, help="raw YUV width")
    io_group.add_argument("-h", "--height", type=dimension, help="raw YUV height")
    io_group.add_argument("-p", "--pixel_format", dest="pix_fmt", metavar="{420,422,444,400}",
                          choices=("420", "422", "444", "400"), help="raw YUV chroma layout")
    io_group.add_argument("-b", "--bitdepth", type=int, choices=range(8, 17), metavar="{8..16}",
                          help="raw YUV bit depth")
    io_group.add_argument("--no-reference", action="store_true",
                          help="score the distorted video alone (no-reference models)")
    io_group.add_argument("--features", metavar="FILE",
                          help="libvmaf JSON report whose per-frame metrics feed "
                               "feature-vector models: a regular file of at most "
                               f"{MAX_FEATURES_FILE_BYTES >> 20} MiB, or '-' (stdin)")
    align = p.add_argument_group("alignment (off by default)")
    align.add_argument("--scale", action="store_true",
                       help="scale each distorted frame to the reference size (bicubic)")
    align.add_argument("--ref-offset", type=frame_offset, default=0, metavar="N",
                       help="skip the reference's first N frames")
    align.add_argument("--dist-offset", type=frame_offset, default=0, metavar="N",
                       help="skip the distorted clip's first N frames")
    m = p.add_argument_group("models")
    m.add_argument("--tiny-model", "--model", action="append", dest="models", metavar="NAME",
                   help="built-in model name (see `vmafdnn models`: psnr_y, ssim_y, "
                        "sharpness_nr, vmaf, vmaf_4k, vmaf_neg, ...) or an ONNX file (its "
                        "sidecar .json beside it); repeatable")
    m.add_argument("--tiny-device", default="auto", type=name_of("device"),
                   choices=names.DEVICE_NAMES,
                   help="execution provider hint (default: auto)")
    m.add_argument("--tiny-device-index", type=device_index, default=0, metavar="N",
                   help="GPU ordinal (default 0)")
    m.add_argument("--tiny-threads", type=thread_count, default=0, metavar="N",
                   help=f"threads in all, 0..{MAX_THREADS}: N > 1 scores N frames at once, "
                        "at most 4 when every model runs on a GPU (0: ORT's default per model)")
    m.add_argument("--tiny-batch", type=batch_size, default=0, metavar="N",
                   help=f"frames per ONNX Runtime Run, 0..{MAX_BATCH}, for models with a "
                        "symbolic batch dim (0: the library's choice, one today)")
    m.add_argument("--tiny-fp16", action="store_true", help="FLOAT16 model inputs and outputs")
    m.add_argument("--tiny-static-shapes", default="auto", type=name_of("static_shapes"),
                   choices=names.STATIC_SHAPES_NAMES,
                   help="specialise each model to the frame size it runs at (auto: on every "
                        "EP but ORT's CPU EP; on; off)")
    m.add_argument("--tiny-device-io", default="auto", type=name_of("device_io"),
                   choices=names.DEVICE_IO_NAMES,
                   help="how specialised sessions exchange inputs and outputs with an "
                        "accelerator (auto: bind device-resident tensors where ORT wants them "
                        "in device memory and capture the graph where the EP can; on: also on "
                        "ORT's CPU EP, for tests; off: ORT copies inside each run)")
    m.add_argument("--tiny-resize", default="none", type=name_of("resize"),
                   choices=names.RESIZE_NAMES,
                   help="how frames reach a model of another fixed size (default: none, "
                        "an error)")
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="report file (format: --json, --xml or --csv, else from OUT's "
                        "extension, else JSON); '-': stdout, and the summary goes to "
                        "stderr. Never one of the inputs (clips, features, models, "
                        "sidecars)")
    fmt = o.add_mutually_exclusive_group()
    for name in ("json", "xml", "csv"):
        fmt.add_argument(f"--{name}", dest="fmt", action="store_const", const=name,
                         help=f"{name.upper()} report")
    o.add_argument("--plot", metavar="FILE",
                   help="also draw the per-frame scores into FILE (.png or .svg)")
    o.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing on success (no progress, no scores)")
    _policy_args(p)
    other = p.add_argument_group("other")
    other.add_argument("--help", action="help", help="show this help and exit")
    other.add_argument("--version", action="version", version=f"vmafdnn {__version__}")
    return p


class _Progress:
    """A one-line progress meter on stderr, redrawn at most ten times a second."""

    def __init__(self, stream):
        self._stream = stream
        self._start = time.perf_counter()
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total) -> None:
        now = time.perf_counter()
        if now - self._last < 0.1 and done != total:
            return
        self._last = now
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        of = f"/{total}" if total else ""
        eta = ""
        if total and rate > 0 and done < total:
            left = int((total - done) / rate + 0.5)
            eta = f", ETA {left // 60}:{left % 60:02d}"
        self._stream.write(f"\rvmafdnn: frame {done}{of}, {rate:.1f} fps{eta} ")
        self._stream.flush()
        self._shown = True

    def end(self) -> None:
        if self._shown:
            self._stream.write("\n")
            self._stream.flush()


def _check_score_args(args) -> None:
    if args.distorted is None:
        raise _UsageExit("the distorted video is required (-d DIST)")
    if args.no_reference and args.reference is not None:
        raise _UsageExit("--no-reference scores the distorted video alone: drop -r")
    if not args.no_reference and args.reference is None:
        raise _UsageExit("a reference is required (-r REF), or --no-reference")
    stdin = [flag for flag, value in (("-r", args.reference), ("-d", args.distorted),
                                      ("--features", args.features)) if value == STDIO]
    if len(stdin) > 1:
        raise _UsageExit(f"only one of {' and '.join(stdin)} can read stdin ('-')")
    for name in ("reference", "distorted", "features"):
        value = getattr(args, name)
        if value is not None and value != "-" and not os.path.exists(value):
            raise FileNotFoundError(f"{name} file {value} does not exist")
    # Every output is checked now, not after the last frame (score() checks
    # them again against every file it reads, the models included).
    if args.output is not None:
        check_output(args.output, "report (-o)", stdout_ok=True)
    if args.plot is not None:
        check_output(args.plot, "plot (--plot)")
    inputs = Inputs({"reference input": args.reference, "distorted input": args.distorted,
                     "features file": args.features})
    inputs.refuse(args.output, "report (-o)")
    if args.output != STDIO and not args.quiet:
        # The summary goes to stdout: `... -o r.json >> ref.y4m` appended it to the reference.
        inputs.refuse(STDIO, "summary (-q prints none)")
    inputs.add("report (-o)", args.output, written=True)
    inputs.refuse(args.plot, "plot (--plot)")


def cmd_score(args) -> int:
    if args.plot is not None:
        from .plot import check_output as check_plot
        check_plot(args.plot)
    progress = _Progress(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    try:
        result = score(
            args.reference, args.distorted, args.models, device=args.tiny_device,
            device_index=args.tiny_device_index, threads=args.tiny_threads,
            fp16_io=args.tiny_fp16, resize=args.tiny_resize,
            output=args.output, fmt=args.fmt, features=args.features, progress=progress,
            width=args.width, height=args.height, pix_fmt=args.pix_fmt, bitdepth=args.bitdepth,
            scale=args.scale, ref_offset=args.ref_offset, dist_offset=args.dist_offset,
            cancel=args.canceller, batch=args.tiny_batch,
            static_shapes=args.tiny_static_shapes, device_io=args.tiny_device_io,
            other_outputs={"plot (--plot)": args.plot}, **_policy(args))
    finally:
        if progress is not None:
            progress.end()
    args.report_written = args.output is not None  # what an interruption from here on leaves
    if args.plot is not None:
        from .plot import save_plot
        save_plot([(os.path.basename(args.distorted), result)], args.plot)
    if not args.quiet:
        # With the report on stdout (-o -) the summary goes to stderr, so that
        # stdout is the report alone.
        _print_summary(result, args, sys.stderr if args.output == STDIO else sys.stdout)
    return 0


def _batched(batching, frames: int) -> str:
    """', N of M frames in batched Runs' where --tiny-batch asked for them."""
    if not batching or batching["batch"] < 2:
        return ""
    if batching["refused"]:
        return ", one frame per Run (its batched Run disagreed with one Run per frame, failed, " \
               "or could not be checked)"
    if not batching["batched_frames"]:
        return ", one frame per Run (no batched Run was kept)"
    return (f", {batching['batched_frames']} of {frames} frames in Runs of up to "
            f"{batching['batch']}")


def _device_io(runs) -> str:
    """', device-resident I/O on D of R runs (from pinned memory on P), graph recorded on C'
    where runs bound it, ', UINT8 samples on U of R runs' where runs took an 8-bit clip's
    samples as they are, and ', pictures sent from where they were read on P of R runs' where
    the readers read them into the device's pinned memory."""
    if not runs:
        return ""
    total = runs["fixed"] + runs["as_opened"]
    narrow = f", UINT8 samples on {runs['uint8']} of {total} runs" if runs.get("uint8") else ""
    if runs.get("pictures"):
        narrow += f", pictures sent from where they were read on {runs['pictures']} of {total} runs"
    if not runs["device_io"]:
        return narrow
    pinned = f" (from pinned memory on {runs['pinned']})" if runs.get("pinned") else ""
    captured = f", graph recorded on {runs['captured']}" if runs["captured"] else ""
    return (f", device-resident I/O on {runs['device_io']} of {total} runs{pinned}{captured}"
            f"{narrow}")


def _print_summary(result, args, out) -> None:
    def say(line):
        print(line, file=out)
    frames = len(result["frames"])
    for model in result["models"]:
        form = model.get("form")
        say(f"model {printable(model['path'])}: {model['kind']}, "
            f"on {_on_ep(model['attached_ep'], model.get('ep_nodes'))}"
            f"{f' as {printable(os.path.basename(form))}' if form else ''}"
            f"{_batched(model.get('batching'), frames)}"
            f"{_device_io(model.get('static_runs'))}")
        for line in model["fallback_reason"].splitlines():
            # under auto only what it passed over for a better place or form: the EPs this
            # machine lacks are no news there
            if args.tiny_device != "auto" or " passed over " in line:
                say(f"  fallback: {printable(line)}")
        runs = model.get("static_runs")
        if runs and model["attached_ep"] != "CPU" and runs["device_io_reason"]:
            say(f"  device I/O: {printable(runs['device_io_reason'])}")
    say(f"frames: {frames}")
    for name, pooled in result["pooled_metrics"].items():
        say(f"{printable(name)}: {pooled['mean']:.6f}")
    if args.output:
        say(f"report: {'stdout' if args.output == STDIO else printable(args.output)}")
    if args.plot:
        say(f"plot: {printable(args.plot)}")


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.filename and error.strerror and not isinstance(
            error, DnnError):
        text = f"{error.filename}: {error.strerror}"
    return "; ".join(printable(line.strip()) for line in text.splitlines() if line.strip())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv and argv[0] in ("info", "bench", "plot", "models", "batch", "bdrate"):
            args = build_parser().parse_args(argv)
        elif not argv:
            raise _UsageExit("no input given")
        else:
            args = build_score_parser().parse_args(argv)
            _check_score_args(args)
            args.command, args.func = "score", cmd_score
        if args.command not in ("plot", "models", "bdrate") and not available():
            raise RuntimeError(unavailable_reason())
        args.canceller = Canceller()  # what a SIGINT / SIGTERM cancels
        try:
            return _run_interruptibly(lambda: args.func(args), args.canceller)
        except _Interrupted as e:
            return _interrupted(e, getattr(args, "report_written", False))
    except _UsageExit as e:
        print(f"vmafdnn: error: {_one_line(e)} (see 'vmafdnn --help')", file=sys.stderr)
        return USAGE_EXIT
    except UsageError as e:
        print(f"vmafdnn: error: {_one_line(e)}", file=sys.stderr)
        return USAGE_EXIT
    except KeyboardInterrupt:  # before the worker started
        print("vmafdnn: error: interrupted by SIGINT", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # stdout was closed early (| head): point it at /dev/null so that the
        # interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return RUNTIME_EXIT
    except (DnnError, ValueError, OSError, RuntimeError, TypeError) as e:
        print(f"vmafdnn: error: {_one_line(e)}", file=sys.stderr)
        return RUNTIME_EXIT
    except Exception as e:  # a bug: still one line, with what is needed to report it
        print(f"vmafdnn: error: internal error: {type(e).__name__}: {_one_line(e)}",
              file=sys.stderr)
        return RUNTIME_EXIT
