"""Where the built-ins' accelerator forms run on ONNX Runtime's WebGPU plugin EP, and whether
they agree with ORT's CPU EP.

    ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 \\
    ~/.cache/vmafdnn/envs/webgpu-plugin/bin/python bench/webgpu_nodes.py \\
        [--size 320x180] [--batch 1] [--models psnr_y,ssim_y,...] [--nodes] [--json] [--runs R]
    ~/.cache/vmafdnn/envs/openvino/bin/python bench/webgpu_nodes.py --ep openvino ...

Runs in the `webgpu-plugin` environment of tools/make_ort_envs.sh (onnxruntime 1.32.0 +
onnxruntime-ep-webgpu 0.4.0) through ORT's own Python API, not through vmafdnn's C library:
the library binds the WebGPU step only to an EP device on GPU hardware, and without a GPU the
plugin offers its device on the CPU (with ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1), which Dawn
then serves with whatever Vulkan adapter it finds (Mesa's lavapipe on a machine without a GPU).

Each `<name>_accel.onnx` is opened the way the library opens an accelerator form on a GPU
EP: its symbolic sizes fixed (free dimension overrides N, H, W: static_shapes), ORT's default
optimisation, the EP-to-node assignment recorded (session.record_ep_graph_assignment_info).
It prints, per form, the nodes WebGPU took of all nodes and the op types of those that fell
back to the CPU EP, then runs the same synthetic frames (8-bit content; the UINT16 forms get
the samples, the FLOAT forms sample/255) on both sessions and prints the largest |difference|
of each output. The exit status is 0 when every form ran (it says nothing about the counts),
NO_ADAPTER (77) when the plugin offers no device or Dawn finds no adapter it accepts (the reason
on stderr), 1 on any other error.
--ep openvino does the same with the compiled-in OpenVINO EP on its CPU device (the `openvino`
environment, onnxruntime-openvino), the check that a form changed for WebGPU still runs whole
there.
"""
import argparse
import collections
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort

NO_ADAPTER = 77
DEFAULT_MODELS = ("psnr_y,psnr_cb,psnr,ssim_y,float_ssim,sharpness_nr,vmaf_features,"
                  "vmaf_features_neg")
ELEM = {"tensor(float)": np.float32, "tensor(uint16)": np.uint16}


def models_dir(explicit):
    if explicit:
        return explicit
    from vmafdnn import models
    return os.path.dirname(str(models.path("psnr_y")))


def webgpu_device():
    import onnxruntime_ep_webgpu as webgpu
    ort.register_execution_provider_library("webgpu", webgpu.get_library_path())
    for d in ort.get_ep_devices():
        if d.ep_name == webgpu.get_ep_name():
            return d
    return None


def frames(width, height, batch, seed=1):
    """(reference, distorted, previous reference) 8-bit luma, [batch,1,H,W] uint16 each."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = 128 + 60 * np.sin(x / 7.0) * np.cos(y / 11.0)
    ref = np.stack([base + 4 * k for k in range(batch)])
    dis = ref + rng.normal(0, 6, ref.shape)
    prev = base - 3 + rng.normal(0, 2, base.shape)
    clip = lambda a: np.clip(np.rint(a), 0, 255).astype(np.uint16)
    return clip(ref)[:, None], clip(dis)[:, None], clip(prev)[None, None]


def feeds_for(sess, width, height, batch):
    ref, dis, prev = frames(width, height, batch)
    planes = {"reference": ref, "distorted": dis, "reference_prev": prev}
    values = {"bpc": np.array([8.0], np.float32), "device_type": np.array([1.0], np.float32)}
    feeds = {}
    for i in sess.get_inputs():
        dtype = ELEM[i.type]
        if i.name in planes:
            a = planes[i.name]
            feeds[i.name] = a.astype(np.float32) / 255.0 if dtype == np.float32 else a
        else:
            feeds[i.name] = values[i.name]
    return feeds


def session(path, width, height, batch, device=None, openvino=False):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for name, value in (("N", batch), ("H", height), ("W", width)):
        so.add_free_dimension_override_by_name(name, value)
    if device is not None:
        so.add_provider_for_devices([device], {})
        return ort.InferenceSession(path, sess_options=so)
    if openvino:
        return ort.InferenceSession(path, sess_options=so,
                                    providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"],
                                    provider_options=[{"device_type": "CPU"}, {}])
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def assignment(sess):
    """{ep name: [op types]} of the session's nodes."""
    by_ep = collections.defaultdict(list)
    for sub in sess.get_provider_graph_assignment_info():
        by_ep[sub.ep_name].extend(n.op_type for n in sub.get_nodes())
    return by_ep


def fallback_nodes(sess):
    """(name, op type) of the nodes left to the CPU EP."""
    out = []
    for sub in sess.get_provider_graph_assignment_info():
        if sub.ep_name == "CPUExecutionProvider":
            out.extend((n.name, n.op_type) for n in sub.get_nodes())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="320x180")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--models-dir", default=None)
    ap.add_argument("--nodes", action="store_true", help="list every node that fell back")
    ap.add_argument("--json", action="store_true", help="one JSON object per form on stdout")
    ap.add_argument("--ep", choices=("webgpu", "openvino"), default="webgpu")
    ap.add_argument("--runs", type=int, default=0,
                    help="also time this many Runs on each EP after the first two (median ms "
                         "per frame, and the EP's speed over the CPU EP's): on a GPU")
    args = ap.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    directory = models_dir(args.models_dir)

    openvino = args.ep == "openvino"
    ep_name = "OpenVINOExecutionProvider" if openvino else "WebGpuExecutionProvider"
    device = None if openvino else webgpu_device()
    if openvino:
        print(f"ONNX Runtime {ort.__version__}; OpenVINO's CPU device", file=sys.stderr)
    elif device is None:
        print("the WebGPU plugin offers no EP device (no GPU; with no GPU hardware device it "
              "offers one only when ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1)", file=sys.stderr)
        sys.exit(NO_ADAPTER)
    else:
        print(f"ONNX Runtime {ort.__version__}; WebGpuExecutionProvider on "
              f"{device.device.type.name} (vendor 0x{device.device.vendor_id:x}) "
              f"{dict(device.ep_metadata)}", file=sys.stderr)
    for name in args.models.split(","):
        path = os.path.join(directory, f"{name}_accel.onnx")
        cpu = session(path, width, height, args.batch)
        feeds = feeds_for(cpu, width, height, args.batch)
        t0 = time.monotonic()
        try:
            gpu = session(path, width, height, args.batch, device, openvino)
        except Exception as e:  # Dawn's word when it accepts no Vulkan/Metal/D3D12 adapter
            text = str(e)
            if "Failed to get a WebGPU adapter" not in text:
                raise
            print(text[text.index("Failed to get a WebGPU adapter"):].strip(), file=sys.stderr)
            sys.exit(NO_ADAPTER)
        opened = time.monotonic() - t0
        by_ep = assignment(gpu)
        total = sum(len(v) for v in by_ep.values())
        on_gpu = len(by_ep.get(ep_name, []))
        want = cpu.run(None, feeds)
        t0 = time.monotonic()
        got = gpu.run(None, feeds)
        first = time.monotonic() - t0
        t0 = time.monotonic()
        gpu.run(None, feeds)
        second = time.monotonic() - t0
        timing = {}
        if args.runs > 0:
            for label, sess in (("ep", gpu), ("cpu", cpu)):
                times = []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    sess.run(None, feeds)
                    times.append(time.perf_counter() - t0)
                timing[label] = 1000 * float(np.median(times)) / args.batch
        names = [o.name for o in cpu.get_outputs()]
        diff = {n: float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64))))
                for n, g, w in zip(names, got, want)}
        cpu_ops = collections.Counter(by_ep.get("CPUExecutionProvider", []))
        row = {"model": name, "size": args.size, "batch": args.batch, "ep": ep_name,
               "on_ep": on_gpu,
               "total": total, "cpu_ops": dict(cpu_ops), "max_abs_diff": diff,
               "max_abs_cpu": {n: float(np.max(np.abs(w))) for n, w in zip(names, want)},
               "open_s": round(opened, 2), "run_s": [round(first, 3), round(second, 3)],
               "ms_per_frame": timing}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"{name:18s} {args.ep} {on_gpu:4d} of {total:4d} nodes; CPU EP: "
                  f"{dict(cpu_ops) or '-'}; max|d| "
                  + ", ".join(f"{n} {d:.3g}" for n, d in diff.items())
                  + f"; open {opened:.1f} s, run {first:.2f}/{second:.2f} s"
                  + (f"; median {timing['ep']:.2f} ms/frame vs CPU EP {timing['cpu']:.2f} "
                     f"({timing['cpu'] / timing['ep']:.2f}x)" if timing else ""), flush=True)
        if args.nodes:
            for node_name, op in fallback_nodes(gpu):
                print(f"    CPU EP: {op:14s} {node_name}")


if __name__ == "__main__":
    main()
