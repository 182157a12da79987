"""vmafdnn.Context: the scoring flow of vmafdnn/context.h from Python.

Uses the tiny models of tests/models/factory.py (staged under a chosen name,
with a sidecar when the test needs one) and the built-in models.
"""
import errno
import io
import json
import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import vmafdnn
from vmafdnn.video import Frame

EPS = 1e-6


@pytest.fixture
def stage(models, tmp_path):
    """stage(model, as_name, sidecar=None) -> path of a copy of a factory
    model named as_name.onnx, with as_name.json holding `sidecar` (a dict, or
    text written as it is)."""

    def stage_model(model: str, as_name: str, sidecar=None) -> str:
        path = tmp_path / f"{as_name}.onnx"
        shutil.copyfile(getattr(models, model), path)
        if sidecar is not None:
            text = sidecar if isinstance(sidecar, str) else json.dumps(sidecar)
            (tmp_path / f"{as_name}.json").write_text(text)
        return str(path)

    return stage_model


def const(h, w, value, dtype=np.uint8):
    return np.full((h, w), value, dtype=dtype)


def noisy_pair(h=48, w=64, seed=0):
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 256, (h, w), dtype=np.uint8)
    dist = np.clip(ref.astype(np.int16) + rng.integers(-9, 10, (h, w)), 0, 255).astype(np.uint8)
    return ref, dist


# -- the flow -------------------------------------------------------------------

def test_builtin_models_flow(tmp_path):
    ref, dist = noisy_pair()
    with vmafdnn.Context(threads=1) as ctx:
        psnr = ctx.use_model("psnr_y")
        ssim = ctx.use_model("ssim_y")
        assert psnr.kind == "fr" and psnr.features == ("psnr_y",)
        assert ssim.kind == "fr" and ssim.features == ("ssim_y",)
        assert psnr.path == str(vmafdnn.models.path("psnr_y"))
        assert psnr.attached_ep in ("CPU", "CUDA", "OpenVINO:GPU", "OpenVINO:CPU", "ROCm")
        assert [m.path for m in ctx.models] == [psnr.path, ssim.path]

        ctx.read_pictures(ref, dist, 0)
        ctx.read_pictures(ref, ref, 1)  # identical: the PSNR cap, SSIM 1
        ctx.flush()

        assert ctx.features == ["psnr_y", "ssim_y"]
        assert ctx.frame_count == 2
        mse = np.mean((ref.astype(np.float64) - dist) ** 2)
        assert ctx.feature("psnr_y", 0) == pytest.approx(10 * np.log10(255 ** 2 / mse), abs=1e-4)
        assert ctx.feature("psnr_y", 1) == 60.0  # 6 * bpc + 12
        assert ctx.feature("ssim_y", 1) == pytest.approx(1.0, abs=EPS)
        values = [ctx.feature("psnr_y", i) for i in range(2)]
        assert ctx.pool("psnr_y") == pytest.approx(np.mean(values))
        assert ctx.pool("psnr_y", "min") == pytest.approx(min(values))
        assert ctx.pool("psnr_y", "max") == 60.0
        harmonic = 2 / sum(1 / (v + 1) for v in values) - 1
        assert ctx.pool("psnr_y", "harmonic_mean") == pytest.approx(harmonic)
        assert ctx.pool("psnr_y", first=1, last=1) == 60.0
        assert ctx.pool("psnr_y", first=0, last=0) == pytest.approx(values[0])

        report = ctx.report()
        assert report["version"] == vmafdnn.context.REPORT_VERSION
        assert [f["frameNum"] for f in report["frames"]] == [0, 1]
        assert report["frames"][1]["metrics"] == {"psnr_y": 60.0,
                                                  "ssim_y": ctx.feature("ssim_y", 1)}
        assert report["pooled_metrics"]["psnr_y"]["max"] == 60.0
        assert report["models"][0]["features"] == ["psnr_y"]
        assert report["models"][0]["kind"] == "fr"


def test_nr_builtin_without_reference():
    ref, dist = noisy_pair()
    with vmafdnn.Context(threads=1) as ctx:
        info = ctx.use_model("sharpness_nr", no_reference=True)
        assert info.kind == "nr"
        ctx.read_pictures(None, dist, 0)
        x = dist.astype(np.float64) / 255
        lap = x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4 * x[1:-1, 1:-1]
        assert ctx.feature("sharpness_nr", 0) == pytest.approx(lap.var(), rel=1e-5)


def test_fr_model_refused_without_reference(stage):
    with vmafdnn.Context() as ctx:
        with pytest.raises(vmafdnn.InvalidArgumentError, match="no_reference") as e:
            ctx.use_model(stage("fr_diff", "fr_diff"), no_reference=True)
        assert e.value.errno == errno.EINVAL
        with pytest.raises(vmafdnn.InvalidArgumentError, match="no_reference"):
            ctx.use_model("psnr_y", no_reference=True)
        assert ctx.models == []


def test_planes_fr_and_nr(stage):
    """FR models get [reference, distorted] (by position or by the sidecar's
    input_names); NR models get the distorted plane, also in FR runs."""
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("fr_diff", "fr_pos"))
        ctx.use_model(stage("nr_mean", "nr"))
        ctx.use_model(stage("fr_diff", "fr_named", {"input_names": ["second", "first"]}))
        assert [m.kind for m in ctx.models] == ["fr", "nr", "fr"]
        ctx.read_pictures(const(8, 8, 100), const(8, 8, 50), 0)
        assert ctx.feature("fr_pos", 0) == pytest.approx(50 / 255, abs=EPS)
        assert ctx.feature("nr", 0) == pytest.approx(50 / 255, abs=EPS)
        assert ctx.feature("fr_named", 0) == pytest.approx(-50 / 255, abs=EPS)


def test_frames_from_readers_and_arrays_agree(stage):
    """A Frame's luma plane is what the models see (chroma is never read)."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 256, (8, 8), dtype=np.uint8)
    u = np.full((4, 4), 255, np.uint8)
    frame = Frame(y, u, u.copy(), 8, 0, "420")
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr"))
        ctx.read_pictures(None, frame, 0)
        ctx.read_pictures(None, y, 1)
        assert ctx.feature("nr", 0) == pytest.approx(y.mean() / 255, abs=EPS)
        assert ctx.feature("nr", 1) == ctx.feature("nr", 0)


def test_strided_and_non_contiguous_planes(stage):
    rng = np.random.default_rng(4)
    big = rng.integers(0, 256, (20, 30), dtype=np.uint8)
    crop = big[3:11, 5:13]           # rows contiguous, row stride 30
    transposed = big[:8, :8].T        # not row-contiguous: copied
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr"))
        ctx.read_pictures(None, crop, 0)
        ctx.read_pictures(None, transposed, 1)
        assert ctx.feature("nr", 0) == pytest.approx(crop.mean() / 255, abs=EPS)
        assert ctx.feature("nr", 1) == pytest.approx(transposed.mean() / 255, abs=EPS)


@pytest.mark.parametrize("bpc,value", [(10, 512), (10, 1023), (12, 100), (16, 65535), (9, 3)])
def test_deep_samples_are_normalised_by_their_bit_depth(stage, bpc, value):
    plane = const(8, 8, value, np.uint16)
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr"))
        ctx.read_pictures(None, plane, 0, bitdepth=bpc)
        ctx.read_pictures(None, Frame(plane, None, None, bpc, 1, "400"), 1)
        for i in (0, 1):
            assert ctx.feature("nr", i) == pytest.approx(value / (2 ** bpc - 1), abs=EPS)


def test_ten_bit_psnr_cap():
    plane = const(16, 16, 700, np.uint16)
    with vmafdnn.Context() as ctx:
        ctx.use_model("psnr_y")
        ctx.read_pictures(plane, plane, 0, bitdepth=10)
        assert ctx.feature("psnr_y", 0) == 72.0  # 6 * 10 + 12


def test_picture_argument_errors(stage):
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr"))
        deep = const(8, 8, 5, np.uint16)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="bitdepth"):
            ctx.read_pictures(None, deep, 0)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="above the 10-bit maximum 1023"):
            ctx.read_pictures(None, const(8, 8, 1024, np.uint16), 0, bitdepth=10)
        # The same samples as a Frame object: one check for every way a picture comes in.
        from vmafdnn.video import Frame
        planes = [const(8, 8, 1023, np.uint16), const(4, 4, 512, np.uint16),
                  const(4, 4, 512, np.uint16)]
        planes[0][3, 5] = 1024
        with pytest.raises(vmafdnn.InvalidArgumentError,
                           match=r"sample value 1024 at \(5, 3\), above the 10-bit maximum"):
            ctx.read_pictures(None, Frame(*planes, 10, 0, "420"), 0)
        planes[0][3, 5] = 1023
        planes[2][1, 1] = 4000  # chroma is checked too
        with pytest.raises(vmafdnn.InvalidArgumentError, match="plane V has sample value 4000"):
            ctx.read_pictures(None, Frame(*planes, 10, 0, "420"), 0)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="uint8 samples are 8-bit"):
            ctx.read_pictures(None, const(8, 8, 5), 0, bitdepth=10)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="2-D"):
            ctx.read_pictures(None, np.zeros((1, 8, 8), np.uint8), 0)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="float32 is not supported"):
            ctx.read_pictures(None, np.zeros((8, 8), np.float32), 0)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="negative"):
            ctx.read_pictures(None, const(8, 8, 5), -1)
        for index in (1 << 24, 1 << 40):  # C's limit, and past C's unsigned
            with pytest.raises(vmafdnn.RangeError) as e:
                ctx.read_pictures(None, const(8, 8, 5), index)
            assert e.value.errno == errno.ERANGE
        # The C checks: a missing picture, a reference of another size.
        with pytest.raises(vmafdnn.InvalidArgumentError) as e:
            ctx.read_pictures(None, None, 0)
        assert e.value.errno == errno.EINVAL
        ctx.read_pictures(const(8, 8, 1), const(8, 8, 2), 0)  # NR: reference checked, not read
        with pytest.raises(vmafdnn.InvalidArgumentError) as e:
            ctx.read_pictures(const(4, 4, 1), const(8, 8, 2), 1)
        assert e.value.errno == errno.EINVAL
        # Nothing was stored for the failed frames.
        assert ctx.frame_count == 1


def test_errors_carry_errno(stage, models, tmp_path):
    ctx = vmafdnn.Context()
    with pytest.raises(vmafdnn.ModelNotFoundError) as e:
        ctx.use_model(str(tmp_path / "missing.onnx"))
    assert e.value.errno == errno.ENOENT and "missing.onnx" in str(e.value)
    with pytest.raises(vmafdnn.UnsupportedError) as e:  # symbolic H, W without native_resolution
        ctx.use_model(stage("symbolic_hw_mean", "sym"))
    assert e.value.errno == errno.ENOTSUP
    with pytest.raises(vmafdnn.UnsupportedError) as e:  # an output of four values
        ctx.use_model(stage("output_1x4", "cols"))
    assert e.value.errno == errno.ENOTSUP
    with pytest.raises(vmafdnn.InvalidModelError) as e:
        ctx.use_model(stage("nr_mean", "badjson", "{not json"))
    assert e.value.errno == errno.EBADMSG and "badjson.json" in str(e.value)
    with pytest.raises(vmafdnn.InvalidArgumentError) as e:
        ctx.use_model(stage("nr_mean", "badkey", {"kind": 3}))
    assert e.value.errno == errno.EINVAL and "kind" in str(e.value)
    sidecar_dir = stage("nr_mean", "dirsidecar")[:-len(".onnx")] + ".json"
    (tmp_path / "dirsidecar.json").mkdir()
    with pytest.raises(vmafdnn.NotARegularFileError) as e:
        ctx.use_model(stage("nr_mean", "dirsidecar"))
    assert e.value.errno == errno.EISDIR and sidecar_dir in str(e.value)
    with pytest.raises(ValueError, match="unknown resize mode"):
        ctx.use_model(stage("nr_mean", "nr"), resize="lanczos")
    with pytest.raises(vmafdnn.InvalidArgumentError) as e:
        ctx.use_model(stage("nr_mean", "nr"), threads=-1)
    assert e.value.errno == errno.EINVAL
    assert ctx.models == []

    nr = ctx.use_model(stage("nr_mean", "nr"))
    assert nr.features == ("nr",)
    with pytest.raises(vmafdnn.RangeError) as e:  # an 8x8 model, a 16x16 frame, no resize
        ctx.read_pictures(None, const(16, 16, 0), 0)
    assert e.value.errno == errno.ERANGE
    ctx.read_pictures(None, const(8, 8, 0), 0)
    with pytest.raises(vmafdnn.DnnError) as e:
        ctx.read_pictures(None, const(8, 8, 0), 0)
    assert e.value.errno == errno.EEXIST
    with pytest.raises(vmafdnn.ModelNotFoundError) as e:
        ctx.feature("nr", 5)
    assert e.value.errno == errno.ENOENT
    with pytest.raises(vmafdnn.ModelNotFoundError) as e:
        ctx.pool("nope")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(ValueError, match="unknown pool method"):
        ctx.pool("nr", "median")
    with pytest.raises(vmafdnn.InvalidArgumentError):
        ctx.pool("nr", first=3, last=2)
    with pytest.raises(vmafdnn.DnnError) as e:  # a key an attached model writes
        ctx.feature_append("nr", 7, 1.0)
    assert e.value.errno == errno.EEXIST

    ctx.flush()
    ctx.flush()  # harmless
    with pytest.raises(vmafdnn.InvalidArgumentError, match="flushed"):
        ctx.read_pictures(None, const(8, 8, 0), 1)
    with pytest.raises(vmafdnn.InvalidArgumentError, match="flushed"):
        ctx.feature_append("x", 1, 1.0)
    with pytest.raises(vmafdnn.InvalidArgumentError, match="flushed"):
        ctx.use_model("psnr_y")
    assert ctx.feature("nr", 0) == 0.0  # scores stay readable
    ctx.close()
    ctx.close()
    with pytest.raises(ValueError, match="closed"):
        ctx.feature("nr", 0)
    assert "closed" in repr(ctx)


def test_bad_context_arguments():
    with pytest.raises(ValueError, match="unknown device"):
        vmafdnn.Context(device="tpu")
    with pytest.raises(ValueError, match="unknown resize mode"):
        vmafdnn.Context(resize="area")
    with pytest.raises(vmafdnn.InvalidArgumentError, match="fps") as e:
        vmafdnn.Context(fps=-1)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(TypeError, match="built-in name"):
        vmafdnn.Context().use_model(42)


def test_bad_batch():
    for bad in (-1, vmafdnn.MAX_BATCH + 1):
        with pytest.raises(vmafdnn.InvalidArgumentError, match="batch") as e:
            vmafdnn.Context(batch=bad)
        assert e.value.errno == errno.EINVAL
    for bad in (2.5, True, "4"):
        with pytest.raises(TypeError, match="batch"):
            vmafdnn.Context(batch=bad)


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_batched_runs_score_like_one_frame_per_run(models, threads):
    """Batchable models score as one Run per frame would; batch_size, whose "frames" output
    is the frames its Run took (its frames mix), is caught by the first batched Run's check
    and scored one frame per Run."""
    rng = np.random.default_rng(5)
    planes = [(rng.integers(0, 256, (12, 20), dtype=np.uint8),
               rng.integers(0, 256, (12, 20), dtype=np.uint8)) for _ in range(9)]
    keys = ("batch_size_frames", "batch_size_mean", "batch_fr", "batch_mean")
    scores, batching = {}, {}
    for batch in (1, 4):
        with vmafdnn.Context(device="cpu", threads=threads, batch=batch) as ctx:
            for model in (models.batch_size, models.batch_fr, models.batch_mean):
                ctx.use_model(model)
            for i, (ref, dist) in enumerate(planes):
                ctx.read_pictures(ref, dist, i)
            ctx.flush()
            scores[batch] = {k: [ctx.feature(k, i) for i in range(9)] for k in keys}
            batching[batch] = [ctx.batching(i) for i in range(3)]
            report = ctx.report()
    assert scores[4]["batch_size_frames"] == [1.0] * 9
    for key in keys:
        np.testing.assert_allclose(scores[4][key], scores[1][key], rtol=0, atol=1e-7)
    assert batching[1] == [vmafdnn.Batching(True, 1, False, 0)] * 3
    size, fr, mean = batching[4]
    assert size == vmafdnn.Batching(True, 4, True, 0)
    # Runs of 4, 4 and the last frame alone; each worker checks its first Run one frame per
    # Run: one worker keeps the second Run. With two workers, whether the second Run of a
    # model comes before or after that model's shared verdict depends on the schedule, model
    # by model (a run broke on fr 0, mean 4), so each may have kept it or not.
    for model in (fr, mean):
        assert model.batched_frames == 4 if threads < 2 else model.batched_frames in (0, 4)
    assert [m["batching"] for m in report["models"]] == [b._asdict() for b in batching[4]]
    with vmafdnn.Context() as ctx:
        ctx.use_model(models.batch_mean)
        with pytest.raises(IndexError, match="out of range"):
            ctx.batching(1)
        with pytest.raises(TypeError):
            ctx.batching(True)


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("model,bitdepth", [("batch_temporal", 8), ("batch_temporal_u16", 10)])
def test_batched_runs_of_a_model_reading_past_pictures(models, threads, model, bitdepth):
    """A model that reads the picture one frame back declares it with a batch of 1 and its
    frame's pictures with N: a batched Run feeds it the picture before the Run's first frame
    (the frame itself at the clip's first, libvmaf's motion rule) and the graph takes the
    later frames' from the batch. Every frame scores as one Run per frame: mean(t) -
    mean(t - 1), 0 at frame 0; bpc, a value input, is the Run's. Samples models (UINT16)
    alike."""
    rng = np.random.default_rng(11)
    top = (1 << bitdepth) - 1
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    planes = [rng.integers(0, top + 1, (12, 20)).astype(dtype) for _ in range(10)]
    scores, batching = {}, {}
    for batch in (1, 4):
        with vmafdnn.Context(device="cpu", threads=threads, batch=batch) as ctx:
            ctx.use_model(getattr(models, model))
            for i, dist in enumerate(planes):
                ctx.read_pictures(None, dist, i, bitdepth=bitdepth)
            ctx.flush()
            scores[batch] = [(ctx.feature("m", i), ctx.feature("bits", i)) for i in range(10)]
            batching[batch] = ctx.batching(0)
    means = [p.astype(np.float64).mean() / top for p in planes]
    want = [means[i] - means[max(i - 1, 0)] for i in range(10)]
    for batch in (1, 4):
        np.testing.assert_allclose([m for m, _ in scores[batch]], want, rtol=0, atol=1e-6)
        assert [b for _, b in scores[batch]] == [float(bitdepth)] * 10
        assert scores[batch][0][0] == 0.0
    np.testing.assert_allclose(scores[4], scores[1], rtol=0, atol=1e-7)
    assert batching[4].batchable and batching[4].batch == 4 and not batching[4].refused
    if threads == 0:  # one worker: Runs of 4, 4 and 2; the first checked, the others kept
        assert batching[4].batched_frames == 6


def test_a_form_may_declare_a_batch_where_its_model_declares_one(stage, models, tmp_path,
                                                                 monkeypatch):
    """temporal_diff declares one frame ([1, 1, H, W], outputs [1]); batch_temporal, the same
    interface with N frames, is accepted as its form and scores several frames per Run, as the
    model alone scores them one per Run. The other way round (a form of 1 for a model of N) is
    refused."""
    sidecar = {"native_resolution": True, "output_keys": ["m", "bits"],
               "input_sources": {"prev": {"picture": "distorted", "offset": -1},
                                 "bpc": {"value": "bpc"}}}
    shutil.copyfile(models.batch_temporal, tmp_path / "td_batch.onnx")
    model = stage("temporal_diff", "td", dict(sidecar, forms={"CPU": "td_batch.onnx"}))
    planes = [np.full((9, 11), 7 * i, np.uint8) for i in range(6)]
    got = {}
    for forms in ("1", "0"):
        monkeypatch.setenv("VMAFDNN_MODEL_FORMS", forms)
        with vmafdnn.Context(device="cpu", batch=4) as ctx:
            info = ctx.use_model(model)
            for i, dist in enumerate(planes):
                ctx.read_pictures(None, dist, i)
            ctx.flush()
            got[forms] = [ctx.feature("m", i) for i in range(6)]
            assert (info.form is not None) == (forms == "1")
            assert ctx.batching(0).batchable == (forms == "1")
            if forms == "1":
                assert ctx.batching(0).batched_frames > 0
    np.testing.assert_allclose(got["1"], got["0"], rtol=0, atol=1e-7)
    monkeypatch.delenv("VMAFDNN_MODEL_FORMS")
    shutil.copyfile(models.temporal_diff, tmp_path / "td_one.onnx")
    wide = stage("batch_temporal", "wide", dict(sidecar, forms={"CPU": "td_one.onnx"}))
    with pytest.raises(vmafdnn.InvalidArgumentError, match="other inputs or outputs"):
        vmafdnn.Context(device="cpu").use_model(wide)


def test_resize_modes(stage):
    """A 4x4 model on an 8x8 constant frame: refused without a resize mode,
    the same constant with one (context-wide or per model)."""
    frame = const(8, 8, 51)
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean_4x4", "small"))
        with pytest.raises(vmafdnn.RangeError, match="8x8|4x4"):
            ctx.read_pictures(None, frame, 0)
    with vmafdnn.Context(resize="bilinear") as ctx:
        ctx.use_model(stage("nr_mean_4x4", "small"))
        ctx.use_model(stage("nr_mean_4x4", "small_nearest"), resize="nearest")
        ctx.read_pictures(None, frame, 0)
        assert ctx.feature("small", 0) == pytest.approx(0.2, abs=EPS)
        assert ctx.feature("small_nearest", 0) == pytest.approx(0.2, abs=EPS)


def test_model_names_and_output_keys(stage):
    with vmafdnn.Context() as ctx:
        px = ctx.use_model(stage("pixels", "pixels"), name="px")
        assert px.features == ("px_p_0", "px_p_1", "px_p_2", "px_p3")
        named = ctx.use_model(stage("nr_mean", "file_name", {"name": "from_sidecar"}))
        assert named.features == ("from_sidecar",)
        with pytest.raises(vmafdnn.DnnError, match="from_sidecar") as e:
            ctx.use_model(stage("nr_mean", "other"), name="from_sidecar")
        assert e.value.errno == errno.EEXIST
        ctx.use_model(stage("nr_mean", "cpu_model"), device="cpu", threads=1)
        assert ctx.models[-1].attached_ep == "CPU"
        assert ctx.models[-1].fallback_reason == ""


def test_feature_vector_model(stage):
    """Caller-pushed features feed a FEATURES model; a missing one fails the
    frame with a message naming it (and the frame)."""
    with vmafdnn.Context() as ctx:
        fv = ctx.use_model(stage("fv_weighted", "fv", {"features": ["f0", "f1"]}))
        assert fv.kind == "features" and fv.features == ("fv",)
        ctx.feature_append("f0", 0, 1.0)
        ctx.feature_append("f1", 0, 2.0)
        with pytest.raises(vmafdnn.DnnError) as e:
            ctx.feature_append("f1", 0, 2.0)
        assert e.value.errno == errno.EEXIST
        ctx.read_pictures(None, None, 0)
        assert ctx.feature("fv", 0) == pytest.approx(21.0, abs=1e-5)

        ctx.feature_append("f0", 1, 5.0)
        with pytest.raises(vmafdnn.ModelNotFoundError, match='"f1" at frame 1') as e:
            ctx.read_pictures(None, None, 1)
        assert e.value.errno == errno.ENOENT
        with pytest.raises(vmafdnn.ModelNotFoundError):
            ctx.feature("fv", 1)
        assert ctx.features == ["f0", "f1", "fv"]
        assert ctx.frame_count == 2

    # A feature another model produces in the same frame, and scaling.
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr_mean"), name="f0")
        ctx.use_model(stage("fv_weighted", "fvs", {"features": ["f0", "f1"],
                                                   "feature_mean": [0, 1], "feature_std": [1, 2]}))
        ctx.feature_append("f1", 0, 3.0)
        ctx.read_pictures(None, const(8, 8, 255), 0)
        assert ctx.feature("fvs", 0) == pytest.approx(1.0 + 10 * (3.0 - 1) / 2, abs=1e-5)


def test_feature_vector_model_refused_without_features(stage):
    with vmafdnn.Context() as ctx:
        with pytest.raises(vmafdnn.UnsupportedError, match="features") as e:
            ctx.use_model(stage("fv_weighted", "fv_nolist"))
        assert e.value.errno == errno.ENOTSUP


# -- reports ----------------------------------------------------------------------

def _scored_context(stage) -> vmafdnn.Context:
    ctx = vmafdnn.Context(fps=24)
    ctx.use_model(stage("nr_mean", "nr"))
    ctx.use_model(stage("fr_diff", "diff"))
    for i, (r, d) in enumerate([(100, 50), (30, 60), (255, 0)]):
        ctx.read_pictures(const(8, 8, r), const(8, 8, d), i)
    return ctx


def test_reports_agree_with_each_other_and_report(stage, tmp_path):
    with _scored_context(stage) as ctx:
        data = ctx.report()
        assert data["fps"] == 24
        for fmt in ("json", "xml", "csv"):
            ctx.write(tmp_path / f"r.{fmt}")   # format from the extension
        ctx.write(tmp_path / "r.txt", "csv")
        ctx.write(tmp_path / "r.unknown")      # no known extension: JSON
        json_report = json.loads((tmp_path / "r.json").read_text())
        assert json.loads((tmp_path / "r.unknown").read_text()) == json_report
        assert (tmp_path / "r.txt").read_text() == (tmp_path / "r.csv").read_text()

        # JSON vs the returned data (6 decimals in files).
        assert json_report["version"] == data["version"]
        assert json_report["fps"] == 24
        assert [f["frameNum"] for f in json_report["frames"]] == [0, 1, 2]
        for got, want in zip(json_report["frames"], data["frames"]):
            assert got["metrics"].keys() == want["metrics"].keys()
            for k, v in want["metrics"].items():
                assert got["metrics"][k] == pytest.approx(v, abs=1e-6)
        for name, pooled in data["pooled_metrics"].items():
            for stat, v in pooled.items():
                assert json_report["pooled_metrics"][name][stat] == pytest.approx(v, abs=1e-6)

        # XML vs JSON.
        root = ET.parse(tmp_path / "r.xml").getroot()
        assert root.tag == "VMAF" and root.get("version") == data["version"]
        xml_frames = root.find("frames").findall("frame")
        assert len(xml_frames) == 3
        for el, frame in zip(xml_frames, json_report["frames"]):
            assert int(el.get("frameNum")) == frame["frameNum"]
            for k, v in frame["metrics"].items():
                assert float(el.get(k)) == pytest.approx(v, abs=1e-6)
        for metric in root.find("pooled_metrics").findall("metric"):
            pooled = json_report["pooled_metrics"][metric.get("name")]
            for stat, v in pooled.items():
                assert float(metric.get(stat)) == pytest.approx(v, abs=1e-6)

        # CSV vs JSON.
        import csv
        rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
        assert [int(r["Frame"]) for r in rows] == [0, 1, 2]
        for row, frame in zip(rows, json_report["frames"]):
            for k, v in frame["metrics"].items():
                assert float(row[k]) == pytest.approx(v, abs=1e-6)

        # write_file: binary and text streams get the same bytes.
        binary, text = io.BytesIO(), io.StringIO()
        ctx.write_file(binary, "xml")
        ctx.write_file(text, "xml")
        assert binary.getvalue() == (tmp_path / "r.xml").read_bytes()
        assert text.getvalue() == (tmp_path / "r.xml").read_text()
        with pytest.raises(ValueError, match="unknown report format"):
            ctx.write(tmp_path / "r.json", "yaml")

        # A binary stream that takes a part at a time gets the rest offered again; one that
        # stops taking (a pipe whose reader left: BufferedWriter only counts short) is an
        # error, not a report cut without a word.
        class Taking(io.RawIOBase):
            def __init__(self, chunk, limit):
                self.got, self.chunk, self.limit = bytearray(), chunk, limit

            def writable(self):
                return True

            def write(self, b):
                n = max(0, min(len(b), self.chunk, self.limit - len(self.got)))
                self.got += bytes(b[:n])
                return n

        whole = (tmp_path / "r.xml").read_bytes()
        chunked = Taking(100, len(whole))
        ctx.write_file(chunked, "xml")
        assert bytes(chunked.got) == whole
        cut = Taking(1 << 20, len(whole) // 2)
        with pytest.raises(BrokenPipeError, match=f"cut after {len(whole) // 2} of {len(whole)}"):
            ctx.write_file(cut, "xml")


def test_report_after_a_failed_frame_is_valid(stage, tmp_path):
    """Frames before a failure stay, and a report can still be written."""
    with vmafdnn.Context() as ctx:
        ctx.use_model(stage("nr_mean", "nr"))
        ctx.read_pictures(None, const(8, 8, 10), 0)
        with pytest.raises(vmafdnn.RangeError):
            ctx.read_pictures(None, const(9, 9, 10), 1)
        ctx.write(tmp_path / "partial.json")
        report = json.loads((tmp_path / "partial.json").read_text())
        assert [f["frameNum"] for f in report["frames"]] == [0]


# -- reset ------------------------------------------------------------------------

def _score_clip(ctx, clip):
    for i, (r, d) in enumerate(clip):
        ctx.read_pictures(r, d, i)
    ctx.flush()
    return {name: [ctx.feature(name, i) for i in range(len(clip))] for name in ctx.features}


@pytest.mark.parametrize("threads", [1, 2])
def test_reset_scores_the_next_clip_as_a_fresh_context(threads):
    first = [noisy_pair(seed=s) for s in range(3)]
    # Another size: the first frame's size goes with the reset.
    second = [noisy_pair(h=32, w=40, seed=s) for s in range(10, 14)]
    with vmafdnn.Context(threads=threads, fps=24) as ctx:
        attached = [ctx.use_model("psnr_y"), ctx.use_model("ssim_y")]
        _score_clip(ctx, first)
        ctx.reset()
        assert ctx.frame_count == 0 and ctx.features == []
        with pytest.raises(vmafdnn.ModelNotFoundError):
            ctx.feature("psnr_y", 0)
        assert ctx.models == attached
        got = _score_clip(ctx, second)  # flushed before: reset lifts that too
        report = ctx.render("xml", exact=True)
        pooled = ctx.pool("ssim_y", "harmonic_mean")
    with vmafdnn.Context(threads=threads, fps=24) as fresh:
        fresh.use_model("psnr_y")
        fresh.use_model("ssim_y")
        want = _score_clip(fresh, second)
        assert got == want  # bit-identical
        assert pooled == fresh.pool("ssim_y", "harmonic_mean")
        # The XML names the frame size: the new clip's, as in a fresh context.
        assert report == fresh.render("xml", exact=True)
        assert 'qualityWidth="40" qualityHeight="32"' in report


def _temporal(stage):
    # prev is the distorted picture one frame back (clamped to the first
    # frame); native_resolution: the model is sized by its first frame.
    return stage("temporal_diff", "diff", {
        "native_resolution": True, "output_keys": ["m", "bits"],
        "input_sources": {"prev": {"picture": "distorted", "offset": -1},
                          "bpc": {"value": "bpc"}}})


def test_reset_rewinds_temporal_and_native_resolution_models(stage):
    path = _temporal(stage)
    first = [const(8, 8, v) for v in (10, 40, 30)]
    second = [const(10, 12, v) for v in (100, 0, 50)]
    with vmafdnn.Context(threads=1) as ctx:
        ctx.use_model(path)
        for i, d in enumerate(first):
            ctx.read_pictures(None, d, i)
        with pytest.raises(vmafdnn.RangeError):  # sized by the first clip until reset
            ctx.read_pictures(None, second[0], 3)
        ctx.reset()
        assert [m.features for m in ctx.models] == [("m", "bits")]
        for i, d in enumerate(second):
            ctx.read_pictures(None, d, i)
        got = [ctx.feature("m", i) for i in range(3)]
    with vmafdnn.Context(threads=1) as fresh:
        fresh.use_model(path)
        for i, d in enumerate(second):
            fresh.read_pictures(None, d, i)
        want = [fresh.feature("m", i) for i in range(3)]
    assert got == want
    # Frame 0 has no past: the first clip's last picture (30) is gone.
    assert got[0] == 0.0
    assert got[1] == pytest.approx(-100 / 255, abs=EPS)


def test_reset_reads_no_model_file_again(stage):
    # The models are rewound in place, with the sessions they were attached
    # with: their files may be gone (reset used to reopen stateful models,
    # about a model open per reset, and failed here with ENOENT).
    path = _temporal(stage)
    with vmafdnn.Context(threads=1) as ctx:
        ctx.use_model(path)
        for i, v in enumerate((10, 40)):
            ctx.read_pictures(None, const(8, 8, v), i)
        os.unlink(path)
        ctx.reset()
        assert ctx.frame_count == 0
        for i, v in enumerate((10, 40)):
            ctx.read_pictures(None, const(8, 8, v), i)
        assert ctx.feature("m", 1) == pytest.approx(30 / 255, abs=EPS)


def test_reset_after_close_raises_closed_error():
    ctx = vmafdnn.Context()
    ctx.use_model("psnr_y")
    ctx.close()
    with pytest.raises(vmafdnn.ClosedError):
        ctx.reset()


@pytest.mark.parametrize("threads", [0, 2])
def test_device_type_value_needs_no_picture(tmp_path, threads):
    """{"value": "device_type"} is the session's hardware, not the frame's: a model reading only
    it runs with no picture at all, in flight too, and reads 0 on the CPU EP."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Identity", ["d"], ["kind"])], "device", [
        helper.make_tensor_value_info("d", TensorProto.FLOAT, [1])], [
        helper.make_tensor_value_info("kind", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "device.onnx"
    onnx.save(model, str(path))
    (tmp_path / "device.json").write_text(json.dumps({
        "input_sources": {"d": {"value": "device_type"}}, "output_keys": ["kind"]}))
    with vmafdnn.Context(device="cpu", threads=threads) as ctx:
        info = ctx.use_model(str(path))
        assert info.kind == "features" and info.attached_ep == "CPU"
        for i in range(3):
            ctx.read_pictures(None, None, i)
        ctx.flush()
        assert [ctx.feature("kind", i) for i in range(3)] == [0.0, 0.0, 0.0]


def test_check_output_applies_the_writers_name_rules_before_any_frame():
    # vmaf_dnn_check_output: the report formats' feature-name rules, checked
    # on the models' keys, the stored features and names still to come.
    with vmafdnn.Context() as ctx:
        ctx.use_model("psnr_y")
        for fmt in ("json", "xml", "csv"):
            ctx.check_output(fmt)
        ctx.check_output("csv", ["vmaf"])
        with pytest.raises(vmafdnn.InvalidArgumentError, match='"Frame" clashes') as e:
            ctx.check_output("csv", ["vmaf", "Frame"])
        assert e.value.errno == errno.EINVAL
        ctx.check_output("json", ["Frame"])
        ctx.feature_append("=x", 0, 1.0)
        with pytest.raises(vmafdnn.InvalidArgumentError, match="same CSV column"):
            ctx.check_output("csv", ["'=x"])
        with pytest.raises(vmafdnn.InvalidArgumentError, match="XML attribute name"):
            ctx.check_output("xml")
        with pytest.raises(TypeError):
            ctx.check_output("csv", "Frame")
        with pytest.raises(ValueError, match="NUL"):
            ctx.check_output("csv", ["a\0b"])
        with pytest.raises(vmafdnn.InvalidArgumentError):
            ctx.check_output("yaml")


def test_frames_done_reports_finished_frames_without_waiting(stage):
    # stall_bright: a bright frame never finishes on its own (only a cancel
    # ends it), a dark one scores at once. frames_done and the feature of a
    # done frame return while the bright frame is in flight (were either to
    # wait, the test would not end); the bright frame's failure comes from
    # a later frames_done, once.
    path = stage("stall_bright", "stall")
    dark, bright = const(8, 8, 51), const(8, 8, 200)
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model(path)
        assert ctx.frames_done() == 0
        ctx.read_pictures(None, dark, 0)
        while ctx.frames_done() < 1:
            pass
        ctx.read_pictures(None, bright, 1)
        assert ctx.frames_done() == 1
        assert ctx.feature("stall", 0) == pytest.approx(0.2)
        assert ctx.frames_done() == 1
        with pytest.raises(vmafdnn.RunCancelledError, match=r"frame 1 \(scored in flight\)") as e:
            while True:
                ctx.cancel()
                ctx.frames_done()
        assert e.value.errno == errno.ECANCELED
        assert ctx.frames_done() == 2
        with pytest.raises(vmafdnn.ModelNotFoundError):
            ctx.feature("stall", 1)
        ctx.read_pictures(None, dark, 2)
        ctx.flush()
        assert ctx.frames_done() == 3
    with pytest.raises(vmafdnn.ClosedError):
        ctx.frames_done()
