"""The kernels forms of psnr_y, psnr_cb, psnr, ssim_y and sharpness_nr
(tools/gen_builtin_models.py KERNEL_OPS: one node of the library's Psnr, Ssim or
LaplacianVariance, its fused CPU kernels on ORT's CPU EP and its GPU kernels on CUDA), which score on the CPU EP by default: against each model's own graph
(VMAFDNN_MODEL_FORMS=0) frame by frame on real clips (8, 10 and 12 bits, an odd size, a scene
cut), and the choice of form on each EP (CUDA's list: the kernels form, passed over where the GPU
kernels are not ready, as on this machine, for the samples form).

The kernels themselves are held bit for bit to their GPU programs, and to double-precision
references, in tests/c/test_gpu_ssim.c and test_gpu_psnr.c.
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
TOLERANCE = {"psnr_y": 2e-5, "psnr_cb": 2e-5, "psnr_cr": 2e-5, "ssim_y": 1e-5}
# sharpness_nr: relative (exact integer Laplacians in the kernel, of float-rounded samples in the
# model: within 2e-7 relative, nr_kernels.h)
RELATIVE = {"sharpness_nr": 1e-6}


def scored(monkeypatch, forms, ref, dist):
    if forms is None:
        monkeypatch.delenv("VMAFDNN_MODEL_FORMS", raising=False)
    else:
        monkeypatch.setenv("VMAFDNN_MODEL_FORMS", forms)
    report = vmafdnn.score(str(ref), str(dist), ["psnr", "ssim_y", "sharpness_nr"], device="cpu",
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
