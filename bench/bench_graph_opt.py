"""ORT's graph optimisation level and pre-optimised models, for the built-ins
(issue 12: "check ORT's graph optimisation level and whether a pre-optimised
(serialised optimised) model loads faster").

    python bench/bench_graph_opt.py [--models psnr_y,ssim_y,vmaf_features] [--size 1920x1080]

For each built-in, on ORT's CPU EP with one intra-op thread (no spinning,
as the library configures its sessions):

  - session creation and one frame's run at each level (DISABLE_ALL, BASIC,
    EXTENDED, ALL; the library uses ALL, ORT's default);
  - the same model saved after ORT_ENABLE_ALL (optimized_model_filepath) and
    loaded with optimisations off: what a pre-optimised model file would
    save at open, and whether it runs as fast.

Contenders take turns (common.best_times), best of the rounds; outputs are
checked equal to the ALL level's within 1e-6. Prints ms and the ratios to
ALL. ORT documents that a model saved after the ALL level holds layout
(NCHWc) transforms for the CPU it was made on, so such a file is only safe
on the machine that wrote it: the last column says what it would buy.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import best_times  # noqa: E402

ort.set_default_logger_severity(3)  # the save step warns that the file suits this CPU only

LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def options(level, save_to=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = level
    if save_to:
        so.optimized_model_filepath = save_to
    return so


def open_session(path, level):
    return ort.InferenceSession(path, options(level), providers=["CPUExecutionProvider"])


def feeds_for(session, h, w):
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:h, 0:w]
    ref = ((np.sin(xx / 37.0) + np.cos(yy / 23.0)) * 60 + 128 + rng.normal(0, 6, (h, w)))
    ref = ref.clip(0, 255).round() / 255.0
    dist = np.clip(ref + rng.normal(0, 4, (h, w)).round() / 255.0, 0, 1)
    planes = {"reference": ref, "distorted": dist, "reference_prev": np.roll(ref, 1, 1)}
    feeds = {}
    for i in session.get_inputs():
        if i.name in planes:
            feeds[i.name] = planes[i.name][None, None].astype(np.float32)
        elif i.name == "bpc":
            feeds[i.name] = np.array([8], np.float32)
        else:  # device_type and other value inputs: 0 (the CPU)
            feeds[i.name] = np.zeros([1], np.float32)
    return feeds


def main():
    from vmafdnn import models as builtin_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="psnr_y,ssim_y,sharpness_nr,vmaf_features")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    w, h = map(int, args.size.split("x"))
    print(f"onnxruntime {ort.__version__}, {args.size}, CPU EP, 1 thread; best of "
          f"{args.rounds} rounds, ms")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            path = builtin_models.resolve(name)
            saved = os.path.join(tmp, name + ".all.onnx")
            ort.InferenceSession(path, options(LEVELS["all"], saved),
                                 providers=["CPUExecutionProvider"])
            sessions = {lvl: open_session(path, LEVELS[lvl]) for lvl in LEVELS}
            opens = {lvl: (lambda p=path, l=LEVELS[lvl]: open_session(p, l)) for lvl in LEVELS}
            try:
                sessions["pre-optimised"] = open_session(saved, LEVELS["disable"])
                opens["pre-optimised"] = lambda: open_session(saved, LEVELS["disable"])
            except Exception as e:  # ORT cannot always load what it saved (Loop bodies)
                print(f"{name}: the pre-optimised model does not load: {str(e)[:300]}")
            feeds = feeds_for(sessions["all"], h, w)
            want = sessions["all"].run(None, feeds)
            for label, s in sessions.items():
                for a, b in zip(s.run(None, feeds), want):
                    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6,
                                               err_msg=f"{name} at {label}")
            opens = best_times(opens, rounds=args.rounds)
            runs = best_times({label: (lambda s=s: s.run(None, feeds))
                               for label, s in sessions.items()}, rounds=args.rounds)
            print(f"{name}: {os.path.getsize(path)} bytes, saved after ALL "
                  f"{os.path.getsize(saved)} bytes")
            for label in sessions:
                print(f"  {label:14s} open {opens[label] * 1e3:8.1f} "
                      f"({opens['all'] / opens[label]:4.2f}x ALL's speed)   run "
                      f"{runs[label] * 1e3:8.1f} ({runs['all'] / runs[label]:4.2f}x)")


if __name__ == "__main__":
    main()
