"""Batched Runs (Context(batch=N)) of models that read past pictures, value inputs and
samples, attacked: whatever the clip does (sizes, bit depths, failing frames, resets), a
frame's scores with batch N are those of one Run per frame (batch 1, threads 0), within
1e-6 + 1e-5 relative; models a Run cannot feed are not batched.
"""
import json
import shutil

import numpy as np
import pytest

import vmafdnn

ATOL, RTOL = 1e-6, 1e-5


@pytest.fixture
def stage(models, tmp_path):
    def stage_model(model, as_name, sidecar):
        path = tmp_path / f"{as_name}.onnx"
        shutil.copyfile(getattr(models, model), path)
        (tmp_path / f"{as_name}.json").write_text(json.dumps(sidecar))
        return str(path)

    return stage_model


def past(picture="distorted", offset=-1):
    return {"picture": picture, "offset": offset}


TEMPORAL = {"native_resolution": True, "output_keys": ["m", "bits"],
            "input_sources": {"prev": past(), "bpc": {"value": "bpc"}}}


def planes(n, h=12, w=20, bitdepth=8, seed=3):
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    return [rng.integers(0, 1 << bitdepth, (h, w)).astype(dtype) for _ in range(n)]


def score(model_paths, frames, keys, batch, threads=0, first=0, ref=False, features=None,
          **ctx_args):
    """Reads frames[k] = (plane, bitdepth) as frame first + k; returns ({key: [value or the
    error's class name per frame]}, [Batching per model])."""
    out = {key: [] for key in keys}
    with vmafdnn.Context(device="cpu", threads=threads, batch=batch, **ctx_args) as ctx:
        for path in model_paths:
            ctx.use_model(path)
        errors = {}
        for k, (plane, bitdepth) in enumerate(frames):
            if features and k in features:
                for name, value in features[k].items():
                    ctx.feature_append(name, first + k, value)
            for _ in range(2):
                try:
                    ctx.read_pictures(plane if ref else None, plane, first + k,
                                      bitdepth=bitdepth)
                except vmafdnn.DnnError as e:
                    errors[first + k] = type(e).__name__
                    # an earlier frame's failure, reported here: this frame was not taken
                    if "(scored in flight)" in str(e):
                        continue
                break
        try:
            ctx.flush()
        except vmafdnn.DnnError as e:
            errors["flush"] = type(e).__name__
        for key in keys:
            for k in range(len(frames)):
                try:
                    out[key].append(ctx.feature(key, first + k))
                except (KeyError, vmafdnn.DnnError):
                    out[key].append(None)
        batching = [ctx.batching(i) for i in range(len(ctx.models))]
    return out, batching


def assert_same(got, want):
    for key in want:
        for i, (g, w) in enumerate(zip(got[key], want[key])):
            assert (g is None) == (w is None), (key, i, got[key], want[key])
            if w is not None and np.isnan(w):
                assert np.isnan(g), (key, i, got[key], want[key])
            elif w is not None:
                assert abs(g - w) <= ATOL + RTOL * abs(w), (key, i, got[key], want[key])


def test_a_model_reading_two_frames_back_alone_is_not_batched_wrongly(stage):
    """prev2 (offset -2) declared [1, ...]: a Run feeds the picture two frames before its
    first frame, but its second frame needs the one one frame before the Run, which no input
    carries. Runs that start at the clip's first frame agree (the check passes there), later
    ones cannot: such a model must score a frame per Run."""
    model = stage("batch_past2", "p2", {"native_resolution": True, "output_keys": ["m"],
                                        "input_sources": {"prev2": past(offset=-2)}})
    frames = [(p, 8) for p in planes(12)]
    want, _ = score([model], frames, ["m"], batch=1)
    for threads in (0, 2):
        got, _ = score([model], frames, ["m"], batch=4, threads=threads)
        assert_same(got, want)


@pytest.mark.parametrize("threads", [0, 1, 2, 3])
def test_a_model_reading_one_and_two_frames_back_batches(stage, threads):
    """Both offsets fed: every frame of a Run has its pictures; scores as one Run per frame,
    the clip starting at frame 5 (a reset, frames in flight) and batches of 2..8."""
    model = stage("batch_past12", "p12", {
        "native_resolution": True, "output_keys": ["m1", "m2"],
        "input_sources": {"prev1": past(offset=-1), "prev2": past(offset=-2)}})
    frames = [(p, 8) for p in planes(11)]
    want, _ = score([model], frames, ["m1", "m2"], batch=1, first=5)
    assert want["m2"][0] == 0 and want["m2"][1] == pytest.approx(want["m1"][1])
    for batch in (2, 3, 4, 8):
        got, batching = score([model], frames, ["m1", "m2"], batch=batch, threads=threads,
                              first=5)
        assert_same(got, want)
        assert batching[0].batchable and not batching[0].refused


@pytest.mark.parametrize("threads", [0, 2])
def test_a_model_reading_both_pictures_back(stage, threads):
    model = stage("batch_fr_past", "frp", {
        "native_resolution": True, "output_keys": ["r", "d"],
        "input_sources": {"ref_prev": past("reference"), "dist_prev": past("distorted")}})
    frames = [(p, 8) for p in planes(9)]
    want, _ = score([model], frames, ["r", "d"], batch=1, ref=True)
    got, batching = score([model], frames, ["r", "d"], batch=4, threads=threads, ref=True)
    assert_same(got, want)
    assert batching[0].batchable and not batching[0].refused
    if threads == 0:
        assert batching[0].batched_frames > 0


def test_models_a_run_cannot_feed_are_not_batchable(stage):
    past_n = stage("batch_past_n", "pn", {"native_resolution": True,
                                          "input_sources": {"prev": past()}})
    value_n = stage("batch_value_n", "vn", {"native_resolution": True,
                                            "input_sources": {"bpc": {"value": "bpc"}}})
    frames = [(p, 8) for p in planes(6)]
    for model in (past_n, value_n):
        want, _ = score([model], frames, ["m"], batch=1)
        got, batching = score([model], frames, ["m"], batch=4)
        assert_same(got, want)
        assert not batching[0].batchable and batching[0].batch == 1


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("model", ["batch_temporal", "batch_temporal_u16"])
def test_size_and_depth_changes_mid_clip(stage, models, threads, model):
    """Bit depth changing every few frames (past samples rescaled), and with a resize mode
    (the model at a fixed size... here native) frames of another size failing alone."""
    path = stage(model, "t", TEMPORAL)
    rng = np.random.default_rng(5)
    frames = []
    for i in range(14):
        bitdepth = (8, 10, 10, 12)[(i // 3) % 4]
        dtype = np.uint8 if bitdepth == 8 else np.uint16
        h, w = (12, 20) if i not in (6, 11) else (10, 20)
        frames.append((rng.integers(0, 1 << bitdepth, (h, w)).astype(dtype), bitdepth))
    want, _ = score([path], frames, ["m", "bits"], batch=1)
    assert want["m"][6] is None and want["m"][7] is not None
    for batch in (2, 4, 8):
        got, _ = score([path], frames, ["m", "bits"], batch=batch, threads=threads)
        assert_same(got, want)


@pytest.mark.parametrize("threads", [0, 2])
def test_frames_failing_inside_a_batch(stage, threads):
    """A frame too small for min_width, and a frame whose caller feature another model needs
    is missing (it fails there, before the temporal model), inside batches."""
    temporal = stage("batch_temporal", "t", dict(TEMPORAL, min_width=16))
    frames = []
    for i, p in enumerate(planes(13)):
        frames.append((p[:, :12] if i in (4, 9) else p, 8))
    want, _ = score([temporal], frames, ["m", "bits"], batch=1)
    assert np.isnan(want["m"][4]) and want["m"][5] == 0  # too small: NaN, then a new start
    for batch in (3, 4):
        got, _ = score([temporal], frames, ["m", "bits"], batch=batch, threads=threads)
        assert_same(got, want)


def test_reset_with_frames_in_flight_and_another_first_frame(stage):
    """Two clips through one context, frames in flight at the reset; the second clip starts
    at frame 3 of a batch-aligned index and at another size."""
    path = stage("batch_temporal", "t", TEMPORAL)
    clip1 = [(p, 8) for p in planes(7, seed=1)]
    clip2 = [(p, 8) for p in planes(9, h=14, w=18, seed=2)]
    want1, _ = score([path], clip1, ["m"], batch=1)
    want2, _ = score([path], clip2, ["m"], batch=1, first=3)
    for threads in (0, 2):
        with vmafdnn.Context(device="cpu", threads=threads, batch=4) as ctx:
            ctx.use_model(path)
            for k, (p, b) in enumerate(clip1):
                ctx.read_pictures(None, p, k, bitdepth=b)
            ctx.reset()
            for k, (p, b) in enumerate(clip2):
                ctx.read_pictures(None, p, 3 + k, bitdepth=b)
            ctx.flush()
            assert_same({"m": [ctx.feature("m", 3 + k) for k in range(9)]}, want2)
        with vmafdnn.Context(device="cpu", threads=threads, batch=4) as ctx:
            ctx.use_model(path)
            for k, (p, b) in enumerate(clip1):
                ctx.read_pictures(None, p, k, bitdepth=b)
            ctx.flush()
            assert_same({"m": [ctx.feature("m", k) for k in range(7)]}, want1)


def test_batch_larger_than_the_clip(stage):
    path = stage("batch_temporal_u16", "t", TEMPORAL)
    frames = [(p, 10) for p in planes(3, bitdepth=10)]
    want, _ = score([path], frames, ["m", "bits"], batch=1)
    for threads in (0, 3):
        got, _ = score([path], frames, ["m", "bits"], batch=8, threads=threads)
        assert_same(got, want)


def test_out_of_order_frames_without_temporal_models(models):
    frames = planes(9, h=8, w=8)
    order = [3, 0, 8, 1, 2, 7, 6, 4, 5]
    got = {}
    for batch in (1, 4):
        with vmafdnn.Context(device="cpu", batch=batch) as ctx:
            ctx.use_model(models.batch_mean)
            for i in order:
                ctx.read_pictures(None, frames[i], i)
            ctx.flush()
            key = ctx.features[0]
            got[batch] = [ctx.feature(key, i) for i in range(9)]
    np.testing.assert_allclose(got[4], got[1], rtol=RTOL, atol=ATOL)


def test_memory_budget_with_batch(stage):
    """Budgets the frames in flight do not fit: threads 0 scores them one at a time (right
    scores, none batched), threads 2 refuses each frame with MemoryBudgetError (-EDQUOT);
    never a crash, and a budget that fits batches."""
    path = stage("batch_temporal", "t", TEMPORAL)
    frames = planes(12, h=64, w=64)
    want, _ = score([path], [(p, 8) for p in frames], ["m"], batch=1)
    for threads in (0, 2):
        for budget in (1 << 12, 1 << 16, 1 << 18, 1 << 24):
            with vmafdnn.Context(device="cpu", threads=threads, batch=4,
                                 max_memory_bytes=budget) as ctx:
                ctx.use_model(path)
                errors = []
                for k, p in enumerate(frames):
                    try:
                        ctx.read_pictures(None, p, k)
                    except vmafdnn.MemoryBudgetError as e:
                        errors.append(e)
                ctx.flush()
                if errors:
                    assert len(errors) == 12 and ctx.frame_count == 0
                    assert budget < 1 << 20 and (threads or budget < 1 << 16)
                    continue
                assert_same({"m": [ctx.feature("m", k) for k in range(12)]}, want)
                batched = ctx.batching(0).batched_frames
                # one worker: Runs 0-3 (checked), 4-7, 8-11; two: which Runs come before
                # the verdict depends on the schedule
                if threads == 0:
                    assert batched == (8 if budget >= 1 << 20 else 0)



@pytest.mark.parametrize("threads", [0, 2])
def test_a_frame_failing_on_an_earlier_model_inside_a_batch(stage, threads):
    """A model attached first needs a caller feature that frames 5 and 8 lack: those frames
    fail there, before the temporal model, and the temporal model's Runs skip them as one
    Run per frame does."""
    needs = stage("pair_min", "needs", {"output_keys": ["y"],
                                        "input_sources": {"a": {"feature": "x"},
                                                          "b": {"feature": "x"}}})
    temporal = stage("batch_temporal", "t", TEMPORAL)
    frames = [(p, 8) for p in planes(12)]
    features = {k: {"x": float(k)} for k in range(12) if k not in (5, 8)}
    want, _ = score([needs, temporal], frames, ["y", "m", "bits"], batch=1, features=features)
    assert want["y"][5] is None and want["m"][5] is None and want["m"][6] is not None
    for batch in (2, 4):
        got, _ = score([needs, temporal], frames, ["y", "m", "bits"], batch=batch,
                       threads=threads, features=features)
        assert_same(got, want)


@pytest.mark.parametrize("threads", [0, 2])
@pytest.mark.parametrize("model,bitdepth", [("batch_temporal_8x8", 8),
                                            ("batch_temporal_u16_8x8", 10)])
def test_resized_frames_whose_size_changes(stage, threads, model, bitdepth):
    """A fixed 8x8 model with a resize mode: frames of 12x20, then 16x16, then 9x7 (each
    resized, past pictures kept at the model's size)."""
    path = stage(model, "t", {"output_keys": ["m", "bits"], "resize": "bilinear",
                              "input_sources": {"prev": past(), "bpc": {"value": "bpc"}}})
    frames = [(p, bitdepth) for p in planes(5, bitdepth=bitdepth) + planes(5, 16, 16, bitdepth)
              + planes(3, 9, 7, bitdepth)]
    want, _ = score([path], frames, ["m", "bits"], batch=1)
    assert all(v is not None for v in want["m"])
    for batch in (2, 4):
        got, batching = score([path], frames, ["m", "bits"], batch=batch, threads=threads)
        assert_same(got, want)
        assert batching[0].batchable and not batching[0].refused


def test_batching_counts(stage):
    """threads 0: one worker, Runs of 4 frames of one size; the first Run checked (scored a
    frame per Run, not counted), the later whole ones counted, the size change splitting a
    Run."""
    path = stage("batch_temporal", "t", TEMPORAL)
    frames = [(p, 8) for p in planes(10)]
    _, batching = score([path], frames, ["m"], batch=4)
    assert batching[0] == vmafdnn.Batching(True, 4, False, 6)  # Runs 0-3 (checked), 4-7, 8-9
    _, batching = score([path], frames, ["m"], batch=1)
    assert batching[0] == vmafdnn.Batching(True, 1, False, 0)


def _clip(h, w, n, bitdepth, seed):
    """A moving pattern with noise, and a noisier distorted copy."""
    rng = np.random.default_rng(seed)
    top = (1 << bitdepth) - 1
    yy, xx = np.mgrid[0:h, 0:w]
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    out = []
    for t in range(n):
        base = (0.5 + 0.3 * np.sin((xx + 3 * t) / 7.0) * np.cos((yy - 2 * t) / 5.0)) * top
        ref = np.clip(base + rng.normal(0, top * 0.02, (h, w)), 0, top)
        dist = np.clip(ref + rng.normal(0, top * 0.05, (h, w)), 0, top)
        out.append((ref.round().astype(dtype), dist.round().astype(dtype), bitdepth))
    return out


@pytest.mark.parametrize("h,w", [(33, 33), (271, 481)])
def test_vmaf_through_the_accelerator_form_batched(monkeypatch, h, w):
    """VMAF with VMAFDNN_MODEL_FORMS=CUDA (the accelerator form on the CPU EP): batch 4, threads
    0 and 2, scores as batch 1, on a clip whose depth goes 8 -> 10 bit mid-clip."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    frames = _clip(h, w, 4, 8, 1) + _clip(h, w, 5, 10, 2)
    got = {}
    for batch, threads in ((1, 0), (4, 0), (4, 2)):
        with vmafdnn.Context(device="cpu", batch=batch, threads=threads) as ctx:
            info = ctx.use_model("vmaf")
            for i, (ref, dist, bitdepth) in enumerate(frames):
                ctx.read_pictures(ref, dist, i, bitdepth=bitdepth)
            ctx.flush()
            got[batch, threads] = {k: [ctx.feature(k, i) for i in range(len(frames))]
                                   for k in ctx.features}
            assert ctx.models[0].form and "accel" in ctx.models[0].form
            batching = ctx.batching(0)
        assert batching.batchable and not batching.refused and batching.batch == batch
        if (batch, threads) == (4, 0):
            assert batching.batched_frames > 0
    want = got[1, 0]
    assert "vmaf" in want and len(want) > 3
    for key in ((4, 0), (4, 2)):
        assert_same(got[key], want)
