"""Write libvmafdnn's built-in quality models (ONNX + JSON sidecar) into a directory.

Usage: python tools/gen_builtin_models.py OUTDIR

The models are plain ONNX operator graphs (nothing is trained), generated at build time and
installed into the wheel's vmafdnn/models/. Running the script twice gives identical bytes, so the
build is reproducible. Each model takes luma normalised to [0, 1] by 2^bpc - 1, shape [1, 1, H, W]
with symbolic H and W (the sidecar opts into native resolution), and gives one output of shape [1]
(not rank 0: OpenVINO declines rank-0 outputs).

Numerics. ORT's CPU Conv has no double kernel and its fp32 ReduceMean over a 1080p frame is off by
~1e-3 relative, so: every frame-wide mean is taken in double; SSIM's Gaussian filtering stays in
fp32 but runs on each frame minus its own mean, which keeps the E[x^2] - E[x]^2 cancellation small
(variance is shift-invariant; the mean is added back for the luminance term). Measured against
scikit-image: PSNR within ~2e-6 dB and SSIM within ~5e-7 on real frames; SSIM within ~1.2e-5 on
adversarial frames (flat black and white halves plus +-1..8 noise), where only a double-precision
filter would do better, at ~4x the run time.

Speed. ORT's CPU provider runs node by node and fuses no elementwise chains, so a whole-frame graph
writes every intermediate to memory (the first ssim_y moved ~1 GB per 1080p frame). The models
therefore work in row strips inside a Loop, whose intermediates stay in cache, and sum per strip
in double; ssim_y also stacks its five maps of three sub-strips as 16 channels, which ORT's
ORT_ENABLE_ALL level (the library's) runs as NCHWc depthwise Convs. Per 1080p frame on one thread
(CPU time, medians): ssim_y 27-31 ms (was 68-76), sharpness_nr 8 ms (was 19-20), psnr_y 2.5 ms
(was 3.0-3.4); a 2160p run adds 41, 12 and 7 MiB of memory (was 601, 332 and 131). The values are
those of the whole-frame graphs up to fp32 rounding: within 5e-7 on real frames (SSIM; psnr_y one
float32 ulp at most, sharpness_nr identical), within 1.1e-5 on the adversarial frames above.
"""

import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER = "vmafdnn-gen_builtin_models"

# scikit-image's structural_similarity(gaussian_weights=True): sigma 1.5, truncate 3.5, i.e. an
# 11-tap window (radius int(3.5 * 1.5 + 0.5) = 5) normalised to sum 1, as scipy.ndimage builds it.
SSIM_SIGMA = 1.5
SSIM_RADIUS = int(3.5 * SSIM_SIGMA + 0.5)
SSIM_C1 = 0.01 ** 2
SSIM_C2 = 0.03 ** 2
# ssim_y filters row strips: SSIM_SUBSTRIPS strips of SSIM_STRIP_ROWS output rows per Loop
# iteration, five maps each, padded to SSIM_CHANNELS = 16 channels (AVX-512's NCHWc block; a
# multiple of AVX2's 8). 16-32 rows measured fastest at 1080p (8..64 tried: cache-resident strips
# against per-iteration overhead).
SSIM_STRIP_ROWS = 24
SSIM_SUBSTRIPS = 3
SSIM_CHANNELS = 16
# Rows per Loop iteration of psnr_y and sharpness_nr (measured at 1080p: sharpness 16..64 alike,
# 128 slower; psnr 64..128 alike, as fast as one whole-frame pass without its memory).
SHARPNESS_STRIP_ROWS = 32
PSNR_STRIP_ROWS = 64

# 10*log10(1/1e-20) = 200 dB: identical frames give a finite value; the library then caps it at
# 6*bpc+12 dB like libvmaf (sidecar key cap_db_per_bpc).
PSNR_MSE_FLOOR = 1e-20
PSNR_MAX_DB = -10.0 * math.log10(PSNR_MSE_FLOOR)

INT64_MAX = np.iinfo(np.int64).max


class Graph:
    """Accumulates nodes and initializers with deterministic, readable names."""

    def __init__(self, prefix=""):
        # A subgraph gets its own prefix: ONNX forbids a body name that shadows an outer one.
        self.prefix = prefix
        self.nodes = []
        self.inits = []
        self._count = 0

    def const(self, value, dtype):
        name = f"{self.prefix}c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, *inputs, n_out=1, **attrs):
        outs = [f"{self.prefix}t{self._count}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=f"{self.prefix}n{self._count}_{op_type}", **attrs))
        self._count += 1
        return outs[0] if n_out == 1 else outs

    def loop_body(self, name, carried, carried_out):
        """This graph as the body of a Loop: inputs (iter, cond, *carried), outputs (cond,
        *carried_out); `carried` are (name, elem_type) pairs of rank-0 loop-carried values."""
        outs = [f"{self.prefix}cond_out"] + [f"{self.prefix}out_{n}" for n, _ in carried]
        self.nodes.append(helper.make_node("Identity", [f"{self.prefix}cond"], [outs[0]],
                                           name=f"{self.prefix}n_cond"))
        for src, dst in zip(carried_out, outs[1:]):
            self.nodes.append(helper.make_node("Identity", [src], [dst],
                                               name=f"{self.prefix}n_{dst}"))
        scalar = helper.make_tensor_value_info
        inputs = ([scalar(f"{self.prefix}iter", TensorProto.INT64, []),
                   scalar(f"{self.prefix}cond", TensorProto.BOOL, [])]
                  + [scalar(n, t, []) for n, t in carried])
        outputs = ([scalar(outs[0], TensorProto.BOOL, [])]
                   + [scalar(o, t, []) for o, (_, t) in zip(outs[1:], carried)])
        return helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)

    def scalar_output(self, double_scalar, name):
        """Double rank-0 value -> float32 output `name` of shape [1]."""
        as_float = self.op("Cast", double_scalar, to=TensorProto.FLOAT)
        self.nodes.append(helper.make_node("Reshape", [as_float, self.const([1], np.int64)],
                                           [name], name=f"n{self._count}_Reshape"))
        self._count += 1

    def model(self, name, input_names, output_name, doc, batch=False):
        """batch: the accelerator forms' interface, a symbolic leading dim "N" (frames of one
        clip per Run) on the pictures and the output ([N, 1, H, W] -> [N]); else batch 1."""
        n = "N" if batch else 1
        inputs = [helper.make_tensor_value_info(i, TensorProto.FLOAT, [n, 1, "H", "W"])
                  for i in input_names]
        outputs = [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [n])]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        graph.doc_string = doc
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name=PRODUCER, producer_version="1")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def frame_mean_double(g, x):
    """Mean over the whole tensor in double, as a rank-0 tensor."""
    return g.op("ReduceMean", g.op("Cast", x, to=TensorProto.DOUBLE), keepdims=0)


def strip_sums(g, inputs, strip_rows, halo, body_fn, name):
    """Sums over row strips in a Loop, so that a strip's intermediates stay in cache and the peak
    memory does not grow with the frame. Each iteration slices `strip_rows` + `halo` rows of every
    input (Slice clamps the last strip) and body_fn(body_graph, sliced_inputs) returns rank-0
    doubles, summed over the strips. Returns (the totals, [H - halo, W - halo] as int64)."""
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731
    valid = g.op("Sub", g.op("Slice", g.op("Shape", inputs[0]), i64([2]), i64([4])), i64(halo))
    trips = g.op("Div", g.op("Add", g.op("Gather", valid, i64(0)), i64(strip_rows - 1)),
                 i64(strip_rows))
    b = Graph("s_")
    start = b.op("Unsqueeze", b.op("Mul", "s_iter", b.const(strip_rows, np.int64)),
                 b.const([0], np.int64))
    end = b.op("Add", start, b.const([strip_rows + halo], np.int64))
    rows = b.const([2], np.int64)
    sums = body_fn(b, [b.op("Slice", x, start, end, rows) for x in inputs])
    carried = [(f"s_sum{i}", TensorProto.DOUBLE) for i in range(len(sums))]
    body = b.loop_body(name, carried, [b.op("Add", c, v) for (c, _), v in zip(carried, sums)])
    zeros = [g.const(0.0, np.float64) for _ in sums]
    totals = g.op("Loop", trips, g.const(True, np.bool_), *zeros, body=body, n_out=len(sums))
    return (totals if len(sums) > 1 else [totals]), valid


# ---- the definitions both forms of a built-in share ---------------------------------------------
# Each metric's arithmetic is written once, below, and used by its CPU form (row strips in a Loop,
# laid out for ORT's CPU EP) and by its accelerator form (ACCEL_BUILDERS: whole frames, no Loop, no
# shape arithmetic), so that the two cannot drift.

def psnr_error(b, planes):
    """The difference of the two planes in double. The fp32 difference is exact enough (its
    error is relative to the difference itself); it is squared and summed in double."""
    return b.op("Cast", b.op("Sub", *planes), to=TensorProto.DOUBLE)


def psnr_db(g, mse):
    """10*log10(1/MSE), MSE (double) floored at PSNR_MSE_FLOOR."""
    mse = g.op("Max", mse, g.const(PSNR_MSE_FLOOR, np.float64))
    return g.op("Mul", g.op("Log", mse), g.const(-10.0 / math.log(10.0), np.float64))


PSNR_DOC = "PSNR of the luma plane: 10*log10(1/MSE) on [0,1] data, MSE floored at 1e-20."


def build_psnr_y():
    g = Graph()

    def strip_sse(b, planes):
        return [b.op("ReduceSumSquare", psnr_error(b, planes), keepdims=0)]

    (sse,), _ = strip_sums(g, ["reference", "distorted"], PSNR_STRIP_ROWS, 0, strip_sse,
                           "psnr_strips")
    mse = g.op("Div", sse, g.op("Cast", g.op("Size", "reference"), to=TensorProto.DOUBLE))
    g.scalar_output(psnr_db(g, mse), "psnr_y")
    return g.model("psnr_y", ["reference", "distorted"], "psnr_y", PSNR_DOC)


def build_psnr_y_accel():
    """psnr_y's accelerator form: the whole frame at once, float32 only (OpenVINO, WebGPU and many
    GPUs take no double): psnr_error's float32 difference squared, summed in pooled stages
    (accel_sum_pooled), its dB taken near 50 dB (accel_psnr_db)."""
    g = Graph()
    err = g.op("Sub", "reference", "distorted")  # psnr_error's difference, not widened
    accel_psnr_db(g, accel_sum_pooled(g, g.op("Mul", err, err)), "reference", "psnr_y")
    return g.model("psnr_y", ["reference", "distorted"], "psnr_y",
                   ACCEL_DOC + PSNR_DOC, batch=True)


def gaussian_window():
    x = np.arange(-SSIM_RADIUS, SSIM_RADIUS + 1, dtype=np.float64)
    w = np.exp(-0.5 / (SSIM_SIGMA * SSIM_SIGMA) * x * x)
    return w / w.sum()


def build_ssim_y():
    r2 = 2 * SSIM_RADIUS
    g = Graph()
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731

    # Centre each frame on its own mean: any constant works (variances are shift-invariant and the
    # constant is added back for the means); the frame mean makes the squares smallest.
    cx = g.op("ReduceMean", "reference", keepdims=1)
    cy = g.op("ReduceMean", "distorted", keepdims=1)
    ref3 = g.op("Squeeze", "reference", i64([1]))  # [1, H, W]: Gather rows into channels
    dis3 = g.op("Squeeze", "distorted", i64([1]))
    valid = g.op("Sub", g.op("Slice", g.op("Shape", "reference"), i64([2]), i64([4])), i64(r2))
    hv = g.op("Gather", valid, i64(0))  # output rows of the 'valid' filter
    rows = g.op("Min", hv, i64(SSIM_STRIP_ROWS))  # per sub-strip
    per_iter = g.op("Mul", rows, i64(SSIM_SUBSTRIPS))
    trips = g.op("Div", g.op("Sub", g.op("Add", hv, per_iter), i64(1)), per_iter)
    last_start = g.op("Sub", hv, rows)
    sub_offsets = g.op("Mul", g.op("Range", i64(0), i64(SSIM_SUBSTRIPS), i64(1)), rows)
    window = g.op("Unsqueeze", g.op("Range", i64(0), g.op("Add", rows, i64(r2)), i64(1)), i64([0]))
    row_ids = g.op("Unsqueeze", g.op("Range", i64(0), rows, i64(1)), i64([0]))
    count = g.op("Cast", g.op("ReduceProd", valid, keepdims=0), to=TensorProto.DOUBLE)

    # One Loop iteration filters SSIM_SUBSTRIPS row strips of the five maps, stacked as 16
    # channels: its intermediates stay in cache instead of moving ~1 GB per 1080p frame through
    # memory, and ORT runs a 16-channel depthwise Conv with its NCHWc kernels, 2.5x faster per
    # channel than the im2col path it takes for 5.
    b = Graph("s_")
    bi64 = lambda v: b.const(v, np.int64)  # noqa: E731
    want = b.op("Add", b.op("Mul", "s_iter", per_iter), sub_offsets)
    # Every sub-strip has rows + 2R input rows: one that would run off the bottom starts earlier,
    # and the output rows an earlier sub-strip already counted are skipped below.
    start = b.op("Min", want, last_start)
    skip = b.op("Unsqueeze", b.op("Sub", want, start), bi64([1]))
    index = b.op("Add", b.op("Unsqueeze", start, bi64([1])), window)  # [S, rows + 2R]
    x = b.op("Sub", b.op("Gather", ref3, index, axis=1), cx)  # [1, S, rows + 2R, W]
    y = b.op("Sub", b.op("Gather", dis3, index, axis=1), cy)
    ssim_map = ssim_y_map(b, x, y, cx, cy, SSIM_SUBSTRIPS, SSIM_CHANNELS)  # [1, S, rows, W - 2R]
    row_sums = b.op("ReduceSum", b.op("Cast", ssim_map, to=TensorProto.DOUBLE), bi64([0, 3]),
                    keepdims=0)
    owned = b.op("Where", b.op("GreaterOrEqual", row_ids, skip), row_sums,
                 b.const(0.0, np.float64))
    total = b.op("Add", "s_acc", b.op("ReduceSum", owned, keepdims=0))
    body = b.loop_body("ssim_strips", [("s_acc", TensorProto.DOUBLE)], [total])

    total = g.op("Loop", trips, g.const(True, np.bool_), g.const(0.0, np.float64), body=body)
    g.scalar_output(g.op("Div", total, count), "ssim_y")
    return g.model("ssim_y", ["reference", "distorted"], "ssim_y", SSIM_DOC)


SSIM_DOC = "Mean SSIM of the luma plane, 11x11 Gaussian window (sigma 1.5), valid region."


def ssim_y_map(b, x, y, cx, cy, groups, channels, nary_sum=True):
    """The SSIM map of x and y, [1, groups, h, w] each, centred on cx and cy (any constants:
    variances are shift-invariant, the constants are added back to the means): the five maps
    stacked as `channels` channels (zero-padded past 5 * groups) through one vertical and one
    horizontal depthwise Conv, 'valid' filtering -> [1, groups, h - 2R, w - 2R]. nary_sum:
    the three-term sums as one n-ary Sum each (one pass on ORT's CPU EP); else as two Adds,
    which the accelerator form uses (ORT's WebGPU EP has no Sum kernel: each Sum went to the
    CPU EP and back). Same values either way: ORT's Sum adds its inputs left to right."""
    taps = 2 * SSIM_RADIUS + 1
    w = gaussian_window()
    bi64 = lambda v: b.const(v, np.int64)  # noqa: E731
    e = b.op("Sub", x, y)
    extra = channels - 5 * groups
    pad = ([b.op("Slice", e, bi64([0]), bi64([extra]), bi64([1]))] if extra else [])
    # Var(x - y) instead of the covariance: small when the frames are close, which is where SSIM
    # needs the most digits. sigma_xy = (var_x + var_y - var_e) / 2.
    stack = b.op("Concat", x, y, b.op("Mul", x, x), b.op("Mul", y, y), b.op("Mul", e, e), *pad,
                 axis=1)
    w_h = b.const(np.tile(w.reshape(1, 1, 1, taps), (channels, 1, 1, 1)), np.float32)
    w_v = b.const(np.tile(w.reshape(1, 1, taps, 1), (channels, 1, 1, 1)), np.float32)
    # 'valid' filtering: skimage filters with reflect padding, then crops the window radius from
    # every border before the mean, so the padded samples never reach the pixels that count.
    # Vertical first: the horizontal pass then runs on `rows`, not rows + 2R, input rows.
    filt = b.op("Conv", b.op("Conv", stack, w_v, group=channels), w_h, group=channels)
    fx, fy, fxx, fyy, fee = b.op("Split", filt, bi64([groups] * 5 + ([extra] if extra else [])),
                                 axis=1, n_out=6 if extra else 5)[:5]

    mu_x = b.op("Add", fx, cx)
    mu_y = b.op("Add", fy, cy)
    var_x = b.op("Sub", fxx, b.op("Mul", fx, fx))
    var_y = b.op("Sub", fyy, b.op("Mul", fy, fy))
    de = b.op("Sub", fx, fy)
    var_e = b.op("Sub", fee, b.op("Mul", de, de))

    c1 = b.const(SSIM_C1, np.float32)
    c2 = b.const(SSIM_C2, np.float32)
    # Sum(p, p, C1) is 2p + C1 with the same roundings as Mul-then-Add, in one pass.
    def sum3(p, q, r):
        return b.op("Sum", p, q, r) if nary_sum else b.op("Add", b.op("Add", p, q), r)
    mu_xy = b.op("Mul", mu_x, mu_y)
    a1 = sum3(mu_xy, mu_xy, c1)
    b1 = sum3(b.op("Mul", mu_x, mu_x), b.op("Mul", mu_y, mu_y), c1)
    b2 = sum3(var_x, var_y, c2)
    a2 = b.op("Sub", b2, var_e)  # 2*sigma_xy + C2
    return b.op("Div", b.op("Mul", a1, a2), b.op("Mul", b1, b2))


def build_ssim_y_accel():
    """ssim_y's accelerator form: the five maps of the whole frame as five channels of one
    vertical and one horizontal depthwise Conv (no Loop, no Gather of strips), float32 only: the
    map's mean is 1 + the mean of (map - 1) in two stages (accel_mean). map - 1 is exact (map in
    [0.5, 2]) and small where SSIM needs the digits (near 1), so the fp32 sums' rounding is
    relative to 1 - SSIM, not to SSIM."""
    g = Graph()
    cx = g.op("ReduceMean", "reference", axes=[1, 2, 3], keepdims=1)     # [N, 1, 1, 1]
    cy = g.op("ReduceMean", "distorted", axes=[1, 2, 3], keepdims=1)
    x = g.op("Sub", "reference", cx)
    y = g.op("Sub", "distorted", cy)
    one = g.const(1.0, np.float32)
    ssim_map = ssim_y_map(g, x, y, cx, cy, 1, 5, nary_sum=False)
    accel_output(g, "Add", [accel_mean(g, g.op("Sub", ssim_map, one)), one], "ssim_y")
    return g.model("ssim_y", ["reference", "distorted"], "ssim_y", ACCEL_DOC + SSIM_DOC,
                   batch=True)


def laplacian(b, plane):
    """The 3x3 Laplacian of plane [1, 1, h, w] in double, valid region [1, 1, h - 2, w - 2].
    Exact in double: a Laplacian of fp32 samples in [0,1] needs no rounding there, and blurred
    content has small Laplacians where fp32 rounding would be a large relative error. The
    Slices' bounds are constants (negative ends count from the end): no shape arithmetic."""
    bi64 = lambda v: b.const(v, np.int64)  # noqa: E731
    x = b.op("Cast", plane, to=TensorProto.DOUBLE)
    rows, cols = bi64([2]), bi64([3])
    up = b.op("Slice", x, bi64([0]), bi64([-2]), rows)
    mid = b.op("Slice", x, bi64([1]), bi64([-1]), rows)
    down = b.op("Slice", x, bi64([2]), bi64([INT64_MAX]), rows)
    vertical = b.op("Sub", b.op("Add", up, down), b.op("Mul", mid, b.const(4.0, np.float64)))
    return b.op("Add", b.op("Slice", vertical, bi64([1]), bi64([-1]), cols),
                b.op("Add", b.op("Slice", mid, bi64([0]), bi64([-2]), cols),
                     b.op("Slice", mid, bi64([2]), bi64([INT64_MAX]), cols)))


SHARPNESS_DOC = "Variance of the 3x3 Laplacian of the luma plane, valid region."


def build_sharpness_nr():
    g = Graph()

    def strip_laplacian_sums(b, planes):
        lap = laplacian(b, planes[0])
        return [b.op("ReduceSum", lap, keepdims=0), b.op("ReduceSumSquare", lap, keepdims=0)]

    (total, total_sq), valid = strip_sums(g, ["distorted"], SHARPNESS_STRIP_ROWS, 2,
                                          strip_laplacian_sums, "sharpness_strips")
    # One pass, E[lap^2] - E[lap]^2: in double the cancellation is harmless (the mean Laplacian
    # is a border term, near 0).
    n = g.op("Cast", g.op("ReduceProd", valid, keepdims=0), to=TensorProto.DOUBLE)
    mean = g.op("Div", total, n)
    g.scalar_output(g.op("Sub", g.op("Div", total_sq, n), g.op("Mul", mean, mean)), "sharpness_nr")
    return g.model("sharpness_nr", ["distorted"], "sharpness_nr", SHARPNESS_DOC)


def build_sharpness_nr_accel():
    """sharpness_nr's accelerator form: the whole frame's Laplacian in float32 (accel_laplacian),
    its two means in two stages (accel_mean)."""
    g = Graph()
    lap = accel_laplacian(g, "distorted")
    mean = accel_mean(g, lap)
    mean_sq = accel_mean(g, g.op("Mul", lap, lap))
    accel_output(g, "Sub", [mean_sq, g.op("Mul", mean, mean)], "sharpness_nr")
    return g.model("sharpness_nr", ["distorted"], "sharpness_nr", ACCEL_DOC + SHARPNESS_DOC,
                   batch=True)


# ---- libvmaf-compatible variants: the graphs above, fed or prefixed differently --------------

def renamed(model, name, output, doc):
    """`model` with its graph, single output and doc string renamed (the node that wrote the old
    output writes the new one)."""
    graph = model.graph
    old = graph.output[0].name
    for node in graph.node:
        for i, out in enumerate(node.output):
            if out == old:
                node.output[i] = output
    graph.output[0].name = output
    graph.name = name
    graph.doc_string = doc
    onnx.checker.check_model(model, full_check=True)
    return model


def build_psnr_chroma(name, build=None):
    """psnr_y's graph under another name: the sidecar's input_sources feed it a chroma plane (at
    its own resolution, normalised like luma), which is how libvmaf's psnr computes psnr_cb and
    psnr_cr. build: psnr_y's builder (build_psnr_y_accel for the accelerator form)."""
    plane = "Cb (U)" if name == "psnr_cb" else "Cr (V)"
    return renamed((build or build_psnr_y)(), name, name,
                   f"PSNR of the {plane} plane: 10*log10(1/MSE) on [0,1] data, MSE floored at "
                   "1e-20.")


def libvmaf_decimate(g, x):
    """libvmaf's float_ssim downscaling of x [1, 1, H, W]: scale s = max(1, round(min(H, W) /
    256)) (halves rounded up, as iqa's _round), then on each axis of length N, N // s + N % 2
    samples (iqa's _iqa_decimate sizes, quirk included; at scale 1 libvmaf does not decimate,
    so N: this graph once gave an odd side an extra, mirrored sample there, up to 2e-4 off
    ssim_y and 6e-5 off libvmaf), sample i the mean of the s taps
    i*s - s//2 .. i*s - s//2 + s - 1 (iqa's even-kernel centring: for s = 2, taps i*s - 1 and
    i*s), mirrored at the borders as KBND_SYMMETRIC does (-1 -> 0, N -> N - 1). The two axes are
    separable (a box of equal weights, mirrored per coordinate). Box sums come from a running sum
    in double over the frame padded by s on each side, so the cost does not grow with s."""
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731
    shape = g.op("Shape", x)
    hw = g.op("Slice", shape, i64([2]), i64([4]))
    least = g.op("Cast", g.op("ReduceMin", hw, keepdims=0), to=TensorProto.DOUBLE)
    rounded = g.op("Floor", g.op("Add", g.op("Div", least, g.const(256.0, np.float64)),
                                 g.const(0.5, np.float64)))
    s = g.op("Max", g.op("Cast", rounded, to=TensorProto.INT64), i64(1))
    half = g.op("Div", s, i64(2))
    decimating = g.op("Min", g.op("Sub", s, i64(1)), i64(1))  # 0 at scale 1, else 1
    y = g.op("Cast", x, to=TensorProto.DOUBLE)
    for axis in (2, 3):
        n = g.op("Gather", shape, i64(axis))
        # Mirrored positions -s .. n + s - 1, then their running sums.
        pos = g.op("Range", g.op("Neg", s), g.op("Add", n, s), i64(1))
        below = g.op("Sub", i64(-1), pos)
        above = g.op("Sub", g.op("Sub", g.op("Mul", n, i64(2)), i64(1)), pos)
        mirrored = g.op("Where", g.op("Less", pos, i64(0)), below,
                        g.op("Where", g.op("GreaterOrEqual", pos, n), above, pos))
        running = g.op("CumSum", g.op("Gather", y, mirrored, axis=axis), i64(axis))
        odd = g.op("Sub", n, g.op("Mul", g.op("Div", n, i64(2)), i64(2)))  # Mod is not allowed
        count = g.op("Add", g.op("Div", n, s), g.op("Mul", odd, decimating))
        # First tap of output i in padded coordinates: i*s - s//2 + s; the box sum is
        # running[first + s - 1] - running[first - 1].
        first = g.op("Add", g.op("Sub", g.op("Mul", g.op("Range", i64(0), count, i64(1)), s),
                                 half), s)
        last = g.op("Sub", g.op("Add", first, s), i64(1))
        before = g.op("Sub", first, i64(1))
        y = g.op("Sub", g.op("Gather", running, last, axis=axis),
                 g.op("Gather", running, before, axis=axis))
    area = g.op("Cast", g.op("Mul", s, s), to=TensorProto.DOUBLE)
    return g.op("Cast", g.op("Div", y, area), to=TensorProto.FLOAT)


def build_float_ssim(build=None, decimate=None, note=""):
    """ssim_y's graph on frames downscaled as libvmaf's float_ssim does by default (scale=0,
    automatic): libvmaf_decimate in front, the full-resolution frames as inputs. build: ssim_y's
    builder, decimate: the decimation (build_float_ssim_accel passes the accelerator form's),
    note: appended to the model's description."""
    model = (build or build_ssim_y)()
    graph = model.graph
    pre = Graph("dec_")
    scaled = {}
    for name in ("reference", "distorted"):
        out = (decimate or libvmaf_decimate)(pre, name)
        scaled[name] = f"{name}_scaled"
        pre.nodes.append(helper.make_node("Identity", [out], [scaled[name]], name=f"dec_{name}"))
    prepend(graph, pre, scaled)
    return renamed(model, "float_ssim", "float_ssim",
                   "libvmaf float_ssim: frames decimated by max(1, round(min(w,h)/256)) (box "
                   "filter, iqa's taps), then ssim_y's SSIM." + note)


def prepend(graph, front, names):
    """`front` (a Graph) placed before graph's nodes, which then read names[x] wherever they
    read x (what front makes of the graph input x)."""
    body = list(graph.node)
    for node in body:
        _rename_inputs(node, names)
    del graph.node[:]
    graph.node.extend(front.nodes + body)
    graph.initializer.extend(front.inits)


def _rename_inputs(node, names):
    """Renames the inputs of node, and of every node in its subgraphs (outer-scope reads)."""
    for i, name in enumerate(node.input):
        if name in names:
            node.input[i] = names[name]
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            for sub in attr.g.node:
                _rename_inputs(sub, names)


def sidecars():
    return {
        "psnr_y": {
            "kind": "fr",
            "name": "psnr_y",
            "input_names": ["reference", "distorted"],
            "output_names": ["psnr_y"],
            "native_resolution": True,
            "higher_is_better": True,
            "range": [0.0, PSNR_MAX_DB],
            "cap_db_per_bpc": [6, 12],
            "opset": OPSET,
            "min_width": 1,
            "min_height": 1,
            "meaning": (
                "Peak signal-to-noise ratio of the distorted luma against the reference, in dB. "
                "Higher is closer to the reference; each +6 dB halves the RMS error. Typical "
                "lossy video scores 30-50 dB; identical frames score the cap, 6*bpc+12 dB (60 dB "
                "at 8 bits)."),
            "description": (
                "PSNR of the luma plane in dB: 10*log10(1/MSE) on luma normalised to [0,1] by "
                "2^bpc-1, i.e. the usual definition with peak 2^bpc-1 (libvmaf, FFmpeg, "
                "scikit-image). The model floors MSE at 1e-20 (identical frames give 200 dB); "
                "the library caps the result at 6*bpc+12 dB like libvmaf (cap_db_per_bpc = "
                "[slope, intercept])."),
        },
        "ssim_y": {
            "kind": "fr",
            "name": "ssim_y",
            "input_names": ["reference", "distorted"],
            "output_names": ["ssim_y"],
            "native_resolution": True,
            "higher_is_better": True,
            "range": [-1.0, 1.0],
            "opset": OPSET,
            "min_width": 2 * SSIM_RADIUS + 1,
            "min_height": 2 * SSIM_RADIUS + 1,
            "meaning": (
                "Structural similarity of the distorted luma to the reference: local means, "
                "contrasts and structure compared in 11x11 windows. 1 means identical; higher is "
                "closer to the reference; visible distortion typically lies below 0.95, and "
                "values near 0 or below mean the structure is lost."),
            "description": (
                "Mean SSIM (Wang et al. 2004) of the luma plane at native resolution: 11x11 "
                "Gaussian window, sigma 1.5, C1=(0.01)^2, C2=(0.03)^2 on [0,1] data, population "
                "(co)variances, averaged over the valid region (5 px cropped at every border). "
                "Matches scikit-image structural_similarity(gaussian_weights=True, sigma=1.5, "
                "use_sample_covariance=False, data_range=2^bpc-1). Needs H and W of at least 11. "
                "libvmaf's float_ssim differs: it first decimates both frames by "
                "scale=max(1, round(min(w,h)/256)) (box filter, e.g. 4 at 1080p) unless told "
                "otherwise (option scale), computes in fp32 on samples divided by 2^(bpc-8) with "
                "L=255, clamps negative variances to 0 and uses the l*c*s form. ssim_y does not "
                "downsample, so the two agree closely only when min(w,h) < 384 (scale 1)."),
        },
        "sharpness_nr": {
            "kind": "nr",
            "name": "sharpness_nr",
            "input_names": ["distorted"],
            "output_names": ["sharpness_nr"],
            "native_resolution": True,
            "higher_is_better": True,
            "range": [0.0, 16.0],
            "opset": OPSET,
            "min_width": 3,
            "min_height": 3,
            "meaning": (
                "Variance of the Laplacian of the luma (on [0,1] samples): how much fine detail "
                "and edge contrast the picture holds. Higher means sharper or more detailed (or "
                "noisier); blur lowers it toward 0, a flat picture scores 0. No reference is "
                "needed; compare only pictures of the same size and content."),
            "description": (
                "No-reference sharpness: variance of the 3x3 Laplacian [[0,1,0],[1,-4,1],[0,1,0]] "
                "of the distorted luma normalised to [0,1], over the valid region (1 px cropped "
                "at every border). Higher is sharper; blur lowers it and noise raises it. "
                "Independent of bit depth; depends on resolution (compare like with like). "
                "Needs H and W of at least 3."),
        },
    }


def chroma_sources(plane):
    return {p: {"picture": p, "plane": plane} for p in ("reference", "distorted")}


def libvmaf_sidecars(meta):
    """Sidecars of the libvmaf-compatible variants, built on those of psnr_y and ssim_y."""
    psnr = {k: v for k, v in meta["psnr_y"].items()
            if k not in ("input_names", "output_names", "name", "meaning", "description")}
    chroma = ("PSNR of a chroma plane at its own resolution (4:2:0: a quarter of luma), "
              "normalised by 2^bpc-1 like luma and capped at 6*bpc+12 dB, as libvmaf's psnr "
              "feature computes psnr_cb and psnr_cr.")
    cb = dict(psnr, name="psnr_cb", input_sources=chroma_sources("u"),
              description="Cb (U) plane: " + chroma,
              meaning=("PSNR of the distorted Cb (U) plane against the reference, in dB; read "
                       "like psnr_y (higher is closer, the cap means identical planes)."))
    full = dict(psnr, name="psnr", input_sources=chroma_sources("v"),
                output_keys=["psnr_cr"], requires=["psnr_y.onnx", "psnr_cb.onnx"],
                description=("libvmaf's psnr feature: psnr_y, psnr_cb and psnr_cr, each plane at "
                             "its own resolution and capped at 6*bpc+12 dB. Attaching it attaches "
                             "psnr_y and psnr_cb (\"requires\") and scores the Cr (V) plane as "
                             "psnr_cr itself; the frames must carry their U and V planes."),
                meaning=("PSNR per plane in dB (psnr_y, psnr_cb, psnr_cr); higher is closer to "
                         "the reference, the cap (60 dB at 8 bits) means identical planes."))
    ssim = {k: v for k, v in meta["ssim_y"].items()
            if k not in ("output_names", "name", "description")}
    float_ssim = dict(ssim, name="float_ssim", description=(
        "libvmaf's float_ssim with its default (automatic) downscaling: where scale = max(1, "
        "round(min(w,h)/256)) is above 1 (4 at 1080p; none below 384 lines), both frames "
        "decimated with iqa's box filter (scale x scale taps starting scale/2 before each kept "
        "sample, mirrored at the borders; w/scale + w%2 by h/scale + h%2 samples), then ssim_y's "
        "SSIM (11x11 Gaussian, sigma 1.5, valid region). Agrees with libvmaf's float_ssim within "
        "~1e-3 (measured up to 2e-4 a frame: libvmaf computes in float); ssim_y is the same "
        "without the downscaling."))
    return {"psnr_cb": cb, "psnr": full, "float_ssim": float_ssim}


BUILDERS = {
    "psnr_y": build_psnr_y,
    "ssim_y": build_ssim_y,
    "sharpness_nr": build_sharpness_nr,
    "psnr_cb": lambda: build_psnr_chroma("psnr_cb"),
    "psnr": lambda: build_psnr_chroma("psnr_cr"),
    "float_ssim": build_float_ssim,
}

# ---- the accelerator forms' float32 helpers ---------------------------------------------------
# OpenVINO (CPU and GPU devices), WebGPU and many GPUs take no double, and a double node there runs
# on ORT's CPU EP with copies around it. So the accelerator forms hold no double tensor at all;
# where today's models sum in double, these sum float32 in stages that each add few values, and
# keep within 1e-5 (absolute, in the output's unit) of the models (tests/python/
# test_accel_precision.py; figures in docs/execution_providers.md). They are used by the
# accelerator forms only: the models above (and their helpers) are unchanged.

# psnr's dB is taken near 50 dB, where float32's Log is more precise than at ln(MSE) ~ -7..-20:
# 10*log10(1/MSE) = 50 - 10*log10(MSE * 1e5), both constants exact in float32. (ORT's CPU Log is
# off by up to ~1.1 ulp, OpenVINO's by 0.5: 1 ulp of ln(MSE) at 72 dB is 8e-6 dB, of
# ln(MSE * 1e5) 2e-6; above 84 dB the result can still be 2 float32 ulps, 1.5e-5 dB, off.)
ACCEL_PSNR_K = 1e5
ACCEL_PSNR_A = 50.0
# psnr sums its squared error in pools of ACCEL_PSNR_POOL values along rows, then along columns
# (AveragePool with count_include_pad: a division by a power of 2, exact), then over the pooled
# rows and columns (ReduceSum).
ACCEL_PSNR_POOL = 32
# The accelerator forms take a batch: N frames of one clip per Run ([N, 1, H, W] pictures, [N]
# outputs, "N" symbolic), each frame's value computed on its own (every reduction and centring
# per frame), so that a frame gives in a batch what it gives alone (N = 1): bit for bit on ORT's
# CPU EP (tests/python/test_accel_forms.py), the library's batch check allowing 1e-6 + 1e-5
# relative. The models keep batch 1; the library accepts a form declaring N where the model
# declares 1.
ACCEL_DOC = ("Accelerator form (whole frames, float32 only, no Loop, static once N, H and W are "
             "fixed; N frames of one clip per Run, each scored on its own). ")


def accel_output(g, op_type, inputs, name):
    """A node of g that writes the graph's output `name` (already [N]: no Reshape)."""
    g.nodes.append(helper.make_node(op_type, list(inputs), [name],
                                    name=f"n{g._count}_{op_type}"))
    g._count += 1


def accel_mean(g, x):
    """The mean of each frame of x [N, 1, h, w] in float32, as an [N] tensor: the mean of each
    row, then the mean of those (equal row lengths: the mean of the means is the mean). Each
    stage adds at most w or h values, spread over the EP's vector lanes; one ReduceMean over a
    whole frame is off by up to ~1e-3 relative on ORT's CPU EP, the two stages by up to ~3.4e-6
    (sums of squares, 2160p), less when the values have both signs. Enough for ssim_y (a mean
    of map - 1) and sharpness_nr; psnr_y needs better (accel_sum_pooled)."""
    rows = g.op("ReduceMean", x, axes=[3], keepdims=1)
    return g.op("ReduceMean", rows, axes=[1, 2, 3], keepdims=0)


def accel_sum_pooled(g, x):
    """The sum of each frame of x [N, 1, h, w] in float32 divided by ACCEL_PSNR_POOL^2, as an
    [N] tensor: sums
    of ACCEL_PSNR_POOL values along each row, then of ACCEL_PSNR_POOL of those down each column
    (AveragePool: zero padding past the frame, exact power-of-2 divisions), then a ReduceSum over
    the pooled columns and one over the pooled rows (at 2160p: 120 and 68 values). No stage adds
    more than ~120 values at once: within ~2.5e-7 relative of the double sum at 1080p and 2160p
    on ORT's CPU EP and OpenVINO's CPU device, where a ReduceMean over rows then over the row
    means is off by up to 3.4e-6 (tests/python/test_accel_precision.py)."""
    k = ACCEL_PSNR_POOL
    for kernel in ([1, k], [k, 1]):
        x = g.op("AveragePool", x, kernel_shape=kernel, strides=kernel,
                 pads=[0, 0, kernel[0] - 1, kernel[1] - 1], count_include_pad=1)
    cols = g.op("ReduceSum", x, g.const([3], np.int64), keepdims=1)
    return g.op("ReduceSum", cols, g.const([1, 2, 3], np.int64), keepdims=0)


def accel_psnr_db(g, pooled_sse, plane, name):
    """10*log10(1/MSE) as output `name`, as psnr_db gives it, from accel_sum_pooled's sum of the
    squared error over `plane`'s H*W samples: MSE * 1e5 = pooled_sse * (POOL^2 * 1e5 / (H*W)) (the
    factor folds to one float32 constant once H and W are fixed), floored at PSNR_MSE_FLOOR / 16
    (no Log of 0), its dB 50 - 10*log10(MSE * 1e5) clamped at PSNR_MAX_DB: the model's floor,
    and identical frames give exactly PSNR_MAX_DB, as the model's cast does."""
    i64 = lambda v: g.const(v, np.int64)  # noqa: E731
    samples = g.op("ReduceProd", g.op("Slice", g.op("Shape", plane), i64([2]), i64([4])),
                   keepdims=0)
    factor = g.op("Div", g.const(ACCEL_PSNR_POOL ** 2 * ACCEL_PSNR_K, np.float32),
                  g.op("Cast", samples, to=TensorProto.FLOAT))
    scaled = g.op("Max", g.op("Mul", pooled_sse, factor),
                  g.const(PSNR_MSE_FLOOR * ACCEL_PSNR_K / 16, np.float32))
    db = g.op("Add", g.op("Mul", g.op("Log", scaled), g.const(-10.0 / math.log(10.0), np.float32)),
              g.const(ACCEL_PSNR_A, np.float32))
    accel_output(g, "Min", [db, g.const(PSNR_MAX_DB, np.float32)], name)


def accel_laplacian(b, plane):
    """laplacian() in float32: the four neighbours' differences from the centre, summed in pairs.
    Neighbours within a factor 2 of each other subtract exactly (Sterbenz), and the sums round
    relative to the Laplacian itself, which can be small (blur), not relative to 4*centre."""
    bi64 = lambda v: b.const(v, np.int64)  # noqa: E731
    end = INT64_MAX

    def shifted(row, col):
        return b.op("Slice", plane, bi64([row, col]), bi64([row - 2 or end, col - 2 or end]),
                    bi64([2, 3]))

    centre = shifted(1, 1)
    up, down, left, right = (b.op("Sub", shifted(r, c), centre)
                             for r, c in ((0, 1), (2, 1), (1, 0), (1, 2)))
    return b.op("Add", b.op("Add", up, down), b.op("Add", left, right))


def libvmaf_decimate_accel(g, x):
    """libvmaf_decimate in float32: the same taps (s x s from i*s - s//2, mirrored), gathered as
    [count, s] blocks per axis and summed by a ReduceSum of s values (no running sum: in float32
    its differences would lose the digits), then divided by s*s. The index arithmetic is float32
    on exact integers with Floor (in the int64 form of this graph OpenVINO's CPU device computed
    the Div 1208 / 256 as 5, not 4), and folds to constants once H and W are fixed."""
    f32 = lambda v: g.const(v, np.float32)  # noqa: E731

    def floor_div(a, b):
        # a // b of non-negative integers held in float32: (a + 0.5) / b is at least 0.5 / b
        # from any integer, far more than float32's rounding of the quotient for any frame size
        return g.op("Floor", g.op("Div", g.op("Add", a, f32(0.5)), b))

    hw = g.op("Cast", g.op("Slice", g.op("Shape", x), g.const([2], np.int64),
                           g.const([4], np.int64)), to=TensorProto.FLOAT)
    least = g.op("ReduceMin", hw, keepdims=0)
    s = g.op("Max", floor_div(g.op("Add", least, f32(128.0)), f32(256.0)), f32(1.0))
    half = floor_div(s, f32(2.0))
    decimating = g.op("Min", g.op("Sub", s, f32(1.0)), f32(1.0))  # 0 at scale 1, else 1
    taps = g.op("Unsqueeze", g.op("Range", f32(0.0), s, f32(1.0)), g.const([0], np.int64))
    y = x
    for axis in (3, 2):
        n = g.op("Gather", hw, g.const(axis - 2, np.int64))
        odd = g.op("Sub", n, g.op("Mul", floor_div(n, f32(2.0)), f32(2.0)))
        count = g.op("Add", floor_div(n, s), g.op("Mul", odd, decimating))
        first = g.op("Sub", g.op("Mul", g.op("Range", f32(0.0), count, f32(1.0)), s), half)
        pos = g.op("Add", g.op("Unsqueeze", first, g.const([1], np.int64)), taps)  # [count, s]
        below = g.op("Sub", f32(-1.0), pos)
        above = g.op("Sub", g.op("Sub", g.op("Mul", n, f32(2.0)), f32(1.0)), pos)
        # (Less, not GreaterOrEqual: ORT's OpenVINO EP 1.24 leaves GreaterOrEqual to the CPU EP)
        mirrored = g.op("Where", g.op("Less", pos, f32(0.0)), below,
                        g.op("Where", g.op("Less", pos, n), pos, above))
        index = g.op("Cast", mirrored, to=TensorProto.INT64)
        # [.., count, s] on axis 3, [.., count, s, w'] on axis 2: the taps are axis + 1
        y = g.op("ReduceSum", g.op("Gather", y, index, axis=axis),
                 g.const([axis + 1], np.int64), keepdims=0)
    return g.op("Div", y, g.op("Mul", s, s))


def build_float_ssim_accel():
    """float_ssim's accelerator form: build_float_ssim's wiring with libvmaf_decimate_accel in
    front of build_ssim_y_accel (float32 only)."""
    return build_float_ssim(build_ssim_y_accel, libvmaf_decimate_accel,
                            " Accelerator form, float32 only.")


# Accelerator forms (issue 23): the same metrics from the same definitions, laid out for GPUs and
# other accelerators instead of ORT's CPU EP: whole-frame tensors, no Loop/If/Scan, every shape
# fixed once the session fixes H and W (ORT's free-dimension overrides fold what is left), the
# same declared inputs and outputs as the model, so that the library can swap one for the other
# (the model's sidecar names it: "forms": {"*": "<name>_accel.onnx"}).
# tests/python/test_accel_forms.py holds each to a node cap at 1080p and 2160p and to agreement
# with the model on ORT's CPU EP.
ACCEL_SUFFIX = "_accel"
ACCEL_BUILDERS = {
    "psnr_y": build_psnr_y_accel,
    "ssim_y": build_ssim_y_accel,
    "sharpness_nr": build_sharpness_nr_accel,
    "psnr_cb": lambda: build_psnr_chroma("psnr_cb", build_psnr_y_accel),
    "psnr": lambda: build_psnr_chroma("psnr_cr", build_psnr_y_accel),
    "float_ssim": build_float_ssim_accel,
}


# Samples forms (issue 23, "raw samples in"): the accelerator form taking the pictures' own
# samples (UINT16, 0..2^bpc - 1) and the clip's bit depth (input "bpc", FLOAT [1], fed by the
# sidecar's input_sources), normalised in the graph, so that a 1080p pair sends 8.3 MB to the
# device instead of 16.6 MB of float32 planes. The normalisation is the library's own: the sample
# (exact in float32) divided by 2^bpc - 1, one correctly rounded division (csrc/resize.c
# vdnn_plane_normalise rounds sample * (1 / max) in double to the same float), so the form gives
# the accelerator form's values bit for bit. 2^bpc - 1 comes from a table, not Pow (whose float
# result an EP need not give exactly). Named for CUDA only: on a lent H200 psnr_y's Run was its
# host-to-device copy (docs/execution_providers.md); WebGPU has no 16-bit integers (the Cast would
# run on ORT's CPU EP and refuse graph capture), and TensorRT takes no UINT16.
SAMPLES_SUFFIX = "_samples"
SAMPLES_EPS = ("CUDA",)
SAMPLES_BPC = {"bpc": {"value": "bpc"}}


def is_picture(value):
    return len(value.type.tensor_type.shape.dim) == 4


def samples_inputs(inputs):
    """The inputs of a form taking samples: copies of `inputs` with the pictures' elements
    UINT16, then "bpc"."""
    out = []
    for v in inputs:
        copy = onnx.ValueInfoProto()
        copy.CopyFrom(v)
        if is_picture(copy):
            copy.type.tensor_type.elem_type = TensorProto.UINT16
        out.append(copy)
    return out + [helper.make_tensor_value_info("bpc", TensorProto.FLOAT, [1])]


def samples_form(model):
    """`model` (an accelerator form) taking UINT16 samples and "bpc" for its FLOAT pictures."""
    form = onnx.ModelProto()
    form.CopyFrom(model)
    graph = form.graph
    pictures = [v.name for v in graph.input if is_picture(v)]
    front = Graph("samples_")
    peaks = front.const([2.0 ** b - 1.0 for b in range(17)], np.float32)
    peak = front.op("Gather", peaks, front.op("Cast", "bpc", to=TensorProto.INT64), axis=0)
    normalised = {p: front.op("Div", front.op("Cast", p, to=TensorProto.FLOAT), peak)
                  for p in pictures}
    prepend(graph, front, normalised)
    inputs = samples_inputs(graph.input)
    del graph.input[:]
    graph.input.extend(inputs)
    graph.doc_string = ("Samples form: the pictures' own samples (UINT16) and their bit depth "
                        "bpc, normalised in the graph by 2^bpc - 1. " + graph.doc_string)
    onnx.checker.check_model(form, full_check=True)
    return form


# Kernels forms (issue 23): one node of the library's own operators (csrc/custom_ops.h: Psnr,
# Ssim, FloatSsim, LaplacianVariance), which run its fused kernels on ORT's CPU EP
# (csrc/fr_kernels.h, nr_kernels.h: ssim_y 3-4x faster than the model's Loop graph at 1080p,
# float_ssim 24x) and its GPU kernels on CUDA (csrc/gpu: a few launches and one read of each
# plane, where the samples form's graph moves ~1 GB a 1080p frame), with the samples forms'
# interface (UINT16 pictures and "bpc"). Named for CPU and CUDA; on CUDA where the GPU kernels are
# not ready (no NVRTC, a device that failed their self-check) the library passes the form over
# for CUDA's next choice, the samples form (csrc/tiny_model.c open_form_on_ep).
# Values: the model's up to float rounding of its convolutions (ssim_y, and float_ssim, whose
# decimated samples are exact box sums in the kernel, sums of normalised floats in the model),
# the same (psnr: an exact integer sum of squares, where the model sums float squares in double),
# within 2e-7 relative (sharpness_nr: exact integer Laplacians, where the model's are of
# float-rounded samples); tests/python/test_kernels_forms.py.
KERNELS_SUFFIX = "_kernels"
KERNELS_EPS = ("CPU", "CUDA")
KERNEL_OPS = {"psnr_y": "Psnr", "psnr_cb": "Psnr", "psnr": "Psnr", "ssim_y": "Ssim",
              "float_ssim": "FloatSsim", "sharpness_nr": "LaplacianVariance"}
LIBRARY_DOMAIN = "org.vmafdnn"


def kernels_form(model, op):
    """The kernels form of `model` (its pictures, one output): the library's operator `op` on
    the pictures' samples (UINT16) and "bpc"."""
    graph = model.graph
    assert all(is_picture(v) for v in graph.input) and len(graph.output) == 1, graph.name
    node = helper.make_node(op, [v.name for v in graph.input] + ["bpc"], [graph.output[0].name],
                            domain=LIBRARY_DOMAIN, name=op)
    form = helper.make_graph([node], graph.name + KERNELS_SUFFIX, samples_inputs(graph.input),
                             list(graph.output))
    form.doc_string = (f"Kernels form: libvmafdnn's {LIBRARY_DOMAIN}:{op} on the pictures' own "
                       "samples (UINT16) and their bit depth bpc. Runs only in libvmafdnn. "
                       + graph.doc_string)
    return library_model(form, PRODUCER)


def library_model(graph, producer):
    """The model of `graph`, whose nodes include the library's own operators."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(LIBRARY_DOMAIN, 1)],
                              producer_name=producer, producer_version="1")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)  # the library's ops have no schema onnx knows
    return model


def form_sidecar(meta, samples=False):
    """The sidecar of a form attached by its own name: the model's, without forms, and with the
    "bpc" source only where the form reads it (a samples form)."""
    side = {k: v for k, v in meta.items() if k != "forms"}
    sources = {k: v for k, v in side.pop("input_sources", {}).items()
               if samples or k not in SAMPLES_BPC}
    if sources:
        side["input_sources"] = sources
    return side


def write_bytes(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: gen_builtin_models.py OUTDIR\n")
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    meta = sidecars()
    meta.update(libvmaf_sidecars(meta))
    def write_model(name, model, sidecar):
        write_bytes(os.path.join(outdir, name + ".onnx"), model.SerializeToString())
        text = json.dumps(sidecar, indent=2) + "\n"
        write_bytes(os.path.join(outdir, name + ".json"), text.encode("utf-8"))

    for name, build in BUILDERS.items():
        accel, samples = name + ACCEL_SUFFIX, name + SAMPLES_SUFFIX
        if name in ACCEL_BUILDERS:
            # the samples forms read "bpc", which the model and its accelerator form do not
            # (a value source may name an input of a form only: csrc/tiny_model.c)
            meta[name]["input_sources"] = {**meta[name].get("input_sources", {}), **SAMPLES_BPC}
            meta[name]["forms"] = {**{ep: samples + ".onnx" for ep in SAMPLES_EPS},
                                   "*": accel + ".onnx"}
        if name in KERNEL_OPS:
            # CUDA's list: where the GPU kernels are not ready, the samples form (its graph on
            # the GPU whole) before "*"
            kernels = name + KERNELS_SUFFIX + ".onnx"
            meta[name]["forms"].update(
                {ep: [kernels, samples + ".onnx"] if ep in SAMPLES_EPS else kernels
                 for ep in KERNELS_EPS})
        model = build()
        write_model(name, model, meta[name])
        if name in ACCEL_BUILDERS:
            accel_model = ACCEL_BUILDERS[name]()
            write_model(accel, accel_model, form_sidecar(meta[name]))
            write_model(samples, samples_form(accel_model), form_sidecar(meta[name], True))
        if name in KERNEL_OPS:
            write_model(name + KERNELS_SUFFIX, kernels_form(model, KERNEL_OPS[name]),
                        form_sidecar(meta[name], True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
