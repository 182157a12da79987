"""Device-resident I/O and graph capture against ORT's own copies, one session run at a time.

    python bench/bench_device_io.py [--device cuda] [--sizes 1920x1080] [--runs 50]
                                    [--models psnr_y,ssim_y,float_ssim,sharpness_nr,vmaf_features]
                                    [--batch 1]

For each built-in's accelerator form (and, with --forms accel,samples, its samples form: UINT16
samples and bpc in, half the bytes to copy; CUDA's form), size and device, two sessions of the
form specialised to
the size (static_shapes on) score the same frames in turns: device_io off (ORT copies the
inputs to the device inside every Run, and the outputs back) and device_io auto (device tensors
bound at fixed addresses, filled by CopyTensors; graph capture where the EP records graphs).
It prints the median ms per Run of each after a warm-up of 3 Runs (session creation, shader
compilation and graph recording are not counted), the ratio copies / bound, what the bound
session got (device I/O runs, captured runs, the reason where it got less) and the largest
|difference| between the two sessions' outputs. Runs one session at a time on purpose: the
Run's own cost, without frames in flight. On ORT's CPU EP auto binds nothing (every slot is in
host memory); the figures that matter come from a GPU (`--device cuda` with onnxruntime-gpu,
`--device webgpu` with the WebGPU plugin; without a GPU, ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1
runs WebGPU on Mesa's lavapipe, a CPU rasteriser: context only).
"""
import argparse
import os
import statistics
import time

import numpy as np

import vmafdnn
from vmafdnn import models as builtin


def feeds(session, width, height, batch, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    ref = np.clip(np.rint(128 + 60 * np.sin(x / 7.0 + seed) * np.cos(y / 11.0)), 0, 255)
    dis = np.clip(np.rint(ref + rng.normal(0, 4, ref.shape)), 0, 255)
    planes = {"reference": np.stack([ref] * batch)[:, None],
              "distorted": np.stack([dis] * batch)[:, None],
              "reference_prev": np.clip(ref - 3, 0, 255)[None, None]}
    out = {}
    for info in session.inputs:
        if info.name in planes:
            plane = planes[info.name].astype(np.float32)
            out[info.name] = plane.astype(np.uint16) if info.dtype == np.uint16 else plane / 255.0
        else:
            out[info.name] = np.array([8.0 if info.name == "bpc" else 1.0], np.float32)
    return out


def timed_runs(session, frames, runs):
    for f in frames[:3]:
        session.run(f)
    times, last = [], None
    for k in range(runs):
        t0 = time.perf_counter()
        last = session.run(frames[k % len(frames)])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, last


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="1920x1080")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--models", default="psnr_y,ssim_y,float_ssim,sharpness_nr,vmaf_features")
    ap.add_argument("--forms", default="accel,samples",
                    help="which forms: accel (float32 planes), samples, kernels (where a model "
                         "has one: UINT16 samples and bpc in; kernels: the library's own ops)")
    args = ap.parse_args(argv)
    print(f"ONNX Runtime {vmafdnn.ort_version()} from {vmafdnn.ort_library_path()}")
    for size in args.sizes.split(","):
        width, height = map(int, size.split("x"))
        for name, form in ((n, f) for n in args.models.split(",") for f in args.forms.split(",")):
            path = str(builtin.path(name)).replace(".onnx", f"_{form}.onnx")
            if not os.path.exists(path):
                continue
            with vmafdnn.Session(path, device=args.device, static_shapes="on",
                                 device_io="off") as copies, \
                    vmafdnn.Session(path, device=args.device, static_shapes="on",
                                    device_io="auto") as bound:
                frames = [feeds(copies, width, height, args.batch, seed) for seed in range(4)]
                ms_copies, out_copies = timed_runs(copies, frames, args.runs)
                ms_bound, out_bound = timed_runs(bound, frames, args.runs)
                # once more in turns, the best of the two rounds each: a shared machine
                ms_copies = min(ms_copies, timed_runs(copies, frames, args.runs)[0])
                ms_bound = min(ms_bound, timed_runs(bound, frames, args.runs)[0])
                runs = bound.static_runs
                diff = max(float(np.max(np.abs(out_bound[k] - out_copies[k])))
                           for k in out_copies)
                got = (f"device_io {runs.device_io}/{runs.fixed} runs, captured "
                       f"{runs.captured}" + (f" ({runs.device_io_reason})"
                                             if runs.device_io_reason else ""))
                print(f"{size} N={args.batch} {bound.attached_ep} {name}_{form}: copies "
                      f"{ms_copies:.3f} ms, bound {ms_bound:.3f} ms per Run, "
                      f"{ms_copies / ms_bound:.2f}x; {got}; max |d| {diff:.2g}")


if __name__ == "__main__":
    main()
