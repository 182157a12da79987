"""ms per frame of psnr_y, ssim_y, float_ssim and sharpness_nr through the library on ORT's CPU
EP: their kernels forms (one node of the library's Psnr / Ssim / FloatSsim / LaplacianVariance,
the default on the CPU EP) against the models' own graphs (row-strip Loops, VMAFDNN_MODEL_FORMS=0), same run, one
thread.

    python bench/bench_kernels_forms.py [--size 1920x1080] [--frames 8] [--rounds 5]

Frames are made in memory (a textured 8-bit picture and a noisy copy; no decoding), scored
with vmafdnn.score(..., device="cpu", threads=1); each round scores every contender once, in
turns, and the best round of each is kept (2 shared, noisy cores). The per-frame scores of the
two contenders are compared too (they must agree within 1e-5).
"""
import argparse
import os
import time

import numpy as np

import vmafdnn


def frames(width, height, count):
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:height, 0:width]
    out = []
    for t in range(count):
        base = 128 + 60 * np.sin(xx / 17.0 + t / 3.0) * np.cos(yy / 23.0) + 30 * np.sin(
            xx * yy / 9000.0)
        ref = np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)
        dist = np.clip(ref.astype(int) + rng.integers(-7, 8, ref.shape), 0, 255).astype(np.uint8)
        out.append((ref, dist))
    return out


def score(model, pairs, forms):
    if forms is None:
        os.environ.pop("VMAFDNN_MODEL_FORMS", None)
    else:
        os.environ["VMAFDNN_MODEL_FORMS"] = forms
    t0 = time.perf_counter()
    report = vmafdnn.score(iter([r for r, _ in pairs]), iter([d for _, d in pairs]), [model],
                           device="cpu", threads=1)
    seconds = time.perf_counter() - t0
    form = report["models"][0].get("form")
    return seconds, [f["metrics"][model] for f in report["frames"]], form


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    pairs = frames(width, height, args.frames)
    print(f"{args.size}, {args.frames} frames, best of {args.rounds} rounds, 1 thread, "
          f"ONNX Runtime {vmafdnn.ort_version()}")
    print("| model | kernels form ms/frame | model's graph ms/frame | speed-up | max |diff| |")
    print("|---|---|---|---|---|")
    for model in ("psnr_y", "ssim_y", "float_ssim", "sharpness_nr"):
        best = {"kernels": float("inf"), "graph": float("inf")}
        values, forms = {}, {}
        for _ in range(args.rounds):
            for name, setting in (("kernels", None), ("graph", "0")):
                seconds, values[name], forms[name] = score(model, pairs, setting)
                best[name] = min(best[name], seconds)
        assert (forms["kernels"] or "").endswith("_kernels.onnx"), forms
        assert forms["graph"] is None, forms
        diff = max(abs(a - b) for a, b in zip(values["kernels"], values["graph"]))
        assert diff <= 1e-5 * max(1.0, max(abs(v) for v in values["graph"])), \
            f"{model}: the forms differ by {diff}"
        k, g = (best[n] * 1000 / args.frames for n in ("kernels", "graph"))
        print(f"| {model} | {k:.2f} | {g:.2f} | {g / k:.2f}x | {diff:.2g} |")
    os.environ.pop("VMAFDNN_MODEL_FORMS", None)


if __name__ == "__main__":
    main()
