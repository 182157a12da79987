"""The built-ins' accelerator forms hold no double (tools/gen_builtin_models.py, the accel_*
helpers): OpenVINO's CPU and GPU devices, WebGPU and many GPUs take no f64 node, and one sends
the rest of the graph back to ORT's CPU EP. So psnr_y, psnr_cb, psnr, sharpness_nr, ssim_y and
float_ssim sum in float32, in stages, and must still agree with today's models (which sum in
double) within 1e-5, absolute, in the output's unit (dB for PSNR), at the sizes accelerators
run: synthetic 1920x1080 and 3840x2160 pairs at 8 and 10 bits (smooth picture plus noise;
~54 dB, ~60 and ~72 dB (+-1 LSB on 6% of the samples), ~26 dB, and identical frames, whose PSNR
must be the model's exactly). test_accel_forms.py checks the generated clips and the lint.

Measured (ORT 1.32 CPU EP; OpenVINO 1.24.1's CPU device alike): psnr within 3.8e-6 dB (one
float32 ulp at 32-64 dB), ssim_y and float_ssim within 1e-6, sharpness_nr within 6e-8; figures
in docs/execution_providers.md. The forms take N frames per Run: the four 1080p pairs in one
batch give each pair's own value.
"""

import os
import sys

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gen_builtin_models  # noqa: E402
import gen_vmaf_models  # noqa: E402
from test_accel_forms import session as accel_session  # noqa: E402

NAMES = ["psnr_y", "psnr_cb", "psnr", "ssim_y", "sharpness_nr", "float_ssim"]
TOLERANCE = 1e-5
SIZES = [(1080, 1920), (2160, 3840)]
KINDS = ["high", "sparse", "low", "identical"]


def session(model, dims=None, optimized=None):
    return accel_session(model.SerializeToString(), dims, optimized, threads=2)


def double_uses(model):
    """Where `model` names the double type: initializers, Constant values, Cast targets, and
    every value its (strict) shape inference types, subgraphs included."""
    found = [t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.DOUBLE]

    def walk(graph):
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                elif attr.type == onnx.AttributeProto.TENSOR and \
                        attr.t.data_type == onnx.TensorProto.DOUBLE:
                    found.append(node.name)
                elif node.op_type == "Cast" and attr.name == "to" and \
                        attr.i == onnx.TensorProto.DOUBLE:
                    found.append(node.name)
    walk(model.graph)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph
    found += [v.name for v in list(inferred.value_info) + list(inferred.output)
              + list(inferred.input)
              if v.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE]
    return found


@pytest.mark.parametrize("name", NAMES)
def test_accelerator_form_has_no_double(name, tmp_path):
    model = gen_builtin_models.ACCEL_BUILDERS[name]()
    assert not double_uses(model), name
    # and none appears once ORT has specialised and folded it (what an EP is offered)
    out = str(tmp_path / "optimised.onnx")
    session(model, {"H": 1080, "W": 1920, "N": 1}, optimized=out)
    assert not double_uses(onnx.load(out)), f"{name} after ORT's basic optimisation"


@pytest.mark.parametrize("gain, name", [(100.0, "vmaf_features"), (1.0, "vmaf_features_neg")])
def test_vmaf_accelerator_forms_have_no_double(gain, name, tmp_path):
    """VMAF's features (tools/gen_vmaf_models.py build_features_accel) likewise: VIF's and ADM's
    per-scale sums in float32 in two stages, motion's SAD in int32 rows (their agreement with
    libvmaf's kernels: test_accel_forms.py, test_vmaf.py; docs/vmaf.md)."""
    model = gen_vmaf_models.build_features_accel(gain, name + "_accel")
    assert not double_uses(model), name
    out = str(tmp_path / "optimised.onnx")
    session(model, {"H": 1080, "W": 1920, "N": 1}, optimized=out)
    assert not double_uses(onnx.load(out)), f"{name} after ORT's basic optimisation"


def realistic_pair(height, width, bpc, kind, seed=0):
    """A smooth picture plus sensor-like noise and a distorted copy: 'high' adds rounded
    N(0, 0.45 LSB at 8 bits) noise (~54 dB), 'sparse' +-1 LSB on 6% of the samples (~60 dB at 8
    bits, ~72 dB at 10), 'low' a blur plus 5% noise (~26 dB), 'identical' none."""
    rng = np.random.default_rng(seed)
    peak = (1 << bpc) - 1
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    smooth = (0.5 + 0.22 * np.sin(xx / 37.0 + yy / 53.0)
              + 0.12 * np.cos(yy / 17.0) * np.sin(xx / 29.0) + 0.1 * (xx / width - 0.5))
    ref = np.clip(np.round(smooth * peak + rng.normal(0, peak * 0.015, smooth.shape)), 0, peak)
    if kind == "identical":
        dist = ref.copy()
    elif kind == "high":
        dist = ref + np.round(rng.normal(0, 0.45 * (1 << (bpc - 8)), ref.shape))
    elif kind == "sparse":
        dist = ref + rng.choice(np.array([-1.0, 0.0, 1.0]), ref.shape, p=[0.03, 0.94, 0.03])
    else:
        blur = (ref + np.roll(ref, 1, 0) + np.roll(ref, -1, 0) + np.roll(ref, 1, 1)
                + np.roll(ref, -1, 1)) / 5
        dist = np.round(blur + rng.normal(0, peak * 0.05, ref.shape))
    scale = np.float32(peak)
    return ((ref.astype(np.float32) / scale)[None, None],
            (np.clip(dist, 0, peak).astype(np.float32) / scale)[None, None])


@pytest.fixture(scope="module")
def forms():
    """name -> (the model's session, the accelerator form's session)."""
    return {name: (session(gen_builtin_models.BUILDERS[name]()),
                   session(gen_builtin_models.ACCEL_BUILDERS[name]())) for name in NAMES}


def both(forms, name, ref, dist):
    pure, accel = forms[name]
    feed = ({"distorted": dist} if len(pure.get_inputs()) == 1
            else {"reference": ref, "distorted": dist})
    return float(pure.run(None, feed)[0][0]), float(accel.run(None, feed)[0][0])


@pytest.mark.parametrize("bpc", [8, 10])
@pytest.mark.parametrize("height, width", SIZES)
def test_accelerator_forms_agree_on_large_frames(height, width, bpc, forms):
    worst = {}
    frames, alone = [], {}
    for i, kind in enumerate(KINDS):
        ref, dist = realistic_pair(height, width, bpc, kind, seed=height + bpc + i)
        frames.append((ref, dist))
        for name in ["psnr_y", "ssim_y", "sharpness_nr", "float_ssim"]:
            model, accel = both(forms, name, ref, dist)
            alone.setdefault(name, []).append(accel)
            if kind == "identical":
                # identical frames: exactly the model's value (PSNR's 200 dB cap, SSIM's 1)
                assert accel == model or name == "sharpness_nr", f"{name}: {accel} vs {model}"
            d = abs(accel - model)
            worst[name] = max(worst.get(name, 0.0), d)
            assert d <= TOLERANCE, f"{name} {kind} {width}x{height} {bpc} bit: {accel} vs {model}"
    print(f"{width}x{height} {bpc} bit: " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items()))
    if height == 1080:
        # the four frames as one batch (N = 4): each frame's own value, within the library's
        # batch check (measured: bit for bit)
        ref, dist = (np.concatenate(v) for v in zip(*frames))
        for name, values in alone.items():
            accel = forms[name][1]
            feed = ({"distorted": dist} if len(accel.get_inputs()) == 1
                    else {"reference": ref, "distorted": dist})
            got = accel.run(None, feed)[0].astype(np.float64)
            assert got.shape == (4,)
            assert np.all(np.abs(got - values) <= 1e-6 + 1e-5 * np.abs(values)), \
                f"{name}: batched {got} vs alone {values}"


@pytest.mark.parametrize("height, width", [(1, 1), (1, 7), (5, 3), (33, 65), (721, 1283)])
def test_psnr_of_identical_frames_is_exactly_the_models(height, width, forms):
    ref, _ = realistic_pair(height, width, 10, "identical")
    for name in ("psnr_y", "psnr_cb", "psnr"):
        model, accel = both(forms, name, ref, ref)
        assert accel == model == gen_builtin_models.PSNR_MAX_DB, name


@pytest.mark.parametrize("height, width", [(721, 1283), (383, 1001), (1081, 1921)])
def test_odd_sizes_agree(height, width, forms):
    """Odd sizes, float_ssim at scale 3, 1 and 4 (the index arithmetic: floor divisions of odd
    sizes, the mirrored taps, the odd size's extra sample)."""
    ref, dist = realistic_pair(height, width, 8, "high", seed=width)
    for name in ["psnr_y", "ssim_y", "sharpness_nr", "float_ssim"]:
        model, accel = both(forms, name, ref, dist)
        assert abs(accel - model) <= TOLERANCE, f"{name} {width}x{height}: {accel} vs {model}"
