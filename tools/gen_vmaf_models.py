"""Write VMAF (libvmaf's vmaf_v0.6.1 family) as ONNX graphs into a directory.

Usage: python tools/gen_vmaf_models.py [--library-names] OUTDIR [MODELS_DIR]

MODELS_DIR holds libvmaf's model files (vmaf_v0.6.1.json, vmaf_4k_v0.6.1.json,
vmaf_v0.6.1neg.json); tools/fetch_vmaf_reference.sh fetches them into the build cache. They are
read at generation time and never committed.

Graphs written (opset 17, IR 8, only operators on the library's allow-list; the features
graph has 4 Loop nodes, the library's limit):

  vmaf_features.onnx       libvmaf's integer elementary features of one frame pair
  vmaf_features_kernels.onnx  the same through the library's fused kernels (its form for ORT's
                           CPU EP and for CUDA where the GPU kernels are ready, named in
                           vmaf_features.json's "forms"; likewise vmaf_features_neg_kernels)
  vmaf_features_accel.onnx the same, laid out for accelerators (whole frames, no Loop, static
                           once H and W are fixed; likewise vmaf_features_neg_accel)
  vmaf_features_neg.onnx   the same with the enhancement-gain limits of vmaf_v0.6.1neg
                           (vif_enhn_gain_limit = adm_enhn_gain_limit = 1.0)
  vmaf_v0.6.1.onnx, vmaf_4k_v0.6.1.onnx, vmaf_v0.6.1neg.onnx
                           the nu-SVR (RBF) of each model: normalised features -> score

Features graph
  inputs   reference, distorted, reference_prev: float [1,1,H,W], luma / (2^bpc - 1) as the
           library feeds it (H, W symbolic); reference_prev is the previous frame's reference
           (the frame itself for the first frame, which makes motion 0 as in libvmaf);
           bpc: float [1], the source bit depth (8..16).
  outputs  vif_scale0..vif_scale3, adm2, motion: float [1].
  motion is libvmaf's per-frame SAD score (VMAF_integer_feature_motion_score); motion2, the
  feature the model uses, is temporal: motion2[0] = 0, motion2[t] = min(motion[t], motion[t+1])
  for 0 < t < N-1, motion2[N-1] = motion[N-1] (one frame of look-ahead; see docs/vmaf.md).

SVM graph
  inputs   adm2, motion2, vif_scale0..vif_scale3: float [1]; output vmaf: float [1].

How the integer extractors are followed (libvmaf feature/integer_vif.c, integer_adm.c,
integer_motion.c; the algorithms are reimplemented here, not translated):
  * every feature works in 8-bit sample units: a b-bit sample s counts as s / 2^(b-8), which is
    what libvmaf's per-bit-depth shifts amount to;
  * motion: the 5-tap blur with libvmaf's integer taps and its two rounding shifts, filtered in
    float32 (exact at 8 bit; at 10 bit within 6e-7 of the exact emulation); the SAD is summed
    in double;
  * VIF uses libvmaf's integer filter tables (17/9/5/3 taps over 65536), reflect padding,
    decimation by taking even rows and columns (floor(h/2) x floor(w/2)), and the integer
    statistic's branches (sigma1^2 >= sigma_nsq: log terms; else 1 - sigma2^2 * 4/255^2,
    numerator only when sigma12 > 0 and sigma2^2 > 0, the gain limit on g), evaluated in
    floating point instead of through libvmaf's 16-bit log2 table;
  * ADM uses libvmaf's integer db2 taps (over 32768), its mirror (reflect before, symmetric
    after), the decoupling with the 1-degree angle test and the gain limit, the CSF factors
    (scale 0 the fixed-point constants libvmaf hard-codes), the 3x3 contrast-masking threshold
    (1/30 around, 1/15 in the middle, the same mirror) and the 10% border, in floating point.
Speed: ORT's CPU provider runs node by node, so a whole-frame graph streams every intermediate
through memory. The full-resolution work therefore runs in row slabs inside Loops, whose
intermediates stay in cache: VIF scales 0-2 (scale 3 is one slab outside a Loop), motion from
VIF scale 0's slabs, each decimation from the slabs of the scale before (scan outputs), and
ADM's first scale; ADM's scales 1-3 are whole-frame (G.strips). Every filter is a depthwise Conv
over 16 tiles or row runs stacked as channels (ORT's NCHWc depthwise kernel is 5-40x faster than
its Conv on 1-5 channels); mirrors come from Gather indices and column pads, decimations and the
DWT are filtered at stride 2 (only the kept rows and columns).
Numerics: fp32 filtering on frames centred on their mean (variances are shift-invariant), the
covariance from Var(x - y) (accurate where the frames are close), every frame-wide sum in double.
"""

import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_builtin_models import (ACCEL_SUFFIX, INT64_MAX, IR_VERSION,  # noqa: E402
                                KERNELS_SUFFIX, LIBRARY_DOMAIN, OPSET, Graph, library_model)

PRODUCER = "vmafdnn-gen_vmaf_models"
INT64_MIN = -INT64_MAX - 1
# Row strips per frame stacked as channels (g.strips): 16 is AVX-512's NCHWc block.
STRIPS = 16
# VIF's Loops cut each frame into STRIPS column tiles stacked as channels and walk down the
# rows in slabs of about VIF_SLAB_SAMPLES samples per tile (at least VIF_MIN_ROWS rows): one map
# of a slab is ~256 KiB, so the slab's ~40 intermediates stay in L2. Measured at 1080p: 2048 to
# 8192 samples alike, 16384 5% slower; 8 rows of full width (no tiles) 15% slower.
VIF_SLAB_SAMPLES = 4096
VIF_MIN_ROWS = 16
# ADM's first-scale Loop: band rows per run such that a map of a run is about this many samples
# (STRIPS runs per iteration).
ADM_SLAB_SAMPLES = 4096
# Both, on a GPU or NPU (the graph's device_type input, fed by the library from the session's EP):
# there a Loop trip costs a few hundred kernel launches and caches do not matter, so the slabs are
# as large as this (2160p in one trip; a map of a slab is 8M samples, ~1.3 GB of intermediates at
# most). Measured on an H100 (CUDA EP): 1080p 6.9 -> 38.6 fps, 2160p 2.2 -> 14.7 fps.
ACCEL_SLAB_SAMPLES = 1 << 19

MODEL_FILES = {
    # graph name -> (model file, features graph)
    "vmaf_v0.6.1": ("vmaf_v0.6.1.json", "vmaf_features"),
    "vmaf_4k_v0.6.1": ("vmaf_4k_v0.6.1.json", "vmaf_features"),
    "vmaf_v0.6.1neg": ("vmaf_v0.6.1neg.json", "vmaf_features_neg"),
}
FEATURES = ["vif_scale0", "vif_scale1", "vif_scale2", "vif_scale3", "adm2", "motion"]
# libvmaf's names in the model files -> ours
MODEL_FEATURE_NAMES = {
    "VMAF_integer_feature_adm2_score": "adm2",
    "VMAF_integer_feature_motion2_score": "motion2",
    "VMAF_integer_feature_vif_scale0_score": "vif_scale0",
    "VMAF_integer_feature_vif_scale1_score": "vif_scale1",
    "VMAF_integer_feature_vif_scale2_score": "vif_scale2",
    "VMAF_integer_feature_vif_scale3_score": "vif_scale3",
}
SVM_INPUTS = ["adm2", "motion2", "vif_scale0", "vif_scale1", "vif_scale2", "vif_scale3"]

# --- libvmaf's constants ------------------------------------------------------------------------
MOTION_TAPS = [3571, 16004, 26386, 16004, 3571]                       # over 65536
VIF_TAPS = [
    [489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
     489],
    [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244],
    [3571, 16004, 26386, 16004, 3571],
    [10904, 43728, 10904],
]                                                                     # over 65536
VIF_SIGMA_NSQ = 2.0
VIF_SIGMA_MAX_INV = 4.0 / (255.0 * 255.0)
DB2_LO = [15826, 27411, 7345, -4240]                                  # over 32768
DB2_HI = [-4240, -7345, 27411, -15826]
ADM_BORDER_FACTOR = 0.1
ADM_NORM_VIEW_DIST = 3.0
ADM_REF_DISPLAY_HEIGHT = 1080
# Watson et al. 1997 noise-floor model, luma row, and the 7-9 basis amplitudes A[lambda][theta].
ADM_A, ADM_K, ADM_F0, ADM_G = 0.495, 0.466, 0.401, [1.501, 1.0, 0.534, 1.0]
ADM_BASIS_AMP = [
    [0.62171, 0.67234, 0.72709, 0.67234],
    [0.34537, 0.41317, 0.49428, 0.41317],
    [0.18004, 0.22727, 0.28688, 0.22727],
    [0.091401, 0.11792, 0.15214, 0.11792],
]
# Scale 0's CSF factors are fixed-point constants in libvmaf (for the default viewing distance).
ADM_RFACTOR_S0 = [36453 / 2.0 ** 21, 36453 / 2.0 ** 21, 49417 / 2.0 ** 23]
COS_1DEG_SQ = float(np.float32(math.cos(math.pi / 180.0) ** 2))
ADM_MASK_KERNEL = np.full((1, 3, 3), 1.0 / 30.0, np.float32)
ADM_MASK_KERNEL[0, 1, 1] = 1.0 / 15.0


def adm_rfactors(scale):
    """1 / quantisation step for (h, v, d) at a scale, in float32 like libvmaf's dwt_quant_step."""
    if scale == 0:
        return ADM_RFACTOR_S0
    f32 = np.float32
    r = f32(ADM_NORM_VIEW_DIST * ADM_REF_DISPLAY_HEIGHT * math.pi / 180.0)
    out = []
    for theta in (1, 1, 2):
        temp = f32(math.log10(2.0 ** (scale + 1) * f32(ADM_F0) * f32(ADM_G[theta]) / r))
        q = f32(2.0 * f32(ADM_A) * 10.0 ** (f32(ADM_K) * temp * temp)
                / f32(ADM_BASIS_AMP[scale][theta]))
        out.append(float(f32(1.0) / q))
    return out


# --- graph helpers --------------------------------------------------------------------------------

class G(Graph):
    def f(self, v):
        return self.const(v, np.float32)

    def d(self, v):
        return self.const(v, np.float64)

    def i(self, v):
        return self.const(v, np.int64)

    def slice(self, x, start, end, axis, step=1):
        return self.op("Slice", x, self.i([start]), self.i([end]), self.i([axis]), self.i([step]))

    def pad(self, x, axis, before, after, mode_before="reflect", mode_after="reflect"):
        """Mirror padding along one axis. reflect: ...cb|abc..., symmetric: ...ba|abc...
        (and the same at the far end)."""
        parts = []
        if before:
            if mode_before == "reflect":
                parts.append(self.slice(x, before, 0, axis, -1))
            else:
                parts.append(self.slice(x, before - 1, INT64_MIN, axis, -1))
        parts.append(x)
        if after:
            if mode_after == "reflect":
                parts.append(self.slice(x, -2, -2 - after, axis, -1))
            else:
                parts.append(self.slice(x, -1, -1 - after, axis, -1))
        return self.op("Concat", *parts, axis=axis) if len(parts) > 1 else x

    def strips(self, x, nc, k=1, stride=1, pad=(0, 0, "reflect", "reflect")):
        """[N, C, H, W] (nc = N*C) -> ([1, nc*STRIPS, L, W], ho): the rows cut into STRIPS
        strips stacked as channels, channel (n, c, s), each strip with the k - stride rows of
        halo a vertical k-tap filter of that stride needs, so that every filter runs as a
        depthwise Conv over nc*STRIPS channels (ORT's NCHWc kernels are 5-40x faster than its
        Conv on 1-5 channels). The vertical mirror padding pad = (before, after, mode_before,
        mode_after) is folded into the row indices (no padded copy); rows past the end are
        clamped and give rows that unstrips drops. ho: output rows of that filter."""
        b, a, mode_b, mode_a = pad
        h = self.op("Reshape", self.op("Slice", self.op("Shape", x), self.i([2]), self.i([3])),
                    self.i([]))
        hp = self.op("Add", h, self.i(b + a))
        ho = self.op("Add", self.op("Div", self.op("Sub", hp, self.i(k)), self.i(stride)),
                     self.i(1))
        so = self.op("Div", self.op("Add", ho, self.i(STRIPS - 1)), self.i(STRIPS))
        length = self.op("Add", self.op("Mul", self.op("Sub", so, self.i(1)), self.i(stride)),
                         self.i(k))
        first = self.op("Mul", self.op("Range", self.i(0), self.i(STRIPS), self.i(1)),
                        self.op("Mul", so, self.i(stride)))
        rows = self.op("Add", self.op("Unsqueeze", first, self.i([1])),
                       self.op("Unsqueeze", self.op("Range", self.i(0), length, self.i(1)),
                               self.i([0])))                                 # [STRIPS, L]
        rows = self.op("Sub", self.op("Min", rows, self.op("Sub", hp, self.i(1))), self.i(b))
        if b:
            back = self.i(0 if mode_b == "reflect" else -1)
            rows = self.op("Where", self.op("Less", rows, self.i(0)),
                           self.op("Add", self.op("Neg", rows), back), rows)
        if a:
            last = self.op("Sub", self.op("Mul", h, self.i(2)),
                           self.i(2 if mode_a == "reflect" else 1))
            rows = self.op("Where", self.op("GreaterOrEqual", rows, h),
                           self.op("Sub", last, rows), rows)
        xs = self.op("Gather", x, rows, axis=2)                            # [N, C, S, L, W]
        xs = self.op("Reshape", xs,
                     self.op("Concat", self.i([1, nc * STRIPS]),
                             self.op("Slice", self.op("Shape", xs), self.i([3]), self.i([5])),
                             axis=0))
        return xs, ho

    def unstrips(self, y, n, c, ho):
        """[1, n*c*STRIPS, So, W] -> [n, c, ho, W]: the strips back in row order."""
        y = self.op("Reshape", y, self.i([n, c, -1, 0]))
        return self.op("Slice", y, self.i([0]), self.op("Reshape", ho, self.i([1])),
                       self.i([2]))

    def dw(self, x, kernels, strides=(1, 1)):
        """Depthwise Conv of strips [1, C*STRIPS, L, W]; kernels [C, kh, kw], one per strip
        group in channel order."""
        kern = np.repeat(np.asarray(kernels, np.float32), STRIPS, axis=0)
        return self.op("Conv", x, self.f(kern[:, None]), group=kern.shape[0],
                       strides=list(strides))

    def sum_double(self, x):
        return self.op("ReduceSum", self.op("Cast", x, to=TensorProto.DOUBLE), keepdims=0)

    def dims(self, x):
        """(H, W) of [1, 1, H, W] as int64 [1] tensors."""
        shape = self.op("Shape", x)
        return (self.op("Slice", shape, self.i([2]), self.i([3])),
                self.op("Slice", shape, self.i([3]), self.i([4])))

    def to_output(self, x, name):
        """Any-shape single value (float or double) -> float32 [1] output `name`."""
        as_float = self.op("Cast", x, to=TensorProto.FLOAT)
        self.nodes.append(helper.make_node("Reshape", [as_float, self.i([1])], [name],
                                           name=f"n{self._count}_Reshape"))
        self._count += 1


def finish(g, name, inputs, outputs, doc):
    graph = helper.make_graph(g.nodes, name, inputs, outputs, initializer=g.inits)
    graph.doc_string = doc
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=PRODUCER, producer_version="1")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


# --- motion ---------------------------------------------------------------------------------------

def motion_blur(g, f, rnd):
    """libvmaf's 5-tap integer motion blur of f (centred levels, 2 rows and columns of mirror
    halo) with its two rounding shifts, in 1/256-level sums; g.dw gives each channel group the
    taps."""
    k = len(MOTION_TAPS)
    t = np.asarray(MOTION_TAPS, np.float32)
    v = g.op("Floor", g.op("Add", g.dw(f, t.reshape(1, k, 1) / np.float32(256.0)), rnd))
    return g.op("Floor", g.op("Add", g.dw(v, t.reshape(1, 1, k) / np.float32(65536.0)),
                              g.f(0.5)))


def motion_sad(g, xs, ps, rnd, weights, keep):
    """libvmaf's integer motion blur of two slabs of centred levels (VIF scale 0's slabs) and
    the sum of |difference| of the blurred frames in 1/256 of a level over the slab's owned
    samples (weights per column, keep per row). The blur is the 5-tap integer filter with
    libvmaf's two rounding shifts, in the same centred 1/256-level sums as VIF's means (the
    centring cancels in the difference), filtered in float32: exact at 8 bit, at 10 bit within
    6e-7 of the exact emulation."""
    blurred = [motion_blur(g, f, rnd) for f in (xs, ps)]
    ad = g.op("Cast", g.op("Abs", g.op("Sub", *blurred)), to=TensorProto.DOUBLE)
    return g.op("ReduceSum", g.op("Where", keep, g.op("MatMul", ad, weights), g.d(0.0)),
                keepdims=0)


def motion_score(g, sad, h, w):
    """libvmaf's motion score from the SAD (double, 1/256 of a level) of a w x h frame:
    (float)(sad / 256.) / (w * h), the quotient in double."""
    sad = g.op("Cast", g.op("Cast", g.op("Div", sad, g.d(256.0)), to=TensorProto.FLOAT),
               to=TensorProto.DOUBLE)
    area = g.op("Cast", g.op("Mul", h, w), to=TensorProto.DOUBLE)
    return g.op("Div", sad, g.op("Reshape", area, g.i([])))


# --- VIF ------------------------------------------------------------------------------------------

def vif_scale(g, xi, yi, centre, taps, rnd, gain_limit, scale, prev=None, dec=None):
    """One VIF scale in a Loop over row slabs of the frames. xi, yi: [1, 1, h, w] frames in
    levels, centred on the integer level `centre` (at scale 0 from the raw samples, above from
    libvmaf's uint16 frames in 1/256 of a level); rnd: the rounding of the vertical pass of the
    means in that pass's 1/256-level sums.
    prev (scale 0 only): the previous reference frame, centred like xi; libvmaf's motion SAD of
    xi and prev then comes from the same slabs (motion_sad).
    dec = (next taps, to_units, rnd_units): the slabs also give libvmaf's decimation of both
    frames for the next scale (vif_decimate), centred levels [1, 1, h // 2, w // 2].
    Returns [num, den (double scalars, log2 units), (sad), (next x, next y)].
    Each slab is STRIPS column tiles of tw columns stacked as channels (one depthwise Conv per
    map), with r rows and columns of halo mirrored through the indices: about
    VIF_SLAB_SAMPLES samples per tile and map, so that the slab's ~40 intermediates stay in
    cache instead of streaming whole frames through memory. Slabs and tiles start at multiples
    of their (even) size and may run past the frame: the rows and columns past it count 0 and
    are cropped from the decimated frames."""
    k = len(taps)
    r = k // 2
    t = np.asarray(taps, np.float32) / np.float32(65536.0)
    tv, th = t.reshape(1, k, 1), t.reshape(1, 1, k)
    h, w = (g.op("Reshape", v, g.i([])) for v in g.dims(xi))

    def even_ceil(v, d):
        return g.op("Mul", g.op("Div", g.op("Add", v, g.i(2 * d - 1)), g.i(2 * d)), g.i(2))

    tw = even_ceil(w, STRIPS)                                  # tile width, even
    tiles_w = g.op("Mul", tw, g.i(STRIPS))
    cols = g.op("Add", g.op("Unsqueeze", g.op("Mul", g.op("Range", g.i(0), g.i(STRIPS), g.i(1)),
                                                      tw), g.i([1])),
                g.op("Unsqueeze", g.op("Range", g.i(0), tw, g.i(1)), g.i([0])))  # [S, tw]
    col_weight = g.op("Unsqueeze", g.op("Cast", g.op("Less", cols, w), to=TensorProto.DOUBLE),
                      g.i([0, 3]))                                             # [1, S, tw, 1]
    tw_halo = g.op("Reshape", g.op("Add", tw, g.i(2 * r)), g.i([1]))
    tiles = []
    for j in range(STRIPS):
        cs = g.op("Reshape", g.op("Mul", tw, g.i(j)), g.i([1]))
        tiles.append((cs, g.op("Add", cs, tw_halo)))

    def padded(f):
        # reflect r columns on both sides, then the columns up to STRIPS * tw + 2r (only
        # ever filtered into columns that count 0) by repeating the last one
        last = g.op("Slice", f, g.i([-1]), g.i([INT64_MAX]), g.i([3]))
        extra = g.op("Expand", last, g.op("Concat", g.i([1, 1]), g.op("Reshape", h, g.i([1])),
                                          g.op("Reshape", g.op("Sub", tiles_w, w), g.i([1])),
                                          axis=0))
        return g.op("Concat", g.slice(f, r, 0, 3, -1), f, g.slice(f, -2, -2 - r, 3, -1), extra,
                    axis=3)

    # rows per slab: even, about VIF_SLAB_SAMPLES per tile, at least VIF_MIN_ROWS, at most the
    # frame (rounded up to even)
    rows = even_ceil(h, 1)
    if scale < 3:
        # (scale 3, 1/64 of the frame, is one slab outside a Loop)
        rows = g.op("Min", rows, g.op("Max", even_ceil(g.op("Div", g.vif_slab_samples, tw), 1),
                                      g.i(VIF_MIN_ROWS)))
    trips = g.op("Div", g.op("Sub", g.op("Add", h, rows), g.i(1)), rows)
    window = g.op("Sub", g.op("Range", g.i(0), g.op("Add", rows, g.i(2 * r)), g.i(1)), g.i(r))
    row_ids = g.op("Unsqueeze", g.op("Range", g.i(0), rows, g.i(1)), g.i([1]))    # [rows, 1]
    mirror_end = g.op("Sub", g.op("Mul", h, g.i(2)), g.i(2))
    frames = [padded(xi), padded(yi)]
    if prev is not None:
        prev_p = padded(prev)
        # the 5-tap motion blur leaves m = r - 2 rows and columns of halo on each side
        m = r - len(MOTION_TAPS) // 2
        motion_weights = g.op("Pad", col_weight, g.i([0, 0, m, 0, 0, 0, m, 0]))
        motion_rows = g.op("Unsqueeze", g.op("Sub", g.op("Range", g.i(0), g.op(
            "Add", rows, g.i(2 * m)), g.i(1)), g.i(m)), g.i([1]))              # [rows + 2m, 1]
        in_slab = g.op("And", g.op("GreaterOrEqual", motion_rows, g.i(0)),
                       g.op("Less", motion_rows, rows))

    b = G(f"v{scale}_")
    start = b.op("Mul", b.prefix + "iter", rows)
    keep = b.op("Less", b.op("Add", row_ids, start), h)                        # [rows, 1]
    idx = b.op("Abs", b.op("Add", start, window))              # reflect above row 0
    idx = b.op("Where", b.op("Less", idx, h), idx, b.op("Sub", mirror_end, idx))  # and below
    idx = b.op("Max", idx, b.i(0))                             # rows far past the end: any

    def slab(f):
        # the slab's rows (mirrored through the indices), then its column tiles as channels
        # (Slices: ORT's Gather on the last axis copies sample by sample)
        rows_ = b.op("Gather", f, idx, axis=2)                          # [1, 1, L, S * tw + 2r]
        return b.op("Concat", *(b.op("Slice", rows_, cs, ce, b.i([3])) for cs, ce in tiles),
                    axis=1)                                                    # [1, S, L, T]

    ti = np.asarray(taps, np.float32)
    mx, my, qx, qy, x, y, nxt = [], [], [], [], [], [], []
    for f, means, rounded, moments in ((frames[0], mx, qx, x), (frames[1], my, qy, y)):
        xs = slab(f)
        moments.append(xs)
        if dec is not None:
            nxt.append(vif_decimate(b, xs, r, *dec))
        # The means: libvmaf rounds their vertical pass to 1/256 of a level (next to
        # sigma_nsq = 2 that is no detail, 2 * mu * 2^-9, so that pass is emulated exactly),
        # and the same vertical sums give the unrounded means: v = sum(tap * x) / 256 in
        # 1/256-level units, exact in fp32 at 8 bit (integer sums below 2^24). The frames are
        # centred on an integer level, which leaves floor(v + rnd) - 256 * centre unchanged.
        if not scale:
            # scale 0: centred levels straight from the frame, filtered unsplit (exact at 8
            # bit; at 10 bit within 7e-7 in the features)
            v = b.dw(xs, ti.reshape(1, k, 1) / np.float32(256.0))
            tmp = b.op("Floor", b.op("Add", v, rnd))
        else:
            # scales 1-3: centred levels with 8 fractional bits, split into the integer level
            # and the fraction so that every filtered sum stays below 2^24 and the rounded
            # pass is bit-exact: floor((256 hi + lo + rnd) / 65536) as
            # floor((hi + floor(lo / 256 + rnd / 256)) / 256) with lo / 256 the fraction
            hi = b.op("Floor", xs)
            sh = b.dw(hi, ti.reshape(1, k, 1))
            sf = b.dw(b.op("Sub", xs, hi), ti.reshape(1, k, 1))
            tmp = b.op("Floor", b.op("Mul", b.op("Add", sh, b.op("Floor", b.op("Add", sf, rnd))),
                                     b.f(1.0 / 256.0)))
            v = b.op("Add", sh, sf)                            # 65536 * the vertical mean
        # the units (and the taps' 1/65536) folded into the horizontal taps
        means.append(b.dw(v, th / np.float32(65536.0 if scale else 256.0)))
        rounded.append(b.dw(tmp, th / np.float32(256.0)))
    g_outer, g = g, b
    (mx,), (my,), (qx,), (qy,), (x,), (y,) = mx, my, qx, qy, x, y
    e = g.op("Sub", x, y)
    # -fee straight from its Conv (negated taps), for the n-ary Sum below
    fxx, fyy, nfee = (g.dw(g.dw(v, tv * sign), th) for v, sign in
                      ((g.op("Mul", x, x), 1), (g.op("Mul", y, y), 1), (g.op("Mul", e, e), -1)))
    # libvmaf subtracts its rounded means q from uncentred second moments, which is not
    # shift-invariant: on levels centred on c that is sigma1^2 = E[x^2] - q_x^2 + 2c (m_x - q_x),
    # sigma12 = E[xy] - q_x q_y + c (m_x - q_x + m_y - q_y) with E[xy] from Var(x - y),
    # (E[x^2] + E[y^2] - E[(x-y)^2]) / 2, accurate where the frames are close. The centred
    # moments keep the cancellation small.
    num_px, den_px = vif_statistic(g, mx, my, qx, qy, fxx, fyy, nfee, centre, gain_limit)

    def owned_sum(v):
        # [1, S, rows, tw] -> the owned columns' sums per row, in double -> the owned rows
        per_row = g.op("MatMul", g.op("Cast", v, to=TensorProto.DOUBLE), col_weight)
        return g.op("ReduceSum", g.op("Where", keep, per_row, g.d(0.0)), keepdims=0)

    sums = [owned_sum(num_px), owned_sum(den_px)]
    if prev is not None:
        motion_keep = g.op("And", in_slab, g.op("Less", g.op("Add", motion_rows, start), h))
        sums.append(motion_sad(g, x, slab(prev_p), rnd, motion_weights, motion_keep))
    g = g_outer
    outs = slab_loop(g, b, f"vif{scale}_slabs", trips, sums, nxt, loop=scale < 3)
    res = [g.op("Mul", v, g.d(1.0 / math.log(2.0))) for v in outs[:2]] + outs[2:len(sums)]
    for v in outs[len(sums):]:
        # [trips, 1, S, rows / 2, tw / 2] -> [1, 1, h // 2, w // 2]
        v = g.op("Transpose", v, perm=[1, 0, 3, 2, 4])             # [1, trips, rows / 2, S, tw / 2]
        v = g.op("Reshape", g.op("Reshape", v, g.i([0, 0, 0, -1])), g.i([1, 1, -1, 0]))
        hw2 = g.op("Concat", *(g.op("Reshape", g.op("Div", d, g.i(2)), g.i([1]))
                               for d in (h, w)), axis=0)
        res.append(g.op("Slice", v, g.i([0, 0]), hw2, g.i([2, 3])))
    return res


def vif_statistic(g, mx, my, qx, qy, fxx, fyy, nfee, centre, gain_limit, nary_sum=True):
    """libvmaf's integer VIF statistic per pixel from the filtered means m (unrounded), q
    (rounded vertical pass) and second moments E[x^2], E[y^2], -E[(x-y)^2] of frames centred on
    the integer level `centre`: (num, den) maps in natural logs (the sums are scaled by 1/ln 2
    outside). Elementwise: any layout (slabs of tiles, whole frames) works. nary_sum: E[x^2] +
    E[y^2] - E[(x-y)^2] as one Sum (one pass on ORT's CPU EP), else two Adds (the accelerator
    form: ORT's WebGPU EP has no Sum kernel); the same values, ORT's Sum adds left to right."""
    c2 = g.op("Mul", centre, g.f(2.0))
    dx, dy = g.op("Sub", mx, qx), g.op("Sub", my, qy)
    s1 = g.op("Add", g.op("Sub", fxx, g.op("Mul", qx, qx)), g.op("Mul", dx, c2))
    s2 = g.op("Add", g.op("Sub", fyy, g.op("Mul", qy, qy)), g.op("Mul", dy, c2))
    s2 = g.op("Relu", s2)
    moments = (g.op("Sum", fxx, fyy, nfee) if nary_sum else
               g.op("Add", g.op("Add", fxx, fyy), nfee))
    s12 = g.op("Sub", g.op("Mul", moments, g.f(0.5)), g.op("Mul", qx, qy))
    s12 = g.op("Add", s12, g.op("Mul", g.op("Add", dx, dy), centre))

    # libvmaf's statistic per pixel, in natural logs (the sums are scaled by 1/ln 2 outside):
    #   sigma1^2 >= nsq: den = log2(1 + sigma1^2 / nsq), and where sigma12 > 0 and sigma2^2 > 0
    #     num = log2(1 + g^2 sigma1^2 / (sv + nsq)), g = min(sigma12 / sigma1^2, gain limit),
    #     sv = max(sigma2^2 - sigma12^2 / sigma1^2, 0);
    #   else den = 1, num = 1 - sigma2^2 * 4 / 255^2.
    # With t = sigma12^2 / sigma1^2 = g^2 sigma1^2 below the limit, g^2 sigma1^2 is
    # min(t, limit^2 sigma1^2); a sigma12 gated to 0 (Relu, and 0 where sigma2^2 = 0) makes
    # t = 0 and num = log(1) = 0. den: max(sigma1^2, nsq) makes the else branch's 1 come out
    # of the same log (log2(1 + nsq / nsq) = 1).
    nsq = g.f(VIF_SIGMA_NSQ)
    log_branch = g.op("GreaterOrEqual", s1, nsq)
    s1_safe = g.op("Max", s1, nsq)
    den_px = g.op("Log", g.op("Add", g.op("Mul", s1_safe, g.f(1.0 / VIF_SIGMA_NSQ)), g.f(1.0)))
    s12 = g.op("Where", g.op("Greater", s2, g.f(0.0)), g.op("Relu", s12), g.f(0.0))
    t = g.op("Div", g.op("Mul", s12, s12), s1_safe)
    base = g.op("Add", g.op("Relu", g.op("Sub", s2, t)), nsq)
    gain_term = g.op("Min", t, g.op("Mul", s1_safe, g.f(gain_limit * gain_limit)))
    num_log = g.op("Log", g.op("Add", g.op("Div", gain_term, base), g.f(1.0)))
    ln2 = math.log(2.0)
    num_px = g.op("Where", log_branch, num_log,
                  g.op("Sub", g.f(ln2), g.op("Mul", s2, g.f(VIF_SIGMA_MAX_INV * ln2))))
    return num_px, den_px


def slab_loop(g, b, name, trips, sums, scans, loop=True):
    """Runs body b (a G with its own prefix; b.prefix + "iter" is the slab's index) over `trips`
    slabs: returns the totals of `sums` (double scalars) and `scans` stacked over the slabs
    ([trips, ...]). loop=False inlines b into g for a single slab (trips must be 1): a frame
    small enough to stay in cache needs no Loop (the library allows a model 4 of them)."""
    if not loop:
        b.inits.append(numpy_helper.from_array(np.asarray(0, np.int64), b.prefix + "iter"))
        g.nodes += b.nodes
        g.inits += b.inits
        return list(sums) + [g.op("Unsqueeze", v, g.i([0])) for v in scans]
    carried = [(f"{b.prefix}sum{i}", TensorProto.DOUBLE) for i in range(len(sums))]
    body = b.loop_body(name, carried, [b.op("Add", c, v) for (c, _), v in zip(carried, sums)])
    for i, v in enumerate(scans):
        out = f"{b.prefix}scan{i}"
        body.node.append(helper.make_node("Identity", [v], [out], name=f"{b.prefix}n_{out}"))
        body.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    outs = g.op("Loop", trips, g.const(True, np.bool_), *(g.d(0.0) for _ in sums), body=body,
                n_out=len(sums) + len(scans))
    return [outs] if isinstance(outs, str) else outs


def vif_decimate(g, xs, r, taps, to_units, rnd_units, floor_half=False):
    """libvmaf's integer decimation of a slab xs [1, S, rows + 2r, tw + 2r] of centred levels:
    filtered with the next scale's taps (both passes rounded like libvmaf, reflect), even rows
    and columns kept; [1, S, rows / 2, tw / 2] centred levels out (1/256-level integers / 256).
    to_units: the integer units of a level in the input (2^(bpc-8) at scale 0, 256 above);
    rnd_units: the vertical pass's rounding in 1/256 of those units.
    Bit-exact in float32: the integer input u is split into u // 256 and u % 256 (as the
    fraction of u / 256), each filtered sum stays below 2^24 (taps sum to 65536), and
    floor((256 hi + lo + rnd) / (256 div)) is floor((hi + floor(lo / 256 + rnd / 256)) / div).
    Without the split vif_scale3 moves by 1e-5 at 10 bit (5e-4 when the higher scales'
    1/256-level frames are filtered unsplit). Only the kept rows and columns are filtered."""
    k = len(taps)
    ti = np.asarray(taps, np.float32)
    m = r - k // 2
    # the next taps need k // 2 of the r rows and columns of halo; floor_half (whole frames):
    # one row and column less after, so that the stride-2 filters give floor(h/2) x floor(w/2)
    end = m + 1 if floor_half else m
    xs = g.op("Slice", xs, g.i([m, m]), g.i([-end, -end]) if end else g.i([INT64_MAX, INT64_MAX]),
              g.i([2, 3]))
    u = g.op("Mul", xs, g.op("Div", to_units, g.f(256.0)))
    for taps_2d, stride, rnd, div in ((ti.reshape(1, k, 1), (2, 1), rnd_units, to_units),
                                      (ti.reshape(1, 1, k), (1, 2), g.f(128.0), g.f(256.0))):
        hi = g.op("Floor", u)
        sh = g.dw(hi, taps_2d, stride)
        sf = g.dw(g.op("Sub", u, hi), taps_2d, stride)
        q = g.op("Floor", g.op("Add", sf, rnd))
        u = g.op("Floor", g.op("Div", g.op("Add", sh, q), div))     # 1/256-level integers
        u = g.op("Mul", u, g.f(1.0 / 256.0))                       # their 1/256 for the split
    return u                                                        # = centred levels


def vif_scale_params(g, scale, rnd_v, to8):
    """(rnd, dec) of a VIF scale: the rounding of its means' vertical pass and the decimation
    to the next scale (vif_decimate's taps, to_units, rnd_units; None at scale 3)."""
    if scale:
        # libvmaf's uint16 frames in 1/256 of a level from here on
        rnd = g.f(128.0)
        dec = (VIF_TAPS[scale + 1], g.f(256.0), g.f(128.0)) if scale < 3 else None
    else:
        # rounding of the means' vertical pass in its 1/256-level sums (see vif_scale)
        rnd = g.op("Div", rnd_v, g.op("Mul", to8, g.f(256.0)))
        dec = (VIF_TAPS[1], to8, g.op("Div", rnd_v, g.f(256.0)))
    return rnd, dec


def vif_features(g, xc, yc, pc, centre, rnd_v, to8, gain_limit):
    """xc, yc: the frames in levels, centred on `centre`; pc: the previous reference frame,
    centred. rnd_v, to8: libvmaf's rounding of the first pass and 2^(bpc-8). Returns the four
    VIF scores and the motion score."""
    scores = []
    motion = None
    for scale in range(4):
        rnd, dec = vif_scale_params(g, scale, rnd_v, to8)
        out = vif_scale(g, xc, yc, taps=VIF_TAPS[scale], rnd=rnd, gain_limit=gain_limit,
                        scale=scale, centre=centre, prev=None if scale else pc, dec=dec)
        num, den = out[:2]
        if not scale:
            motion = motion_score(g, out[2], *g.dims(xc))
        if dec is not None:
            xc, yc = out[-2:]
        # libvmaf stores num and den as float and divides in float
        num = g.op("Cast", num, to=TensorProto.FLOAT)
        den = g.op("Cast", den, to=TensorProto.FLOAT)
        scores.append(g.op("Div", num, den))
    return scores, motion


# --- ADM ------------------------------------------------------------------------------------------

def dwt2(g, x):
    """One db2 level of [2, 1, h, w] -> (a, h, v, d), each [2, 1, ceil(h/2), ceil(w/2)].
    Mirror: row -1 = row 1, row h = row h-1, row h+1 = row h-2 (and the same for columns);
    the second after-sample only matters for odd sizes and is cropped away otherwise.
    Columns are mirrored before the strips and each band has its own pair of Convs, so no
    channel Concat/Split copies the bands."""
    lo = np.asarray(DB2_LO, np.float32) / 32768.0
    hi = np.asarray(DB2_HI, np.float32) / 32768.0
    xs, ho = g.strips(g.pad(x, 3, 1, 2, "reflect", "symmetric"), 2, 4, 2,
                      pad=(1, 2, "reflect", "symmetric"))
    bands = []
    for tv in (lo, hi):
        v = g.dw(xs, np.repeat(tv.reshape(1, 4, 1), 2, axis=0), (2, 1))
        for th in (lo, hi):
            b = g.dw(v, np.repeat(th.reshape(1, 1, 4), 2, axis=0), (1, 2))
            bands.append(g.unstrips(b, 2, 1, ho))
    # (lo_v lo_h, lo_v hi_h, hi_v lo_h, hi_v hi_h) as libvmaf's (a, v, h, d)
    a, v, h, d = bands
    return a, h, v, d


def border(g, n):
    """libvmaf's (int)(n * 0.1 - 0.5), n an int64 [1] tensor of a band size >= 17."""
    nf = g.op("Cast", n, to=TensorProto.DOUBLE)
    b = g.op("Floor", g.op("Sub", g.op("Mul", nf, g.d(ADM_BORDER_FACTOR)), g.d(0.5)))
    return g.op("Cast", g.op("Max", b, g.d(0.0)), to=TensorProto.INT64)


def adm_decouple(g, o, t, gain_limit):
    """libvmaf's decoupling of the distorted detail bands t = (h, v, d) into the restored part
    and the additive impairment, given the reference bands o: (restored, additive)."""
    angle = adm_angle(g, o[0], o[1], t[0], t[1])
    zero = g.f(0.0)
    restored, additive = [], []
    for ob, tb in zip(o, t):
        r, a = adm_restore(g, ob, tb, angle, gain_limit, zero)
        restored.append(r)
        additive.append(a)
    return restored, additive


def adm_angle(g, oh, ov, th, tv):
    """libvmaf's 1-degree angle test on the (h, v) detail bands (symmetric in h and v)."""
    ot_dp = g.op("Add", g.op("Mul", oh, th), g.op("Mul", ov, tv))
    o_mag = g.op("Add", g.op("Mul", oh, oh), g.op("Mul", ov, ov))
    t_mag = g.op("Add", g.op("Mul", th, th), g.op("Mul", tv, tv))
    return g.op("And", g.op("GreaterOrEqual", ot_dp, g.f(0.0)),
                g.op("GreaterOrEqual", g.op("Mul", ot_dp, ot_dp),
                     g.op("Mul", g.op("Mul", o_mag, t_mag), g.f(COS_1DEG_SQ))))


def adm_restore(g, ob, tb, angle, gain_limit, zero):
    """The decoupling of one distorted band tb (or several stacked as channels) given the
    reference ob: (restored, additive). Elementwise."""
    # k = clip(t / o, 0, 1), 1 where o == 0 (then r = 0 whatever k is)
    o_nz = g.op("Where", g.op("Equal", ob, zero), g.f(1.0), ob)
    k = g.op("Clip", g.op("Div", tb, o_nz), zero, g.f(1.0))
    r = g.op("Mul", k, ob)
    # within the angle: min(gain * r, t) where r > 0, max(gain * r, t) where r < 0, 0 where
    # r = 0. r != 0 has the sign of t (k > 0), so that is t clipped to the interval between
    # 0 and gain * r: two Min and two Max instead of two more Where (ORT's is ~5x slower)
    rg = g.op("Mul", r, g.f(gain_limit))
    en = g.op("Max", g.op("Min", tb, g.op("Relu", rg)), g.op("Min", rg, zero))
    r = g.op("Where", angle, en, r)
    return r, g.op("Sub", tb, r)


def adm_masking(g, additive, rf):
    """The sum over the three bands of |csf(additive)|, which the 3x3 ADM_MASK_KERNEL turns into
    the contrast-masking threshold."""
    abs_csf_a = [g.op("Abs", g.op("Mul", a, g.f(f))) for a, f in zip(additive, rf)]
    return g.op("Sum", *abs_csf_a)


def adm_cube_sums(g, restored, o, thr, rf):
    """Per band, the cubes (fp32) of the masked restored and of the reference detail, csf
    weighted: [num_h, num_v, num_d, den_h, den_v, den_d] maps."""
    nums = [g.op("Relu", g.op("Sub", g.op("Abs", g.op("Mul", rb, g.f(f))), thr))
            for rb, f in zip(restored, rf)]
    dens = [g.op("Abs", g.op("Mul", ob, g.f(f))) for ob, f in zip(o, rf)]
    return [g.op("Mul", g.op("Mul", v, v), v) for v in nums + dens]


def adm_scale(g, o, t, scale, gain_limit):
    """num, den (double scalars) of one ADM scale from the detail bands o = (h, v, d) of the
    reference and t of the distorted frame, [1, 1, h, w] each."""
    rf = adm_rfactors(scale)
    oh = o[0]
    restored, additive = adm_decouple(g, o, t, gain_limit)

    # contrast-masking threshold: 3x3 sum over the three bands of |csf(a)|, 1/30 around and
    # 1/15 in the middle, mirrored like the DWT (row -1 = row 1, row h = row h-1)
    m = adm_masking(g, additive, rf)
    ms, ho = g.strips(m, 1, 3, pad=(1, 1, "reflect", "symmetric"))
    thr = g.unstrips(g.dw(g.pad(ms, 3, 1, 1, "reflect", "symmetric"), ADM_MASK_KERNEL), 1, 1, ho)

    h, w = g.dims(oh)
    top, left = border(g, h), border(g, w)
    bottom, right = g.op("Sub", h, top), g.op("Sub", w, left)
    starts = g.op("Concat", top, left, axis=0)
    ends = g.op("Concat", bottom, right, axis=0)
    axes = g.i([2, 3])

    def inner(x):
        return g.op("Slice", x, starts, ends, axes)

    thr_in = inner(thr)
    # cubes in fp32 (2^-23 relative each), summed in double: half the traffic of cubing in
    # double, ~1e-7 in adm2
    cubes = adm_cube_sums(g, [inner(v) for v in restored], [inner(v) for v in o], thr_in, rf)
    return adm_totals(g, [g.sum_double(v) for v in cubes], h, w)


def adm_area_term(g, h, w):
    """cbrt(area / 32) of the inner region (the 10% border off) of a band of h x w."""
    top, left = border(g, h), border(g, w)
    area = g.op("Cast", g.op("Mul", g.op("Sub", g.op("Sub", h, top), top),
                             g.op("Sub", g.op("Sub", w, left), left)), to=TensorProto.DOUBLE)
    return g.op("Pow", g.op("Div", g.op("Reshape", area, g.i([])), g.d(32.0)), g.d(1.0 / 3.0))


def adm_totals(g, sums, h, w):
    """num, den of one scale from the six cube sums (adm_cube_sums) of a band of h x w."""
    add = adm_area_term(g, h, w)
    roots = [g.op("Add", g.op("Pow", v, g.d(1.0 / 3.0)), add) for v in sums]
    return g.op("Sum", *roots[:3]), g.op("Sum", *roots[3:])


def adm_scale0(g, x, y, gain_limit):
    """ADM's first scale in a Loop: num, den (double scalars) and the approximation bands of
    both frames, [2, 1, ceil(h/2), ceil(w/2)], for the next scale.
    Each iteration takes STRIPS runs of `rb` band rows stacked as channels (about
    ADM_SLAB_SAMPLES samples per channel and map), each run with one band row of halo for the
    3x3 threshold. A band row's four input rows come from one Gather (its 2j-1..2j+2, mirrored
    like the DWT) and the vertical filters run at stride 4, so the band-level mirror of the
    halo rows (band row -1 = row 1, row hb = row hb-1) costs nothing extra. The runs start at
    multiples of rb and may run past the band: those rows count 0 and are cropped."""
    lo = np.asarray(DB2_LO, np.float32) / 32768.0
    hi = np.asarray(DB2_HI, np.float32) / 32768.0
    rf = adm_rfactors(0)
    h, w = (g.op("Reshape", v, g.i([])) for v in g.dims(x))
    hb = g.op("Div", g.op("Add", h, g.i(1)), g.i(2))
    wb = g.op("Div", g.op("Add", w, g.i(1)), g.i(2))
    runs = g.op("Div", g.op("Add", hb, g.i(STRIPS - 1)), g.i(STRIPS))
    rb = g.op("Max", g.op("Min", g.op("Div", g.adm_slab_samples, wb), runs), g.i(1))
    per_iter = g.op("Mul", rb, g.i(STRIPS))
    trips = g.op("Div", g.op("Sub", g.op("Add", hb, per_iter), g.i(1)), per_iter)
    # band rows of the runs relative to their first (halo included) and their input rows
    band_win = g.op("Range", g.i(-1), g.op("Add", rb, g.i(1)), g.i(1))           # [rb + 2]
    run_first = g.op("Unsqueeze", g.op("Mul", g.op("Range", g.i(0), g.i(STRIPS), g.i(1)), rb),
                     g.i([1]))                                                 # [S, 1]
    taps4 = g.i([-1, 0, 1, 2])
    sym_b = g.op("Sub", g.op("Mul", hb, g.i(2)), g.i(1))
    sym_x = g.op("Sub", g.op("Mul", h, g.i(2)), g.i(1))
    own_win = g.op("Range", g.i(0), rb, g.i(1))
    hb1, wb1 = (g.op("Reshape", v, g.i([1])) for v in (hb, wb))
    top, left = border(g, hb1), border(g, wb1)
    top_s = g.op("Reshape", top, g.i([]))
    bottom = g.op("Reshape", g.op("Sub", hb1, top), g.i([]))
    cols = g.op("Range", g.i(0), wb, g.i(1))
    col_weight = g.op("Cast", g.op("And", g.op("GreaterOrEqual", cols, left),
                                   g.op("Less", cols, g.op("Sub", wb1, left))),
                      to=TensorProto.DOUBLE)
    col_weight = g.op("Unsqueeze", col_weight, g.i([0, 1, 3]))                  # [1, 1, wb, 1]
    frames = [g.pad(f, 3, 1, 2, "reflect", "symmetric") for f in (x, y)]

    b = G("a0_")
    first = b.op("Add", b.op("Mul", "a0_iter", per_iter), run_first)            # [S, 1]
    j = b.op("Abs", b.op("Add", first, band_win))                # band row -1 = row 1
    j = b.op("Where", b.op("Less", j, hb), j, b.op("Sub", sym_b, j))   # row hb = row hb - 1
    j = b.op("Max", j, b.i(0))                                   # rows far past: any
    rows = b.op("Abs", b.op("Add", b.op("Unsqueeze", b.op("Mul", j, b.i(2)), b.i([2])), taps4))
    rows = b.op("Where", b.op("Less", rows, h), rows, b.op("Sub", sym_x, rows))
    rows = b.op("Reshape", b.op("Max", rows, b.i(0)), b.op("Concat", b.i([STRIPS]), b.i([-1]),
                                                          axis=0))      # [S, 4 (rb + 2)]
    bands = []
    for f in frames:
        xs = b.op("Squeeze", b.op("Gather", f, rows, axis=2), b.i([1]))  # [1, S, 4(rb+2), w+3]
        per = {}
        for vname, tv in (("lo", lo), ("hi", hi)):
            v = b.dw(xs, tv.reshape(1, 4, 1), (4, 1))
            for hname, th in (("lo", lo), ("hi", hi)):
                per[vname + hname] = b.dw(v, th.reshape(1, 1, 4), (1, 2))
        # libvmaf's (a, h, v, d): h = hi_v lo_h, v = lo_v hi_h
        bands.append((per["lolo"], per["hilo"], per["lohi"], per["hihi"]))
    (ax, *o), (ay, *t) = bands
    restored, additive = adm_decouple(b, o, t, gain_limit)
    m = adm_masking(b, additive, rf)
    # the threshold's column mirror (col -1 = col 1, col wb = col wb - 1), then its 3x3 filter
    m = b.op("Concat", b.slice(m, 1, 2, 3), m, b.slice(m, -1, INT64_MAX, 3), axis=3)
    thr = b.dw(m, ADM_MASK_KERNEL)                                             # [1, S, rb, wb]

    def owned(v):
        return b.op("Slice", v, b.i([1]), b.op("Reshape", b.op("Add", rb, b.i(1)), b.i([1])),
                    b.i([2]))

    cubes = adm_cube_sums(b, [owned(v) for v in restored], [owned(v) for v in o], thr, rf)
    band_rows = b.op("Add", first, b.op("Unsqueeze", own_win, b.i([0])))        # [S, rb]
    keep = b.op("Unsqueeze", b.op("And", b.op("GreaterOrEqual", band_rows, top_s),
                                  b.op("Less", band_rows, bottom)), b.i([0, 3]))
    sums = [b.op("ReduceSum", b.op("Where", keep, b.op("MatMul", b.op(
        "Cast", v, to=TensorProto.DOUBLE), col_weight), b.d(0.0)), keepdims=0) for v in cubes]
    outs = slab_loop(g, b, "adm0_slabs", trips, sums, [owned(ax), owned(ay)])
    num, den = adm_totals(g, outs[:6], hb1, wb1)
    shape = g.op("Concat", g.i([1, 1, -1]), wb1, axis=0)
    approx = [g.op("Slice", g.op("Reshape", v, shape), g.i([0]), hb1, g.i([2]))
              for v in outs[6:]]
    return num, den, g.op("Concat", *approx, axis=0)


def adm2(g, x, y, gain_limit):
    num, den, both = adm_scale0(g, x, y, gain_limit)
    for scale in range(1, 4):
        a, bh, bv, bd = dwt2(g, both)
        oh, th = g.op("Split", bh, axis=0, n_out=2)
        ov, tv = g.op("Split", bv, axis=0, n_out=2)
        od, td = g.op("Split", bd, axis=0, n_out=2)
        n, d = adm_scale(g, (oh, ov, od), (th, tv, td), scale, gain_limit)
        num, den = g.op("Add", num, n), g.op("Add", den, d)
        both = a
    # libvmaf zeroes num/den below 1e-10 * w*h/1080p and returns 1 for den == 0; both sums hold
    # 12 terms of cbrt(area/32) > 0, so neither case can occur and the ratio is all there is.
    return g.op("Div", num, den)


# --- the features graph ---------------------------------------------------------------------------

def centred_frames(g, bpc, samples=False):
    """The three fed planes (sample / (2^bpc - 1), or with ``samples`` the UINT16 samples
    themselves) as levels in 8-bit units centred on the reference's mean level (an integer):
    (ref, dis, prev, centre, rnd_v, to8) with libvmaf's 2^(bpc-1) rounding and 2^(bpc-8)."""
    peak = g.op("Sub", g.op("Pow", g.f(2.0), bpc), g.f(1.0))
    to8 = g.op("Pow", g.f(2.0), g.op("Sub", bpc, g.f(8.0)))       # 2^(bpc-8)
    rnd_v = g.op("Pow", g.f(2.0), g.op("Sub", bpc, g.f(1.0)))     # libvmaf's 2^(bpc-1)

    def integers(x):
        if samples:
            return g.op("Cast", x, to=TensorProto.FLOAT)
        return g.op("Round", g.op("Mul", x, peak))

    ref_i, dis_i, prev_i = integers("reference"), integers("distorted"), integers("reference_prev")
    ref8 = g.op("Div", ref_i, to8)
    centre = g.op("Round", g.op("ReduceMean", ref8, keepdims=1))
    ref_c, dis_c, prev_c = (g.op("Sub", g.op("Div", v, to8), centre) if v != ref_i else
                            g.op("Sub", ref8, centre) for v in (ref_i, dis_i, prev_i))
    return ref_c, dis_c, prev_c, centre, rnd_v, to8

def build_features(gain_limit, name):
    g = G()
    bpc = g.op("Reshape", "bpc", g.i([]))
    accelerator = g.op("Reshape", g.op("Greater", "device_type", g.f(0.5)), g.i([]))
    g.vif_slab_samples = g.op("Where", accelerator, g.i(ACCEL_SLAB_SAMPLES), g.i(VIF_SLAB_SAMPLES))
    g.adm_slab_samples = g.op("Where", accelerator, g.i(ACCEL_SLAB_SAMPLES), g.i(ADM_SLAB_SAMPLES))
    ref_c, dis_c, prev_c, centre, rnd_v, to8 = centred_frames(g, bpc)
    vifs, motion = vif_features(g, ref_c, dis_c, prev_c, centre, rnd_v, to8, gain_limit)
    adm = adm2(g, ref_c, dis_c, gain_limit)

    for v, n in zip(vifs + [adm, motion], FEATURES):
        g.to_output(v, n)
    inputs, outputs = features_io()
    doc = (f"libvmaf's integer VMAF features (vif_scale0-3, adm2, per-frame motion SAD) of one "
           f"frame pair; enhancement-gain limit {gain_limit:g}. Frames at least 33x33.")
    return finish(g, name, inputs, outputs, doc)



# --- the features graph's accelerator form --------------------------------------------------------
# The same definitions (vif_statistic, adm_restore, libvmaf's border, area terms and motion
# score, and libvmaf's roundings as centred_frames, vif_scale_params, vif_decimate and motion_blur apply
# them) laid out for GPUs and other accelerators, where every node is a kernel launch: whole
# frames, no Loop, few and wide nodes (issue 23: 694 nodes after ORT's basic optimisation at
# 1080p, 289 now, 316 before ADM's bands shared one canvas, 296 before ADM's level-0 DWT was
# libvmaf's exact integer one). x and y (or the reference and the previous reference) are
# channels of one Conv per filter pass, VIF's scales 2 and 3 channels of the same Convs;
# VIF's statistic runs once over the seven filtered maps of all four scales flattened and
# concatenated, ADM's decoupling, masking (one Conv) and cube sums once over the three
# detail bands of all four scales laid out on one canvas (channels), so only the filters and
# mirrors are per scale. The three frames are mirrored once (VIF's scale-0 halo; motion
# takes the inner part of it), and VIF's scales 1-3 take x - y with the frames from one 1x1
# Conv (GA.differences; at scale 0 and in motion such a Conv cost OpenVINO's CPU device ~3%
# of the form's time each at 640x360, so there they stay a Split and a Sub).
# Shape reads (the flattened sizes, ADM's mirror indices, canvas, border masks, areas and csf
# factors, motion's area) fold to constants once the session fixes H and W. VIF and motion are
# bit for bit those of the previous layouts (694 and 316 nodes); adm2 within 1.8e-7 of the
# 316-node form's (the sums' order). ADM's level-0 DWT is libvmaf's integer one,
# exactly (adm_accel): adm2 within 5.7e-6 of libvmaf's on the test clips and VMAF within 0.0012,
# where the pure graph's fp32 DWT gives 7.1e-5 and 0.0149; the other levels are the pure graph's.
# On ORT's CPU EP this layout is slower than the per-scale one (the concatenations add copies
# and larger intermediates: 1080p 318 -> 352 ms per frame in a bare session, 2.3 -> 1.8 fps
# through the library, whose allocator then pages in ~40K more pages a frame); the library
# runs the CPU form there.
# No double anywhere (OpenVINO's CPU and GPU devices, WebGPU and many GPUs take no f64 node):
# VIF's and ADM's per-scale sums are float32 in two stages (accel_staged_sums: along rows, then
# the row sums), motion's SAD sums its integers exactly in int32 along rows, the rest in float32.

class GA(G):
    """Graph of the accelerator form: g.dw gives each of `reps` stacked frames the same taps."""
    reps = 2

    def dw(self, x, kernels, strides=(1, 1)):
        kern = np.repeat(np.asarray(kernels, np.float32), self.reps, axis=0)
        return self.op("Conv", x, self.f(kern[:, None]), group=kern.shape[0],
                       strides=list(strides))

    def conv(self, x, kernels, strides=(1, 1), bias=None):
        """Depthwise Conv, kernels [C, kh, kw]: one per channel; bias: per-channel values or a
        [C] tensor (added after the sum: bit for bit an Add of the sums, measured)."""
        kern = np.asarray(kernels, np.float32)
        ins = [x, self.f(kern[:, None])]
        if bias is not None:
            ins.append(bias if isinstance(bias, str) else self.f(np.asarray(bias, np.float32)))
        return self.op("Conv", *ins, group=kern.shape[0], strides=list(strides))

    def differences(self, x, n):
        """x [1, n, h, w] (n frames, pairs (x, y) in order) -> [1, n + n / 2, h, w]: the frames
        and each pair's x - y, by a 1x1 Conv (exact: 1 * x + 0 * y is x, 1 * x - 1 * y is x - y
        rounded once, as a Sub), one node instead of a Split or two Slices and a Sub."""
        w = np.zeros((n + n // 2, n, 1, 1), np.float32)
        w[np.arange(n), np.arange(n)] = 1.0
        w[n + np.arange(n // 2), 2 * np.arange(n // 2)] = 1.0
        w[n + np.arange(n // 2), 2 * np.arange(n // 2) + 1] = -1.0
        return self.op("Conv", x, self.f(w))

    def reflect(self, x, r):
        """Reflect padding (...cb|abc...) of r rows and columns on every side."""
        return self.op("Pad", x, self.i([0, 0, r, r, 0, 0, r, r]), mode="reflect")

    def slice(self, x, start, end, axis, step=1):
        """G.slice with a second, whole axis 0, so that starts/ends/axes/steps have two values:
        ORT's ConstantSharing gives the one-element int64 [1] tensors of one value one
        initializer, and OpenVINO (onnxruntime-openvino 1.24.1, its CPU device) then read a
        Slice's [1] ends/axes/steps as a scalar Constant and refused the form at creation
        ("`start` input must be a 1D tensor"; with ConstantSharing off it compiled)."""
        return self.op("Slice", x, self.i([start, 0]), self.i([end, INT64_MAX]),
                       self.i([axis, 0]), self.i([step, 1]))

    def channels(self, x, start, end, step=1):
        return self.slice(x, start, end, 1, step)

    def split(self, x, sizes, axis=1, n=None):
        """Split into len(sizes) parts (sizes: values or an int64 tensor of n sizes)."""
        n = len(sizes) if n is None else n
        sizes = sizes if isinstance(sizes, str) else self.i(sizes)
        return self.op("Split", x, sizes, axis=axis, n_out=n)

    def size(self, x, axis):
        """int64 [1]: x's size along axis (a constant once the session fixes H and W)."""
        return self.op("Shape", x, start=axis, end=axis + 1)

    def column(self, v):
        """v [n] as [n, 1] (a Reshape: its shape has two values, see slice)."""
        return self.op("Reshape", v, self.i([-1, 1]))

    def arange(self, start, end):
        """int64 [end - start]: start, start + 1, ..., end - 1 (end: int64 [1]). A float32 Range
        (exact: sizes below 2^24), its limit taken by a Gather with no int64 scalar constant:
        OpenVINO's EP leaves a Reshape to shape [] (and a ReduceSum without axes) to ORT's CPU
        EP, which split the form into 47 partitions where ORT's optimisations are off."""
        end = self.op("Cast", self.op("Gather", end, self.const(0, np.int32)), to=TensorProto.FLOAT)
        return self.op("Cast", self.op("Range", self.f(float(start)), end, self.f(1.0)),
                       to=TensorProto.INT64)

    def output(self, v, name):
        """Renames v, a node's output that nothing else reads yet, to the graph output `name`."""
        for node in self.nodes:
            node.output[:] = [name if o == v else o for o in node.output]


def accel_border(g, n):
    """border(g, n) without double: libvmaf's (int)(n * 0.1 - 0.5) is max(floor((n - 5) / 10), 0)
    for every n below 2^24 (checked against the double expression up to 2e5), here in float32
    (exact: the quotient is an integer or at least 0.1 from one)."""
    b = g.op("Floor", g.op("Div", g.op("Sub", g.op("Cast", n, to=TensorProto.FLOAT), g.f(5.0)),
                           g.f(10.0)))
    return g.op("Cast", g.op("Max", b, g.f(0.0)), to=TensorProto.INT64)


def accel_area_term(g, h, w):
    """adm_area_term in float32, float [1]: cbrt(area / 32) of the inner region of a band of h x w
    (the area an integer below 2^24: exact)."""
    top, left = accel_border(g, h), accel_border(g, w)
    area = g.op("Cast", g.op("Mul", g.op("Sub", g.op("Sub", h, top), top),
                             g.op("Sub", g.op("Sub", w, left), left)), to=TensorProto.FLOAT)
    return g.op("Pow", g.op("Mul", area, g.f(1.0 / 32.0)), g.f(1.0 / 3.0))


def accel_staged_sums(g, x, lead, shapes, factor=1.0):
    """The sums of the segments of x [*lead, T] (or [*lead, 1, T]) along its last axis, float32 [*lead, S], times
    `factor`: segment s (in order) is a flattened r_s x c_s map, shapes[s] its (r_s, c_s) (int64
    [2]). Each segment's rows are summed (ReduceSum over c_s values), then each segment's row
    sums (a MatMul with the [sum r_s, S] 0/factor matrix of the segments, a constant once the
    session fixes H and W): no stage adds more than max(r_s, c_s) values, where one ReduceSum
    over a 2160p frame adds 8.3M (on ORT's CPU EP, over the 8-16 lanes of its vector
    accumulators: ~1e-3 relative, against ~1e-6 in two stages)."""
    sizes = g.op("Concat", *(g.op("ReduceProd", s, keepdims=1) for s in shapes), axis=0)
    parts = g.split(x, sizes, axis=-1, n=len(shapes))
    rows = [g.op("ReduceSum", g.op("Reshape", v, g.op("Concat", g.i(lead), s, axis=0)),
                 g.i([-1]), keepdims=0) for v, s in zip(parts, shapes)]
    counts = g.op("Concat", *(g.op("Split", s, axis=0, n_out=2)[0] for s in shapes), axis=0)
    ends = g.op("CumSum", counts, g.const(0, np.int32))
    idx = g.column(g.arange(0, g.op("ReduceSum", counts, g.i([0]))))
    seg = g.op("And", g.op("GreaterOrEqual", idx, g.op("Sub", ends, counts)),
               g.op("Less", idx, ends))                                       # [sum r_s, S]
    return g.op("MatMul", g.op("Concat", *rows, axis=len(lead)),
                g.op("Where", seg, g.f(factor), g.f(0.0)))


def vif_scale0_accel(g, xp):
    """VIF's scale 0 of xp [1, 2, H + 16, W + 16] (x, y centred as vif_scale's, mirrored by the
    scale's halo): the seven filtered maps of VIF's statistic flattened, [1, 7, 1, H*W] in the
    order (m_x, m_y, E[x^2], E[y^2], -E[(x-y)^2], q_x, q_y). One vertical Conv for the means'
    pass (in 1/256-level sums) and the three second moments, one horizontal for all seven
    maps."""
    k = len(VIF_TAPS[0])
    ti = np.asarray(VIF_TAPS[0], np.float32)
    t = ti / np.float32(65536.0)
    e = g.op("Sub", *g.op("Split", xp, axis=1, n_out=2))
    vert = g.conv(g.op("Concat", xp, g.op("Mul", xp, xp), g.op("Mul", e, e), axis=1),
                  [ti.reshape(k, 1) / np.float32(256.0)] * 2 + [t.reshape(k, 1)] * 3)
    # the means' vertical pass rounded with libvmaf's 2^(bpc-1), which is half of its unit
    # whatever bpc (vif_scale_params' rnd)
    tmp = g.op("Floor", g.op("Add", g.channels(vert, 0, 2), g.f(0.5)))
    trow = t.reshape(1, k)
    maps = g.conv(g.op("Concat", vert, tmp, axis=1),                      # v, moments, tmp
                  [trow / np.float32(256.0)] * 2 + [trow, trow, -trow]
                  + [trow / np.float32(256.0)] * 2)
    return g.op("Reshape", maps, g.i([0, 7, 1, -1]))


def motion_accel(g, fp, r):
    """libvmaf's motion score (float [1]) of the first and last of fp [1, 3, H + 2r, W + 2r] (x
    and the previous x, mirrored by r >= 2): motion_blur of both as two channels (mirrored by 2:
    the inner rows and columns of fp), its roundings the Convs' biases; the SAD (integers in
    1/256 of a level, below 2^16 each) summed exactly in int32 along rows (below 2^31 for W <
    32768), the row sums in float32, divided by 256 W H (libvmaf: the uint64 SAD,
    (float)(sad / 256.) / (w * h) in double)."""
    t = np.asarray(MOTION_TAPS, np.float32)
    k = len(t)
    m = r - k // 2
    frames = g.op("Slice", fp, g.i([0, m, m]), g.i([3, -m, -m]), g.i([1, 2, 3]),
                  g.i([2, 1, 1]))
    blur = g.conv(frames, [t.reshape(k, 1) / np.float32(256.0)] * 2, bias=[0.5, 0.5])
    blur = g.conv(g.op("Floor", blur), [t.reshape(1, k) / np.float32(65536.0)] * 2,
                  bias=[0.5, 0.5])
    diff = g.op("Sub", *g.op("Split", g.op("Floor", blur), axis=1, n_out=2))
    rows = g.op("ReduceSum", g.op("Cast", g.op("Abs", diff), to=TensorProto.INT32),
                g.i([3]), keepdims=0)                                           # [1, 1, H]
    sad = g.op("ReduceSum", g.op("Cast", rows, to=TensorProto.FLOAT), g.i([1, 2]), keepdims=0)
    area = g.op("Mul", g.op("Cast", g.op("Mul", g.size(blur, 2), g.size(blur, 3)),
                            to=TensorProto.FLOAT), g.f(256.0))
    return g.op("Div", sad, area)


def vif_maps_accel(g, xy, scales):
    """VIF's scales `scales` ([1] or [2, 3]) of xy: the first scale's frames mirrored by its
    halo, [1, 2, h + 2r, w + 2r], and scale 3's [1, 2, h3, w3] unmirrored (x, y centred as
    vif_scale's): their seven filtered maps, each flattened as
    vif_scale0_accel's, and the integer and fractional parts of the first scale's padded
    frames (what vif_decimate_accel takes). One vertical and one horizontal Conv for all seven
    maps: the means' passes split into integer and fraction (as vif_scale) and the three
    second moments (of x, y and x - y, the last from a 1x1 Conv with the frames: GA.differences).
    Scales 2 and 3 run as channels of the same Convs: scale 3's frames
    mirrored by 2 (the outer rows and columns meet zero taps: its 3 taps are zero-padded to
    scale 2's 5) and padded to scale 2's size, its maps cropped back."""
    k = len(VIF_TAPS[scales[0]])
    r = k // 2
    xp = xy[0]
    if len(scales) > 1:
        # scale 3 (mirrored by 2, then extended to scale 2's padded size) as channels 2, 3
        x3 = g.reflect(xy[1], r)
        grow = g.op("Sub", g.op("Shape", xp, start=2, end=4), g.op("Shape", x3, start=2, end=4))
        x3 = g.op("Pad", x3, g.op("Concat", g.i([0, 0, 0, 0, 0, 0]), grow, axis=0),
                  mode="edge")
        xp = g.op("Concat", xp, x3, axis=1)
    n = 2 * len(scales)                                          # frames: x, y (, x3, y3)
    hi = g.op("Floor", xp)
    xye = g.differences(xp, n)
    parts = g.op("Concat", hi, g.op("Sub", xp, hi), g.op("Mul", xye, xye), axis=1)
    taps = []
    for s in scales:
        ti = np.zeros(k, np.float32)
        ks = len(VIF_TAPS[s])
        ti[r - ks // 2:r + ks // 2 + 1] = VIF_TAPS[s]
        taps.append(ti / np.float32(65536.0))
    per = len(scales)
    # channels: hi (x, y per scale), lo (likewise), squares (likewise), (x - y)^2 per scale
    col = [(t * np.float32(65536.0)).reshape(k, 1) for t in taps for _ in (0, 1)]
    vert = g.conv(parts, col * 2 + [t.reshape(k, 1) for t in taps for _ in (0, 1)]
                  + [t.reshape(k, 1) for t in taps])
    sh, sf, moments = g.split(vert, [n, n, n + per])
    tmp = g.op("Floor", g.op("Mul", g.op("Add", sh, g.op("Floor", g.op(
        "Add", sf, g.f(128.0)))), g.f(1.0 / 256.0)))
    rows = [t.reshape(1, k) for t in taps]
    maps = g.conv(g.op("Concat", g.op("Add", sh, sf), moments, tmp, axis=1),
                  [w / np.float32(65536.0) for w in rows for _ in (0, 1)]
                  + [w for w in rows for _ in (0, 1)] + [-w for w in rows]
                  + [w / np.float32(256.0) for w in rows for _ in (0, 1)])
    if per == 1:
        return [g.op("Reshape", maps, g.i([0, 7, 1, -1]))], parts
    # channels (m_x2, m_y2, m_x3, m_y3, fxx2, fyy2, fxx3, fyy3, nfee2, nfee3, q_x2, ...): each
    # scale's seven in order, scale 3's cropped to its frame
    m2, m3 = g.split(g.op("Gather", maps, g.i([0, 1, 4, 5, 8, 10, 11, 2, 3, 6, 7, 9, 12, 13]),
                          axis=1), [7, 7])
    m3 = g.op("Slice", m3, g.i([0, 0]), g.op("Shape", xy[1], start=2, end=4), g.i([2, 3]))
    return [g.op("Reshape", v, g.i([0, 7, 1, -1])) for v in (m2, m3)], parts


def vif_decimate_accel(g, scale, frames=None, parts=None, u_scale=None, rnd=None, div=None):
    """vif_decimate from scale `scale` to the next scale's centred levels [1, 2, h // 2, w // 2],
    bit for bit: each pass filters the integer and fractional parts of its input (sums below
    2^24), the rounding added as the Conv's bias. The input: `frames`, whose first two channels
    are the frames mirrored by the scale's halo (at scale 0 with u_scale, rnd and div: the
    input's units, the vertical rounding and divisor), or `parts` (vif_maps_accel's: their
    integer and fractional parts, channels 0-3)."""
    r = len(VIF_TAPS[scale]) // 2
    ti = np.asarray(VIF_TAPS[scale + 1], np.float32)
    k = len(ti)
    m = r - k // 2
    # the next taps need k // 2 of the r rows and columns of halo; one row and column less
    # after, so that the stride-2 filters give floor(h/2) x floor(w/2)
    starts, ends, axes = g.i([0, m, m]), [-(m + 1), -(m + 1)], g.i([1, 2, 3])
    div = g.f(256.0) if div is None else div
    if parts is None:
        u = g.op("Slice", frames, starts, g.i([2] + ends), axes)
        if u_scale is not None:
            u = g.op("Mul", u, u_scale)
        hi = g.op("Floor", u)
        sh = g.dw(hi, ti.reshape(1, k, 1), (2, 1))
        sf = g.conv(g.op("Sub", u, hi), [ti.reshape(k, 1)] * 2, (2, 1),
                    bias=[128.0, 128.0] if rnd is None else rnd)
    else:
        sh, sf = g.split(g.conv(g.op("Slice", parts, starts, g.i([4] + ends), axes),
                                [ti.reshape(k, 1)] * 4, (2, 1), bias=[0.0, 0.0, 128.0, 128.0]),
                         [2, 2])
    u = g.op("Mul", g.op("Floor", g.op("Div", g.op("Add", sh, g.op("Floor", sf)), div)),
             g.f(1.0 / 256.0))
    hi = g.op("Floor", u)
    sh = g.dw(hi, ti.reshape(1, 1, k), (1, 2))
    sf = g.conv(g.op("Sub", u, hi), [ti.reshape(1, k)] * 2, (1, 2), bias=[128.0, 128.0])
    return g.op("Mul", g.op("Floor", g.op("Div", g.op("Add", sh, g.op("Floor", sf)),
                                          g.f(256.0))), g.f(1.0 / 256.0))


def vif_accel(g, fp, centre, u_scale, rnd_units, to8, gain_limit):
    """The four VIF scores, float [1, 1, 4], of the first two frames of fp [1, 3, H + 16, W + 16]
    (centred levels, mirrored by scale 0's halo): the maps of every
    scale, then vif_statistic once over all of them flattened and concatenated, summed per
    scale in float32 in two stages (accel_staged_sums)."""
    maps = [vif_scale0_accel(g, g.channels(fp, 0, 2))]
    xy1 = vif_decimate_accel(g, 0, frames=fp, u_scale=u_scale, rnd=rnd_units, div=to8)
    (flat,), parts = vif_maps_accel(g, [g.reflect(xy1, len(VIF_TAPS[1]) // 2)], [1])
    maps.append(flat)
    xy2 = vif_decimate_accel(g, 1, parts=parts)
    # scale 2's decimation filters the mirrored frames itself: scales 2 and 3 share their
    # maps' Convs, so those parts hold scale 3, which that decimation makes
    xp2 = g.reflect(xy2, len(VIF_TAPS[2]) // 2)
    xy3 = vif_decimate_accel(g, 2, frames=xp2)
    maps += vif_maps_accel(g, [xp2, xy3], [2, 3])[0]
    mx, my, fxx, fyy, nfee, qx, qy = g.op("Split", g.op("Concat", *maps, axis=3), axis=1,
                                          n_out=7)
    num_px, den_px = vif_statistic(g, mx, my, qx, qy, fxx, fyy, nfee, centre, gain_limit,
                                   nary_sum=False)
    # num, den in log2 units, [1, 2, 4]; libvmaf stores them as float and divides in float
    nd = accel_staged_sums(g, g.op("Concat", num_px, den_px, axis=1), [0, 2],
                           [g.op("Sub", g.op("Shape", fp, start=2, end=4), g.i([16, 16]))]
                           + [g.op("Shape", v, start=2, end=4) for v in (xy1, xy2, xy3)],
                           1.0 / math.log(2.0))
    return g.op("Div", *g.op("Split", nd, axis=1, n_out=2))


def adm_ring_rows(g, n, offset, length):
    """The frame rows of `length` band rows (int64 [1], at least nb + 2; nb = ceil(n/2), n the
    frame's rows, int64 [1]): band rows -1 .. nb (band row -1 = row 1 and row nb = row nb - 1,
    the mirror of the masking threshold), then copies of row nb - 1 up to `length` (rows of the
    canvas that adm_accel's masks leave out); for each, the four frame rows 2j-1 .. 2j+2 it
    takes, mirrored as dwt2's (row -1 = row 1, row n = row n - 1, row n + 1 = row n - 2), plus
    offset (the rows of a mirrored ring above the frame)."""
    nb = g.op("Div", g.op("Add", n, g.i([1])), g.i([2]))
    j = g.op("Min", g.op("Abs", g.arange(-1, g.op("Sub", length, g.i([1])))), nb)
    j = g.op("Where", g.op("Less", j, nb), j, g.op("Sub", g.op("Sub", g.op("Mul", nb, g.i([2])),
                                                               g.i([1])), j))
    rows = g.op("Abs", g.op("Add", g.column(g.op("Mul", j, g.i([2]))),
                            g.i([-1, 0, 1, 2])))
    rows = g.op("Where", g.op("Less", rows, n), rows,
                g.op("Sub", g.op("Sub", g.op("Mul", n, g.i([2])), g.i([1])), rows))
    return g.op("Add", g.op("Reshape", rows, g.i([-1])), g.i([offset]))


def adm_inner_ring(g, nb, length):
    """bool [length]: the positions of a band of nb rows (or columns) with its mirrored ring and
    the canvas's rows past it that the cube sums keep (the 10% border off, the ring and the
    rows past it never)."""
    b = g.op("Add", accel_border(g, nb), g.i([1]))
    idx = g.arange(0, length)
    return g.op("And", g.op("GreaterOrEqual", idx, b),
                g.op("Less", idx, g.op("Sub", g.op("Add", nb, g.i([2])), b)))


def adm_parts(g, x):
    """x as Concat(floor(x), x - floor(x)) on the channel axis: the whole and fractional parts
    that a Conv of the DWT's 16-bit integer taps sums exactly in fp32 (adm_accel)."""
    whole = g.op("Floor", x)
    return g.op("Concat", whole, g.op("Sub", x, whole), axis=1)


def adm_rounded(g, pf, unit):
    """floor((P + F) / unit) of the Conv sums pf = (P, F), the two halves of its channels: P
    integer (the rounding added as the Conv's bias), F with a fractional part. As
    floor((P + floor(F)) / unit), exact in fp32: integers below 2^24, unit a power of two."""
    p, f = g.op("Split", pf, axis=1, n_out=2)
    return g.op("Floor", g.op("Mul", g.op("Add", p, g.op("Floor", f)), g.f(1.0 / unit)))


def adm_accel(g, levels, gain_limit):
    """adm2 (float [1]) of levels [2, 1, H, W] (the reference's and distorted's samples in
    8-bit units: sample / 2^(bpc-8)).
    Per scale only the DWT: a Gather of the four rows each band row takes (mirrored, with a
    mirrored ring of one band row around: the masking threshold's mirror), one Conv at stride
    4 for both frames and both filters, a Transpose, the same for the columns. The bands of
    scales 1-3 are dwt2's bit for bit, transposed, with their ring. Scale 0 is libvmaf's
    integer DWT exactly (its roundings are where an fp32 DWT's adm2 differs from libvmaf's, by
    up to 7.1e-5 on the test clips): v = (sum c u + 2^(bpc-1)) >> bpc down the columns (u the
    samples - 2^(bpc-1)), (sum c v + 2^15) >> 16 along the rows. Each pass's input goes in as
    its whole and fractional parts (of levels, of v / 128) as channels of one Conv, so that
    every partial sum is an integer below 2^24 or (the fractional parts') a multiple of 2^-8
    below 2^16, for bpc 8-16: exact in fp32 in any order (not in TF32); the roundings and u's
    offset (u / 2^(bpc-8) = levels - 128) are the Conv's bias on the whole parts. Its bands
    are in libvmaf's units (64 x 8-bit levels): the 1/64 is folded into scale 0's CSF factors
    and scale 1's vertical taps (powers of two: bit for bit the division).
    The detail bands (v, h, d) of the four scales are laid out on one canvas [2 frames, 3
    bands, R, C]: scale 0's band over a block that holds scale 1's beside scale 2's over
    scale 3's (each DWT's index lists are as long as its block, the rows past its band copies
    of its last row; the canvas is ~13% larger than the four bands: 1444 x 542 against
    694202 samples at 1080p). The decoupling, masking and cube sums run once over it, the 3x3
    threshold as one Conv (the ring each band's mirror); the border, the ring and the rest of
    each block are left out of the sums by an infinite threshold there. The cube sums are
    float32, in two stages (along the canvas's rows apart left and right of scale 1's
    columns, then the row sums of each scale: two MatMuls with 0/1 matrices), their cube
    roots and the area terms too."""
    lo = np.asarray(DB2_LO, np.float64) / 32768.0
    hi = np.asarray(DB2_HI, np.float64) / 32768.0
    lo_i, hi_i = np.asarray(DB2_LO, np.float32), np.asarray(DB2_HI, np.float32)
    # band sizes (hb: frame rows, the canvas's columns; wb: frame columns, its rows) and with
    # their ring (c, r)
    h, w = g.size(levels, 2), g.size(levels, 3)
    hbs, wbs = [], []
    for _ in range(4):
        h, w = (g.op("Div", g.op("Add", n, g.i([1])), g.i([2])) for n in (h, w))
        hbs.append(h)
        wbs.append(w)
    c, r = ([g.op("Add", n, g.i([2])) for n in ns] for ns in (hbs, wbs))
    # the canvas [R0 + Rb, C]: scale 0 over (scale 1 beside (scale 2 over scale 3)); each
    # scale's block (rows, columns) as its DWT makes it (longer index lists than its band's)
    width = g.op("Max", c[0], g.op("Add", c[1], c[2]))
    rb = g.op("Max", r[1], g.op("Add", r[2], r[3]))
    rest = g.op("Sub", width, c[1])
    blocks = [(r[0], width), (rb, c[1]), (r[2], rest), (g.op("Sub", rb, r[2]), rest)]

    def canvas(parts, axis):
        p0, p1, p2, p3 = parts
        inner = g.op("Concat", p2, p3, axis=axis)
        return g.op("Concat", p0, g.op("Concat", p1, inner, axis=axis + 1), axis=axis)

    dets, masks, rfs, areas = [], [], [], []
    h, w = g.size(levels, 2), g.size(levels, 3)
    x = adm_parts(g, levels)                                 # [2, 2, H, W]
    for scale in range(4):
        off = 1 if scale else 0
        rows_n, cols_n = blocks[scale]
        if scale:
            x = g.op("Transpose", x, perm=[0, 1, 3, 2])      # the previous approximation
        x = g.op("Gather", x, adm_ring_rows(g, h, off, cols_n), axis=2)
        if scale == 0:
            # (P, F): lo, hi of the whole and of the fractional parts. In 8-bit units
            # v = floor((sum c (levels - 128) + 128) / 256), and sum(hi) = 0
            bias = [128.0 - 128.0 * float(sum(DB2_LO)), 128.0, 0.0, 0.0]
            pf = g.op("Conv", x, g.f(np.stack([lo_i, hi_i] * 2).reshape(4, 1, 4, 1)), g.f(bias),
                      group=2, strides=[4, 1])
            v = adm_parts(g, g.op("Mul", adm_rounded(g, pf, 256), g.f(1.0 / 128)))
        else:
            taps = np.stack([lo, hi]) / (64.0 if scale == 1 else 1.0)
            v = g.op("Conv", x, g.f(taps.reshape(2, 1, 4, 1)), strides=[4, 1])
        # (a, v, h, d) = lo_v lo_h, lo_v hi_h, hi_v lo_h, hi_v hi_h: [2, 4, rows_n, cols_n]
        vt = g.op("Gather", g.op("Transpose", v, perm=[0, 1, 3, 2]),
                  adm_ring_rows(g, w, off, rows_n), axis=2)
        if scale == 0:
            # (P, F): (a, v, h, d) of v // 128 and of frac(v / 128);
            # band = floor((128 (P + F) + 2^15) / 2^16) = floor((P + F + 256) / 512)
            pf = g.op("Conv", vt, g.f(np.stack([lo_i, hi_i] * 4).reshape(8, 1, 4, 1)),
                      g.f([256.0] * 4 + [0.0] * 4), group=4, strides=[4, 1])
            out = adm_rounded(g, pf, 512)
        else:
            out = g.op("Conv", vt, g.f(np.stack([lo, hi, lo, hi]).astype(np.float32)
                                      .reshape(4, 1, 4, 1)), group=2, strides=[4, 1])
        if scale < 3:
            x, det = g.split(out, [1, 3])
        else:
            det = g.channels(out, 1, 4)
        dets.append(det)
        hb, wb = hbs[scale], wbs[scale]
        masks.append(g.op("And", g.column(adm_inner_ring(g, wb, rows_n)),
                          adm_inner_ring(g, hb, cols_n)))
        rf = np.asarray(adm_rfactors(scale), np.float32)[[1, 0, 2]]
        rfs.append(g.op("Expand", g.f((rf / np.float32(64.0) if scale == 0 else rf)
                                      .reshape(1, 3, 1, 1)),
                        g.op("Concat", g.i([1, 3]), rows_n, cols_n, axis=0)))
        areas.append(accel_area_term(g, hb, wb))
        h, w = hb, wb
    # the csf factors applied before the decoupling, which commutes with them (h and v share
    # theirs, so the angle test holds as it was; the restored and additive parts scale with
    # the band): bit for bit the pure graph's adm2 on the test clips (measured while both DWTs
    # were fp32). Folded into the DWT's taps instead they moved adm2 by up to 1.8e-5 on noisy
    # synthetic frames (the angle test flipping on other roundings).
    # The elementwise work runs on the canvas flattened, [2, 3, R * C]: OpenVINO's CPU device
    # ran it 11% slower as [2, 3, R, C] (640x360, the whole form), as it would a Conv's
    # neighbours (blocked channel layouts, 3 channels padded to 8 or 16, presumably)
    bands = canvas(dets, 2)                                                # [2, 3, R, C]
    rc = g.op("Shape", bands, start=2, end=4)
    # (the frames of the batch on axis 0, each one's reference and distorted on axis 1)
    flat = g.op("Concat", g.i([-1, 2, 3]), g.op("ReduceProd", rc, keepdims=1), axis=0)
    ot = g.op("Mul", g.op("Reshape", bands, flat),
              g.op("Reshape", canvas(rfs, 2), g.i([1, 1, 3, -1])))          # [N, 2, 3, T]
    o, t = g.op("Split", ot, axis=1, n_out=2)
    # adm_angle on (h, v) (elementwise on the bands' channels: ORT's CPU reductions over a
    # middle axis are 5-10x slower)
    sv, sh, _ = g.op("Split", g.op("Mul", ot, ot), axis=2, n_out=3)
    o_mag, t_mag = g.op("Split", g.op("Add", sv, sh), axis=1, n_out=2)
    pv, ph, _ = g.op("Split", g.op("Mul", o, t), axis=2, n_out=3)
    ot_dp = g.op("Add", pv, ph)
    angle = g.op("And", g.op("GreaterOrEqual", ot_dp, g.f(0.0)),
                 g.op("GreaterOrEqual", g.op("Mul", ot_dp, ot_dp),
                      g.op("Mul", g.op("Mul", o_mag, t_mag), g.f(COS_1DEG_SQ))))
    restored, additive = adm_restore(g, o, t, angle, gain_limit, g.f(0.0))
    # the 3x3 threshold over the sum of the three bands' |additive| for the restored bands, 0
    # for the reference's: one Conv over the canvas, each band an input channel (the ring is
    # each block's mirror, and no inner position reaches past its ring); infinite outside
    # each band's inner region (the ring, the 10% border, the canvas past the band), so
    # those cubes are 0
    kern = np.stack([np.repeat(ADM_MASK_KERNEL[None], 3, axis=1)[0],
                     np.zeros((3, 3, 3), np.float32)])                     # [2, 3, 3, 3]
    per_band = g.op("Concat", g.i([-1, 3]), rc, axis=0)                    # [2 N | N, 3, R, C]
    thr = g.op("Conv", g.op("Reshape", g.op("Abs", additive), per_band), g.f(kern),
               pads=[1, 1, 1, 1])                                          # [N, 2, R, C]
    outside = g.op("Where", canvas(masks, 0), g.f(0.0), g.f(np.inf))       # [R, C]
    thr = g.op("Add", g.op("Reshape", thr, g.i([0, 2, 1, -1])),
               g.op("Reshape", outside, g.i([1, 1, 1, -1])))               # [N, 2, 1, T]
    # adm_cube_sums: the masked restored bands and the reference's, cubed and summed per scale
    # in fp32 in two stages: along the canvas's rows, apart left and right of scale 1's
    # columns (a MatMul with a [C, 2] 0/1 matrix), then the rows' two sums of each scale (a
    # MatMul with the [2 R, 4] 0/1 matrix of the blocks); the parts left out add 0
    cb = g.op("Relu", g.op("Sub", g.op("Abs", g.op("Concat", restored, o, axis=1)), thr))
    cubes = g.op("Reshape", g.op("Mul", g.op("Mul", cb, cb), cb), per_band)  # [2 N, 3, R, C]
    left = g.op("Less", g.column(g.arange(0, width)), c[1])                 # [C, 1]
    halves = g.op("Cast", g.op("Concat", left, g.op("Not", left), axis=1), to=TensorProto.FLOAT)
    ri = g.column(g.arange(0, g.op("Add", r[0], rb)))                       # [R, 1]
    right = g.op("Where", g.op("Less", g.op("Sub", ri, r[0]), r[2]), g.i([2]), g.i([3]))
    which = g.op("Where", g.op("Less", ri, r[0]), g.i([0]),
                 g.op("Concat", g.op("Expand", g.i([1]), g.op("Shape", ri)), right, axis=1))
    blocks01 = g.op("Cast", g.op("Equal", g.column(g.op("Reshape", which, g.i([-1]))),
                                 g.arange(0, g.i([4]))), to=TensorProto.FLOAT)  # [2 R, 4]
    sums = g.op("MatMul", g.op("Reshape", g.op("MatMul", cubes, halves), g.i([0, 3, -1])),
                blocks01)                                                  # [2 N, 3, 4]
    roots = g.op("Add", g.op("Pow", sums, g.f(1.0 / 3.0)), g.op("Concat", *areas, axis=0))
    num, den = g.op("Split", g.op("Reshape", g.op("ReduceSum", roots, g.i([1, 2]), keepdims=0),
                                  g.i([-1, 2])), axis=1, n_out=2)          # [N, 1] each
    # libvmaf zeroes num/den below 1e-10 * w*h/1080p and returns 1 for den == 0; both sums hold
    # 12 terms of cbrt(area/32) > 0, so neither case can occur and the ratio is all there is.
    return g.op("Reshape", g.op("Div", num, den), g.i([-1]))


def build_features_accel(gain_limit, name):
    """The accelerator form of build_features: the same outputs, from the pictures' own
    samples (UINT16: half the bytes of fp32 to the device, no rounding back to integers),
    device_type not read; whole frames, no Loop."""
    g = GA()
    # 2^(bpc-8) (8-bit units), 2^(bpc-16) and 2^(bpc-9) (vif_decimate's units and rounding at
    # scale 0, the latter per channel as a Conv bias)
    to8, u_scale, rnd_units = g.split(g.op("Pow", g.f(2.0), g.op(
        "Add", "bpc", g.f([-8.0, -16.0, -9.0, -9.0]))), [1, 1, 2], axis=0)
    # centred_frames: the three planes as levels centred on the reference's mean level
    # the previous reference of each frame: reference_prev for the first, then the batch's own
    # (reference_prev ahead of the references, all but the last: never an empty tensor)
    prev = g.op("Slice", g.op("Concat", "reference_prev", "reference", axis=0), g.i([0, 0]),
                g.i([-1, INT64_MAX]), g.i([0, 1]), g.i([1, 1]))             # [N, 1, H, W]
    levels = g.op("Div", g.op("Cast", g.op("Concat", "reference", "distorted", prev, axis=1),
                              to=TensorProto.FLOAT), to8)
    # Round as Floor(m + 1/2) (ORT's WebGPU EP has no Round kernel, and the [N, 1, 1, 1] mean
    # went to its CPU EP and back in the middle of the graph): the same integer but at exact
    # halves (Round's ties go to even), where either is as good a centre (any integer is).
    centre = g.op("Floor", g.op("Add", g.op("ReduceMean", g.channels(levels, 0, 1),
                                            axes=[1, 2, 3], keepdims=1), g.f(0.5)))  # [N,1,1,1]
    frames = g.op("Sub", levels, centre)                        # [N, 3, H, W]
    # the three frames mirrored by VIF's scale-0 halo: VIF's scale 0 and its decimation take the
    # first two, motion the first and last (mirrored by its own 2 inside)
    r = len(VIF_TAPS[0]) // 2
    fp = g.reflect(frames, r)
    vif = vif_accel(g, fp, centre, u_scale, rnd_units, to8, gain_limit)
    adm = adm_accel(g, g.op("Reshape", g.channels(levels, 0, 2), g.i([-1, 1, 0, 0])), gain_limit)
    motion = motion_accel(g, fp, r)
    # the outputs, in FEATURES' order
    # vif [N, 1, 4] -> [4 N] in scale order -> four [N] (Split in equal parts)
    scales = g.op("Reshape", g.op("Transpose", vif, perm=[2, 0, 1]), g.i([-1]))
    g.nodes.append(helper.make_node("Split", [scales], FEATURES[:4],
                                    axis=0, name=f"n{g._count}_Split"))
    g._count += 1
    g.output(adm, "adm2")
    g.output(motion, "motion")
    inputs, outputs = features_io(samples=True, batch=True)
    doc = (f"Accelerator form of {name.replace(ACCEL_SUFFIX, '')}: libvmaf's integer VMAF "
           f"features as the pure-ONNX graph computes them (ADM's level-0 DWT as libvmaf's, "
           f"exactly), whole frames, no Loop, static once H and W are fixed; enhancement-gain "
           f"limit {gain_limit:g}.")
    return finish(g, name, inputs, outputs, doc)

# --- the features graph's kernels form: the library's fused kernels ---------------------------
# (LIBRARY_DOMAIN: the library's own operators, csrc/custom_ops.h: libvmaf's integer extractors
# as fused C kernels, registered with ONNX Runtime's CPU EP on every session the library opens)


def features_io(samples=False, batch=False):
    """The features graph's inputs and outputs: one definition for every form, so that the
    library can swap one for another. ``samples``: the pictures are the frames' own samples
    (UINT16, 0..2^bpc-1), which a form may take where the model takes normalised FLOAT
    pictures (the library then feeds them without an fp32 round trip). ``batch`` (the
    accelerator form): N frames of one clip per Run, a symbolic leading dim "N" on the scored
    frames' pictures and on every output; reference_prev stays [1, 1, H, W] (the reference
    before the Run's first frame), bpc and device_type [1] (shared by the Run)."""
    n = "N" if batch else 1
    picture = TensorProto.UINT16 if samples else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(name, picture, [n, 1, "H", "W"])
              for name in ("reference", "distorted")]
    inputs.append(helper.make_tensor_value_info("reference_prev", picture, [1, 1, "H", "W"]))
    inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1])
               for name in ("bpc", "device_type")]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [n]) for name in FEATURES]
    return inputs, outputs


def build_features_kernels(gain_limit, name):
    """The kernels form of build_features: the same outputs, computed by the library's kernels
    (three nodes; device_type is read by the accelerator form only) from the pictures' own
    samples (the kernels check each against 2^bpc - 1)."""
    def node(op, inputs, outputs, **attrs):
        return helper.make_node(op, inputs, outputs, domain=LIBRARY_DOMAIN,
                                name=f"{op}_{outputs[0]}", **attrs)
    nodes = [node("VifInteger", ["reference", "distorted", "bpc"],
                  FEATURES[:4], enhn_gain_limit=float(gain_limit)),
             node("AdmInteger", ["reference", "distorted", "bpc"],
                  ["adm2"] + [f"adm_scale{s}" for s in range(4)],
                  enhn_gain_limit=float(gain_limit)),
             node("MotionInteger", ["reference_prev", "reference", "bpc"], ["motion"])]
    inputs, outputs = features_io(samples=True)
    graph = helper.make_graph(nodes, name, inputs, outputs)
    graph.doc_string = (f"Kernels form of {name.replace(KERNELS_SUFFIX, '')}: libvmaf's integer "
                        f"VMAF features through libvmafdnn's fused kernels ({LIBRARY_DOMAIN}); "
                        f"enhancement-gain limit {gain_limit:g}. Runs only in libvmafdnn.")
    return library_model(graph, PRODUCER)


# --- the SVM graph ------------------------------------------------------------------------------------

def parse_libsvm(text):
    head, _, body = text.partition("SV\n")
    params = {}
    for line in head.splitlines():
        key, _, value = line.partition(" ")
        params[key] = value
    coefs, svs = [], []
    for line in body.splitlines():
        parts = line.split()
        if not parts:
            continue
        coefs.append(float(parts[0]))
        svs.append({int(k): float(v) for k, v in (p.split(":") for p in parts[1:])})
    return params, np.asarray(coefs), svs


def build_svm(model_json, name, enable_transform=False):
    md = model_json["model_dict"]
    if md.get("model_type") != "LIBSVMNUSVR" or md.get("norm_type") != "linear_rescale":
        raise ValueError(f"{name}: unsupported model type/normalisation")
    names = [MODEL_FEATURE_NAMES[n] for n in md["feature_names"]]
    params, coefs, svs = parse_libsvm(md["model"])
    if params["svm_type"] != "nu_svr" or params["kernel_type"] != "rbf":
        raise ValueError(f"{name}: expected a nu-SVR with an RBF kernel")
    gamma = float(params["gamma"])
    rho = float(params["rho"])
    sv = np.zeros((len(svs), len(names)), np.float64)
    for j, s in enumerate(svs):
        for k, v in s.items():
            sv[j, k - 1] = v
    slopes = np.asarray(md["slopes"], np.float64)
    intercepts = np.asarray(md["intercepts"], np.float64)

    g = G()
    # features in the model's order, normalised: slope * x + intercept (index 0 is the score's)
    feats = [g.op("Cast", g.op("Reshape", n, g.i([1, 1])), to=TensorProto.DOUBLE) for n in names]
    x = g.op("Concat", *feats, axis=1)                                  # [1, F]
    x = g.op("Add", g.op("Mul", x, g.d(slopes[1:].reshape(1, -1))),
             g.d(intercepts[1:].reshape(1, -1)))
    diff = g.op("Sub", x, g.d(sv))                                      # [S, F]
    dist = g.op("ReduceSum", g.op("Mul", diff, diff), g.i([1]), keepdims=0)
    kern = g.op("Exp", g.op("Mul", dist, g.d(-gamma)))
    y = g.op("Sub", g.op("ReduceSum", g.op("Mul", kern, g.d(coefs)), keepdims=0), g.d(rho))
    score = g.op("Div", g.op("Sub", y, g.d(intercepts[0])), g.d(slopes[0]))
    # libvmaf applies the model's score_transform only when asked (enable_transform), which
    # neither its default nor FFmpeg's filter does; the graph follows the default.
    st = md.get("score_transform") if enable_transform else None
    if st:
        value = g.d(st.get("p0", 0.0))
        value = g.op("Add", value, g.op("Mul", score, g.d(st.get("p1", 0.0))))
        value = g.op("Add", value, g.op("Mul", g.op("Mul", score, score), g.d(st.get("p2", 0.0))))
        if str(st.get("out_lte_in", "false")).lower() == "true":
            value = g.op("Min", value, score)
        if str(st.get("out_gte_in", "false")).lower() == "true":
            value = g.op("Max", value, score)
        score = value
    clip = md.get("score_clip")
    if clip:
        score = g.op("Clip", score, g.d(clip[0]), g.d(clip[1]))
    g.to_output(score, "vmaf")
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in SVM_INPUTS]
    outputs = [helper.make_tensor_value_info("vmaf", TensorProto.FLOAT, [1])]
    doc = (f"libvmaf model {name}: nu-SVR (RBF, gamma {gamma:g}, {len(svs)} support vectors) over "
           f"linearly rescaled {', '.join(names)}, then its score transform and clipping.")
    return finish(g, name, inputs, outputs, doc)


# The library's attach rules (include/vmafdnn/context.h): the SVM model requires its features
# and motion2 models, which attach before it; the features model reads the previous reference
# frame and the bit depth, the motion2 model the next frame's motion (so it and the SVM run one
# frame behind, the last frame at flush).
VARIANTS = {
    # graph name -> (feature key, features graph, motion2 graph, key suffix)
    "vmaf_v0.6.1": ("vmaf", "vmaf_features", "vmaf_motion2", ""),
    "vmaf_4k_v0.6.1": ("vmaf_4k", "vmaf_features", "vmaf_motion2", ""),
    "vmaf_v0.6.1neg": ("vmaf_neg", "vmaf_features_neg", "vmaf_motion2_neg", "_egl_1"),
}
MIN_SIZE = 33  # ADM's four DWT levels; libvmaf refuses smaller frames too


def features_sidecar(name, suffix):
    return {
        "name": name,
        "description": "libvmaf's integer VMAF elementary features of one frame pair",
        "input_names": ["reference", "distorted"],
        "input_sources": {"reference_prev": {"picture": "reference", "offset": -1},
                          "bpc": {"value": "bpc"}, "device_type": {"value": "device_type"}},
        "output_keys": [f + suffix for f in FEATURES],
        "native_resolution": True,
        "min_width": MIN_SIZE,
        "min_height": MIN_SIZE,
        # On ORT's CPU EP the library scores with the fused kernels instead, and on CUDA with
        # the same form where the kernels are ready on the GPU (csrc/gpu, cuda_kernels.h: an
        # accelerator form's graph moves ~6 GB per 1080p frame, the kernels ~0.2 GB); on every
        # other EP, and on CUDA without the GPU kernels (the library then passes the CUDA form
        # over: csrc/tiny_model.c open_form_on_ep), with the accelerator form (whole frames,
        # no Loop: issue 23).
        "forms": {"CPU": name + KERNELS_SUFFIX + ".onnx", "CUDA": name + KERNELS_SUFFIX + ".onnx",
                  "*": name + ACCEL_SUFFIX + ".onnx"},
    }


def motion2_sidecar(suffix):
    return {
        "description": "libvmaf's motion2: min(motion[t], motion[t+1]), motion[N-1] at the end",
        "input_sources": {"motion": {"feature": "motion" + suffix},
                          "motion_next": {"feature": "motion" + suffix, "offset": 1}},
        "output_keys": ["motion2" + suffix],
    }


def sidecar(name, features_graph):
    key, _, motion2_graph, suffix = VARIANTS[name]
    return {
        "name": key,
        # What a caller gives the whole model (its requirements read both
        # pictures); the SVM graph itself reads features only.
        "kind": "fr",
        "description": f"libvmaf's {name} (nu-SVR over VIF, ADM2 and motion2)",
        "meaning": (
            "VMAF: predicted mean opinion score of the distorted video against the reference "
            "on a 0-100 scale (libvmaf's model and features, recomputed as ONNX graphs). Higher "
            "is better; ~93+ is commonly read as visually transparent, 20 points as roughly one "
            "rating-scale step. Frames are scored at their own resolution, luma only."),
        "min_width": MIN_SIZE,
        "min_height": MIN_SIZE,
        "requires": [features_graph + ".onnx", motion2_graph + ".onnx"],
        "input_sources": {f: {"feature": f + suffix} for f in SVM_INPUTS},
        "output_keys": [key],
        "higher_is_better": True,
        "range": [0, 100],
        # for tools that run the graphs themselves (tests/python/test_vmaf_graphs.py)
        "features_model": f"{features_graph}.onnx",
        "features_outputs": FEATURES,
    }


def build_motion2(name):
    g = G()
    g.to_output(g.op("Min", "motion", "motion_next"), "motion2")
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1])
              for n in ("motion", "motion_next")]
    outputs = [helper.make_tensor_value_info("motion2", TensorProto.FLOAT, [1])]
    return finish(g, name, inputs, outputs, "libvmaf's motion2 = min(motion[t], motion[t+1])")


def write_json(path, obj):
    write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def write_bytes(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def default_models_dir():
    cache = os.environ.get("VMAFDNN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vmafdnn")
    return os.path.join(cache, "ref", "vmaf_models")


def main(argv):
    # --library-names: the SVM models are written under their feature keys (vmaf.onnx,
    # vmaf_4k.onnx, vmaf_neg.onnx), the names the library's catalog resolves for
    # `vmafdnn --model vmaf`; their sidecars' "requires" attach the rest.
    library_names = "--library-names" in argv
    argv = [a for a in argv if a != "--library-names"]
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = argv[1]
    models_dir = argv[2] if len(argv) == 3 else default_models_dir()
    os.makedirs(out, exist_ok=True)
    for gain, gname, suffix in ((100.0, "vmaf_features", ""),
                                (1.0, "vmaf_features_neg", "_egl_1")):
        write_bytes(os.path.join(out, gname + ".onnx"),
                    build_features(gain, gname).SerializeToString())
        write_bytes(os.path.join(out, gname + KERNELS_SUFFIX + ".onnx"),
                    build_features_kernels(gain, gname + KERNELS_SUFFIX).SerializeToString())
        # Attached by its own name, the kernels form needs the same sidecar (and has no forms).
        sidecar_of_form = features_sidecar(gname, suffix)
        del sidecar_of_form["forms"]
        write_json(os.path.join(out, gname + KERNELS_SUFFIX + ".json"), sidecar_of_form)
        # The accelerator form (issue 23), likewise: the form for every EP but ORT's CPU EP. It
        # agrees with the pure graph to fp32 rounding (docs/vmaf.md), not yet with the kernels.
        write_bytes(os.path.join(out, gname + ACCEL_SUFFIX + ".onnx"),
                    build_features_accel(gain, gname + ACCEL_SUFFIX).SerializeToString())
        write_json(os.path.join(out, gname + ACCEL_SUFFIX + ".json"), sidecar_of_form)
        write_json(os.path.join(out, gname + ".json"), features_sidecar(gname, suffix))
    for mname, suffix in (("vmaf_motion2", ""), ("vmaf_motion2_neg", "_egl_1")):
        write_bytes(os.path.join(out, mname + ".onnx"), build_motion2(mname).SerializeToString())
        write_json(os.path.join(out, mname + ".json"), motion2_sidecar(suffix))
    for name, (fname, fgraph) in MODEL_FILES.items():
        with open(os.path.join(models_dir, fname)) as f:
            mj = json.load(f)
        fname_out = VARIANTS[name][0] if library_names else name
        write_bytes(os.path.join(out, fname_out + ".onnx"),
                    build_svm(mj, name).SerializeToString())
        write_json(os.path.join(out, fname_out + ".json"), sidecar(name, fgraph))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
