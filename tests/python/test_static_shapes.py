"""Sessions specialised to the shapes they run with (VmafDnnConfig.static_shapes,
ort_backend.c's session_for_run): which runs get one, that they score what the session as
opened scores, and why runs go on as opened."""
import errno
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import vmafdnn
from tests.models import factory
from vmafdnn._native import ffi, lib


def image(h, w, seed=0):
    return np.random.default_rng(seed).random((1, 1, h, w), dtype=np.float32)


def test_on_specialises_each_shape_once_and_scores_the_same(models):
    sizes = [(16, 24), (33, 7), (16, 24), (33, 7), (16, 24)]
    with vmafdnn.Session(models.symbolic_hw_mean, static_shapes="on") as fixed, \
            vmafdnn.Session(models.symbolic_hw_mean, static_shapes="off") as opened:
        for i, (h, w) in enumerate(sizes):
            x = image(h, w, i)
            assert fixed.run([x])["score"][0] == pytest.approx(opened.run([x])["score"][0],
                                                               rel=1e-6, abs=0)
        assert fixed.static_runs == (5, 0, "", 2)  # two shapes: two specialised sessions
        assert opened.static_runs[:3] == (0, 5, "static_shapes is OFF")
        assert fixed.config["static_shapes"] == "on"
        # The session as opened still declares the symbolic dims.
        assert fixed.inputs[0].shape == (1, 1, -1, -1)


def test_auto_leaves_orts_cpu_ep_as_opened(models):
    with vmafdnn.Session(models.symbolic_hw_mean) as s:
        s.run([image(8, 8)])
        assert s.config["static_shapes"] == "auto"
        assert s.static_runs[:3] == (0, 1, "ORT's CPU EP (static_shapes AUTO specialises on the "
                                       "other EPs)")


def test_a_model_without_named_symbolic_dims_runs_as_opened(models, save_model):
    unnamed = factory.make_model([helper.make_node("Identity", ["x"], ["y"])],
                                 [factory.tensor("x", TensorProto.FLOAT, [None, 3])],
                                 [factory.tensor("y", TensorProto.FLOAT, [None, 3])])
    for path in (models.identity, save_model(unnamed, "unnamed_dim")):
        with vmafdnn.Session(path, static_shapes="on") as s:
            x = np.ones(s.inputs[0].shape if s.inputs[0].shape[0] > 0 else (2, 3), np.float32)
            np.testing.assert_array_equal(s.run([x])["y"], x)
            assert s.static_runs[:3] == (0, 1, "the model's inputs have no named symbolic dims")


def test_at_most_max_shapes_are_kept_then_runs_go_on_as_opened(models):
    kept = lib.VMAF_DNN_MAX_STATIC_SHAPES
    with vmafdnn.Session(models.symbolic_batch, static_shapes="on") as s:
        for n in range(1, kept + 4):
            before = s.static_runs
            x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
            np.testing.assert_array_equal(s.run([x])["y"][:, 0], x.sum(axis=1))
            after = s.static_runs
            # (the binding may run twice: once more when an output outgrew its buffer)
            if n <= kept:
                assert after.as_opened == before.as_opened and after.fixed > before.fixed, n
            else:
                assert after.fixed == before.fixed and after.as_opened > before.as_opened, n
        before = s.static_runs
        s.run([np.ones((1, 3), np.float32)])  # a kept shape is still used
        assert s.static_runs[:3] == (before.fixed + 1, before.as_opened, "")


def test_one_dim_name_with_two_values_runs_as_opened(save_model):
    model = factory.make_model([helper.make_node("Sub", ["a", "b"], ["d"])],
                               [factory.tensor("a", TensorProto.FLOAT, ["N"]),
                                factory.tensor("b", TensorProto.FLOAT, ["N"])],
                               [factory.tensor("d", TensorProto.FLOAT, ["N"])])
    with vmafdnn.Session(save_model(model, "shared_dim"), static_shapes="on") as s:
        a, b = np.arange(3, dtype=np.float32), np.ones(1, np.float32)
        np.testing.assert_array_equal(s.run([a, b])["d"], a - b)  # ORT broadcasts it
        assert s.static_runs[:3] == (0, 1, "")
        np.testing.assert_array_equal(s.run([a, a])["d"], np.zeros(3, np.float32))
        assert s.static_runs[:3] == (1, 1, "")


def test_unknown_settings_are_refused(models):
    with pytest.raises(vmafdnn.InvalidArgumentError, match="unknown static_shapes setting "
                       '"sometimes"; valid names: auto, off, on'):
        vmafdnn.Session(models.identity, static_shapes="sometimes")
    cfg = ffi.new("VmafDnnConfig *")
    lib.vmaf_dnn_default_config(cfg)
    cfg.static_shapes = 3
    out = ffi.new("VmafDnnSession **")
    assert lib.vmaf_dnn_session_open(out, os.fsencode(models.identity), cfg) == -errno.EINVAL
    assert b"static_shapes 3 is unknown (0..2)" in ffi.string(lib.vmaf_dnn_last_error())
    assert lib.vmaf_dnn_session_static_runs(ffi.NULL, ffi.new("VmafDnnStaticRuns *")) == \
        -errno.EINVAL
    with vmafdnn.Session(models.identity) as s:
        assert lib.vmaf_dnn_session_static_runs(s._handle, ffi.NULL) == -errno.EINVAL


def test_the_time_budget_stops_a_specialised_sessions_run(save_model):
    """The stops (time budget, cancel) reach a specialised session's run: the run options
    that carry them are the session's, whichever ORT session runs."""
    model = factory.loop_count()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "K"
    with vmafdnn.Session(save_model(model, "loop_count_k"), static_shapes="on", threads=1,
                         max_run_ms=300) as s:
        assert s.run([np.array([5], np.float32)])["y"][0] == 5
        with pytest.raises(vmafdnn.RunTimeoutError):
            s.run([np.array([1e12], np.float32)])
        assert s.static_runs[:3] == (2, 0, "")
        assert s.run([np.array([3], np.float32)])["y"][0] == 3


def test_vmaf_through_the_accelerator_form_scores_the_same_specialised(monkeypatch):
    """The context's models take the setting: the VMAF features' accelerator form (run on ORT's
    CPU EP through VMAFDNN_MODEL_FORMS=CUDA) specialised to the clip's size scores each frame
    as the form as opened does."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    frames = [(image(36, 52, 2 * i)[0, 0], image(36, 52, 2 * i + 1)[0, 0]) for i in range(3)]
    scores = {}
    for mode in ("on", "off"):
        with vmafdnn.Context(static_shapes=mode, threads=1) as ctx:
            ctx.use_model("vmaf")
            assert os.path.basename(ctx.models[0].form) == "vmaf_features_accel.onnx"
            for i, (r, d) in enumerate(frames):
                ctx.read_pictures((r * 255).astype(np.uint8), (d * 255).astype(np.uint8), i)
            ctx.flush()
            scores[mode] = [[ctx.feature(k, i) for i in range(len(frames))]
                            for k in ctx.models[0].features]
            runs = ctx.static_runs(0)
            assert runs[:3] == ((3, 0, "") if mode == "on" else (0, 3, "static_shapes is OFF"))
    np.testing.assert_allclose(scores["on"], scores["off"], rtol=1e-6, atol=0)
