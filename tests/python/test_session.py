"""vmafdnn.Session: opening, execution providers, introspection, running."""
import errno
import threading

import numpy as np
import pytest

import vmafdnn
from tests.models import factory

ALL_DEVICES = ["auto", "cpu", "cuda", "openvino", "rocm", "openvino-cpu", "openvino-gpu"]


def test_runtime_is_found_without_configuration():
    assert vmafdnn.available()
    assert vmafdnn.ort_version().startswith("1.")
    assert "libonnxruntime" in vmafdnn.ort_library_path()


def test_api_version_is_minor_capped_at_headers():
    minor = int(vmafdnn.ort_version().split(".")[1])
    assert vmafdnn._lib.vmaf_dnn_ort_api_version() == min(minor, 29)


@pytest.mark.parametrize("device", ALL_DEVICES + ["AUTO", "Cuda", "OpenVINO"])
def test_every_device_falls_back_to_cpu_on_the_cpu_wheel(models, device):
    with vmafdnn.Session(models.identity, device=device) as s:
        assert s.attached_ep == "CPU"
        x = np.arange(8, dtype=np.float32)
        np.testing.assert_array_equal(s.run({"x": x})["y"], x)
        if device.lower() == "cpu":
            assert s.fallback_reason == ""
        else:
            # Every EP that was tried is accounted for, with ORT's reason.
            assert s.fallback_reason.strip()
            assert all(": not available: " in line for line in s.fallback_reason.splitlines())


def test_auto_tries_every_ep_in_order(models):
    with vmafdnn.Session(models.identity) as s:
        tried = [line.split(":")[0] if not line.startswith("OpenVINO") else
                 ":".join(line.split(":")[:2]) for line in s.fallback_reason.splitlines()]
    # The order of vmafdnn.h's VMAF_DNN_DEVICE_AUTO: NVIDIA, Intel, AMD, then
    # any GPU through WebGPU; the CPU EP binds last and is not a fallback.
    assert tried == ["CUDA", "NvTensorRTRTX", "OpenVINO:GPU", "OpenVINO:NPU", "OpenVINO:CPU",
                     "MIGraphX", "ROCm", "WebGpu"]


def test_ep_nodes_on_the_cpu_ep_are_all_of_them(models):
    """ep_nodes is vmaf_dnn_session_ep_nodes translated: (on the attached EP,
    all), every node on the CPU EP, None only where ORT cannot tell."""
    with vmafdnn.Session(models.conv_mean, device="cpu") as s:
        if vmafdnn._lib.vmaf_dnn_ort_api_version() < 24:
            assert s.ep_nodes is None
            return
        on_ep, total = s.ep_nodes
        assert isinstance(on_ep, int) and total > 0 and on_ep == total
        assert s.fallback_reason == ""


def test_builtin_model_ep_nodes_in_the_context_report():
    with vmafdnn.Context(device="cpu") as ctx:
        info = ctx.use_model("psnr_y")
        if vmafdnn._lib.vmaf_dnn_ort_api_version() < 24:
            assert info.ep_nodes is None
            return
        on_ep, total = info.ep_nodes
        assert on_ep == total > 0
        [model] = ctx.report()["models"]
        assert model["ep_nodes"] == [on_ep, total]


def test_unknown_device_is_a_value_error(models):
    with pytest.raises(ValueError, match='unknown device "tpu"; valid names: auto'):
        vmafdnn.Session(models.identity, device="tpu")


def test_config_is_kept(models):
    with vmafdnn.Session(models.identity, device="cuda", device_index=0, threads=1,
                         fp16_io=True, static_shapes="On", device_io="OFF") as s:
        assert s.config == {"device": "cuda", "device_index": 0, "threads": 1, "fp16_io": True,
                            "static_shapes": "on", "device_io": "off"}


@pytest.mark.parametrize("kwargs, fragment", [
    ({"threads": -1}, f"threads must be 0..{vmafdnn.MAX_THREADS}"),
    ({"threads": vmafdnn.MAX_THREADS + 1}, f"threads must be 0..{vmafdnn.MAX_THREADS}"),
    # Before: "device_index must be >= 0" for a value too large as well.
    ({"device_index": -2}, r"device_index must be 0\.\.2147483647 \(got -2\)"),
    ({"device_index": 2 ** 31}, r"device_index must be 0\.\.2147483647 \(got 2147483648\)"),
    ({"device_index": 10 ** 40}, r"device_index must be 0\.\.2147483647 \(got a number of "
                                 r"41 digits\)"),
    # Before: ValueError "Exceeds the limit (4300 digits) for integer string
    # conversion", raised while wording the message.
    ({"device_index": -10 ** 5000}, r"device_index must be 0\.\.2147483647 \(got -a number "
                                    r"of more than 4300 digits\)"),
])
def test_bad_config_values(models, kwargs, fragment):
    with pytest.raises(vmafdnn.InvalidArgumentError, match=fragment) as e:
        vmafdnn.Session(models.identity, **kwargs)
    assert e.value.errno == errno.EINVAL


def test_introspection(models):
    with vmafdnn.Session(models.two_outputs) as s:
        assert [(i.name, i.shape, i.dtype) for i in s.inputs] == [("x", (4,), np.float32)]
        assert [(o.name, o.shape) for o in s.outputs] == [("sum", (1,)), ("double", (4,))]
    with vmafdnn.Session(models.symbolic_batch) as s:
        assert s.inputs[0].shape == (-1, 3)
        assert s.outputs[0].shape == (-1, 1)
    with vmafdnn.Session(models.identity_fp16) as s:
        assert s.inputs[0].dtype == np.float16
    with vmafdnn.Session(models.typed_outputs, fp16_io=True) as s:
        assert [o.dtype for o in s.outputs] == [np.float64, np.int32, np.int64, np.float16]


def test_conv_reduction_matches_numpy(models):
    rng = np.random.default_rng(1)
    x = rng.random((1, 1, 16, 16), dtype=np.float32)
    padded = np.pad(x[0, 0].astype(np.float64), 1)
    blurred = sum(padded[dy:dy + 16, dx:dx + 16] for dy in range(3) for dx in range(3)) / 9
    with vmafdnn.Session(models.conv_mean, threads=1) as s:
        score = s.run([x])["score"]
    assert score.shape == (1,) and score.dtype == np.float32
    assert score[0] == pytest.approx(blurred.mean(), rel=1e-6)


def test_two_outputs_and_positional_feeds(models):
    with vmafdnn.Session(models.two_outputs) as s:
        out = s.run((np.array([1, 2, 3, 4], np.float32),))
    np.testing.assert_array_equal(out["sum"], [10])
    np.testing.assert_array_equal(out["double"], [2, 4, 6, 8])


def test_two_inputs_bound_by_name_in_any_order(models):
    a = np.array([5, 5, 5, 5], np.float32)
    b = np.array([1, 2, 3, 4], np.float32)
    with vmafdnn.Session(models.two_inputs) as s:
        by_name = s.run({"b": b, "a": a})["diff"]
        by_position = s.run([a, b])["diff"]
    np.testing.assert_array_equal(by_name, a - b)
    np.testing.assert_array_equal(by_position, a - b)


def test_symbolic_batch_runs_with_any_batch(models):
    with vmafdnn.Session(models.symbolic_batch) as s:
        for n in (1, 5):
            x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
            y = s.run([x])["y"]
            assert y.shape == (n, 1)
            np.testing.assert_array_equal(y[:, 0], x.sum(axis=1))


def test_output_size_known_only_after_the_run(models):
    with vmafdnn.Session(models.dynamic_output) as s:
        for n in (3, 1000, 2):
            x = np.arange(n, dtype=np.float32)
            np.testing.assert_array_equal(s.run([x])["y"], x * x)


def test_output_types_come_back_as_float32(models):
    x = np.array([1.5, -2.5, 65536.0], np.float32)
    with vmafdnn.Session(models.typed_outputs, fp16_io=True) as s:
        out = s.run([x])
    for name in ("as_double", "as_int32", "as_int64", "as_fp16"):
        assert out[name].dtype == np.float32
    np.testing.assert_array_equal(out["as_double"], x)
    np.testing.assert_array_equal(out["as_int32"], [1, -2, 65536])
    np.testing.assert_array_equal(out["as_int64"], [1, -2, 65536])
    np.testing.assert_array_equal(out["as_fp16"], x.astype(np.float16).astype(np.float32))


def test_fp16_slots_with_fp16_io(models):
    x = np.array([0.1, 1 / 3, 65504, 70000, -0.0, 1e-8, np.inf, np.nan], np.float32)
    with vmafdnn.Session(models.identity_fp16, fp16_io=True) as s:
        y = s.run([x])["y"]
    np.testing.assert_array_equal(y, x.astype(np.float16).astype(np.float32))


def test_fp16_io_is_a_no_op_on_float_slots(models):
    x = np.array([0.1, 1 / 3, 1e-30, 123456.789, 0, 0, 0, 0], np.float32)
    with vmafdnn.Session(models.identity, fp16_io=True) as s:
        np.testing.assert_array_equal(s.run([x])["y"], x)


def test_fp16_slot_without_fp16_io_opens_but_run_names_the_slot(models):
    with vmafdnn.Session(models.identity_fp16) as s:
        with pytest.raises(vmafdnn.UnsupportedError, match='input "x" is FLOAT16') as e:
            s.run([np.zeros(8, np.float32)])
    assert e.value.errno == errno.ENOTSUP


def test_fp16_output_without_fp16_io_names_the_output(models):
    with vmafdnn.Session(models.typed_outputs) as s:
        with pytest.raises(vmafdnn.UnsupportedError, match='output "as_fp16" is FLOAT16'):
            s.run([np.zeros(3, np.float32)])


def test_inputs_are_not_copied_when_contiguous_float32(models):
    # The session reads the caller's buffer directly: a view of a larger array
    # that is C-contiguous goes straight through (checked by identity output).
    base = np.arange(16, dtype=np.float32)
    view = base[8:]
    with vmafdnn.Session(models.identity) as s:
        np.testing.assert_array_equal(s.run([view])["y"], view)
        # A strided view is accepted too (copied to contiguous first).
        np.testing.assert_array_equal(s.run([base[::2]])["y"], base[::2])


@pytest.mark.parametrize("feeds, exc, fragment", [
    ({"nope": np.zeros(8, np.float32)}, vmafdnn.InvalidArgumentError, "no input named 'nope'"),
    ({"x": np.zeros(8, np.float64)}, vmafdnn.InvalidArgumentError, "'x' must be float32"),
    ({"x": np.zeros((2, 4), np.float32)}, vmafdnn.InvalidArgumentError, "'x' must have rank 1"),
    ({"x": np.zeros(7, np.float32)}, vmafdnn.InvalidArgumentError,
     'input "x": dim 0 is 7; the model fixes it to 8'),
    ({}, vmafdnn.InvalidArgumentError, "input 'x' is missing"),
    ([], vmafdnn.InvalidArgumentError, "0 inputs given; the model has 1"),
])
def test_bad_feeds_name_the_input(models, feeds, exc, fragment):
    with vmafdnn.Session(models.identity) as s:
        with pytest.raises(exc, match=fragment) as e:
            s.run(feeds)
    assert isinstance(e.value, ValueError)
    assert e.value.errno == errno.EINVAL


def test_feeds_of_the_wrong_kind(models):
    with vmafdnn.Session(models.identity) as s:
        with pytest.raises(TypeError):
            s.run(np.zeros(8, np.float32))


def test_closed_session_raises(models):
    s = vmafdnn.Session(models.identity)
    s.close()
    s.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        s.run([np.zeros(8, np.float32)])
    assert "closed" in repr(s)


def test_threads_share_one_session_safely(models):
    rng = np.random.default_rng(2)
    inputs = [rng.random((1, 1, 16, 16), dtype=np.float32) for _ in range(8)]
    with vmafdnn.Session(models.conv_mean, threads=1) as s:
        expected = [s.run([x])["score"][0] for x in inputs]
        results = {}

        def work(t):
            results[t] = [s.run([x])["score"][0] for x in inputs for _ in range(20)][::20]

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(results[t] == expected for t in range(4))


def test_sessions_on_several_threads_match_single_thread(models):
    rng = np.random.default_rng(3)
    inputs = [rng.random((1, 1, 16, 16), dtype=np.float32) for _ in range(16)]
    with vmafdnn.Session(models.conv_mean, threads=1) as s:
        expected = [s.run([x])["score"][0] for x in inputs]
    results = [None] * 4

    def work(t):
        with vmafdnn.Session(models.conv_mean, threads=1) as own:
            results[t] = [own.run([x])["score"][0] for x in inputs]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_int64_input_is_refused_at_open(models):
    with pytest.raises(vmafdnn.UnsupportedError, match='input "x" has element type INT64') as e:
        vmafdnn.Session(models.int64_input)
    assert e.value.errno == errno.ENOTSUP


def test_a_model_of_factory_opset_loads(save_model):
    # Guard for the factory itself: IR/opset pinned to what every ORT accepts.
    model = factory.identity()
    assert model.ir_version == factory.IR_VERSION
    assert model.opset_import[0].version == factory.OPSET
    with vmafdnn.Session(save_model(model, "pinned")) as s:
        assert s.attached_ep == "CPU"


def shape_telling_session(tmp_path, model):
    """A CPU session of `model`, where ORT tells an unknown rank from a scalar (>= 1.24)."""
    import onnx

    if tuple(int(x) for x in vmafdnn.ort_version().split(".")[:2]) < (1, 24):
        pytest.skip("ORT before 1.24 cannot tell an unknown rank from a scalar")
    path = tmp_path / f"{model.graph.name}_{len(list(tmp_path.iterdir()))}.onnx"
    onnx.save(model, str(path))
    return vmafdnn.Session(str(path), device="cpu")


def test_output_of_unknown_rank_runs_and_says_so(tmp_path):
    """An output whose rank ORT cannot know (two If branches of different
    rank) is described with shape None, not as a scalar, and each run returns
    what the model produced: [1] or [1, 1]."""
    with shape_telling_session(tmp_path, factory.score_unknown_rank()) as s:
        assert s.outputs[0].shape is None
        high = s.run({"x": np.full((1, 1, 4, 4), 0.75, np.float32)})["score"]
        low = s.run({"x": np.full((1, 1, 4, 4), 0.25, np.float32)})["score"]
    assert high.shape == (1,) and high[0] == np.float32(0.75)
    assert low.shape == (1, 1) and low[0, 0] == np.float32(0.25)


def test_input_of_no_declared_shape_takes_any_rank(tmp_path):
    """An input the model declares without a shape is described with shape None and fed at
    any rank up to VMAF_DNN_MAX_RANK (ORT checks the rest); a context, which must know a
    picture's layout, refuses the model naming the input."""
    with shape_telling_session(tmp_path, factory.mean_of_shapeless_input()) as s:
        assert s.inputs[0].shape is None
        for shape in [(1, 1, 4, 6), (3, 5), (7,), (), (1,) * 8]:
            x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1
            assert s.run({"x": x})["score"][0] == pytest.approx(x.mean()), shape
        with pytest.raises(vmafdnn.InvalidArgumentError, match="rank at most 8"):
            s.run({"x": np.ones((1,) * 9, np.float32)})
        path = s.path
    ctx = vmafdnn.Context(device="cpu")
    with pytest.raises(vmafdnn.UnsupportedError, match='input "x" declares no shape') as e:
        ctx.use_model(str(path))
    assert e.value.errno == errno.ENOTSUP


def test_ort_profile_is_written_per_session_and_summed(models, tmp_path, monkeypatch):
    """VMAFDNN_ORT_PROFILE=PREFIX: ORT profiles each session into PREFIX_<date>.json when it
    is released, and bench/ort_profile_summary.py counts its runs and nodes."""
    import os
    import subprocess
    import sys
    monkeypatch.setenv("VMAFDNN_ORT_PROFILE", str(tmp_path / "prof"))
    with vmafdnn.Session(models.identity, device="cpu") as s:
        for _ in range(3):
            s.run({"x": np.arange(8, dtype=np.float32)})
    monkeypatch.delenv("VMAFDNN_ORT_PROFILE")
    files = sorted(tmp_path.glob("prof_*.json"))
    assert len(files) == 1, files
    summary = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                                      "ort_profile_summary.py"), str(files[0])],
        capture_output=True, text=True, check=True).stdout
    assert summary.startswith(f"{files[0].name}: 3 runs, "), summary
    assert "Memcpy nodes per run: 0" in summary, summary
