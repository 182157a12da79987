"""Device-resident I/O of specialised sessions (ort_device_io.c, VmafDnnDeviceIo) on ORT's CPU
EP, where device_io "on" takes the binding path with every slot in host memory: the same
scores as ORT's own copies, and the stops, budgets and odd models that path must still honour.
The device side (tensors in device memory, graph capture) runs on WebGPU's software adapter
in test_ort_wheels.py where Dawn finds one."""
import os
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import vmafdnn
from clips import noisy_pairs
from tests.models import factory


def image(h, w, seed=0):
    return np.random.default_rng(seed).random((1, 1, h, w), dtype=np.float32)


def vmaf_scores(clip, batch, **settings):
    with vmafdnn.Context(static_shapes="on", threads=1, batch=batch, **settings) as ctx:
        ctx.use_model("vmaf")
        assert os.path.basename(ctx.models[0].form) == "vmaf_features_accel.onnx"
        for i, (r, d) in enumerate(clip):
            ctx.read_pictures(r, d, i)
        ctx.flush()
        scores = [[ctx.feature(k, i) for i in range(len(clip))]
                  for k in ctx.models[0].features]
        return np.array(scores), ctx.static_runs(0)


@pytest.mark.parametrize("batch", [1, 4])
def test_vmaf_through_the_bound_path_is_bit_for_bit_orts_copies(monkeypatch, batch):
    """VMAF through the accelerator form, motion's previous reference included, batched or
    not: binding every slot changes no bit of any feature."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    clip = noisy_pairs(9, 37, 53, seed=batch)
    bound, runs = vmaf_scores(clip, batch, device_io="on")
    copied, plain = vmaf_scores(clip, batch, device_io="off")
    np.testing.assert_array_equal(bound, copied)
    if batch > 1:
        return  # batched Runs go to the frame workers' copies of the session, uncounted here
    assert runs.device_io == runs.fixed > 0 and runs.captured == 0, runs
    assert runs.device_io_reason.startswith("the EP records no graphs"), runs
    assert plain.device_io == 0 and plain.device_io_reason == "device_io is OFF", plain


def test_auto_binds_nothing_where_every_slot_lives_in_host_memory(models):
    with vmafdnn.Session(models.symbolic_hw_mean, static_shapes="on") as s:
        s.run([image(9, 11)])
        runs = s.static_runs
        assert (runs.fixed, runs.device_io, runs.captured) == (1, 0, 0), runs
        if tuple(map(int, vmafdnn.ort_version().split(".")[:2])) < (1, 23):
            assert runs.device_io_reason == "ONNX Runtime before 1.23 cannot tell where a " \
                                            "session's inputs live", runs
        else:
            assert runs.device_io_reason == "every input and output of the session lives in " \
                                            "host memory", runs


def test_without_a_specialised_session_the_reason_says_so(models):
    with vmafdnn.Session(models.symbolic_hw_mean) as s:  # AUTO: none on ORT's CPU EP
        s.run([image(9, 11)])
        assert s.static_runs.device_io_reason.startswith("no specialised session"), s.static_runs


def test_outputs_of_every_kind_come_back_through_the_binding(models):
    """Outputs ORT allocates (a size known only after the run, typed outputs converted to
    fp32) and outputs written into the caller's buffers, over several runs and shapes."""
    with vmafdnn.Session(models.dynamic_output, static_shapes="on", device_io="on") as s:
        for n in (3, 5, 3):
            x = np.arange(n, dtype=np.float32)
            np.testing.assert_array_equal(s.run([x])["y"], x * x)
        # (a run may be made twice: once more when an output outgrew its buffer)
        assert s.static_runs.device_io == s.static_runs.fixed >= 3, s.static_runs
    with vmafdnn.Session(models.symbolic_batch, static_shapes="on", device_io="on") as s:
        for n in (2, 7, 2):
            x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
            np.testing.assert_array_equal(s.run([x])["y"][:, 0], x.sum(axis=1))
        assert s.static_runs.device_io == s.static_runs.fixed >= 3, s.static_runs


def test_an_output_that_is_also_an_input_is_left_to_orts_copies(save_model):
    """ORT answers such an output with the feed itself; a binding cannot hold it, so the
    specialised session keeps ORT's copies and says why."""
    model = factory.make_model(
        [helper.make_node("Mul", ["x", "x"], ["sq"])],
        [factory.tensor("x", TensorProto.FLOAT, ["N"])],
        [factory.tensor("x", TensorProto.FLOAT, ["N"]),
         factory.tensor("sq", TensorProto.FLOAT, ["N"])])
    with vmafdnn.Session(save_model(model, "alias_out"), static_shapes="on",
                         device_io="on") as s:
        x = np.arange(4, dtype=np.float32)
        out = s.run([x])
        np.testing.assert_array_equal(out["x"], x)
        np.testing.assert_array_equal(out["sq"], x * x)
        runs = s.static_runs
        assert (runs.fixed, runs.device_io) == (1, 0), runs
        assert runs.device_io_reason == "an output of the model is also one of its inputs", runs


def test_the_time_budget_and_cancel_stop_a_bound_run(save_model):
    model = factory.loop_count()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "K"
    with vmafdnn.Session(save_model(model, "loop_count_k_io"), static_shapes="on", threads=1,
                         device_io="on", max_run_ms=300) as s:
        assert s.run([np.array([5], np.float32)])["y"][0] == 5
        with pytest.raises(vmafdnn.RunTimeoutError):
            s.run([np.array([1e12], np.float32)])
        assert s.run([np.array([3], np.float32)])["y"][0] == 3
        assert s.static_runs.device_io == 3, s.static_runs
    with vmafdnn.Session(save_model(model, "loop_count_k_io2"), static_shapes="on", threads=1,
                         device_io="on") as s:
        s.run([np.array([2], np.float32)])
        timer = threading.Timer(0.2, s.cancel)
        timer.start()
        try:
            with pytest.raises(vmafdnn.RunCancelledError):
                s.run([np.array([1e12], np.float32)])
        finally:
            timer.cancel()
        assert s.run([np.array([4], np.float32)])["y"][0] == 4


def test_the_memory_budget_refuses_a_bound_run(save_model):
    """An allocation past max_memory_bytes inside a bound run is -EDQUOT, as in a plain run,
    and the session goes on."""
    model = factory.expand_input()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "K"
    with vmafdnn.Session(save_model(model, "expand_input_k"), static_shapes="on",
                         device_io="on", max_memory_bytes=64 << 20) as s:
        assert float(s.run([np.array([4.0], np.float32)])["y"].sum()) >= 0
        with pytest.raises(vmafdnn.MemoryBudgetError):
            s.run([np.array([float(1 << 28)], np.float32)])
        s.run([np.array([4.0], np.float32)])
        assert s.static_runs.device_io >= 2, s.static_runs


def test_sessions_binding_on_many_threads_score_their_own_data(models):
    """One session per thread, each binding its own tensors: no run sees another's data."""
    want = {t: [float(image(8 + t, 8, k).mean()) for k in range(20)] for t in range(4)}
    got, errors = {}, []

    def work(t):
        try:
            with vmafdnn.Session(models.symbolic_hw_mean, static_shapes="on", device_io="on",
                                 threads=1) as s:
                got[t] = [float(s.run([image(8 + t, 8, k)])["score"][0]) for k in range(20)]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t in range(4):
        np.testing.assert_allclose(got[t], want[t], rtol=1e-6)


def test_a_contexts_counts_take_in_the_copies_scoring_frames_in_flight(monkeypatch):
    """Context.static_runs (vmaf_dnn_tiny_model_static_runs) counts the runs of the copies
    that score frames in flight too, and gives the reasons of a session that ran; the report
    carries the same."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    clip = noisy_pairs(10, 36, 52)
    with vmafdnn.Context(static_shapes="on", device_io="on", threads=3) as ctx:
        ctx.use_model("psnr_y")
        for i, (r, d) in enumerate(clip):
            ctx.read_pictures(r, d, i)
        ctx.flush()
        runs = ctx.static_runs(0)
        assert (runs.fixed, runs.as_opened, runs.device_io, runs.captured) == (10, 0, 10, 0), runs
        assert runs.specialised >= 1 and runs.reason == "", runs
        assert runs.device_io_reason.startswith("the EP records no graphs"), runs
        assert ctx.report()["models"][0]["static_runs"] == runs._asdict()


@pytest.mark.parametrize("batch", [1, 4])
def test_pictures_in_host_accessible_memory_score_as_in_malloced(monkeypatch, batch):
    """The pictures a context's models feed (this frame's samples, the previous reference,
    resized planes, batched stacks) come from the session's host memory (vdnn_ort_host_alloc:
    the EP device's pinned memory where it has some). VMAFDNN_TEST_HOST_ACCESSIBLE=1 puts them
    in ORT's CPU allocator's blocks on ORT's CPU EP, whose inputs all live in host memory: the
    same bits as malloc'ed planes, across a change of size (the planes grow, their contents
    kept), and no run counted as fed from pinned memory (nothing is copied to a device)."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    clips = [noisy_pairs(5, 37, 53, seed=batch), noisy_pairs(6, 61, 90, seed=batch + 1)]
    scores = {}
    for hook in ("0", "1"):
        monkeypatch.setenv("VMAFDNN_TEST_HOST_ACCESSIBLE", hook)
        with vmafdnn.Context(static_shapes="on", device_io="on", threads=2, batch=batch) as ctx:
            for name in ("vmaf", "psnr_y", "ssim_y"):
                ctx.use_model(name)
            for clip in clips:  # the second clip: larger planes in the same buffers' place
                ctx.reset()
                for i, (r, d) in enumerate(clip):
                    ctx.read_pictures(r, d, i)
                ctx.flush()
                scores.setdefault(hook, []).append(
                    {k: [ctx.feature(k, i) for i in range(len(clip))] for k in ctx.features})
            runs = [ctx.static_runs(m) for m in range(len(ctx.models))]
            # the picture models bound (VMAF's SVM stage takes features, fixed in size)
            assert sum(r.device_io > 0 for r in runs) == 3 and not any(r.pinned for r in runs)
    assert scores["1"] == scores["0"]
