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
        assert fixed.static_runs[:4] == (5, 0, "", 2)  # two shapes: two specialised sessions
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


# -- device_io: how specialised sessions exchange inputs and outputs (VmafDnnDeviceIo) ----

def test_device_io_names_round_trip_and_unknown_ones_are_refused():
    assert vmafdnn.names.DEVICE_IO_NAMES == ("auto", "off", "on")
    assert vmafdnn.names.table("device_io") == {"auto": lib.VMAF_DNN_DEVICE_IO_AUTO,
                                                "off": lib.VMAF_DNN_DEVICE_IO_OFF,
                                                "on": lib.VMAF_DNN_DEVICE_IO_ON}
    for name in vmafdnn.names.DEVICE_IO_NAMES:
        assert vmafdnn.names.name("device_io", vmafdnn.names.value("device_io", name)) == name
    assert vmafdnn.names.value("device_io", "On") == lib.VMAF_DNN_DEVICE_IO_ON
    for bad in ("always", 2):
        with pytest.raises(vmafdnn.InvalidArgumentError, match="unknown device_io setting "
                           r'.*; valid names: auto, off, on') as e:
            vmafdnn.names.value("device_io", bad)
        assert e.value.errno == errno.EINVAL
    with pytest.raises(ValueError, match="device_io value 3 has no name"):
        vmafdnn.names.name("device_io", 3)


def test_device_io_is_kept_and_refused_when_unknown(models):
    with vmafdnn.Session(models.identity) as s:
        assert s.config["device_io"] == "auto"
    with vmafdnn.Session(models.identity, device_io="Off") as s:
        assert s.config["device_io"] == "off"
    with pytest.raises(vmafdnn.InvalidArgumentError, match="unknown device_io setting "
                       '"sometimes"; valid names: auto, off, on'):
        vmafdnn.Session(models.identity, device_io="sometimes")
    cfg = ffi.new("VmafDnnConfig *")
    lib.vmaf_dnn_default_config(cfg)
    assert cfg.device_io == lib.VMAF_DNN_DEVICE_IO_AUTO
    cfg.device_io = 3
    out = ffi.new("VmafDnnSession **")
    assert lib.vmaf_dnn_session_open(out, os.fsencode(models.identity), cfg) == -errno.EINVAL
    assert b"device_io 3 is unknown (0..2)" in ffi.string(lib.vmaf_dnn_last_error())


def test_device_io_on_orts_cpu_ep_scores_the_same(models):
    """Every setting scores what the session as opened scores. On ORT's CPU EP every slot lives
    in host memory, so auto binds nothing, on binds every fixed run, off none; nothing is
    captured (the CPU EP records no graph), so there is always a reason."""
    sizes = [(16, 24), (33, 7), (16, 24)]
    with vmafdnn.Session(models.symbolic_hw_mean, static_shapes="off") as opened:
        expected = [opened.run([image(h, w, i)])["score"][0] for i, (h, w) in enumerate(sizes)]
    for mode in vmafdnn.names.DEVICE_IO_NAMES:
        with vmafdnn.Session(models.symbolic_hw_mean, static_shapes="on", device_io=mode) as s:
            assert s.config["device_io"] == mode
            for i, (h, w) in enumerate(sizes):
                assert s.run([image(h, w, i)])["score"][0] == pytest.approx(expected[i],
                                                                            rel=1e-6, abs=0)
            runs = s.static_runs
            assert runs[:4] == (3, 0, "", 2)
            assert isinstance(runs.device_io, int) and isinstance(runs.captured, int)
            assert runs.device_io == (runs.fixed if mode == "on" else 0), (mode, runs)
            assert runs.captured == 0 and runs.device_io_reason, (mode, runs)
            if mode == "off":
                assert "OFF" in runs.device_io_reason, runs


def test_the_context_passes_device_io_to_every_models_session(monkeypatch):
    """Context(device_io=) reaches each model's session, one attached with settings of its own
    too; the accelerator form (run on ORT's CPU EP through VMAFDNN_MODEL_FORMS=CUDA) specialised
    to the clip's size scores the same whichever way it exchanges its inputs and outputs."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    frames = [(image(36, 52, 2 * i)[0, 0], image(36, 52, 2 * i + 1)[0, 0]) for i in range(3)]
    scores = {}
    for mode in ("on", "off"):
        with vmafdnn.Context(static_shapes="on", device_io=mode, threads=1) as ctx:
            ctx.use_model("ssim_y")
            ctx.use_model("psnr_y", threads=1)
            for i in range(2):
                session = lib.vmaf_dnn_tiny_model_session(ctx._handle, i)
                assert lib.vmaf_dnn_session_config(session).device_io == \
                    vmafdnn.names.value("device_io", mode)
            for i, (r, d) in enumerate(frames):
                ctx.read_pictures((r * 255).astype(np.uint8), (d * 255).astype(np.uint8), i)
            ctx.flush()
            scores[mode] = [[ctx.feature(k, i) for i in range(len(frames))]
                            for k in ("ssim_y", "psnr_y")]
            for i in range(2):
                runs = ctx.static_runs(i)
                assert runs[:2] == (3, 0) and runs.captured == 0, runs
                assert runs.device_io == (3 if mode == "on" else 0), runs
    np.testing.assert_allclose(scores["on"], scores["off"], rtol=1e-6, atol=0)
    with pytest.raises(vmafdnn.InvalidArgumentError, match='unknown device_io setting "never"'):
        vmafdnn.Context(device_io="never")
