"""The built-ins' accelerator forms against today's forms, on each execution provider.

    python bench/bench_accel.py [--devices cpu,cuda] [--sizes 1920x1080,3840x2160]
                                [--frames 30] [--rounds 2] [--threads 1]
                                [--models psnr_y,ssim_y,float_ssim,sharpness_nr,vmaf_features]

For every device, size and built-in, `vmafdnn.score()` scores the same synthetic clip
(bench_devices.synthetic_clip: made in memory, so no decoder is timed) twice in turns:

  today  the model's own file (VMAFDNN_MODEL_FORMS=0: no form of it is chosen), the graph laid
         out for ORT's CPU EP (row-slab Loops, symbolic sizes);
  accel  its `<name>_accel.onnx` (tools/gen_builtin_models.py, gen_vmaf_models.py): Loop-free,
         whole-frame tensors; what the library picks on every EP but the CPU (sidecar "forms":
         {"*": ...}) once it is selected for that model.

With --together psnr_y,ssim_y, those models are also scored in one call (the issue's "psnr_y +
ssim_y" figure): today's forms against the library's own choice for the EP, fed the frames as
iterators (each frame in flight copied by the caller's thread) and as the lists themselves (kept:
vmaf_dnn_read_pictures_kept, no copy); then in a Context, frames kept, from arrays of their own
(context_kept) against frames read into the context's picture buffers (context_buffers:
Context.picture_buffer, the device's pinned memory where it has some, fed from where they lie).

With --batch B > 1 a fourth run, accel_batchB, scores B frames per ONNX Runtime Run with the
accelerator form (static shapes as the library's default for the EP: auto), the first batched
Run checked against one Run per frame as the library always does.

A samples_static run (where the model has a samples form, `<name>_samples.onnx`: the form the
library picks on CUDA) specialises the form taking the pictures' own samples and bpc: the clip is
8-bit, so its pictures go as UINT8 (a quarter of the bytes of float32 planes to copy to the
device), and samples16_static runs the same with VMAFDNN_UINT8=0 (UINT16, half of them).
vmaf_features' accelerator form takes samples itself: its accel_static goes as UINT8 and
accel16_static as UINT16.

A last run, library, scores the model by its own file with its forms on (VMAFDNN_MODEL_FORMS
unset): what the library picks for the EP by itself (the fused kernels' form on ORT's CPU EP,
and on CUDA where its GPU kernels are ready; the form is named in the nodes line).

A third run, accel_static, specialises the accelerator form to the clip's size (static_shapes
on: every shape computation folds away when the session is created; the library's default on
every EP but ORT's CPU EP). It prints, for each, the EP it attached and how many of its nodes that EP runs after ORT's
basic optimisation (the rest falls back to ORT's CPU EP with copies around them), the best
steady fps of --rounds rounds (first frame's progress callback to the end of the call, which waits
for the frames in flight; after a 3-frame warm-up
call: CUDA initialisation and cuDNN's search are not counted), the ratio accel / today, and the
largest per-frame difference of every output between the two. On ORT's CPU EP the accelerator
form is not meant to win (the CPU form of the VMAF features is the library's fused kernels);
the figures that matter come from a GPU (`--devices cuda`, the GPU build of ONNX Runtime).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_devices import per_frame, run_in_context, run_once, synthetic_clip  # noqa: E402

import vmafdnn  # noqa: E402
from vmafdnn import models as builtin  # noqa: E402


def contenders(name, batch):
    """(label, model path, VMAFDNN_MODEL_FORMS value, static_shapes, batch) of today's form and
    the accelerator one as opened (symbolic sizes), the accelerator form specialised to the
    clip's size (what the library does on every EP but the CPU's: static_shapes auto), and with
    batch > 1 the accelerator form scoring that many frames per Run. A label ending in
    "16_static" runs with VMAFDNN_UINT8=0."""
    own = str(builtin.path(name))
    accel = os.path.join(os.path.dirname(own), f"{name}_accel.onnx")
    runs = [("today", own, "0", "off", 0), ("accel", accel, "1", "off", 0),
            ("accel_static", accel, "1", "on", 0)]
    samples = os.path.join(os.path.dirname(own), f"{name}_samples.onnx")
    if os.path.exists(samples):  # CUDA's form: samples and bpc, specialised
        runs += [("samples_static", samples, "1", "on", 0),
                 ("samples16_static", samples, "1", "on", 0)]
    elif name.startswith("vmaf_features"):  # its accelerator form takes samples
        runs.append(("accel16_static", accel, "1", "on", 0))
    if batch > 1:
        runs.append((f"accel_batch{batch}", accel, "1", "auto", batch))
    # what the library picks for the EP by itself (its sidecar's choices: the fused kernels'
    # form on the CPU EP, and on CUDA where its GPU kernels are ready), static shapes auto
    runs.append(("library", own, "1", "auto", 0))
    return runs


def nodes_text(report):
    parts = []
    for m in report["models"]:
        nodes = m.get("ep_nodes")
        share = f" {nodes[0]}/{nodes[1]} nodes" if nodes else ""
        runs = m.get("static_runs") or {}
        bound = (f", device I/O {runs['device_io']} (pinned {runs.get('pinned', 0)}, captured "
                 f"{runs['captured']})" if runs.get("device_io") else "")
        if runs.get("uint8"):
            bound += f", UINT8 on {runs['uint8']}"
        if runs.get("pictures"):
            bound += f", pictures from buffers on {runs['pictures']}"
        form = f" as {os.path.basename(m['form'])}" if m.get("form") else ""
        parts.append(f"{os.path.basename(m['path'])}{form} on {m['attached_ep']}{share}{bound}")
    return "; ".join(parts)


def print_diffs(values):
    """Each label's models and its largest per-frame difference from today's."""
    for label in values:
        diffs = {k: float(np.max(np.abs(v - values["today"][0][k])))
                 for k, v in values[label][0].items() if k in values["today"][0]}
        print(f"    {label}: {values[label][1]}; max |d| from today: " +
              ", ".join(f"{k} {d:.2g}" for k, d in sorted(diffs.items())))


def together(args, size, device, refs, dists):
    """The --together models in one score() call (one decode, the frames' uploads per model):
    today's forms (VMAFDNN_MODEL_FORMS=0, static shapes off) against the library's own choice
    for the EP (its sidecar's form, static shapes and device I/O auto), best of --rounds."""
    names = args.together.split(",")
    paths = [str(builtin.path(n)) for n in names]
    ref_frames = None if names == ["sharpness_nr"] else refs
    best, values = {}, {}
    for _ in range(args.rounds):
        for label, forms, static, kept in (("today", "0", "off", False),
                                           ("library", "1", "auto", False),
                                           ("library_kept", "1", "auto", True)):
            os.environ["VMAFDNN_MODEL_FORMS"] = forms
            os.environ.pop("VMAFDNN_UINT8", None)
            try:
                if label not in best:
                    run_once(None if ref_frames is None else refs[:3], dists[:3], paths, device,
                             args.threads, False, 8, static, 0)
                report, _, steady = run_once(ref_frames, dists, paths, device, args.threads,
                                             False, 8, static, 0, kept=kept)
            except vmafdnn.DnnError as e:
                print(f"{size} {device} {'+'.join(names)} {label}: failed: {e}")
                return
            best[label] = max(steady, best.get(label, 0.0))
            values[label] = (per_frame(report), nodes_text(report))
        os.environ["VMAFDNN_MODEL_FORMS"] = "1"
        for label, buffers in (("context_kept", False), ("context_buffers", True)):
            try:
                report, steady = run_in_context(ref_frames, dists, paths, device,
                                                args.threads, 8, buffers)
            except vmafdnn.DnnError as e:
                print(f"{size} {device} {'+'.join(names)} {label}: failed: {e}")
                return
            best[label] = max(steady, best.get(label, 0.0))
            values[label] = (per_frame(report), nodes_text(report))
    print(f"{size} {device} {'+'.join(names)} in one call: today {best['today']:.2f} fps; "
          f"library {best['library']:.2f} fps, {best['library'] / best['today']:.2f}x; "
          f"library with the frames kept (no copy per frame in flight) "
          f"{best['library_kept']:.2f} fps, {best['library_kept'] / best['library']:.2f}x")
    print(f"{size} {device} {'+'.join(names)} in a context, frames kept: from arrays "
          f"{best['context_kept']:.2f} fps; read into picture buffers "
          f"{best['context_buffers']:.2f} fps, "
          f"{best['context_buffers'] / best['context_kept']:.2f}x")
    print_diffs(values)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--sizes", default="1920x1080,3840x2160")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="psnr_y,ssim_y,float_ssim,sharpness_nr,vmaf_features")
    ap.add_argument("--batch", type=int, default=0,
                    help="also the accelerator form with this many frames per Run")
    ap.add_argument("--together", default="",
                    help="also score these models (comma-separated) in one call: today's forms "
                         "against what the library picks for the EP (the issue's psnr_y + "
                         "ssim_y figure)")
    ap.add_argument("--unique", type=int, default=0,
                    help="make only this many frames and repeat them up to --frames (making a "
                         "2160p frame takes longer than a GPU scores it)")
    args = ap.parse_args(argv)

    print(f"ONNX Runtime {vmafdnn.ort_version()} from {vmafdnn.ort_library_path()}")
    saved = os.environ.get("VMAFDNN_MODEL_FORMS")
    saved_uint8 = os.environ.pop("VMAFDNN_UINT8", None)
    try:
        for size in args.sizes.split(","):
            width, height = map(int, size.split("x"))
            made = args.unique if 0 < args.unique < args.frames else args.frames
            refs, dists = synthetic_clip(width, height, made, 8)
            refs = [refs[i % made] for i in range(args.frames)]
            dists = [dists[i % made] for i in range(args.frames)]
            for device in args.devices.split(","):
                for name in args.models.split(","):
                    nr = name == "sharpness_nr"
                    ref_frames = None if nr else refs
                    best, values = {}, {}
                    for _ in range(args.rounds):
                        for label, path, forms, static, batch in contenders(name, args.batch):
                            os.environ["VMAFDNN_MODEL_FORMS"] = forms
                            os.environ["VMAFDNN_UINT8"] = "0" if label.endswith("16_static") \
                                else "1"
                            try:
                                if label not in best:  # warm-up call
                                    run_once(None if nr else refs[:3], dists[:3], [path],
                                             device, args.threads, False, 8, static, batch)
                                report, _, steady = run_once(ref_frames, dists, [path], device,
                                                             args.threads, False, 8, static,
                                                             batch)
                            except vmafdnn.DnnError as e:
                                print(f"{size} {device} {name} {label}: failed: {e}")
                                best[label] = float("nan")
                                continue
                            if steady > best.get(label, 0.0) or label not in values:
                                best[label] = max(steady, best.get(label, 0.0))
                            values[label] = (per_frame(report), nodes_text(report))
                    if "today" not in values or len(values) < 2:
                        continue
                    print(f"{size} {device} {name}: today {best['today']:.2f} fps; " + "; ".join(
                        f"{label} {best[label]:.2f} fps, {best[label] / best['today']:.2f}x"
                        for label in values if label != "today"))
                    print_diffs(values)
                if args.together:
                    together(args, size, device, refs, dists)
    finally:
        if saved is None:
            os.environ.pop("VMAFDNN_MODEL_FORMS", None)
        else:
            os.environ["VMAFDNN_MODEL_FORMS"] = saved
        os.environ.pop("VMAFDNN_UINT8", None)
        if saved_uint8 is not None:
            os.environ["VMAFDNN_UINT8"] = saved_uint8


if __name__ == "__main__":
    main()
