"""Frames read into the context's picture buffers against frames in arrays of their own.

    python bench/bench_picture_buffers.py [--device cpu] [--size 1920x1080] [--bitdepth 10]
                                          [--frames 60] [--rounds 3] [--threads 1]
                                          [--models psnr_y,ssim_y,vmaf]

One Context per run, the models attached, the frames (bench_devices.synthetic_clip, made in
memory) handed over with read_pictures(keep=True) as a reader hands over each frame it read:

  arrays    each frame in a numpy array of its own;
  buffers   each frame read into Context.picture_buffer memory (the copy into it is the
            reader's read, not timed): where the models' EP device has host-accessible
            (pinned) memory the buffers are that memory and the models feed the pictures to the
            device from where they lie, where from arrays each model first copies them into
            its own pinned block.

Both take turns, best steady fps of --rounds (the first frame's read to the end of flush), the
ratio buffers / arrays, the runs fed from the buffers (StaticRuns.pictures), and whether the
scores are the same. On a machine without a GPU, --stand-in runs both again with
VMAFDNN_TEST_HOST_ACCESSIBLE=1 (ORT's CPU allocator standing in for pinned memory, so the
models' blocks and the buffers take the path they take on a GPU, on ORT's CPU EP): what the
copy into the models' blocks costs the host, not what a GPU gains.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_devices import per_frame, run_in_context, synthetic_clip  # noqa: E402

import vmafdnn  # noqa: E402


def run(args, refs, dists, buffers):
    """(steady fps, runs fed from buffers per model, per-frame scores)."""
    report, steady = run_in_context(refs, dists, args.models.split(","), args.device,
                                    args.threads, args.bitdepth, buffers, static_shapes="on")
    fed = [m["static_runs"]["pictures"] for m in report["models"]]
    return steady, fed, {k: v.tolist() for k, v in per_frame(report).items()}


def compare(args, refs, dists, label):
    best, fed, values = {}, {}, {}
    for _ in range(args.rounds):
        for kind in ("arrays", "buffers"):
            steady, fed[kind], values[kind] = run(args, refs, dists, kind == "buffers")
            best[kind] = max(steady, best.get(kind, 0.0))
    n = len(refs)
    print(f"{label}: arrays {best['arrays']:.2f} fps ({1000 / best['arrays']:.2f} ms a frame); "
          f"buffers {best['buffers']:.2f} fps ({1000 / best['buffers']:.2f} ms), "
          f"{best['buffers'] / best['arrays']:.2f}x; runs fed from the buffers per model "
          f"{fed['buffers']} of {n} (from arrays {fed['arrays']}); same scores: "
          f"{values['arrays'] == values['buffers']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--bitdepth", type=int, default=10)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="psnr_y,ssim_y,vmaf")
    ap.add_argument("--stand-in", action="store_true",
                    help="also with VMAFDNN_TEST_HOST_ACCESSIBLE=1 (no GPU: ORT's CPU "
                         "allocator as the pinned memory)")
    args = ap.parse_args(argv)
    width, height = map(int, args.size.split("x"))
    refs, dists = synthetic_clip(width, height, args.frames, args.bitdepth)
    print(f"ONNX Runtime {vmafdnn.ort_version()}; {args.size} {args.bitdepth}-bit, "
          f"{args.frames} frames, {args.models}, device {args.device}, threads {args.threads}")
    os.environ.pop("VMAFDNN_TEST_HOST_ACCESSIBLE", None)
    compare(args, refs, dists, "as the EP offers")
    if args.stand_in:
        os.environ["VMAFDNN_TEST_HOST_ACCESSIBLE"] = "1"
        compare(args, refs, dists, "ORT's CPU allocator standing in for pinned memory")
        os.environ.pop("VMAFDNN_TEST_HOST_ACCESSIBLE")


if __name__ == "__main__":
    main()
