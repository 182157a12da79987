"""The ``vmafdnn`` command line tool.

    vmafdnn info MODEL [--device D]            ORT version, attached EP, I/O table
    vmafdnn bench MODEL [--device D] [--threads N] [--runs N]
                                               per-run latency
"""
import argparse
import sys
import time

import numpy as np

from . import __version__, available, ort_library_path, ort_version, unavailable_reason
from .errors import DnnError
from .session import DEVICES, Session


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
    parser = argparse.ArgumentParser(prog="vmafdnn", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"vmafdnn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if not available():
        print(f"vmafdnn: {unavailable_reason()}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (DnnError, ValueError, OSError) as e:
        print(f"vmafdnn: {e}", file=sys.stderr)
        return 1
