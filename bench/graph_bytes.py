"""What an accelerator form moves through memory per frame: the floor its bandwidth sets.

    python bench/graph_bytes.py [--sizes 1920x1080,3840x2160] [--batch 1]
                                [--models psnr_y,ssim_y,vmaf_features] [--bandwidth 4.8]
                                [--top 0]

Each form (tools/gen_builtin_models.py, gen_vmaf_models.py) is specialised to the size as the
library specialises it on an accelerator (ORT's free-dimension overrides, ORT_ENABLE_BASIC,
saved), its shapes inferred, and every node's tensors summed: bytes written (its outputs) and
read (its inputs, constants excepted), per frame. On a GPU each node is at least one kernel
that reads its inputs from memory and writes its outputs back (ORT's CUDA EP fuses none of
these ops), so (read + written) / bandwidth is a floor on the time of a frame, whatever the
launches cost; Reshape, Squeeze and Unsqueeze are left out (ORT aliases their input). It
prints the floor and the fps it allows at --bandwidth TB/s (an H200's HBM3e peak: 4.8), and
the share of pure data movement (Concat, Split, Slice, Gather, Transpose, Pad, Expand).
--top N lists the N nodes that move most.
"""
import argparse
import collections
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gen_builtin_models  # noqa: E402
import gen_vmaf_models  # noqa: E402

ALIASED = {"Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten"}
MOVEMENT = {"Concat", "Split", "Slice", "Gather", "Transpose", "Pad", "Expand"}
ELEMENT_BYTES = {onnx.TensorProto.FLOAT: 4, onnx.TensorProto.UINT8: 1, onnx.TensorProto.INT8: 1,
                 onnx.TensorProto.UINT16: 2, onnx.TensorProto.INT16: 2,
                 onnx.TensorProto.INT32: 4, onnx.TensorProto.INT64: 8,
                 onnx.TensorProto.BOOL: 1, onnx.TensorProto.FLOAT16: 2,
                 onnx.TensorProto.DOUBLE: 8, onnx.TensorProto.UINT32: 4}


def form(name):
    """The form the library runs on CUDA: VMAF's accelerator form, the others' samples form."""
    if name.startswith("vmaf_features"):
        gain = 1.0 if name.endswith("_neg") else 100.0
        return gen_vmaf_models.build_features_accel(gain, name + gen_vmaf_models.ACCEL_SUFFIX)
    return gen_builtin_models.samples_form(gen_builtin_models.ACCEL_BUILDERS[name]())


def specialised(model, width, height, batch, folder):
    src, out = os.path.join(folder, "form.onnx"), os.path.join(folder, "optimised.onnx")
    onnx.save(model, src)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = out
    for dim, value in (("H", height), ("W", width), ("N", batch)):
        so.add_free_dimension_override_by_name(dim, value)
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    return shape_inference.infer_shapes(onnx.load(out), data_prop=True).graph


def traffic(graph):
    sizes = {}
    for v in list(graph.value_info) + list(graph.input) + list(graph.output):
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        sizes[v.name] = None if None in dims else \
            int(np.prod(dims or [1])) * ELEMENT_BYTES.get(t.elem_type, 4)
    constants = {t.name for t in graph.initializer}
    rows, unknown = [], 0
    for node in graph.node:
        if node.op_type in ALIASED:
            continue
        written = [sizes.get(o) for o in node.output]
        unknown += any(b is None for b in written)
        read = sum(sizes.get(i) or 0 for i in node.input if i not in constants)
        rows.append((node.op_type, node.name, sum(b or 0 for b in written), read))
    return rows, unknown


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1920x1080,3840x2160")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--models", default="psnr_y,ssim_y,vmaf_features")
    ap.add_argument("--bandwidth", type=float, default=4.8, help="TB/s")
    ap.add_argument("--top", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"ONNX Runtime {ort.__version__}; floors at {args.bandwidth} TB/s")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes.split(","):
            width, height = map(int, size.split("x"))
            for name in args.models.split(","):
                rows, unknown = traffic(specialised(form(name), width, height, args.batch,
                                                    folder))
                moved = sum(w + r for _, _, w, r in rows) / args.batch
                movement = sum(w + r for op, _, w, r in rows if op in MOVEMENT) / args.batch
                floor = moved / (args.bandwidth * 1e12)
                print(f"{size} {name}: {len(rows)} kernels, {moved / 1e9:.2f} GB a frame "
                      f"({movement / moved:.0%} of it data movement), floor "
                      f"{floor * 1e3:.3f} ms = {1 / floor:.0f} fps"
                      + (f"; {unknown} nodes of unknown shape" if unknown else ""))
                by_op = collections.Counter()
                for op, _, w, r in rows:
                    by_op[op] += w + r
                print("    " + ", ".join(f"{op} {b / args.batch / 1e6:.0f} MB"
                                         for op, b in by_op.most_common(8)))
                for op, node, w, r in sorted(rows, key=lambda x: -(x[2] + x[3]))[:args.top]:
                    print(f"      {node} ({op}): written {w / 1e6:.1f} MB, read {r / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
