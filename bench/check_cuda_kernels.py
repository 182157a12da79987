"""The library's fused kernels on CUDA (csrc/gpu through cuda_kernels.c) against the same
kernels on ORT's CPU EP: the same clip scored with each model's CPU form (VMAFDNN_MODEL_FORMS=CPU:
VMAF's features through the library's VifInteger, AdmInteger and MotionInteger ops, psnr_y,
ssim_y, float_ssim and sharpness_nr through its Psnr, Ssim, FloatSsim and LaplacianVariance) on --device and on "cpu".

    python bench/check_cuda_kernels.py [--device cuda] [--sizes 1920x1080]
                                       [--frames 24] [--depths 8,10] [--threads 2]
                                       [--models vmaf_features,psnr_y,ssim_y,float_ssim,sharpness_nr]

For each size and bit depth it prints the EP each side attached, how many nodes it runs,
the steady fps of both, the ratio, and the largest per-frame difference of every feature
(the kernels are held bit for bit to the CPU's on the emulator, tests/c/test_gpu_*.c: on a GPU
anything but 0 is a finding). Then the same with VMAFDNN_CUDA_KERNELS=0 (ORT copies the planes
to its CPU EP for the ops), for the ratio that the kernels are for.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_accel import nodes_text  # noqa: E402
from bench_devices import per_frame, run_once, synthetic_clip  # noqa: E402

import vmafdnn  # noqa: E402
from vmafdnn import models as builtin  # noqa: E402


def score(model, refs, dists, device, threads, bpc, kernels):
    os.environ["VMAFDNN_CUDA_KERNELS"] = "1" if kernels else "0"
    path = str(builtin.path(model))
    run_once(refs[:3], dists[:3], [path], device, threads, False, bpc, "auto")  # warm-up
    report, _, steady = run_once(refs, dists, [path], device, threads, False, bpc, "auto")
    return per_frame(report), nodes_text(report), steady


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default="1920x1080")
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--depths", default="8,10")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="vmaf_features,psnr_y,ssim_y,float_ssim,sharpness_nr")
    args = ap.parse_args(argv)
    print(f"ONNX Runtime {vmafdnn.ort_version()} from {vmafdnn.ort_library_path()}")
    saved = {k: os.environ.get(k) for k in ("VMAFDNN_MODEL_FORMS", "VMAFDNN_CUDA_KERNELS")}
    os.environ["VMAFDNN_MODEL_FORMS"] = "CPU"
    try:
        for size in args.sizes.split(","):
            width, height = map(int, size.split("x"))
            for bpc in map(int, args.depths.split(",")):
                refs, dists = synthetic_clip(width, height, args.frames, bpc)
                for model in args.models.split(","):
                    check(model, refs, dists, args, size, bpc)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check(model, refs, dists, args, size, bpc):
    on_cpu, cpu_nodes, cpu_fps = score(model, refs, dists, "cpu", args.threads, bpc, True)
    for kernels in (True, False):
        try:
            got, nodes, fps = score(model, refs, dists, args.device, args.threads, bpc, kernels)
        except vmafdnn.DnnError as e:
            print(f"{model} {size} {bpc}-bit {args.device} kernels={kernels}: failed: {e}")
            continue
        diffs = ", ".join(f"{k} {float(np.max(np.abs(got[k] - on_cpu[k]))):.3g}"
                          for k in sorted(on_cpu))
        print(f"{model} {size} {bpc}-bit: {args.device} (CUDA kernels "
              f"{'on' if kernels else 'off'}) {fps:.2f} fps, CPU EP {cpu_fps:.2f} "
              f"fps, {fps / cpu_fps:.2f}x\n    {nodes}\n    CPU EP: {cpu_nodes}\n"
              f"    max |d| from the CPU EP: {diffs}")


if __name__ == "__main__":
    main()
