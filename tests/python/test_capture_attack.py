"""Attacks on the run again without capture (csrc/ort_backend.c: run_guarded, uncapture) and
on the host inputs a captured session holds by value (csrc/ort_device_io.c: stage_held).

Graph capture really happens here on WebGPU (the webgpu-plugin environment of
tools/make_ort_envs.sh, on lavapipe where there is no GPU): each test runs a script in that
environment and skips, as tests/python/test_ort_wheels.py does, when the environment is not
provisioned or no WebGPU adapter binds. A failed recording is injected with
VMAFDNN_TEST_SPOIL_RECORDING; a held value that changes needs no injection. Last, an input of
no declared shape beside a symbolic one, which device I/O once bound as a one-element tensor
and recorded (csrc/ort_device_io.c slot_shape; test_float_ssim_attack.py tells the story).
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import textwrap

import pytest

import ort_envs
import vmafdnn
from test_ort_wheels import require_env, save_held_value_model

WEBGPU = {"ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER": "1"}


#: Runs `frames` ((h, w, device_type) each) on one session; per frame "ok" and whether y is
#: 2 * reference, or the error's errno and message; then the session's static runs.
RUN_FRAMES = textwrap.dedent("""
    import json, sys
    import numpy as np
    import vmafdnn

    def run_frames(session, frames):
        got = []
        for h, w, value in frames:
            rng = np.random.default_rng(h * 1000 + w)
            ref = rng.random((1, 1, h, w), dtype=np.float32)
            try:
                y = session.run({"reference": ref,
                                 "device_type": np.array([value], np.float32)})["y"]
                got.append(["ok", bool(np.array_equal(y, 2 * ref))])
            except vmafdnn.DnnError as e:
                got.append([e.errno, e.message])
        return got
""")


def run_webgpu_script(source: str, extra_env=None) -> dict:
    """`source` run by the webgpu-plugin environment's interpreter (`import sys` among its
    imports); it prints one JSON object with the session's "attached_ep", which is returned.
    Skips where no WebGPU adapter binds."""
    env = require_env("webgpu-plugin")
    # The script's last act is os._exit: Mesa's lavapipe may still be compiling a shader for
    # Dawn on a thread of its own when the interpreter exits, and the exit handlers then free
    # LLVM's pass registry under that thread (seen once in CI: a segfault after the output,
    # valgrind: PassRegistry::~PassRegistry from __run_exit_handlers, read by llvm::MCJIT on
    # lavapipe's thread). Nothing of the library's is left to run by then.
    source += "\nimport os as _os\nsys.stdout.flush()\n_os._exit(0)\n"
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("VMAFDNN_ORT_LIBRARY", "VMAFDNN_ORT_LOG_LEVEL", "PYTHONPATH")}
    child_env.update(WEBGPU)
    child_env.update(extra_env or {})
    proc = subprocess.run([env.python, "-c", source], capture_output=True, text=True,
                          env=child_env, cwd=tempfile.gettempdir(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result.get("attached_ep") != "WebGpu:CPU":
        pytest.skip("no WebGPU adapter on this machine: " + result.get("fallback_reason", ""))
    return result


def run_in_webgpu(script: str, tmp_path, extra_env=None) -> dict:
    """`script` (after save_held_value_model's model, saved to PATH, and RUN_FRAMES) in the
    webgpu-plugin environment: run_webgpu_script's result."""
    path = tmp_path / "held.onnx"
    save_held_value_model(path)
    return run_webgpu_script(f"PATH = {str(path)!r}\n" + RUN_FRAMES + textwrap.dedent(script),
                             extra_env)


def test_run_again_after_a_failed_recording_is_charged_to_the_memory_budget(tmp_path):
    """The run made again without capture is a run like the next ones: its memory counts
    against max_memory_bytes. The session made for it used to leave the thread's account unset
    (make_fixed cleared it), so that run alone went unbudgeted: the first frame succeeded and
    every later one, same shape, same budget, failed with -EDQUOT."""
    result = run_in_webgpu("""
        s = vmafdnn.Session(PATH, device="webgpu", device_io="auto", max_memory_bytes=4096)
        with s:
            frames = run_frames(s, [(256, 256, 1.0)] * 3)
            print(json.dumps({"attached_ep": s.attached_ep, "fallback_reason": s.fallback_reason,
                              "frames": frames, "static": s.static_runs._asdict()}))
    """, tmp_path, {"VMAFDNN_TEST_SPOIL_RECORDING": "1"})
    static = result["static"]
    assert static["captured"] == 0 and static["device_io_reason"].startswith(
        "ONNX Runtime failed while recording the graph"), static
    # the 256 KiB output ORT allocates on the host, three times over the budget
    assert [f[0] for f in result["frames"]] == [122, 122, 122], result["frames"]
    assert all("max_memory_bytes" in f[1] for f in result["frames"]), result["frames"]


def test_run_again_within_the_budget_succeeds(tmp_path):
    """The same with room: the frames score (2 * reference) and nothing is refused."""
    result = run_in_webgpu("""
        s = vmafdnn.Session(PATH, device="webgpu", device_io="auto", max_memory_bytes=64 << 20)
        with s:
            frames = run_frames(s, [(256, 256, 1.0)] * 3)
            print(json.dumps({"attached_ep": s.attached_ep, "fallback_reason": s.fallback_reason,
                              "frames": frames, "static": s.static_runs._asdict()}))
    """, tmp_path, {"VMAFDNN_TEST_SPOIL_RECORDING": "1"})
    assert result["frames"] == [["ok", True]] * 3, result
    assert result["static"]["captured"] == 0, result["static"]


def test_value_changed_after_specialising_stopped_keeps_the_reason(tmp_path):
    """A captured shape whose held value changes after specialising stopped (here another
    shape's session found no room in max_memory_bytes, which frees the model's copy): its
    session cannot be made again. It used to be tried anyway from the freed copy (ORT: "Model
    data pointer is null"), and that failure replaced the reason specialising had stopped.
    Now the shape's runs go to the session as opened, the reason stays the budget's, and
    device_io_reason says what ended the capture. The budget that lets one specialised
    session in but not a second depends on ORT's allocations: it is searched for."""
    result = run_in_webgpu("""
        found = None
        for budget in range(300, 3000, 10):
            s = vmafdnn.Session(PATH, device="webgpu", device_io="auto", max_memory_bytes=budget)
            with s:
                first = run_frames(s, [(8, 8, 1.0), (8, 8, 1.0), (16, 16, 1.0)])
                static = s.static_runs
                if not (first[:2] == [["ok", True]] * 2 and static.specialised == 1
                        and static.captured == 2 and "max_memory_bytes" in static.reason):
                    continue
                later = run_frames(s, [(8, 8, 2.0), (8, 8, 2.0), (8, 8, 1.0)])
                found = {"budget": budget, "reason_before": static.reason, "later": later,
                         "static": s.static_runs._asdict()}
                break
        print(json.dumps({"attached_ep": s.attached_ep, "fallback_reason": s.fallback_reason,
                          "found": found}))
    """, tmp_path)
    found = result["found"]
    assert found, "no budget between 300 and 3000 bytes let one specialised session in only"
    static = found["static"]
    assert static["reason"] == found["reason_before"], found
    assert "Model data pointer is null" not in json.dumps(found), found
    assert static["specialised"] == 0 and static["captured"] == 2, static
    assert static["device_io_reason"] == (
        "the recorded graph cannot take the run's inputs, so the session runs without: device "
        "I/O: input \"device_type\" changed after the graph was recorded with its value in host "
        "memory"), static
    # the session as opened, within the budget or refused by it, never a wrong value
    for frame in found["later"]:
        assert frame == ["ok", True] or frame[0] == 122, found


def save_slow_model(path, shape_nodes: int = 4000) -> None:
    """y = 2 * reference, reshaped to reference's shape computed through `shape_nodes` Add/Sub
    nodes of zeros: ORT folds them when it makes a session specialised to the shape, so that
    creation takes long (~160 ms on lavapipe for 4000) and the runs do not (< 1 ms)."""
    from onnx import TensorProto, helper
    import onnx
    picture = helper.make_tensor_value_info("reference", TensorProto.FLOAT, [1, 1, "H", "W"])
    flag = helper.make_tensor_value_info("device_type", TensorProto.FLOAT, [1])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "H", "W"])
    nodes = [helper.make_node("Shape", ["reference"], ["s0"])]
    for i in range(shape_nodes):
        nodes.append(helper.make_node("Add" if i % 2 == 0 else "Sub", [f"s{i}", f"k{i % 7}"],
                                      [f"s{i + 1}"]))
    nodes.append(helper.make_node("Mul", ["reference", "two"], ["t"]))
    nodes.append(helper.make_node("Reshape", ["t", f"s{shape_nodes}"], ["y"]))
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])]
    inits += [helper.make_tensor(f"k{j}", TensorProto.INT64, [4], [0, 0, 0, 0]) for j in range(7)]
    graph = helper.make_graph(nodes, "slow", [picture, flag], [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.parametrize("spoil", [False, True], ids=["value-changed", "recording-failed"])
def test_session_made_again_is_not_charged_to_max_run_ms(tmp_path, spoil):
    """max_run_ms starts after a specialised session is made (the first frame of a shape
    includes that creation and passes); the session made again without capture is such a
    creation too. It used to count: the frame whose held value changed, or whose recording
    failed, failed with -ETIMEDOUT while the frames before and after it ran well within the
    budget."""
    slow = tmp_path / "slow.onnx"
    save_slow_model(slow)
    result = run_in_webgpu(f"""
        s = vmafdnn.Session({str(slow)!r}, device="webgpu", device_io="auto", max_run_ms=50)
        with s:
            frames = run_frames(s, [(32, 32, 1.0)] * 4 + [(32, 32, 2.0)] * 2)
            print(json.dumps({{"attached_ep": s.attached_ep,
                              "fallback_reason": s.fallback_reason,
                              "frames": frames, "static": s.static_runs._asdict()}}))
    """, tmp_path, {"VMAFDNN_TEST_SPOIL_RECORDING": "1"} if spoil else None)
    assert result["frames"] == [["ok", True]] * 6, result
    static = result["static"]
    assert static["captured"] == (0 if spoil else 4), static
    assert "so the session runs without" in static["device_io_reason"], static


# ---- an input of no declared shape (found by session 19's attack review) ----------------------


def save_shapeless_beside_symbolic(path):
    """x [1, 1, H, W] (a named symbolic dim: static shapes specialise on it) and y with no
    declared shape -> score [1] = mean(x) + mean(y)."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("ReduceMean", ["x"], ["mx"], keepdims=0),
             helper.make_node("ReduceMean", ["y"], ["my"], keepdims=0),
             helper.make_node("Add", ["mx", "my"], ["sum"]),
             helper.make_node("Reshape", ["sum", "one"], ["score"])]
    graph = helper.make_graph(
        nodes, "shapeless_beside_symbolic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "H", "W"]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def this_build_package(tmp_path):
    """The package as this tree builds it (its Python sources and the freshly built extension
    and library), for another environment's interpreter: the provisioned environments hold the
    wheel of their provisioning, which may predate the change under test. (folder to put on
    PYTHONPATH, folder to put on LD_LIBRARY_PATH)."""
    from vmafdnn import _vmafdnn_cffi

    package = tmp_path / "pkg" / "vmafdnn"
    package.mkdir(parents=True)
    sources = os.path.dirname(vmafdnn.__file__)
    for source in glob.glob(os.path.join(sources, "*.py")):
        shutil.copy(source, package)
    shutil.copy(_vmafdnn_cffi.__file__, package)
    with open("/proc/self/maps") as maps:
        library = next(line.split()[-1] for line in maps if "/libvmafdnn.so" in line)
    shutil.copy(library, package / "libvmafdnn.so")
    return str(package.parent), str(package)


def test_shapeless_input_is_not_captured_as_a_scalar_on_webgpu(tmp_path):
    require_env("webgpu-plugin")  # before the package is copied
    model = tmp_path / "mixed.onnx"
    save_shapeless_beside_symbolic(model)
    pythonpath, libdir = this_build_package(tmp_path)
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import vmafdnn
        x = np.zeros((1, 1, 8, 8), np.float32)
        ys = [np.full((2, 2), 2, np.float32), np.full((1, 1, 64, 64), 3, np.float32),
              np.float32(5), np.arange(6, dtype=np.float32).reshape(1, 2, 3),
              np.full((300, 300), 7, np.float32), np.full((2, 2), 2, np.float32)]
        result = {{}}
        for device_io in ("auto", "on"):
            s = vmafdnn.Session({str(model)!r}, device="webgpu", static_shapes="on",
                                device_io=device_io)
            with s:
                result["attached_ep"] = s.attached_ep
                result["fallback_reason"] = s.fallback_reason
                result[device_io] = [float(s.run([x, y])["score"][0]) for y in ys]
                result[device_io + "_static"] = s.static_runs._asdict()
        print(json.dumps(result))
    """)
    result = run_webgpu_script(script, {"PYTHONPATH": pythonpath, "LD_LIBRARY_PATH": libdir})
    want = [2.0, 3.0, 5.0, 2.5, 7.0, 2.0]  # mean(y): x is 0
    for device_io in ("auto", "on"):
        assert result[device_io] == want, result
        static = result[device_io + "_static"]
        assert static["specialised"] == 1 and static["captured"] == 0, static
        assert 'input "y" declares no shape' in static["device_io_reason"], static
