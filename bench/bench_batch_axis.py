"""Frames per Run along the batch axis: is feeding B frames to one ORT Run faster than B Runs?

    python bench/bench_batch_axis.py [--devices cpu,cuda] [--size 1920x1080] [--batches 1,2,4,8,16]
                                     [--threads 1] [--seconds 2] [--rounds 3] [--context]

Issue 12 asks for B frames per Run for models that declare a symbolic batch, "when that is
faster (it is on GPUs; measure on CPU)". No built-in declares one (their row-strip Loops are laid
out for one frame), so this generates three small models that do, in a temporary folder:

  * cnn_nr: a no-reference CNN of the kind users bring (3x3 convolutions 1->8->16->16 with
    ReLU, the last two with stride 2, global average pool, a linear layer): [N,1,H,W] -> [N,1];
  * psnr_b: full-reference PSNR on [0,1] planes: [N,1,H,W] x 2 -> [N];
  * ssim_b: full-reference SSIM, 11x11 Gaussian (sigma 1.5) as two separable depthwise
    convolutions over the five stacked maps, valid region: [N,1,H,W] x 2 -> [N].

Session level: for each device, model and B, one vmafdnn.Session runs B frames (random fp32
planes, a fresh set per Run so nothing stays cached) per Run for about --seconds after a warm-up
Run; the best of --rounds is kept, as ms per frame, with the ratio of B=1's time to B's (above
1: batching is faster). Outputs of every B are checked against B=1's (max |d| printed).

--context also scores a synthetic 8-bit clip with vmafdnn.score() for each B through the
context's `batch` setting (frames per Run for the models that can take them), same figures,
and how many frames each model scored in batched Runs (models[].batching: a worker checks its
first batched Run against one Run per frame): what a user of score() or the CLI gets.

A GPU run needs ONNX Runtime's GPU build (VMAFDNN_ORT_LIBRARY or onnxruntime-gpu) and CUDA;
devices that do not bind are reported and skipped.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import vmafdnn

OPSET = 18


def _graph(name, nodes, inputs, outputs, inits, doc):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    graph.doc_string = doc
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="bench_batch_axis")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _image(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 1, "H", "W"])


def cnn_nr():
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    x = "distorted"
    for i, (cin, cout, stride) in enumerate([(1, 8, 1), (8, 16, 2), (16, 16, 2)]):
        w = const(f"w{i}", rng.normal(0, (2.0 / (9 * cin)) ** 0.5, (cout, cin, 3, 3)))
        b = const(f"b{i}", np.zeros(cout))
        nodes.append(helper.make_node("Conv", [x, w, b], [f"c{i}"], pads=[1, 1, 1, 1],
                                      strides=[stride, stride]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", const("fw", rng.normal(0, 0.25, (16, 1))),
                                           const("fb", [0.5])], ["cnn_nr"]))
    out = helper.make_tensor_value_info("cnn_nr", TensorProto.FLOAT, ["N", 1])
    return _graph("cnn_nr", nodes, [_image("distorted")], [out], inits,
                  "A small no-reference CNN with a symbolic batch (bench only).")


def psnr_b():
    inits = [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes"),
             numpy_helper.from_array(np.array(1e-20, np.float32), "floor"),
             numpy_helper.from_array(np.array(-10.0 / np.log(10.0), np.float32), "k")]
    nodes = [helper.make_node("Sub", ["reference", "distorted"], ["e"]),
             helper.make_node("Mul", ["e", "e"], ["e2"]),
             helper.make_node("ReduceMean", ["e2", "axes"], ["mse"], keepdims=0),
             helper.make_node("Max", ["mse", "floor"], ["mse_f"]),
             helper.make_node("Log", ["mse_f"], ["ln"]),
             helper.make_node("Mul", ["ln", "k"], ["psnr_b"])]
    out = helper.make_tensor_value_info("psnr_b", TensorProto.FLOAT, ["N"])
    return _graph("psnr_b", nodes, [_image("reference"), _image("distorted")], [out], inits,
                  "PSNR with a symbolic batch (bench only).")


def ssim_b():
    radius, sigma = 5, 1.5
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * t * t / sigma ** 2)
    w /= w.sum()
    taps = 2 * radius + 1
    c1, c2 = (0.01) ** 2, (0.03) ** 2
    inits = [numpy_helper.from_array(np.tile(w.reshape(1, 1, taps, 1), (5, 1, 1, 1))
                                     .astype(np.float32), "wv"),
             numpy_helper.from_array(np.tile(w.reshape(1, 1, 1, taps), (5, 1, 1, 1))
                                     .astype(np.float32), "wh"),
             numpy_helper.from_array(np.array(c1, np.float32), "c1"),
             numpy_helper.from_array(np.array(c2, np.float32), "c2"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes")]
    n = helper.make_node
    nodes = [n("Mul", ["reference", "reference"], ["xx"]),
             n("Mul", ["distorted", "distorted"], ["yy"]),
             n("Mul", ["reference", "distorted"], ["xy"]),
             n("Concat", ["reference", "distorted", "xx", "yy", "xy"], ["stack"], axis=1),
             n("Conv", ["stack", "wv"], ["fv"], group=5), n("Conv", ["fv", "wh"], ["f"], group=5),
             n("Split", ["f"], ["mx", "my", "sxx", "syy", "sxy"], axis=1, num_outputs=5)]
    nodes += [n("Mul", ["mx", "my"], ["mxy"]), n("Mul", ["mx", "mx"], ["mx2"]),
              n("Mul", ["my", "my"], ["my2"]), n("Sub", ["sxx", "mx2"], ["vx"]),
              n("Sub", ["syy", "my2"], ["vy"]), n("Sub", ["sxy", "mxy"], ["cxy"]),
              n("Mul", ["mxy", "two"], ["a1_"]), n("Add", ["a1_", "c1"], ["a1"]),
              n("Mul", ["cxy", "two"], ["a2_"]), n("Add", ["a2_", "c2"], ["a2"]),
              n("Add", ["mx2", "my2"], ["b1_"]), n("Add", ["b1_", "c1"], ["b1"]),
              n("Add", ["vx", "vy"], ["b2_"]), n("Add", ["b2_", "c2"], ["b2"]),
              n("Mul", ["a1", "a2"], ["num"]), n("Mul", ["b1", "b2"], ["den"]),
              n("Div", ["num", "den"], ["map"]),
              n("ReduceMean", ["map", "axes"], ["ssim_b"], keepdims=0)]
    out = helper.make_tensor_value_info("ssim_b", TensorProto.FLOAT, ["N"])
    return _graph("ssim_b", nodes, [_image("reference"), _image("distorted")], [out], inits,
                  "SSIM with a symbolic batch (bench only).")


MODELS = {"cnn_nr": cnn_nr, "psnr_b": psnr_b, "ssim_b": ssim_b}


def write_models(folder):
    paths = {}
    for name, build in MODELS.items():
        paths[name] = os.path.join(folder, name + ".onnx")
        onnx.save(build(), paths[name])
        with open(os.path.join(folder, name + ".json"), "w") as f:
            f.write('{"native_resolution": true}\n')  # symbolic H, W: the frame's size
    return paths


def session_row(path, device, batch, width, height, threads, seconds, rounds, reference):
    s = vmafdnn.Session(path, device=device, threads=threads)
    try:
        rng = np.random.default_rng(batch)
        names = [i.name for i in s.inputs]
        pool = [{n: rng.random((batch, 1, height, width), dtype=np.float32) for n in names}
                for _ in range(3)]
        first = s.run(pool[0])  # warm-up: CUDA kernels, cuDNN's algorithm search
        values = np.concatenate([np.asarray(v).reshape(batch, -1)[:, 0] for v in first.values()])
        best = float("inf")
        for _ in range(rounds):
            runs, t0 = 0, time.perf_counter()
            while True:
                s.run(pool[runs % len(pool)])
                runs += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= seconds and runs >= 3:
                    break
            best = min(best, elapsed / (runs * batch))
        where = f"{s.attached_ep} {s.ep_nodes[0]}/{s.ep_nodes[1]}" if s.ep_nodes else s.attached_ep
        return best, where, values, pool[0]
    finally:
        s.close()


def check_against_b1(path, device, threads, feeds, values):
    """The batched outputs of `feeds` frame by frame against B=1 runs of the same planes."""
    s = vmafdnn.Session(path, device=device, threads=threads)
    try:
        batch = next(iter(feeds.values())).shape[0]
        worst = 0.0
        for b in range(batch):
            one = s.run({n: np.ascontiguousarray(v[b:b + 1]) for n, v in feeds.items()})
            got = np.concatenate([np.asarray(v).reshape(-1) for v in one.values()])
            worst = max(worst, float(np.max(np.abs(got - values[b::batch][:got.size]))))
        return worst
    finally:
        s.close()


def synthetic_clip(width, height, frames):
    rng = np.random.default_rng(3)
    refs = [rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(frames)]
    dists = [np.clip(r.astype(np.int16) + rng.integers(-6, 7, r.shape), 0, 255).astype(np.uint8)
             for r in refs]
    return refs, dists


def context_row(models, device, batch, refs, dists, threads, rounds):
    """Seconds per frame of score() (best of rounds after a warm-up call: contexts, sessions
    and CUDA start-up included, as a user sees them) and {metric: per-frame values}."""
    best, scores = float("inf"), None
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        result = vmafdnn.score(refs, dists, models=models, device=device, threads=threads,
                               batch=batch)
        elapsed = time.perf_counter() - t0
        if r:
            best = min(best, elapsed / len(refs))
        scores = {k: np.array([f["metrics"][k] for f in result["frames"]])
                  for k in result["frames"][0]["metrics"]}
    batched = ", ".join(
        f"{os.path.basename(m['path'])} {m['batching']['batched_frames']}/{len(refs)} batched"
        + (" (refused)" if m["batching"]["refused"] else "") for m in result["models"])
    return best, scores, batched


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--batches", default="1,2,4,8,16")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--context", action="store_true")
    ap.add_argument("--frames", type=int, default=48, help="clip length for --context")
    args = ap.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    batches = [int(b) for b in args.batches.split(",")]
    print(f"vmafdnn {vmafdnn.__version__}, {args.size}, threads {args.threads}, best of "
          f"{args.rounds} x {args.seconds:g} s", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        paths = write_models(folder)
        for device in args.devices.split(","):
            for name in args.models.split(","):
                base = None
                for batch in batches:
                    try:
                        sec, where, values, feeds = session_row(
                            paths[name], device, batch, width, height, args.threads,
                            args.seconds, args.rounds, None)
                    except vmafdnn.VmafDnnError as e:
                        print(f"{device:5s} {name:7s} B={batch:<3d} failed: {e}", flush=True)
                        continue
                    base = base or sec
                    worst = check_against_b1(paths[name], device, args.threads, feeds, values) \
                        if batch > 1 else 0.0
                    print(f"{device:5s} {name:7s} B={batch:<3d} {sec * 1e3:8.2f} ms/frame "
                          f"{1 / sec:8.1f} fps  x{base / sec:5.2f} vs B=1   max|d| vs B=1 "
                          f"{worst:.1e}  [{where}]", flush=True)
            if args.context:
                refs, dists = synthetic_clip(width, height, args.frames)
                models = [paths[name] for name in MODELS]
                base, scores0 = None, None
                for batch in batches:
                    sec, scores, batched = context_row(models, device, batch, refs, dists,
                                                       args.threads, args.rounds)
                    base = base or sec
                    scores0 = scores0 or scores
                    worst = max(float(np.max(np.abs(scores[k] - scores0[k]))) for k in scores0)
                    print(f"{device:5s} score() {'+'.join(MODELS)} batch={batch:<3d} "
                          f"{sec * 1e3:8.2f} ms/frame {1 / sec:7.1f} fps  x{base / sec:5.2f} "
                          f"vs batch=1   max|d| {worst:.1e}   [{batched}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
