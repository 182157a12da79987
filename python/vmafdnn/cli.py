"""The ``vmafdnn`` command line tool.

    vmafdnn -r REF -d DIST [options]           score a clip pair (like libvmaf's vmaf)
    vmafdnn -d DIST --no-reference [options]   no-reference scoring
    vmafdnn info MODEL [--device D]            ORT version, attached EP, I/O table
    vmafdnn bench MODEL [--device D] [--threads N] [--runs N]
                                               per-run latency

Errors are one line on stderr ("vmafdnn: error: ..."); the exit status is 2
for a usage error and 1 for anything that fails while running.
"""
import argparse
import os
import sys
import time

import numpy as np

from . import __version__, available, ort_library_path, ort_version, unavailable_reason
from . import models as builtin_models
from .context import RESIZE_MODES
from .errors import DnnError
from .scoring import UsageError, score
from .session import DEVICES, Session

USAGE_EXIT = 2
RUNTIME_EXIT = 1


class _UsageExit(Exception):
    """An argument error found by a parser (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing its usage and exiting, so that
    every error becomes the same one line."""

    def error(self, message):
        raise _UsageExit(message)


# -- info / bench ---------------------------------------------------------------

def _device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="auto", type=str.lower, choices=list(DEVICES),
                        help="execution provider hint (default: auto)")
    parser.add_argument("--device-index", type=int, default=0, help="GPU ordinal")
    parser.add_argument("--threads", type=int, default=0, help="ORT intra-op threads (0: ORT's default)")
    parser.add_argument("--fp16", action="store_true", help="cast fp32 data to/from FLOAT16 model slots")


def _open(args) -> Session:
    return Session(args.model, device=args.device, device_index=args.device_index,
                   threads=args.threads, fp16_io=args.fp16)


def _shape(shape) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def cmd_info(args) -> int:
    with _open(args) as session:
        print(f"libvmafdnn   {__version__}")
        print(f"ONNX Runtime {ort_version()} ({ort_library_path()})")
        print(f"model        {args.model}")
        print(f"attached EP  {session.attached_ep}")
        for line in session.fallback_reason.splitlines():
            print(f"  fallback   {line}")
        for kind, infos in (("input", session.inputs), ("output", session.outputs)):
            for info in infos:
                print(f"{kind:<7}{info.name:<24}{str(info.dtype):<10}{_shape(info.shape)}")
    return 0


def _example_feeds(session: Session, symbolic: int):
    """Random float32 inputs, symbolic dims replaced by `symbolic`."""
    rng = np.random.default_rng(0)
    return {
        info.name: rng.random(tuple(symbolic if d < 0 else d for d in info.shape),
                              dtype=np.float32)
        for info in session.inputs
    }


def cmd_bench(args) -> int:
    with _open(args) as session:
        feeds = _example_feeds(session, args.symbolic_dim)
        for _ in range(min(args.runs, 10)):
            session.run(feeds)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            session.run(feeds)
            times.append(time.perf_counter() - t0)
        times_us = np.array(times) * 1e6
        print(f"{args.model} on {session.attached_ep}, {args.runs} runs: "
              f"median {np.median(times_us):.1f} us, p10 {np.percentile(times_us, 10):.1f} us, "
              f"p90 {np.percentile(times_us, 90):.1f} us")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``info`` and ``bench`` subcommands."""
    parser = _Parser(prog="vmafdnn", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"vmafdnn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="describe a model and where it runs")
    info.add_argument("model")
    _device_args(info)
    info.set_defaults(func=cmd_info)
    bench = sub.add_parser("bench", help="per-run latency of a model")
    bench.add_argument("model")
    _device_args(bench)
    bench.add_argument("--runs", type=int, default=1000)
    bench.add_argument("--symbolic-dim", type=int, default=64,
                       help="size used for symbolic dims (default 64)")
    bench.set_defaults(func=cmd_bench)
    return parser


# -- scoring --------------------------------------------------------------------

_SCORE_EPILOG = f"""\
models: without --tiny-model the built-in {', '.join(builtin_models.MODEL_NAMES[:2])} are used
(with --no-reference: {builtin_models.MODEL_NAMES[2]}); a built-in name may also be given to
--tiny-model. Other commands: 'vmafdnn info MODEL', 'vmafdnn bench MODEL' (see their --help).

examples:
  vmafdnn -r ref.y4m -d dist.y4m -o report.json --json
  vmafdnn -r ref.yuv -d dist.yuv -w 1920 -h 1080 -p 420 -b 10 --tiny-model model.onnx
  ffmpeg -i x.mp4 -f yuv4mpegpipe - | vmafdnn -d - --no-reference -o nr.json
"""


def _int_at_least(minimum: int):
    """An argparse type: an integer >= minimum."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value
    return parse


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


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
                          help="reference video: Y4M or raw YUV ('-': Y4M on stdin)")
    io_group.add_argument("-d", "--distorted", metavar="DIST",
                          help="distorted video: Y4M or raw YUV ('-': Y4M on stdin)")
    io_group.add_argument("-w", "--width", type=_positive_int, help="raw YUV width")
    io_group.add_argument("-h", "--height", type=_positive_int, help="raw YUV height")
    io_group.add_argument("-p", "--pixel_format", dest="pix_fmt", metavar="{420,422,444,400}",
                          choices=("420", "422", "444", "400"), help="raw YUV chroma layout")
    io_group.add_argument("-b", "--bitdepth", type=int, choices=range(8, 17), metavar="{8..16}",
                          help="raw YUV bit depth")
    io_group.add_argument("--no-reference", action="store_true",
                          help="score the distorted video alone (no-reference models)")
    io_group.add_argument("--features", metavar="FILE",
                          help="libvmaf JSON report whose per-frame metrics feed "
                               "feature-vector models")
    m = p.add_argument_group("models")
    m.add_argument("--tiny-model", action="append", dest="models", metavar="PATH",
                   help="ONNX model (its sidecar .json beside it) or built-in name; repeatable")
    m.add_argument("--tiny-device", default="auto", type=str.lower, choices=list(DEVICES),
                   help="execution provider hint (default: auto)")
    m.add_argument("--tiny-device-index", type=_non_negative_int, default=0, metavar="N",
                   help="GPU ordinal (default 0)")
    m.add_argument("--tiny-threads", type=_non_negative_int, default=0, metavar="N",
                   help="ONNX Runtime threads per model (0: ORT's default)")
    m.add_argument("--tiny-fp16", action="store_true", help="FLOAT16 model inputs and outputs")
    m.add_argument("--tiny-resize", default="none", type=str.lower, choices=list(RESIZE_MODES),
                   help="how frames reach a model of another fixed size (default: none, "
                        "an error)")
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="report file (format: --json, --xml or --csv, else from OUT's "
                        "extension, else JSON)")
    fmt = o.add_mutually_exclusive_group()
    for name in ("json", "xml", "csv"):
        fmt.add_argument(f"--{name}", dest="fmt", action="store_const", const=name,
                         help=f"{name.upper()} report")
    o.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing on success (no progress, no scores)")
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
        self._stream.write(f"\rvmafdnn: frame {done}{of}, {rate:.1f} fps ")
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
    if args.reference == "-" and args.distorted == "-":
        raise _UsageExit("only one of -r and -d can read stdin ('-')")
    for name in ("reference", "distorted", "features"):
        value = getattr(args, name)
        if value is not None and value != "-" and not os.path.exists(value):
            raise FileNotFoundError(f"{name} file {value} does not exist")
    if args.output is not None:
        # Found now rather than after scoring the whole clip.
        directory = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"cannot write report {args.output}: directory "
                                    f"{directory} does not exist")


def cmd_score(argv) -> int:
    args = build_score_parser().parse_args(argv)
    _check_score_args(args)
    if not available():
        raise RuntimeError(unavailable_reason())
    progress = _Progress(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    try:
        result = score(
            args.reference, args.distorted, args.models, device=args.tiny_device,
            device_index=args.tiny_device_index, threads=args.tiny_threads,
            fp16_io=args.tiny_fp16, resize=args.tiny_resize,
            output=args.output, fmt=args.fmt, features=args.features, progress=progress,
            width=args.width, height=args.height, pix_fmt=args.pix_fmt, bitdepth=args.bitdepth)
    finally:
        if progress is not None:
            progress.end()
    if not args.quiet:
        _print_summary(result, args)
    return 0


def _print_summary(result, args) -> None:
    frames = len(result["frames"])
    for model in result["models"]:
        print(f"model {model['path']}: {model['kind']}, on {model['attached_ep']}")
        if args.tiny_device != "auto":
            for line in model["fallback_reason"].splitlines():
                print(f"  fallback: {line}")
    print(f"frames: {frames}")
    for name, pooled in result["pooled_metrics"].items():
        print(f"{name}: {pooled['mean']:.6f}")
    if args.output:
        print(f"report: {args.output}")


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.filename and error.strerror and not isinstance(
            error, DnnError):
        text = f"{error.filename}: {error.strerror}"
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv and argv[0] in ("info", "bench"):
            args = build_parser().parse_args(argv)
            if not available():
                raise RuntimeError(unavailable_reason())
            return args.func(args)
        if not argv:
            raise _UsageExit("no input given")
        return cmd_score(argv)
    except _UsageExit as e:
        print(f"vmafdnn: error: {_one_line(e)} (see 'vmafdnn --help')", file=sys.stderr)
        return USAGE_EXIT
    except UsageError as e:
        print(f"vmafdnn: error: {_one_line(e)}", file=sys.stderr)
        return USAGE_EXIT
    except KeyboardInterrupt:
        print("vmafdnn: error: interrupted", file=sys.stderr)
        return 130
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
