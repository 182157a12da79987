"""The kernels forms of psnr_y, psnr_cb, psnr, ssim_y, float_ssim and sharpness_nr
(tools/gen_builtin_models.py KERNEL_OPS: one node of the library's Psnr, Ssim, FloatSsim or
LaplacianVariance, its fused CPU kernels on ORT's CPU EP and its GPU kernels on CUDA), which
score on the CPU EP by default: against each model's own graph (VMAFDNN_MODEL_FORMS=0) frame by
frame on real clips (8, 10 and 12 bits, an odd size, a scene cut) and, for float_ssim, on frames
large enough to be decimated (scales 2, 3 and 4, odd sizes, 8 to 16 bits); and the choice of form
on each EP (CUDA's list: the kernels form, passed over where the GPU kernels are not ready, as on
this machine, for the samples form).

The kernels themselves are held bit for bit to their GPU programs, and to double-precision
references, in tests/c/test_gpu_ssim.c, test_gpu_float_ssim.c and test_gpu_psnr.c.
"""

import os

import numpy as np
import pytest

import vmafdnn
from test_accel_forms import CLIPS, clips, reference  # noqa: F401 (fixtures)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# |kernels form - model| at most: ssim_y's float convolutions sum in another order than ORT's
# (the 1e-5 for ssim); psnr's squared errors are an exact integer sum in the kernel, a
# double sum of float squares in the model (a few 1e-6 dB at most on these clips).
TOLERANCE = {"psnr_y": 2e-5, "psnr_cb": 2e-5, "psnr_cr": 2e-5, "ssim_y": 1e-5,
             "float_ssim": 1e-5}
# sharpness_nr: relative (exact integer Laplacians in the kernel, of float-rounded samples in the
# model: within 2e-7 relative, nr_kernels.h)
RELATIVE = {"sharpness_nr": 1e-6}


def scored(monkeypatch, forms, ref, dist):
    if forms is None:
        monkeypatch.delenv("VMAFDNN_MODEL_FORMS", raising=False)
    else:
        monkeypatch.setenv("VMAFDNN_MODEL_FORMS", forms)
    report = vmafdnn.score(str(ref), str(dist), ["psnr", "ssim_y", "float_ssim", "sharpness_nr"],
                           device="cpu",
                           threads=1)
    used = {os.path.basename(m["path"]): (os.path.basename(m["form"]) if m.get("form") else None)
            for m in report["models"]}
    return [f["metrics"] for f in report["frames"]], used


@pytest.mark.parametrize("clip", CLIPS)
def test_kernels_forms_score_on_the_cpu_ep_as_the_models_do(monkeypatch, clips, clip):
    _, _, bpc, ref, dist = clips[clip]
    kernels, used = scored(monkeypatch, None, ref, dist)
    assert used == {"psnr_y.onnx": "psnr_y_kernels.onnx", "psnr_cb.onnx": "psnr_cb_kernels.onnx",
                    "psnr.onnx": "psnr_kernels.onnx", "ssim_y.onnx": "ssim_y_kernels.onnx",
                    "float_ssim.onnx": "float_ssim_kernels.onnx",
                    "sharpness_nr.onnx": "sharpness_nr_kernels.onnx"}, used
    models, used = scored(monkeypatch, "0", ref, dist)
    assert set(used.values()) == {None}, used
    assert len(kernels) == len(models) > 0
    worst = {}
    for k, m in zip(kernels, models):
        assert k.keys() == m.keys()
        for name, tol in TOLERANCE.items():
            d = abs(k[name] - m[name])
            worst[name] = max(worst.get(name, 0.0), d)
            assert d <= tol, f"{clip} ({bpc} bits) {name}: kernels {k[name]}, model {m[name]}"
        for name, tol in RELATIVE.items():
            d = abs(k[name] - m[name]) / max(abs(m[name]), 1e-12)
            worst[name] = max(worst.get(name, 0.0), d)
            assert d <= tol, f"{clip} ({bpc} bits) {name}: kernels {k[name]}, model {m[name]}"
    print(f"{clip}: max |kernels form - model| {worst}")


def float_ssim_of(monkeypatch, forms, pairs, bpc, model="float_ssim"):
    """The model's score of each (reference, distorted) pair of integer planes, and the form
    that scored them."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", forms) if forms else \
        monkeypatch.delenv("VMAFDNN_MODEL_FORMS", raising=False)
    ctx = vmafdnn.Context(device="cpu", threads=1)
    try:
        info = ctx.use_model(model)
        for i, (ref, dist) in enumerate(pairs):
            ctx.read_pictures(ref, dist, i, bitdepth=None if bpc == 8 else bpc)
        ctx.flush()
        return ([ctx.feature(model, i) for i in range(len(pairs))],
                os.path.basename(info.form) if info.form else None)
    finally:
        ctx.close()


# (height, width, bpc): libvmaf's scale round(min(w, h) / 256) is 1, 2, 3, 4 and 2; odd sizes
# give the decimated frame its extra sample (iqa's N // s + N % 2) and mirror the last taps.
FLOAT_SSIM_FRAMES = [(383, 1001, 8), (400, 711, 10), (721, 1283, 8), (1081, 1921, 12),
                     (641, 640, 16)]


@pytest.mark.parametrize("height, width, bpc", FLOAT_SSIM_FRAMES)
def test_float_ssim_kernels_form_decimates_as_the_model_does(monkeypatch, height, width, bpc):
    from test_accel_precision import realistic_pair
    peak = (1 << bpc) - 1
    dtype = np.uint8 if bpc == 8 else np.uint16
    pairs = []
    for kind in ("high", "low", "identical"):
        ref, dist = realistic_pair(height, width, bpc, kind, seed=width + bpc)
        pairs.append(tuple(np.round(p[0, 0] * peak).astype(dtype) for p in (ref, dist)))
    kernels, form = float_ssim_of(monkeypatch, None, pairs, bpc)
    assert form == "float_ssim_kernels.onnx"
    model, form = float_ssim_of(monkeypatch, "0", pairs, bpc)
    assert form is None
    for kind, k, m in zip(("high", "low", "identical"), kernels, model):
        assert abs(k - m) <= TOLERANCE["float_ssim"], f"{width}x{height} {bpc} bits {kind}: " \
            f"kernels {k}, model {m}"
    assert kernels[2] == 1.0  # identical frames: every pixel's SSIM is 1 exactly
    assert kernels[1] < kernels[0] < 1.0
    if min(height, width) < 384:
        # scale 1: libvmaf does not decimate, so float_ssim is ssim_y, odd sizes included (the
        # model's graph once gave an odd side a mirrored extra sample there: up to 2e-4 off)
        assert float_ssim_of(monkeypatch, None, pairs, bpc, "ssim_y")[0] == kernels
        graph = float_ssim_of(monkeypatch, "0", pairs, bpc, "ssim_y")[0]
        assert max(abs(a - b) for a, b in zip(graph, model)) <= 1e-7, (graph, model)


def test_cuda_takes_the_samples_form_where_its_gpu_kernels_are_not_ready(monkeypatch, clips):
    """VMAFDNN_MODEL_FORMS=CUDA: the forms CUDA would get on this machine, where no GPU kernels
    are ready: each kernels form passed over for the next choice CUDA's list names, the samples
    form (VMAF's features, whose CUDA key names one form, for "*": the accelerator form)."""
    from test_ort_wheels import cuda_driver_present
    from vmafdnn import models
    if cuda_driver_present():
        pytest.skip("a CUDA driver is present: the GPU kernels may be ready")
    _, _, _, ref, dist = clips[CLIPS[0]]
    _, used = scored(monkeypatch, "CUDA", ref, dist)
    assert used == {"psnr_y.onnx": "psnr_y_samples.onnx", "psnr_cb.onnx": "psnr_cb_samples.onnx",
                    "psnr.onnx": "psnr_samples.onnx", "ssim_y.onnx": "ssim_y_samples.onnx",
                    "float_ssim.onnx": "float_ssim_samples.onnx",
                    "sharpness_nr.onnx": "sharpness_nr_samples.onnx"}, used
    info = vmafdnn.Context().use_model(str(models.path("vmaf_features")))
    assert os.path.basename(info.form) == "vmaf_features_accel.onnx", info.form


def test_a_form_list_in_a_sidecar_is_checked(tmp_path):
    """A "forms" value may be a list of 1..4 files (in order of preference), each a path inside
    the model's folder; anything else is refused naming the entry."""
    import json
    import shutil
    from vmafdnn import models
    src = os.path.dirname(str(models.path("psnr_y")))
    for bad, why in [([], "lists 0 files"), (["a.onnx"] * 5, "lists 5 files"),
                     (["../x.onnx"], "must be a path inside"), ([3], "must be a non-empty string"),
                     ([""], "must not be empty")]:
        d = tmp_path / f"case{len(os.listdir(tmp_path))}"
        d.mkdir()
        for f in ("psnr_y.onnx", "psnr_y.json"):
            shutil.copy(os.path.join(src, f), d / f)
        meta = json.loads((d / "psnr_y.json").read_text())
        meta["forms"] = {"CPU": bad}
        (d / "psnr_y.json").write_text(json.dumps(meta))
        with pytest.raises(vmafdnn.DnnError) as e:
            vmafdnn.Context().use_model(str(d / "psnr_y.onnx"))
        assert 'key "forms" entry 0' in str(e.value) and why in str(e.value), (bad, e.value)


def in_place_pairs(bpc, crop, seed):
    """Four 10-bit-and-up (or 8-bit) luma pairs of 67 x 131, as whole arrays or as crops of
    wider ones (rows spaced: the library must copy those)."""
    rng = np.random.default_rng(seed)
    top = (1 << bpc) - 1
    dtype = np.uint8 if bpc == 8 else np.uint16
    pairs = []
    for _ in range(4):
        ref = rng.integers(0, top + 1, (67, 131 + 9 * crop))
        dist = np.clip(ref + rng.integers(-top // 40 - 1, top // 40 + 2, ref.shape), 0, top)
        ref, dist = ref.astype(dtype), dist.astype(dtype)
        pairs.append((ref[:, 5:136], dist[:, 5:136]) if crop else (ref, dist))
    return pairs


@pytest.mark.parametrize("bpc", [8, 10, 12, 16])
@pytest.mark.parametrize("crop", [0, 1])
def test_samples_fed_where_they_lie_score_as_copied(monkeypatch, bpc, crop):
    """On ORT's CPU EP a samples model (the kernels forms, VMAF's features) is fed a picture's
    samples where they lie when they are what it takes (16-bit words above 8 bits, rows back to
    back): the caller's planes, or a frame in flight's copy. Where the session's host blocks are
    pinned memory (VMAFDNN_TEST_HOST_ACCESSIBLE=1 stands ORT's CPU allocator in for it) they are
    copied there first, as before. Both give the same bits, alone and with frames in flight,
    whole planes and crops (spaced rows: copied either way), and the caller's planes are left as
    they were."""
    models = ["vmaf", "psnr_y", "ssim_y", "float_ssim", "sharpness_nr"]
    pairs = in_place_pairs(bpc, crop, seed=bpc + crop)
    before = [(r.copy(), d.copy()) for r, d in pairs]
    scores = {}
    for hook in ("0", "1"):
        monkeypatch.setenv("VMAFDNN_TEST_HOST_ACCESSIBLE", hook)
        for threads in (1, 3):
            with vmafdnn.Context(threads=threads) as ctx:
                for name in models:
                    ctx.use_model(name)
                assert {os.path.basename(m.form or "") for m in ctx.models} >= {
                    "psnr_y_kernels.onnx", "vmaf_features_kernels.onnx"}
                for i, (r, d) in enumerate(pairs):
                    ctx.read_pictures(r, d, i, bitdepth=bpc)
                ctx.flush()
                scores[hook, threads] = {k: [ctx.feature(k, i) for i in range(len(pairs))]
                                         for k in ctx.features}
    assert scores["0", 1] == scores["1", 1] == scores["0", 3] == scores["1", 3]
    assert all(np.isfinite(v).all() for v in scores["0", 1].values())
    for (r, d), (r0, d0) in zip(pairs, before):
        assert np.array_equal(r, r0) and np.array_equal(d, d0)
