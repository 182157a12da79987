"""Attacks on device-resident I/O (ort_device_io.c, VmafDnnDeviceIo) on ORT's CPU EP, where
static_shapes "on" with device_io "on" sends every run of a specialised session through ORT's IO
binding (every slot in host memory). Each attack compares the bound path with device_io "off"
(ORT's own copies) on the same runs, and checks that the runs really went through the binding
(StaticRuns.device_io): output subsets, orders and kinds rebound per run, buffers too small,
typed and fp16 slots, UINT16 samples, more shapes than specialised sessions, refused shapes,
threads, cancel, budgets, fork and the scoring context."""
import errno
import os
import sys
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import vmafdnn
from tests.models import factory
from vmafdnn._native import ffi, lib

sys.path.insert(0, os.path.dirname(__file__))
from clips import noisy_pairs  # noqa: E402
from forking import child_code  # noqa: E402

F32, F16, U16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT16
T = factory.tensor
MODES = ("off", "on")


def bound(path, **kw):
    return vmafdnn.Session(path, static_shapes="on", device_io="on", threads=1, **kw)


def c_run(session, feeds, outputs):
    """vmaf_dnn_session_run with a chosen list of outputs: feeds [(name or None, array)],
    outputs [(name or None, capacity)]; capacity None passes no buffer. Returns (rc,
    {name: (values written, count, shape)}, last error); unwritten elements stay NaN."""
    keep = []
    c_in = ffi.new("VmafDnnInput[]", max(len(feeds), 1))
    for i, (name, arr) in enumerate(feeds):
        arr = np.ascontiguousarray(arr, np.float32)
        c_name = ffi.new("char[]", name.encode()) if name else ffi.NULL
        shape = ffi.new("int64_t[]", list(arr.shape) or [1])
        buf = ffi.from_buffer("float[]", arr)
        keep += [c_name, shape, buf, arr]
        c_in[i].name, c_in[i].data, c_in[i].shape, c_in[i].rank = c_name, buf, shape, arr.ndim
    c_out = ffi.new("VmafDnnOutput[]", max(len(outputs), 1))
    arrays = []
    for k, (name, capacity) in enumerate(outputs):
        c_name = ffi.new("char[]", name.encode()) if name else ffi.NULL
        keep.append(c_name)
        c_out[k].name = c_name
        if capacity is None:
            arrays.append(None)
            c_out[k].data, c_out[k].capacity = ffi.NULL, 0
        else:
            arr = np.full(max(capacity, 1), np.nan, np.float32)
            arrays.append(arr)
            buf = ffi.from_buffer("float[]", arr)
            keep.append(buf)
            c_out[k].data, c_out[k].capacity = buf, capacity
    rc = lib.vmaf_dnn_session_run(session._handle, c_in, len(feeds), c_out, len(outputs))
    results = {}
    for k, (name, _) in enumerate(outputs):
        count = int(c_out[k].count)
        values = None if arrays[k] is None else arrays[k][:count].copy()
        results[name] = (values, count, tuple(c_out[k].shape[d] for d in range(c_out[k].rank)))
    return rc, results, ffi.string(lib.vmaf_dnn_last_error()).decode() if rc else ""


def outcome(call):
    """The results of call() as plain data, or its error's type and message."""
    try:
        return {k: v.copy() for k, v in call().items()}
    except vmafdnn.DnnError as e:
        return (type(e).__name__, str(e))


def same(a, b):
    """Outcomes equal bit for bit (arrays by dtype, shape and every bit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and
            a[k].tobytes() == b[k].tobytes() for k in a)
    return a == b


def assert_all_bound(runs):
    assert runs.device_io == runs.fixed > 0 and runs.captured == 0, runs


def multi_output_model():
    """x[N] -> sum[1] (fixed FLOAT: written into the caller's buffer), dbl[N], sq[N] (ORT
    allocates them), sumd[1] DOUBLE, xi[N] INT64, c[3] an initializer returned as it is."""
    inits = [numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array([7, 8, 9], np.float32), "c")]
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["sum"], keepdims=1),
             helper.make_node("Mul", ["x", "two"], ["dbl"]),
             helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("Cast", ["sum"], ["sumd"], to=TensorProto.DOUBLE),
             helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64)]
    return factory.make_model(nodes, [T("x", F32, ["N"])], [
        T("sum", F32, [1]), T("dbl", F32, ["N"]), T("sq", F32, ["N"]),
        T("sumd", TensorProto.DOUBLE, [1]), T("xi", TensorProto.INT64, ["N"]),
        T("c", F32, [3])], inits)


def expected_multi(x):
    s = np.float32(x.sum(dtype=np.float32))
    return {"sum": np.array([s]), "dbl": x * 2, "sq": x * x, "sumd": np.array([s]),
            "xi": np.trunc(x), "c": np.array([7, 8, 9], np.float32)}


# -- outputs --------------------------------------------------------------------------------

def test_output_subsets_orders_and_kinds_are_rebound_every_run(save_model):
    """Per run the binding is cleared and rebound: a subset, then every output, then another
    subset in another order, on sessions specialised to two sizes taken in turn. No run sees
    a stale output (every value is checked against numpy; unwritten elements would be NaN)
    and the bound path answers bit for bit as ORT's copies."""
    path = save_model(multi_output_model(), "attack_multi")
    plan = [["dbl", "sum"], ["sum", "dbl", "sq", "sumd", "xi", "c"], ["xi"],
            ["c", "sq"], ["sumd", "sum", "xi", "dbl", "c", "sq"], ["sq"], ["sum"]]
    got = {}
    for mode in MODES:
        got[mode] = []
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1) as s:
            for i, names in enumerate(plan * 2):
                n = (3, 5)[i % 2]
                x = np.arange(1, n + 1, dtype=np.float32) * (i + 1) + 0.25
                want = expected_multi(x)
                rc, res, err = c_run(s, [("x", x)], [(name, 8) for name in names])
                assert rc == 0, err
                assert list(res) == names
                for name in names:
                    values, count, shape = res[name]
                    np.testing.assert_array_equal(values, want[name], err_msg=f"{mode} {name}")
                    assert count == want[name].size and shape == want[name].shape
                got[mode].append(res)
            runs = s.static_runs
            assert runs[:4] == (2 * len(plan), 0, "", 2), runs
            if mode == "on":
                assert_all_bound(runs)
    for a, b in zip(got["on"], got["off"]):
        assert all(same({"v": a[k][0]}, {"v": b[k][0]}) and a[k][1:] == b[k][1:] for k in a)


def test_outputs_by_position_and_refused_requests_leave_the_binding_usable(save_model):
    """Outputs named by position, a name asked twice, an unknown name, no output at all: the
    refusals come before any binding and count no run; the next runs bind as before."""
    path = save_model(multi_output_model(), "attack_multi_refused")
    x = np.arange(4, dtype=np.float32)
    with bound(path) as s:
        rc, res, err = c_run(s, [(None, x)], [(None, 1), (None, 4)])  # slots 0, 1: sum, dbl
        assert rc == 0, err
        np.testing.assert_array_equal(res[None][0], x * 2)  # (keyed None: the last, dbl)
        rc, res, err = c_run(s, [(None, x)], [(None, 1)])
        assert rc == 0 and res[None][0][0] == x.sum(), (rc, err, res)
        for outputs, message in (([("sq", 4), ("sq", 4)], 'output "sq" is requested twice'),
                                 ([("nope", 4)], 'the model has no output named "nope"'),
                                 ([], "no output requested")):
            rc, _, err = c_run(s, [("x", x)], outputs)
            assert rc == -errno.EINVAL and message in err, (rc, err)
        assert s.static_runs.fixed == 2, s.static_runs
        rc, res, err = c_run(s, [("x", x)], [("sq", 4), ("sum", 1)])
        assert rc == 0, err
        np.testing.assert_array_equal(res["sq"][0], x * x)
        assert res["sum"][0][0] == x.sum()
        assert_all_bound(s.static_runs)
        assert s.static_runs.fixed == 3


def test_a_buffer_too_small_reports_every_count_then_the_rerun_fills_it(save_model):
    """-ENOSPC from the bound path reports what every output needs, as ORT's copies do; the
    rerun with room gets the values, on the same specialised session. A larger shape after
    a smaller one goes the same way."""
    path = save_model(multi_output_model(), "attack_multi_enospc")
    answers = {}
    for mode in MODES:
        answers[mode] = []
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1) as s:
            for n in (3, 9, 3):
                x = np.linspace(-2, 2, n, dtype=np.float32)
                small = c_run(s, [("x", x)], [("sum", 0), ("sq", 2), ("xi", None)])
                assert small[0] == -errno.ENOSPC, small
                assert [small[1][k][1] for k in ("sum", "sq", "xi")] == [1, n, n]
                assert small[1]["sq"][2] == (n,)
                rc, res, err = c_run(s, [("x", x)], [("sum", 1), ("sq", n), ("xi", n)])
                assert rc == 0, err
                np.testing.assert_array_equal(res["sq"][0], x * x)
                np.testing.assert_array_equal(res["xi"][0], np.trunc(x))
                answers[mode].append((small[1]["sq"][1:], res))
            runs = s.static_runs
            assert runs.fixed == 6 and runs.specialised == 2, runs
            if mode == "on":
                assert_all_bound(runs)
    assert [a[0] for a in answers["on"]] == [a[0] for a in answers["off"]]


def test_outputs_whose_shape_only_the_run_shows(models, save_model):
    """Rank-0 scalars, an output of unknown rank (If branches of different ranks), an output
    declared fixed but really of another size (ORT refuses the pre-bound buffer: the same
    model fault on both paths, and the session goes on), and an output that is also an
    input, asked alone and with the others (left to ORT's copies)."""
    lying = factory.make_model([helper.make_node("Identity", ["x"], ["y"])],
                               [T("x", F32, ["N"])], [T("y", F32, [2])])
    scalar = factory.make_model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
                                [T("x", F32, ["N"])], [T("y", F32, [])])
    alias = factory.make_model([helper.make_node("Mul", ["x", "x"], ["sq"])],
                               [T("x", F32, ["N"])], [T("x", F32, ["N"]), T("sq", F32, ["N"])])
    ramp = [np.arange(n, dtype=np.float32) - 1 for n in (2, 5, 1, 2)]
    cases = {
        save_model(lying, "attack_lying"): [[x] for x in ramp],
        save_model(scalar, "attack_scalar"): [[x] for x in ramp],
        models.unknown_rank_output: [[np.ones((1, 1, 2, 3), np.float32)],
                                     [-np.ones((1, 1, 2, 3), np.float32)],
                                     [np.ones((1, 1, 4, 3), np.float32)],
                                     [-np.ones((1, 1, 4, 3), np.float32)]],
        save_model(alias, "attack_alias"): [[x] for x in ramp],
    }
    for path, feeds in cases.items():
        got = {}
        for mode in MODES:
            with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1) as s:
                got[mode] = [outcome(lambda: s.run(f)) for f in feeds]
                runs = s.static_runs
                if mode == "on" and "alias" not in path:
                    assert_all_bound(runs)
        assert all(same(a, b) for a, b in zip(got["on"], got["off"])), (path, got)
        if "lying" in path:
            assert isinstance(got["on"][1], tuple) and "shape" in got["on"][1][1]
            np.testing.assert_array_equal(got["on"][3]["y"], ramp[3])
        if "scalar" in path:
            assert [float(r["y"]) for r in got["on"]] == [float(x.sum()) for x in ramp]
    with bound(save_model(alias, "attack_alias_subset")) as s:
        x = np.arange(3, dtype=np.float32)
        rc, res, err = c_run(s, [("x", x)], [("sq", 3)])
        assert rc == 0, err
        np.testing.assert_array_equal(res["sq"][0], x * x)
        rc, res, err = c_run(s, [("x", x)], [("x", 3), ("sq", 3)])
        assert rc == 0, err
        np.testing.assert_array_equal(res["x"][0], x)
        runs = s.static_runs
        assert (runs.fixed, runs.device_io) == (2, 0), runs
        assert runs.device_io_reason == "an output of the model is also one of its inputs"


# -- inputs ---------------------------------------------------------------------------------

def test_more_shapes_than_specialised_sessions_then_back_to_the_early_ones(models):
    """Past VMAF_DNN_MAX_STATIC_SHAPES new shapes run as opened (plain Run); the early shapes
    come back to their own bound sessions. Growing outputs make Session.run rerun after
    -ENOSPC: the counts and values are those of ORT's copies."""
    sizes = (1, 2, 3, 4, 5, 6, 1, 6, 3, 2, 7, 4)
    got = {}
    for mode in MODES:
        with vmafdnn.Session(models.symbolic_batch, static_shapes="on", device_io=mode,
                             threads=1) as s:
            got[mode] = [s.run([np.arange(3 * n, dtype=np.float32).reshape(n, 3) + i])["y"]
                         for i, n in enumerate(sizes)]
            got[mode + " runs"] = s.static_runs
    for i, n in enumerate(sizes):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) + i
        np.testing.assert_array_equal(got["on"][i][:, 0], x.sum(axis=1))
        assert same({"y": got["on"][i]}, {"y": got["off"][i]})
    on, off = got["on runs"], got["off runs"]
    assert on.specialised == lib.VMAF_DNN_MAX_STATIC_SHAPES == 4, on
    assert (on.fixed, on.as_opened) == (off.fixed, off.as_opened), (on, off)
    assert on.as_opened >= 4, on  # 5, 6, 6, 7: as opened
    assert_all_bound(on)


def test_a_dim_shared_by_two_inputs_with_two_values_runs_as_opened(save_model):
    """a[N,1] + b[1,N] with two values of N: no specialised session fits; it runs as opened
    (broadcast), and a consistent N afterwards binds again."""
    model = factory.make_model([helper.make_node("Add", ["a", "b"], ["y"])],
                               [T("a", F32, ["N", 1]), T("b", F32, [1, "N"])],
                               [T("y", F32, ["N", "N"])])
    path = save_model(model, "attack_shared_dim")
    feeds = [(2, 2), (3, 2), (2, 3), (2, 2), (3, 3)]
    got = {}
    for mode in MODES:
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1) as s:
            got[mode] = [outcome(lambda: s.run([np.arange(p, dtype=np.float32).reshape(p, 1),
                                                np.arange(q, dtype=np.float32).reshape(1, q)]))
                         for p, q in feeds]
            got[mode + " runs"] = s.static_runs
    assert all(same(a, b) for a, b in zip(got["on"], got["off"]))
    np.testing.assert_array_equal(got["on"][1]["y"], np.arange(3.0)[:, None] + np.arange(2.0))
    runs = got["on runs"]
    assert runs.as_opened >= 2 and runs.specialised == 2, runs
    assert_all_bound(runs)


def test_zero_and_overflowing_dims_are_refused_before_any_session_is_made(models):
    with bound(models.symbolic_batch) as s:
        s.run([np.ones((2, 3), np.float32)])
        with pytest.raises(vmafdnn.InvalidArgumentError, match="dims must be >= 1"):
            s.run([np.ones((0, 3), np.float32)])
        x = np.ones(4, np.float32)
        rc, _, err = c_run(s, [("x", x.reshape(1, 4))], [("y", 4)])
        assert rc == -errno.EINVAL and "fixes it to 3" in err, err
        # A shape whose element count overflows size_t: refused before the data is read.
        c_in = ffi.new("VmafDnnInput[]", 1)
        shape = ffi.new("int64_t[]", [1 << 62, 3])
        buf = ffi.from_buffer("float[]", x)
        c_in[0].data, c_in[0].shape, c_in[0].rank = buf, shape, 2
        c_out = ffi.new("VmafDnnOutput[]", 1)
        assert lib.vmaf_dnn_session_run(s._handle, c_in, 1, c_out, 1) == -errno.EINVAL
        assert "too large" in ffi.string(lib.vmaf_dnn_last_error()).decode()
        runs = s.static_runs
        assert (runs.fixed, runs.as_opened, runs.specialised) == (1, 0, 1), runs
        np.testing.assert_array_equal(s.run([np.ones((2, 3), np.float32)])["y"], [[3], [3]])
        assert_all_bound(s.static_runs)


def test_uint16_samples_through_the_binding(save_model):
    """UINT16 slots are fed from the session's scratch (converted from fp32 or taken as
    samples), which grows with the picture: every size binds the scratch of its own run."""
    model = factory.make_model([helper.make_node("Cast", ["x"], ["y"], to=F32)],
                               [T("x", U16, [1, 1, "H", "W"])], [T("y", F32, [1, 1, "H", "W"])])
    path = save_model(model, "attack_u16")
    rng = np.random.default_rng(5)
    pictures = [rng.integers(0, 65536, (1, 1, h, w)).astype(np.uint16)
                for h, w in ((2, 3), (9, 17), (2, 3), (1, 1))]
    pictures.append(pictures[1].astype(np.float32))  # fp32 values that are whole numbers
    got = {}
    for mode in MODES:
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1) as s:
            got[mode] = [outcome(lambda: s.run([p])) for p in pictures]
            got[mode].append(outcome(lambda: s.run([np.full((1, 1, 2, 3), 0.5, np.float32)])))
            if mode == "on":
                assert_all_bound(s.static_runs)
    for p, r in zip(pictures, got["on"]):
        np.testing.assert_array_equal(r["y"], p.astype(np.float32))
    assert got["on"][-1][0] == "RangeError" and "not a whole number" in got["on"][-1][1]
    assert all(same(a, b) for a, b in zip(got["on"], got["off"]))


def test_fp16_inputs_and_outputs_through_the_binding(save_model):
    """fp16_io: FLOAT16 inputs cast into scratch and a FLOAT16 output ORT allocates, with a
    FLOAT rank-0 output beside it, over three sizes: bit for bit as ORT's copies."""
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("Cast", ["x"], ["xf"], to=F32),
             helper.make_node("ReduceMean", ["xf"], ["m"], keepdims=0)]
    model = factory.make_model(nodes, [T("x", F16, [1, "H", "W"])],
                               [T("sq", F16, [1, "H", "W"]), T("m", F32, [])])
    path = save_model(model, "attack_fp16")
    sizes = ((2, 3), (3, 5), (2, 3), (4, 4))
    got = {}
    for mode in MODES:
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1,
                             fp16_io=True) as s:
            got[mode] = [s.run([np.linspace(0, 3, h * w, dtype=np.float32).reshape(1, h, w)])
                         for h, w in sizes]
            if mode == "on":
                assert_all_bound(s.static_runs)
        with vmafdnn.Session(path, static_shapes="on", device_io=mode) as s:
            with pytest.raises(vmafdnn.DnnError, match="open the session with fp16_io"):
                s.run([np.ones((1, 2, 2), np.float32)])
            assert s.static_runs.fixed == 0, s.static_runs
    for (h, w), r in zip(sizes, got["on"]):
        x16 = np.linspace(0, 3, h * w, dtype=np.float32).reshape(1, h, w).astype(np.float16)
        np.testing.assert_array_equal(r["sq"], (x16 * x16).astype(np.float32))
    assert all(same(a, b) for a, b in zip(got["on"], got["off"]))


# -- threads, stops and budgets -------------------------------------------------------------

def loop_model(save_model, name):
    model = factory.loop_count()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "K"
    return save_model(model, name)


def test_a_second_thread_on_a_running_bound_session_is_refused_then_cancel_stops_it(
        save_model):
    """While one thread's bound run goes on (a Loop that only a cancel ends), a run of the
    same session from another thread is -EBUSY, not a second user of the binding; the cancel
    stops the run and the session's bindings serve the next runs."""
    with bound(loop_model(save_model, "attack_loop_busy")) as s:
        assert s.run([np.array([3], np.float32)])["y"][0] == 3
        result = {}

        def long_run():
            while True:  # until it, not a run of the main thread, holds the session
                result["rc"] = c_run(s, [(None, np.array([1e12], np.float32))], [(None, 1)])
                if result["rc"][0] != -errno.EBUSY:
                    return

        thread = threading.Thread(target=long_run)
        thread.start()
        try:
            busy, deadline = None, time.monotonic() + 20
            while busy is None and time.monotonic() < deadline and thread.is_alive():
                rc, res, err = c_run(s, [(None, np.array([2], np.float32))], [(None, 1)])
                if rc == -errno.EBUSY:
                    busy = err
                else:  # ran before the long run took the session
                    assert rc == 0 and res[None][0][0] == 2, (rc, err)
        finally:
            while thread.is_alive():  # a cancel before the run begins finds none to stop
                s.cancel()
                thread.join(0.05)
        assert busy is not None and "running on another thread" in busy, busy
        rc, _, err = result["rc"]
        assert rc == -errno.ECANCELED, err
        assert s.run([np.array([4], np.float32)])["y"][0] == 4
        assert s.run([np.array([5], np.float32)])["y"][0] == 5
        assert_all_bound(s.static_runs)


def test_the_time_budget_stops_a_bound_run_and_every_specialised_session_goes_on(
        save_model):
    """A run past max_run_ms on one specialised session (K=1); then runs on it and on another
    (K=2, made after the stop) still bind and answer."""
    nodes = [helper.make_node("ReduceMax", ["n"], ["nmax"], keepdims=1)]
    factory._count_from("nmax", "m", nodes)
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero")
    nodes.append(helper.make_node("Loop", ["m", "", "zero"], ["y"], body=factory._loop_body()))
    model = factory.make_model(nodes, [T("n", F32, ["K"])], [T("y", F32, [1])], [zero])
    path = save_model(model, "attack_loop_max")
    with bound(path, max_run_ms=300) as s:
        assert s.run([np.array([6], np.float32)])["y"][0] == 6
        with pytest.raises(vmafdnn.RunTimeoutError):
            s.run([np.array([1e12], np.float32)])
        assert s.run([np.array([7], np.float32)])["y"][0] == 7
        assert s.run([np.array([2, 9], np.float32)])["y"][0] == 9
        assert s.run([np.array([8], np.float32)])["y"][0] == 8
        runs = s.static_runs
        assert (runs.fixed, runs.specialised) == (5, 2), runs
        assert_all_bound(runs)


def test_bound_sessions_on_many_threads_with_changing_shapes_and_outputs(save_model):
    """Four threads, each with its own bound session, cycling shapes and output subsets: every
    value is its own run's."""
    path = save_model(multi_output_model(), "attack_multi_threads")
    plans = (["sq", "sum"], ["xi"], ["dbl", "c", "sq"])
    errors = []

    def work(t):
        try:
            with bound(path) as s:
                for k in range(15):
                    n = 2 + (t + k) % 3
                    x = np.arange(n, dtype=np.float32) * (t + 1) + k
                    names = plans[(t + k) % 3]
                    rc, res, err = c_run(s, [("x", x)], [(name, 8) for name in names])
                    assert rc == 0, err
                    want = expected_multi(x)
                    for name in names:
                        np.testing.assert_array_equal(res[name][0], want[name])
                assert_all_bound(s.static_runs)
        except Exception as e:  # reported below
            errors.append((t, e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def growing_output_model():
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    return factory.make_model([helper.make_node("Add", ["x", "one"], ["y"])],
                              [T("x", F32, ["N", "M"])], [T("y", F32, ["N", "M"])], [one])


@pytest.mark.parametrize("mode", ["off", "on"])
def test_outputs_of_earlier_runs_are_not_charged_to_the_memory_budget(save_model, mode):
    """Outputs ORT allocates are released once delivered: runs on two specialised sessions,
    each with a 4 MB output, fit a 6 MB budget one after the other, as with ORT's copies."""
    path = save_model(growing_output_model(), "attack_grow_" + mode)
    with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1,
                         max_memory_bytes=6 << 20) as s:
        for i, n in enumerate((500, 501, 500, 501)):
            y = s.run([np.full((n, 2000), i, np.float32)])["y"]
            assert y.shape == (n, 2000) and y[0, 0] == i + 1
        runs = s.static_runs
        assert runs.specialised == 2, runs
        assert runs.device_io == (runs.fixed if mode == "on" else 0), runs


def test_the_memory_budget_inside_a_bound_run_leaves_the_session_working(save_model):
    """One 16 MB output against an 8 MB budget: -EDQUOT on the bound path as on ORT's copies;
    smaller runs on the same and another specialised session go on."""
    path = save_model(growing_output_model(), "attack_grow_budget")
    got = {}
    for mode in MODES:
        with vmafdnn.Session(path, static_shapes="on", device_io=mode, threads=1,
                             max_memory_bytes=8 << 20) as s:
            got[mode] = [type(outcome(lambda: s.run([np.ones((n, 1000), np.float32)])))
                         for n in (4, 4000, 4, 5)]
            assert s.run([np.ones((4, 1000), np.float32)])["y"][0, 0] == 2
            if mode == "on":
                assert_all_bound(s.static_runs)
    assert got["on"] == got["off"] == [dict, tuple, dict, dict]


# -- fork -----------------------------------------------------------------------------------

@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's allocator lock is not fork-safe")
def test_a_forked_child_cannot_use_a_bound_session_and_the_parent_keeps_it(models):
    s = bound(models.symbolic_batch)
    try:
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        s.run([x])

        def in_child():
            try:
                s.run([x])
                return 10
            except vmafdnn.ClosedError as e:
                if "fork()" not in str(e):
                    return 11
            s.close()  # must not release the parent's binding in the parent
            with bound(models.symbolic_batch) as own:
                if not (own.run([x])["y"][:, 0] == x.sum(axis=1)).all():
                    return 12
                if own.static_runs.device_io != 1:
                    return 14
            return 0

        assert child_code(in_child) == 0
        np.testing.assert_array_equal(s.run([x])["y"][:, 0], x.sum(axis=1))
        np.testing.assert_array_equal(s.run([x[:1]])["y"][:, 0], x[:1].sum(axis=1))
        assert_all_bound(s.static_runs)
        assert s.static_runs.fixed == 3
    finally:
        s.close()


# -- the scoring context --------------------------------------------------------------------

CLIPS = [noisy_pairs(4, 37, 53, 1), noisy_pairs(3, 44, 60, 2), noisy_pairs(3, 37, 53, 3)]


def vmaf_clips(device_io, threads, batch):
    """VMAF through the accelerator form over three clips (two sizes, then the first again),
    reset between them: the features of each, and the static runs of the model's session."""
    with vmafdnn.Context(static_shapes="on", device_io=device_io, threads=threads,
                         batch=batch) as ctx:
        ctx.use_model("vmaf")
        assert os.path.basename(ctx.models[0].form) == "vmaf_features_accel.onnx"
        scores = []
        for clip in CLIPS:
            for i, (r, d) in enumerate(clip):
                ctx.read_pictures(r, d, i)
            ctx.flush()
            scores.append(np.array([[ctx.feature(k, i) for i in range(len(clip))]
                                    for k in ctx.models[0].features]))
            ctx.reset()
        return scores, ctx.static_runs(0)


@pytest.mark.parametrize("threads,batch", [(1, 1), (2, 1), (1, 3)])
def test_vmaf_clips_of_two_sizes_with_resets_bit_for_bit(monkeypatch, threads, batch):
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    on, on_runs = vmaf_clips("on", threads, batch)
    off, _ = vmaf_clips("off", threads, batch)
    for a, b in zip(on, off):
        assert not np.isnan(a).any()
        np.testing.assert_array_equal(a, b)
    if threads == 1 and batch == 1:  # else the runs go to the frame workers' copies
        assert on_runs.specialised == 2, on_runs
        assert_all_bound(on_runs)


def test_a_size_change_mid_clip_is_refused_the_same_way(monkeypatch):
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    clip = noisy_pairs(3, 37, 53, 4) + noisy_pairs(1, 44, 60, 5)
    got = {}
    for mode in MODES:
        with vmafdnn.Context(static_shapes="on", device_io=mode, threads=1) as ctx:
            ctx.use_model("vmaf")
            for i, (r, d) in enumerate(clip[:3]):
                ctx.read_pictures(r, d, i)
            with pytest.raises(vmafdnn.RangeError, match="runs at native resolution") as e:
                ctx.read_pictures(*clip[3], 3)
            features = ctx.models[0].features
            got[mode] = (str(e.value), [[ctx.feature(k, i) for i in range(3)]
                                        for k in features[:5]])
            runs = ctx.static_runs(0)
            assert runs.specialised == 1, runs
            if mode == "on":
                assert_all_bound(runs)
    assert got["on"][0] == got["off"][0]
    np.testing.assert_array_equal(got["on"][1], got["off"][1])


def vmaf_after_a_reset_mid_clip(device_io, threads):
    with vmafdnn.Context(static_shapes="on", device_io=device_io, threads=threads) as ctx:
        ctx.use_model("vmaf")
        for i, (r, d) in enumerate(CLIPS[1][:2]):
            ctx.read_pictures(r, d, i)
        ctx.reset()  # no flush: with threads > 1 the frames may still be in flight
        for i, (r, d) in enumerate(CLIPS[0]):
            ctx.read_pictures(r, d, i)
        ctx.flush()
        return np.array([[ctx.feature(k, i) for i in range(len(CLIPS[0]))]
                         for k in ctx.models[0].features])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_reset_mid_clip_then_another_size_bit_for_bit(monkeypatch, threads):
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    on = vmaf_after_a_reset_mid_clip("on", threads)
    assert not np.isnan(on).any()
    np.testing.assert_array_equal(on, vmaf_after_a_reset_mid_clip("off", threads))
    np.testing.assert_array_equal(on, vmaf_clips("off", 1, 1)[0][0])  # the clip scored alone
