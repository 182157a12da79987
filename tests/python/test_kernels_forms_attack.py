"""The attack review of the kernels forms (the library's Ssim and Psnr ops, sidecar "forms"
lists): findings fixed, with what was tried around them held as it is.

- A "*" list was the last resort of an EP by its first file only: a "*" form passed over (its
  library operators on ORT's CPU EP for the EP it is for) had no next choice, and the list's
  later files were never reached (csrc/sidecar.c vdnn_sidecar_form_choice).
- One EP keyed twice in different spellings ("CUDA" and "cuda") was read as one list of up to 8
  files, in an order no reader of the sidecar could tell; refused now (csrc/sidecar.c
  read_forms).
"""

import json
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

import vmafdnn
from vmafdnn import models

DOMAIN = "org.vmafdnn"
K, S, A = "psnr_y_kernels.onnx", "psnr_y_samples.onnx", "psnr_y_accel.onnx"


def psnr_y_dir(tmp_path, forms):
    """psnr_y and its forms in a folder of their own, its sidecar's "forms" replaced."""
    src = os.path.dirname(str(models.path("psnr_y")))
    d = tmp_path / f"m{len(os.listdir(tmp_path))}"
    d.mkdir()
    for name in ("psnr_y", K[:-5], S[:-5], A[:-5]):
        for ext in (".onnx", ".json"):
            if os.path.exists(os.path.join(src, name + ext)):
                shutil.copy(os.path.join(src, name + ext), d / (name + ext))
    meta = json.loads((d / "psnr_y.json").read_text())
    meta["forms"] = forms
    (d / "psnr_y.json").write_text(json.dumps(meta))
    return str(d / "psnr_y.onnx")


def form_used(path):
    ctx = vmafdnn.Context(device="cpu", threads=1)
    try:
        info = ctx.use_model(path)
        plane = np.arange(24 * 16, dtype=np.uint8).reshape(16, 24)
        ctx.read_pictures(plane, plane // 2, 0)
        ctx.flush()
        assert 0 < ctx.feature("psnr_y", 0) < 60
        return os.path.basename(info.form) if info.form else None
    finally:
        ctx.close()


def no_cuda_driver():
    from test_ort_wheels import cuda_driver_present
    if cuda_driver_present():
        pytest.skip("a CUDA driver is present: the GPU kernels may be ready")


def test_a_star_list_is_every_choice_after_the_eps_own(tmp_path, monkeypatch):
    """VMAFDNN_MODEL_FORMS=CUDA on a machine without GPU kernels: the kernels form is passed
    over, and the next choice may be the second file of "*" (it was never reached: the kernels
    form scored, planes to the host and back on a real CUDA EP)."""
    no_cuda_driver()
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    assert form_used(psnr_y_dir(tmp_path, {"*": [K, A]})) == A
    assert form_used(psnr_y_dir(tmp_path, {"CUDA": [K], "*": [K, S]})) == S
    assert form_used(psnr_y_dir(tmp_path, {"CUDA": K, "*": [A, S]})) == A
    # every choice passed over: the last one tried scores (nothing better exists)
    assert form_used(psnr_y_dir(tmp_path, {"*": [K, K]})) == K
    # ORT's CPU EP never takes "*"; its own list's first file runs there
    monkeypatch.delenv("VMAFDNN_MODEL_FORMS")
    assert form_used(psnr_y_dir(tmp_path, {"*": [K, A]})) is None
    assert form_used(psnr_y_dir(tmp_path, {"CPU": [K, S], "*": [A]})) == K


@pytest.mark.parametrize("forms", [
    {"CUDA": [K], "cuda": [S]},
    {"CPU": K, "*": A, "cpu": [S]},
    {"OpenVINO:GPU": A, "openvino:GPU": [S, K]},
])
def test_one_ep_keyed_in_two_spellings_is_refused(tmp_path, forms):
    with pytest.raises(vmafdnn.InvalidArgumentError) as e:
        vmafdnn.Context(device="cpu").use_model(psnr_y_dir(tmp_path, forms))
    assert 'key "forms" entry' in str(e.value) and "names the EP of entry" in str(e.value)


def test_batch_keys_cover_every_listed_form(tmp_path):
    """results.py's job key covers every file a forms list names, "*" lists included (each may
    score now), nested or non-string entries ignored as the library refuses them."""
    from vmafdnn import results
    path = psnr_y_dir(tmp_path, {"*": [K, A], "CUDA": [S, K]})
    files = {os.path.basename(f) for f in results.key_files(path)}
    assert {"psnr_y.onnx", "psnr_y.json", K, A, S} <= files, files


# --- the ops' checks, as a third-party model meets them (held as they are) ---

def op_model(tmp_path, op, ref_shape, dist_shape):
    ins = [helper.make_tensor_value_info("reference", TensorProto.UINT16, ref_shape),
           helper.make_tensor_value_info("distorted", TensorProto.UINT16, dist_shape),
           helper.make_tensor_value_info("bpc", TensorProto.FLOAT, [1])]
    node = helper.make_node(op, ["reference", "distorted", "bpc"], ["score"], domain=DOMAIN)
    graph = helper.make_graph([node], "g", ins,
                              [helper.make_tensor_value_info("score", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(DOMAIN, 1)])
    model.ir_version = 8
    path = tmp_path / f"{op}{len(os.listdir(tmp_path))}.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.mark.parametrize("op", ["Ssim", "Psnr"])
@pytest.mark.parametrize("shape,bpc,high,why", [
    ([2, 1, 16, 16], 8, 255, "must be a plane"),
    ([16], 8, 255, "must be a plane"),
    ([1, 1, 11, 40000], 8, 255, "each side must be 1..32768"),
    ([1, 1, 16, 16], float("nan"), 255, "bpc) must be one integer of 8..16"),
    ([1, 1, 16, 16], 7, 127, "bpc) must be one integer of 8..16"),
    ([1, 1, 16, 16], 17, 255, "bpc) must be one integer of 8..16"),
    ([1, 1, 16, 16], 8.5, 255, "bpc) must be one integer of 8..16"),
    ([1, 1, 16, 16], 8, 256, "every sample below 2^bpc"),
    ([1, 1, 16, 16], 10, 1024, "every sample below 2^bpc"),
])
def test_third_party_inputs_are_refused(tmp_path, op, shape, bpc, high, why):
    path = op_model(tmp_path, op, shape, shape)
    plane = np.full(shape, high, np.uint16)
    with vmafdnn.Session(path, device="cpu") as s:
        with pytest.raises(vmafdnn.DnnError) as e:
            s.run({"reference": plane, "distorted": plane // 2,
                   "bpc": np.array([bpc], np.float32)})
    assert f"org.vmafdnn:{op}" in str(e.value) and why in str(e.value), e.value


@pytest.mark.parametrize("op,hw,ok", [("Ssim", (10, 11), False), ("Ssim", (11, 11), True),
                                      ("Psnr", (1, 1), True), ("Psnr", (1, 40), True)])
def test_small_planes(tmp_path, op, hw, ok):
    shape = [1, 1, *hw]
    path = op_model(tmp_path, op, shape, shape)
    ref = np.zeros(shape, np.uint16)
    feeds = {"reference": ref, "distorted": ref + 1, "bpc": np.array([8], np.float32)}
    with vmafdnn.Session(path, device="cpu") as s:
        if ok:
            assert np.isfinite(s.run(feeds)["score"][0])
        else:
            with pytest.raises(vmafdnn.DnnError, match="at least 11x11"):
                s.run(feeds)


def test_planes_of_different_sizes_are_refused(tmp_path):
    path = op_model(tmp_path, "Ssim", [1, 1, 16, 16], [1, 1, 16, 17])
    with vmafdnn.Session(path, device="cpu") as s:
        with pytest.raises(vmafdnn.DnnError, match="planes differ in size"):
            s.run({"reference": np.zeros([1, 1, 16, 16], np.uint16),
                   "distorted": np.zeros([1, 1, 16, 17], np.uint16),
                   "bpc": np.array([8], np.float32)})


# --- numerics on extreme frames: kernels forms against the models' own graphs ---

def scores(monkeypatch, forms, frames, bpc):
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", forms)
    ctx = vmafdnn.Context(device="cpu", threads=1)
    try:
        for m in ("psnr_y", "ssim_y"):
            ctx.use_model(m)
        for i, (r, d) in enumerate(frames):
            ctx.read_pictures(r, d, i, bitdepth=bpc if bpc > 8 else None)
        ctx.flush()
        return {m: [ctx.feature(m, i) for i in range(len(frames))] for m in ("psnr_y", "ssim_y")}
    finally:
        ctx.close()


@pytest.mark.parametrize("bpc", [8, 16])
@pytest.mark.parametrize("hw", [(11, 11), (13, 37), (36, 64)])
def test_extreme_frames_score_as_the_models_do(monkeypatch, bpc, hw):
    peak = 2 ** bpc - 1
    dt = np.uint8 if bpc == 8 else np.uint16
    rng = np.random.default_rng(bpc * 100 + hw[1])
    black, white = np.zeros(hw, dt), np.full(hw, peak, dt)
    flat = np.full(hw, peak // 3, dt)
    noise = rng.integers(0, peak + 1, hw).astype(dt)
    checker = ((np.indices(hw).sum(0) % 2) * peak).astype(dt)
    frames = [(black, white), (white, black), (black, black), (white, white), (flat, flat),
              (flat, black), (noise, noise), (noise, (peak - noise).astype(dt)),
              (checker, (peak - checker).astype(dt)), (checker, flat)]
    kernels = scores(monkeypatch, "auto", frames, bpc)
    graphs = scores(monkeypatch, "0", frames, bpc)
    for name, tol in (("psnr_y", 1e-4), ("ssim_y", 1e-5)):
        for i, (k, m) in enumerate(zip(kernels[name], graphs[name])):
            assert abs(k - m) <= tol, (name, i, k, m)
    for i in (2, 3, 4, 6):  # identical frames: the library's cap
        assert kernels["psnr_y"][i] == 6 * bpc + 12
        assert kernels["ssim_y"][i] == pytest.approx(1.0, abs=1e-6)
