"""Attacks on the samples forms (a2097cb): forms that add inputs after their
model's, and the built-ins' samples forms scored through the library.

A form may add inputs only as numbers the model's sidecar feeds as a
"value" (bpc): vdnn_onnx_form_fits checks their shape, the attach checks
the sidecar feeds them, so that an added input is never read by the default
rules (as a feature vector, a picture) or fed a feature the model does not
read. And the built-ins' samples forms (VMAFDNN_MODEL_FORMS=CUDA, run on
ORT's CPU EP) give every frame's scores bit for bit as the fp32 accelerator
forms do (OpenVINO:CPU), across bit-depth changes, batches and threads.
"""
import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import vmafdnn
from test_sample_inputs import F32, normalised_mean_model, picture, save

vi = helper.make_tensor_value_info


def model_with_added_input(tmp_path, added, sidecar_extra):
    """A FLOAT model m (score = mean of its picture) whose sidecar names, for the CPU, a form
    that declares the model's picture and then `added`, summed into its score."""
    sidecar = {"native_resolution": True, "output_keys": ["m"],
               "forms": {"CPU": "m_form.onnx"}, **sidecar_extra}
    model = normalised_mean_model(tmp_path, "m", False, sidecar)
    nodes = [helper.make_node("ReduceMean", ["x"], ["m0"], keepdims=0),
             helper.make_node("ReduceSum", [added.name], ["g_sum"], keepdims=0),
             helper.make_node("Add", ["m0", "g_sum"], ["s"]),
             helper.make_node("Reshape", ["s", "one"], ["score"])]
    save(tmp_path, "m_form", nodes, [picture("x", F32), added], [vi("score", F32, [1])])
    return model


@pytest.mark.parametrize("added, sidecar_extra", [
    # one number left to the default rules: rank 2 is a feature vector, which "features" fills
    (vi("g", F32, [1, 1]), {"features": ["psnr_y"]}),
    # one number fed a feature: the form would read what the model does not (nor could)
    (vi("g", F32, [1]), {"input_sources": {"g": {"feature": "psnr_y"}}}),
    # one number fed the distorted picture
    (vi("g", F32, [1, 1, 1, 1]), {"input_sources": {"g": {"picture": "distorted"}}}),
], ids=["vector", "feature", "picture"])
def test_a_form_adding_an_input_not_fed_a_value_is_refused(tmp_path, added, sidecar_extra):
    """The model's own file refuses those sidecars (or reads no such input), so the form
    scoring them would score what the model cannot: the attach names the input."""
    model = model_with_added_input(tmp_path, added, sidecar_extra)
    with pytest.raises(vmafdnn.InvalidArgumentError, match='adds input "g", which the '
                       'sidecar\'s "input_sources" does not feed a "value"') as e:
        vmafdnn.Context(device="cpu").use_model(model)
    assert e.value.errno == errno.EINVAL


def test_a_form_adding_a_value_fed_input_attaches(tmp_path):
    """The same form with "g" fed a value (bpc) attaches and reads it: 8 added to the mean."""
    model = model_with_added_input(tmp_path, vi("g", F32, [1]),
                                   {"input_sources": {"g": {"value": "bpc"}}})
    with vmafdnn.Context(device="cpu") as ctx:
        assert ctx.use_model(model).form.endswith("m_form.onnx")
        ctx.read_pictures(None, np.full((6, 8), 255, np.uint8), 0)
        ctx.flush()
        assert ctx.feature("m", 0) == 9.0


# --- the built-ins' samples forms against their accelerator forms ------------------------------

BUILTINS = ["psnr_y", "ssim_y", "sharpness_nr", "psnr_cb", "psnr", "float_ssim"]

SCORE = r"""
import json, sys
import numpy as np
import vmafdnn
from vmafdnn.video import Frame
cfg = json.loads(sys.argv[1])
rng = np.random.default_rng(7)
h, w = cfg["size"]
def frame(bpc, i):
    dt = np.uint8 if bpc == 8 else np.uint16
    planes = [rng.integers(0, 1 << bpc, s).astype(dt)
              for s in ((h, w), ((h + 1) // 2, (w + 1) // 2), ((h + 1) // 2, (w + 1) // 2))]
    return Frame(*planes, bpc, i, "420")
with vmafdnn.Context(device="cpu", **cfg["context"]) as ctx:
    forms = [ctx.use_model(m).form for m in cfg["models"]]
    for i, bpc in enumerate(cfg["bpcs"]):
        ctx.read_pictures(frame(bpc, i), frame(bpc, i), i)
    ctx.flush()
    print(json.dumps([forms, {k: [ctx.feature(k, i) for i in range(len(cfg["bpcs"]))]
                              for k in sorted(ctx.features)}]))
"""


def scores(forms, cfg):
    """Every feature of every frame, scored in a child with VMAFDNN_MODEL_FORMS=forms (read
    at the attach), and the forms the models used."""
    env = dict(os.environ, VMAFDNN_MODEL_FORMS=forms)
    out = subprocess.run([sys.executable, "-c", SCORE, json.dumps(cfg)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("context", [
    {"threads": 1, "batch": 4, "static_shapes": "on", "device_io": "on"},
    # one frame per Run: with frames in flight which frames share a batched Run follows the
    # thread schedule, and a frame in a batch may differ by an ulp from itself alone
    # (test_accel_forms: the library's batch check allows 1e-6 + 1e-5 relative)
    {"threads": 3, "batch": 0, "static_shapes": "off", "device_io": "off"},
], ids=["batch4", "threads3"])
def test_builtin_samples_forms_agree_bit_for_bit_through_the_library(context):
    """8 -> 10 -> 16 -> 8 bits mid-clip, an odd 4:2:0 size: the samples forms (UINT16 samples
    and bpc) give the accelerator forms' scores exactly, frame by frame."""
    cfg = {"models": BUILTINS, "size": [23, 37], "bpcs": [8, 8, 10, 10, 10, 16, 8],
           "context": context}
    (samples_forms, got), (accel_forms, want) = scores("CUDA", cfg), scores("OpenVINO:CPU", cfg)
    assert [os.path.basename(f) for f in samples_forms] == [m + "_samples.onnx" for m in BUILTINS]
    assert [os.path.basename(f) for f in accel_forms] == [m + "_accel.onnx" for m in BUILTINS]
    assert got == want
