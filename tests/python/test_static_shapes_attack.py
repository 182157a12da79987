"""Attacks on static shapes (ort_backend.c's setup_static, create_fixed, session_for_run,
run_guarded): each test failed before the fix beside it."""
import os
import threading
import time

import numpy as np
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
        assert s.static_runs == (2, 0, "")


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
        assert s.static_runs == (1, 0, "")
        assert s.run([np.array([2], np.float32)])["y"][0] == 2  # later runs are not affected


_FORM_PROBE = """
import os, sys, vmafdnn
with vmafdnn.Context() as ctx:
    ctx.use_model(sys.argv[1])
    print(os.path.basename(ctx.models[0].form or "-"))
"""


def test_model_forms_names_an_ep_of_any_length_a_sidecar_may_name(tmp_path):
    """VMAFDNN_MODEL_FORMS=<EP name> (tiny_model.c's forms_key). A sidecar's form keys are
    1..64 bytes. Before: the name was cut to 63 bytes, so a 64-byte key could never be
    chosen (its form ran as "*"'s), and a name one byte longer than a 63-byte key took
    that key's form. Now a 64-byte name is compared whole and a longer one matches no key."""
    import json
    import shutil
    import subprocess
    import sys

    from vmafdnn import models as builtin

    src = os.path.dirname(builtin.resolve("psnr_y"))
    for name in ("psnr_y.onnx", "psnr_y_accel.onnx", "psnr_y_accel.json"):
        shutil.copy(os.path.join(src, name), tmp_path)
    sidecar = json.load(open(os.path.join(src, "psnr_y.json")))
    k64, k63 = "E" * 60 + ":GPU", "F" * 59 + ":GPU"
    forms = {k64: "k64.onnx", k63: "k63.onnx", "*": "psnr_y_accel.onnx"}
    for key, form in forms.items():
        if key != "*":
            shutil.copy(os.path.join(src, "psnr_y_accel.onnx"), tmp_path / form)
            shutil.copy(os.path.join(src, "psnr_y_accel.json"),
                        tmp_path / form.replace(".onnx", ".json"))
    sidecar["forms"] = forms
    (tmp_path / "psnr_y.json").write_text(json.dumps(sidecar))

    def form_for(value):
        env = dict(os.environ, VMAFDNN_MODEL_FORMS=value)
        done = subprocess.run([sys.executable, "-c", _FORM_PROBE, str(tmp_path / "psnr_y.onnx")],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert len(k64) == 64 and len(k63) == 63
    assert form_for(k63) == "k63.onnx"
    assert form_for(k64.lower()) == "k64.onnx"
    assert form_for(k63 + "X") == "psnr_y_accel.onnx"  # another EP: the "*" form
    assert form_for(k64 + "X" * 100) == "psnr_y_accel.onnx"
