"""Built-in models on each execution provider: where they run, how fast, and how far from the CPU EP.

    python bench/bench_devices.py [--devices cpu,cuda,auto] [--sizes 1920x1080,3840x2160]
                                  [--frames 30] [--sets psnr_y+ssim_y,vmaf] [--threads 1,all]
                                  [--rounds 2] [--fp16] [--bitdepth 8]

For every device, model set, size and thread count, `vmafdnn.score()` scores the same synthetic
clip (moving textures and a distorted copy: blur, noise, blocking; made in memory by numpy, so no
decoder is timed) and prints

  * the EP each model attached and how many of its nodes that EP runs (the rest fall back to ORT's
    CPU EP inside the same session), with the fallback reason when it is not the device asked for;
  * fps over the whole call (context open included) and in the steady state (from the first
    frame's progress callback to the end of the call, which waits for the frames in flight), the
    best of --rounds after one warm-up call
    (CUDA initialisation and cuDNN's algorithm search are not counted);
  * the largest per-frame difference of every metric from the CPU EP's fp32 values (the CPU
    device must be in --devices; it is measured first) and with --fp16 the same for fp16_io;
  * the ratio of each device's steady fps to the CPU EP's at the same thread count.

"all" threads is os.cpu_count(). A GPU run needs the GPU build of ONNX Runtime
(VMAFDNN_ORT_LIBRARY or the onnxruntime-gpu package) and CUDA: on the loader path, or the
nvidia-* wheels of `pip install onnxruntime-gpu[cuda,cudnn]`, which the package loads itself.
"""
import argparse
import os
import sys
import time

import numpy as np

import vmafdnn


def synthetic_clip(width, height, frames, bitdepth, seed=1):
    """(reference, distorted) lists of 2-D planes: panning sinusoids over a fixed random texture
    (so motion and detail are real), the distorted side blurred, noised and 8x8-blocked."""
    rng = np.random.default_rng(seed)
    top = (1 << bitdepth) - 1
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    texture = rng.random((height // 4 + 1, width // 4 + 1), dtype=np.float32)
    texture = np.kron(texture, np.ones((4, 4), np.float32))[:height, :width]
    refs, dists = [], []
    for t in range(frames):
        base = (0.35 + 0.25 * np.sin((x + 3 * t) / 37.0) * np.cos((y - 2 * t) / 23.0)
                + 0.25 * texture + 0.1 * np.sin((x * y) / 5e4 + t / 7.0))
        base = np.clip(base, 0, 1)
        blur = (base + np.roll(base, 1, 0) + np.roll(base, 1, 1) + np.roll(base, (1, 1), (0, 1))) / 4
        blocks = blur[: height // 8 * 8, : width // 8 * 8].reshape(height // 8, 8, width // 8, 8)
        blocked = blur.copy()
        blocked[: height // 8 * 8, : width // 8 * 8] = (
            0.7 * blocks + 0.3 * blocks.mean(axis=(1, 3), keepdims=True)).reshape(
                height // 8 * 8, width // 8 * 8)
        noisy = blocked + rng.normal(0, 0.01 + 0.002 * (t % 5), blocked.shape).astype(np.float32)
        refs.append(np.rint(base * top).astype(dtype))
        dists.append(np.rint(np.clip(noisy, 0, 1) * top).astype(dtype))
    return refs, dists


def run_once(refs, dists, models, device, threads, fp16, bitdepth, static_shapes="auto",
             batch=0, device_io="auto", kept=False):
    """kept: the lists themselves go to score(), whose library keeps a sequence's frames
    (vmaf_dnn_read_pictures_kept) instead of copying each frame in flight, as it does for the
    iterators passed otherwise."""
    stamps = []
    t0 = time.perf_counter()
    feed = (lambda frames: frames) if kept else iter
    report = vmafdnn.score(None if refs is None else feed(refs), feed(dists), models,
                           device=device, threads=threads, static_shapes=static_shapes,
                           device_io=device_io,
                           fp16_io=fp16, bitdepth=bitdepth if bitdepth > 8 else None, batch=batch,
                           progress=lambda done, total: stamps.append(time.perf_counter()))
    end = time.perf_counter()
    # Steady: from the first frame read to the end of the call, which waits for the frames
    # still in flight (a batch's), so frames that are read but not yet scored are not counted
    # as done.
    steady = (len(dists) - 1) / (end - stamps[0]) if len(dists) > 1 else float("nan")
    return report, len(dists) / (end - t0), steady


def run_in_context(refs, dists, models, device, threads, bitdepth, buffers,
                   static_shapes="auto"):
    """The frames read with Context.read_pictures(keep=True) as a reader hands them over: from
    arrays of their own, or (buffers) read into the context's picture buffers, which the models
    feed from where they lie where the buffers are the device's pinned memory (no copy on the
    host). The copy into the buffers is the reader's read, not timed. refs None: no reference.
    (report, steady fps: the first frame's read to the end of flush)."""
    with vmafdnn.Context(device=device, threads=threads, static_shapes=static_shapes) as ctx:
        for model in models:
            ctx.use_model(model)

        def place(plane):
            if not buffers:
                return plane.copy()
            out = ctx.picture_buffer(plane.nbytes).view(plane.dtype).reshape(plane.shape)
            out[...] = plane
            return out

        pairs = [(None if refs is None else place(refs[i]), place(d))
                 for i, d in enumerate(dists)]
        bpc = bitdepth if bitdepth > 8 else None
        ctx.read_pictures(*pairs[0], 0, bitdepth=bpc, keep=True)
        start = time.perf_counter()
        for i, (ref, dist) in enumerate(pairs[1:], 1):
            ctx.read_pictures(ref, dist, i, bitdepth=bpc, keep=True)
        ctx.flush()
        steady = (len(pairs) - 1) / (time.perf_counter() - start)
        return ctx.report(), steady


def per_frame(report):
    return {k: np.array([f["metrics"][k] for f in report["frames"]])
            for k in report["frames"][0]["metrics"]}


def describe_models(report):
    for m in report["models"]:
        nodes = m.get("ep_nodes")
        share = f" ({nodes[0]}/{nodes[1]} nodes)" if nodes else ""
        reason = m.get("fallback_reason") or ""
        more = len(reason.splitlines()) - 1
        reason = f" -- {reason.splitlines()[0]}" + (f" (+{more} lines)" if more > 0 else "") \
            if reason else ""
        print(f"      {os.path.basename(m['path'])}: {m['attached_ep']}{share}{reason}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--sizes", default="1920x1080,3840x2160")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--sets", default="psnr_y+ssim_y,vmaf",
                    help="comma-separated model sets, models joined by +")
    ap.add_argument("--threads", default="1,all")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fp16", action="store_true", help="also fp16_io on every non-CPU device")
    ap.add_argument("--bitdepth", type=int, default=8)
    args = ap.parse_args(argv)

    print(f"ONNX Runtime {vmafdnn.ort_version()} from {vmafdnn.ort_library_path()}")
    devices = args.devices.split(",")
    threads_list = [os.cpu_count() if t == "all" else int(t) for t in args.threads.split(",")]
    for size in args.sizes.split(","):
        width, height = map(int, size.split("x"))
        refs, dists = synthetic_clip(width, height, args.frames, args.bitdepth)
        for model_set in args.sets.split(","):
            models = model_set.split("+")
            for threads in threads_list:
                print(f"{size} {args.bitdepth}-bit, {args.frames} frames, {model_set}, "
                      f"threads={threads}")
                cpu = None
                for device in devices:
                    for fp16 in ([False, True] if args.fp16 and device != "cpu" else [False]):
                        label = device + (" fp16_io" if fp16 else "")
                        try:
                            run_once(refs[:3], dists[:3], models, device, threads, fp16,
                                     args.bitdepth)
                            runs = [run_once(refs, dists, models, device, threads, fp16,
                                             args.bitdepth) for _ in range(args.rounds)]
                        except vmafdnn.DnnError as e:
                            print(f"  {label}: failed: {e}")
                            continue
                        report = runs[0][0]
                        wall = max(r[1] for r in runs)
                        steady = max(r[2] for r in runs)
                        line = f"  {label:14s} {wall:8.2f} fps whole call, {steady:8.2f} steady"
                        values = per_frame(report)
                        if device == "cpu" and not fp16:
                            cpu = (values, steady)
                        elif cpu is not None:
                            line += f", {steady / cpu[1]:6.2f}x the CPU EP"
                            diffs = {k: float(np.max(np.abs(v - cpu[0][k])))
                                     for k, v in values.items() if k in cpu[0]}
                            line += "; max |d| " + ", ".join(f"{k} {d:.2g}"
                                                             for k, d in sorted(diffs.items()))
                        pooled = {k: v.mean() for k, v in values.items()}
                        print(line)
                        print("      means: " + ", ".join(f"{k} {v:.6g}"
                                                          for k, v in sorted(pooled.items())))
                        describe_models(report)
                sys.stdout.flush()


if __name__ == "__main__":
    main()
