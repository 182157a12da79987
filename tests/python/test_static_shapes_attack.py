"""Attacks on static shapes (ort_backend.c's setup_static, create_fixed, session_for_run,
run_guarded): each test failed before the fix beside it."""
import os
import threading
import time

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper, numpy_helper

import vmafdnn
from tests.models import factory


def _external_data_model(directory):
    """x[1,1,H,W] -> score = mean(x) * sum(w), w (64 x 2.0) kept in w.bin beside the model."""
    w = numpy_helper.from_array(np.full((64,), 2.0, np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("ReduceSum", ["w"], ["s"], keepdims=0),
             helper.make_node("Mul", ["m", "s"], ["score"])]
    model = factory.make_model(nodes, [factory.tensor("x", TensorProto.FLOAT, [1, 1, "H", "W"])],
                               [factory.tensor("score", TensorProto.FLOAT, [])], [w])
    path = os.path.join(directory, "ext.onnx")
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.bin", size_threshold=0)
    return path


def test_a_specialised_session_reads_external_data_from_the_models_own_directory(tmp_path):
    """The model's directory reaches ORT as /proc/self/fd/N, N a descriptor the open closes
    once the session is created. Before: the specialised session was created from that name
    at the first run, when N could name any directory the process opened since, and ORT read
    that directory's w.bin as the model's weights (64000 instead of 128: a way past the
    model directory's checks), or, with N closed, refused and stopped specialising. Now the
    session holds a descriptor of the model's own directory."""
    model_dir, decoy = tmp_path / "model", tmp_path / "decoy"
    model_dir.mkdir()
    decoy.mkdir()
    path = _external_data_model(str(model_dir))
    np.full((64,), 1000.0, np.float32).tofile(str(decoy / "w.bin"))
    x = np.ones((1, 1, 8, 8), np.float32)
    with vmafdnn.Session(path, static_shapes="off") as opened:
        expected = float(opened.run([x])["score"])
    assert expected == 128.0
    with vmafdnn.Session(path, static_shapes="on") as s:
        # Every descriptor the open freed is taken by the decoy directory.
        fds = []
        try:
            for _ in range(8):
                fds.append(os.open(str(decoy), os.O_RDONLY | os.O_DIRECTORY))
            assert float(s.run([x])["score"]) == expected
        finally:
            for fd in fds:
                os.close(fd)
        # The decoy gone, a second shape still gets a specialised session.
        assert float(s.run([np.ones((1, 1, 4, 4), np.float32)])["score"]) == expected
        assert s.static_runs[:3] == (2, 0, "")


def _slow_to_create(path, n_nodes=12000):
    """loop_count (n[K] -> y = n[0] after n[0] Loop iterations) plus a chain of n_nodes Adds,
    each with its own constant: ORT takes about a second to create it."""
    model = factory.loop_count()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "K"
    prev = "n"
    for i in range(n_nodes):
        model.graph.initializer.append(
            numpy_helper.from_array(np.array([float(i % 7)], np.float32), f"c{i}"))
        model.graph.node.append(helper.make_node("Add", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    model.graph.output.append(helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["K"]))
    onnx.save(model, path)
    return n_nodes + 10


def test_a_cancel_while_the_specialised_session_is_created_stops_the_run(tmp_path):
    """vmaf_dnn_session_cancel stops "the run in flight". Before: the specialised session
    was created before the run counted as in flight, so a cancel landing during the creation
    (a second here) did nothing and the run went on until the time budget stopped it
    (RunTimeoutError). Now it returns RunCancelledError once the creation ends."""
    path = str(tmp_path / "slow.onnx")
    max_nodes = _slow_to_create(path)
    start = time.monotonic()
    with vmafdnn.Session(path, static_shapes="off", threads=1, max_nodes=max_nodes):
        creation = time.monotonic() - start
    with vmafdnn.Session(path, static_shapes="on", threads=1, max_nodes=max_nodes,
                         max_run_ms=int(2000 + 2000 * creation)) as s:
        outcome = {}

        def run():
            begun = time.monotonic()
            try:
                outcome["result"] = s.run([np.array([1e12], np.float32)])
            except vmafdnn.DnnError as e:
                outcome["error"] = e
            outcome["seconds"] = time.monotonic() - begun

        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(creation / 4)  # the specialised session is being created
        s.cancel()
        worker.join()
        assert isinstance(outcome.get("error"), vmafdnn.RunCancelledError), outcome
        assert outcome["seconds"] < 3 * creation + 1
        assert s.static_runs[:3] == (1, 0, "")
        assert s.run([np.array([2], np.float32)])["y"][0] == 2  # later runs are not affected


def test_model_forms_takes_the_names_of_the_ep_table_only(tmp_path, monkeypatch):
    """VMAFDNN_MODEL_FORMS=<EP name> (tiny_model.c's read_forms_setting). Before: any text was
    taken as a key, cut to 63 bytes: a misspelt EP ("CUAD") silently took the "*" form, a
    64-byte key could never be chosen, and a name one byte longer than a 63-byte key took
    that key's form. Now the value must be an EP name of the catalog (any spelling
    vmaf_dnn_ep_from_name takes), else the attach fails saying so."""
    import errno
    import json
    import shutil

    from vmafdnn import models as builtin

    src = os.path.dirname(builtin.resolve("psnr_y"))
    for name in ("psnr_y.onnx", "psnr_y_accel.onnx", "psnr_y_accel.json"):
        shutil.copy(os.path.join(src, name), tmp_path)
    shutil.copy(os.path.join(src, "psnr_y_accel.onnx"), tmp_path / "gpu.onnx")
    shutil.copy(os.path.join(src, "psnr_y_accel.json"), tmp_path / "gpu.json")
    sidecar = json.load(open(os.path.join(src, "psnr_y.json")))
    sidecar["forms"] = {"openvino:gpu": "gpu.onnx", "*": "psnr_y_accel.onnx"}
    del sidecar["input_sources"]  # "bpc": only the samples form, not copied, reads it
    (tmp_path / "psnr_y.json").write_text(json.dumps(sidecar))

    def form_for(value):
        monkeypatch.setenv("VMAFDNN_MODEL_FORMS", value)
        return os.path.basename(vmafdnn.Context().use_model(str(tmp_path / "psnr_y.onnx")).form
                                or "psnr_y.onnx")

    assert form_for("OpenVINO:GPU") == form_for(" openvino:gpu ") == "gpu.onnx"
    assert form_for("cuda") == "psnr_y_accel.onnx"
    assert form_for("off") == form_for("cpu") == "psnr_y.onnx"
    for bad in ("CUAD", "*", "CUDA" + "X" * 100, "openvino:gpu\u00e9", "OpenVINO_GPU"):
        with pytest.raises(vmafdnn.InvalidArgumentError) as e:
            form_for(bad)
        assert e.value.errno == errno.EINVAL
        assert "VMAFDNN_MODEL_FORMS: unknown execution provider" in str(e.value), bad


def _heavy_model(directory):
    """x[1,1,H,W] -> score = mean(x) * w[5], w a 32 MiB initializer."""
    w = numpy_helper.from_array(np.arange(8 << 20, dtype=np.float32), "w")
    idx = numpy_helper.from_array(np.array([5], np.int64), "idx")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("Gather", ["w", "idx"], ["g"]),
             helper.make_node("Mul", ["m", "g"], ["score"])]
    model = factory.make_model(nodes, [factory.tensor("x", TensorProto.FLOAT, [1, 1, "H", "W"])],
                               [factory.tensor("score", TensorProto.FLOAT, [1])], [w, idx])
    path = os.path.join(directory, "heavy.onnx")
    onnx.save(model, path)
    return path


def test_the_memory_budget_counts_the_models_bytes_once_per_session(tmp_path):
    """ORT 1.32 keeps a model's initializers where it parsed them, never asking the
    library's allocator: before, a model with a 32 MiB initializer opened and ran under a
    1 MiB budget, and static_shapes on held one more copy per specialised session (RSS +130
    MiB for 4), none of it counted. Now the model's bytes are charged once per ORT session
    and once for the copy kept to specialise from."""
    path = _heavy_model(str(tmp_path))
    size = os.path.getsize(path)
    with pytest.raises(vmafdnn.MemoryBudgetError, match="max_memory_bytes"):
        vmafdnn.Session(path, max_memory_bytes=1 << 20, max_model_bytes=64 << 20)
    x = np.ones((1, 1, 8, 8), np.float32)
    # Room for the session, not for a copy to specialise from: runs go on as opened.
    with vmafdnn.Session(path, static_shapes="on", max_memory_bytes=size + (4 << 20),
                         max_model_bytes=64 << 20) as s:
        assert s.run([x])["score"][0] == 5
        assert s.static_runs.fixed == 0 and "max_memory_bytes" in s.static_runs.reason
    # Room for the copy and one specialised session: the second shape runs as opened.
    with vmafdnn.Session(path, static_shapes="on", max_memory_bytes=3 * size + (4 << 20),
                         max_model_bytes=64 << 20) as s:
        assert s.run([x])["score"][0] == 5
        assert s.static_runs[:3] == (1, 0, "")
        assert s.run([np.ones((1, 1, 9, 8), np.float32)])["score"][0] == 5
        runs = s.static_runs
        assert runs.fixed == 1 and runs.as_opened == 1 and "max_memory_bytes" in runs.reason
        assert s.run([x])["score"][0] == 5  # the specialised session made is kept
        assert s.static_runs.fixed == 2
