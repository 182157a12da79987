"""8-bit samples as UINT8 (vdnn_onnx_narrow_samples, vdnn_ort_narrows): a samples model
(UINT16 pictures that its graph only moves and casts) scoring an 8-bit clip gets specialised
sessions whose pictures are declared UINT8, and its frames go to them as the clip's own bytes,
half the bytes of UINT16 to a device.

What must hold whatever the EP: every frame's scores are those of the same model fed UINT16
(static shapes off: the session as opened, which never narrows), bit for bit, through depth
changes mid-clip, batches, frames in flight, the history VMAF's motion reads, and more clip
sizes than a session specialises (the runs past them widened again); StaticRuns.uint8 counts
exactly the runs fed so. Run here on ORT's CPU EP with the CUDA samples forms
(VMAFDNN_MODEL_FORMS=CUDA) and VMAF's accelerator form (=OpenVINO:CPU).
"""
import json
import os
import subprocess
import sys

import pytest

SCORE = r"""
import json, sys
import numpy as np
import vmafdnn
from vmafdnn.video import Frame
cfg = json.loads(sys.argv[1])
rng = np.random.default_rng(11)
def frame(bpc, i, h, w):
    dt = np.uint8 if bpc == 8 else np.uint16
    planes = [rng.integers(0, 1 << bpc, s).astype(dt)
              for s in ((h, w), ((h + 1) // 2, (w + 1) // 2), ((h + 1) // 2, (w + 1) // 2))]
    return Frame(*planes, bpc, i, "420")
out = {"clips": []}
with vmafdnn.Context(device="cpu", **cfg["context"]) as ctx:
    out["forms"] = [os.path.basename(ctx.use_model(m).form or m) for m in cfg["models"]]
    for clip in cfg["clips"]:
        h, w = clip["size"]
        for i, bpc in enumerate(clip["bpcs"]):
            ref = frame(bpc, i, h, w)
            dist = Frame(*[np.clip(p.astype(np.int64) + rng.integers(-9, 10, p.shape), 0,
                                   (1 << bpc) - 1).astype(p.dtype) for p in (ref.y, ref.u, ref.v)],
                         bpc, i, "420")
            ctx.read_pictures(ref, dist, i)
        ctx.flush()
        out["clips"].append({k: [ctx.feature(k, i) for i in range(len(clip["bpcs"]))]
                             for k in sorted(ctx.features)})
        ctx.reset()
    out["runs"] = [ctx.static_runs(i)._asdict() for i in range(len(cfg["models"]))]
print(json.dumps(out))
""".replace("import json, sys", "import json, os, sys")


def score(forms, context, models, clips, **env):
    """Every feature of every frame of each clip (the context reset between clips), scored in
    a child with VMAFDNN_MODEL_FORMS=forms and `env`, the forms used and each model's run
    counts."""
    env = dict(os.environ, VMAFDNN_MODEL_FORMS=forms, **env)
    cfg = {"context": context, "models": models, "clips": clips}
    out = subprocess.run([sys.executable, "-c", SCORE, json.dumps(cfg)], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


NARROW = {"static_shapes": "on", "device_io": "on"}
WIDE = {"static_shapes": "off", "device_io": "off"}
SAMPLES = ["psnr_y", "ssim_y", "sharpness_nr", "psnr", "float_ssim"]


def frames_of(clips):
    return sum(len(c["bpcs"]) for c in clips)


def test_an_8bit_clip_goes_as_uint8_and_scores_as_uint16():
    """Every run of the samples forms on an 8-bit clip is fed UINT8 and every score is the
    UINT16 session's, bit for bit."""
    clips = [{"size": [23, 37], "bpcs": [8] * 5}]
    got = score("CUDA", {"threads": 1, **NARROW}, SAMPLES, clips)
    want = score("CUDA", {"threads": 1, **WIDE}, SAMPLES, clips)
    assert got["forms"] == [m + "_samples.onnx" for m in SAMPLES]
    assert got["clips"] == want["clips"]
    for runs in got["runs"]:
        assert runs["uint8"] == runs["fixed"] == 5, runs
    assert all(runs["uint8"] == 0 for runs in want["runs"])


def test_depth_changes_feed_uint16_where_a_frame_is_not_8bit():
    """8 -> 10 -> 16 -> 8 bits mid-clip: the 8-bit frames go as UINT8 (a second session,
    specialised narrow), the others as UINT16, and the scores do not move."""
    bpcs = [8, 8, 10, 10, 16, 8, 8]
    clips = [{"size": [23, 37], "bpcs": bpcs}]
    got = score("CUDA", {"threads": 1, **NARROW}, SAMPLES, clips)
    want = score("CUDA", {"threads": 1, **WIDE}, SAMPLES, clips)
    assert got["clips"] == want["clips"]
    for runs in got["runs"]:
        assert runs["uint8"] == bpcs.count(8) and runs["fixed"] == len(bpcs), runs
        assert runs["specialised"] == 2, runs


@pytest.mark.parametrize("context", [
    {"threads": 1, "batch": 4},
    {"threads": 3, "batch": 0},
], ids=["batch4", "threads3"])
def test_batches_and_frames_in_flight_agree(context):
    """Batched Runs (a batch of 8-bit frames goes whole as UINT8; one mixing depths as UINT16)
    and frames in flight give the UINT16 scores."""
    clips = [{"size": [20, 30], "bpcs": [8, 8, 8, 8, 8, 10, 8, 8, 8]}]
    got = score("CUDA", {**context, **NARROW}, ["psnr_y", "ssim_y"], clips)
    want = score("CUDA", {**context, **WIDE}, ["psnr_y", "ssim_y"], clips)
    assert got["clips"] == want["clips"]
    assert all(0 < runs["uint8"] < runs["fixed"] + runs["as_opened"] for runs in got["runs"])


def test_vmaf_accelerator_form_reads_its_past_picture_as_uint8():
    """VMAF's accelerator form stacks and slices its pictures before it casts them, and reads
    the previous reference (its motion) from the history the library keeps as UINT16: an
    8-bit frame goes as UINT8 unless it or the past picture it reads is not 8-bit, and the
    features are the UINT16 session's."""
    bpcs = [8, 8, 8, 10, 8, 8]
    clips = [{"size": [48, 64], "bpcs": bpcs}]
    got = score("OpenVINO:CPU", {"threads": 1, **NARROW}, ["vmaf"], clips)
    want = score("OpenVINO:CPU", {"threads": 1, **WIDE}, ["vmaf"], clips)
    assert got["clips"] == want["clips"]
    assert {"vmaf", "adm2", "motion"} <= set(got["clips"][0])
    features = got["runs"][0]  # the features model, attached first (vmaf_features_accel)
    # frame 3 is 10-bit, and frame 4 reads it as its past picture: those two go as UINT16
    assert features["uint8"] == 4 and features["fixed"] == 6, features


def test_more_clip_sizes_than_sessions_widen_the_rest():
    """Past VMAF_DNN_MAX_STATIC_SHAPES (4) specialised sessions, runs go on the session as
    opened, which takes UINT16: the library widens the 8-bit frames for it, and the scores
    stay those of UINT16 throughout."""
    clips = [{"size": [20 + 2 * k, 30], "bpcs": [8, 8]} for k in range(6)]
    got = score("CUDA", {"threads": 1, **NARROW}, ["psnr_y"], clips)
    want = score("CUDA", {"threads": 1, **WIDE}, ["psnr_y"], clips)
    assert got["clips"] == want["clips"]
    runs = got["runs"][0]
    assert runs["specialised"] == 4 and runs["uint8"] == runs["fixed"] == 8, runs
    assert runs["as_opened"] == 4, runs


def test_vmafdnn_uint8_0_keeps_uint16():
    """VMAFDNN_UINT8=0 (read when a session opens): the same specialised runs, none UINT8."""
    clips = [{"size": [23, 37], "bpcs": [8, 8, 8]}]
    got = score("CUDA", {"threads": 1, **NARROW}, ["psnr_y"], clips, VMAFDNN_UINT8="0")
    on = score("CUDA", {"threads": 1, **NARROW}, ["psnr_y"], clips, VMAFDNN_UINT8="1")
    assert got["clips"] == on["clips"]
    assert got["runs"][0]["fixed"] == 3 and got["runs"][0]["uint8"] == 0, got["runs"]
    assert on["runs"][0]["uint8"] == 3, on["runs"]


def test_library_ops_take_8bit_planes_as_uint8():
    """The library's own ops (the kernels forms of psnr_y, ssim_y, psnr and sharpness_nr, VMAF's
    CPU form: the forms ORT's CPU EP gets) take UINT8 planes too (widened in the op, on the GPU
    by a kernel): an 8-bit frame goes as UINT8 (VMAF's too, unless it or the past picture its
    motion reads is not 8-bit), and every score is the UINT16 session's, bit for bit."""
    bpcs = [8, 8, 8, 10, 8, 8]
    clips = [{"size": [48, 64], "bpcs": bpcs}]
    kernels = ["psnr_y", "ssim_y", "psnr", "sharpness_nr"]
    got = score("1", {"threads": 1, **NARROW}, kernels, clips)
    want = score("1", {"threads": 1, **WIDE}, kernels, clips)
    assert got["forms"] == [m + "_kernels.onnx" for m in kernels], got["forms"]
    assert got["clips"] == want["clips"]
    assert {"psnr_y", "psnr_cb", "psnr_cr", "ssim_y", "sharpness_nr"} <= set(got["clips"][0])
    for runs in got["runs"]:
        assert runs["uint8"] == bpcs.count(8) and runs["fixed"] == len(bpcs), runs
    assert all(r["uint8"] == 0 for r in want["runs"])
    got = score("1", {"threads": 1, **NARROW}, ["vmaf"], clips)
    want = score("1", {"threads": 1, **WIDE}, ["vmaf"], clips)
    assert got["clips"] == want["clips"] and {"vmaf", "adm2", "motion"} <= set(got["clips"][0])
    features = got["runs"][0]  # the features model, attached first (vmaf_features_kernels)
    # frame 3 is 10-bit, and frame 4 reads it as its past picture: those two go as UINT16
    assert features["uint8"] == 4 and features["fixed"] == 6, features
