"""Findings of the review of a4ab4dc (model bytes charged to the memory budget), 72c0155 (CUDA
V2 options), fc995b6, e48a87a, c2552f9, 22c9b87 and 596ba3f: each test failed before the fix
beside it."""
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

import vmafdnn
from tests.models import factory


def _open_dirs():
    """The directories this process holds descriptors of."""
    out = set()
    for entry in os.scandir("/proc/self/fd"):
        try:
            out.add(os.readlink(entry.path))
        except OSError:
            pass  # the scandir's own descriptor, closed meanwhile
    return out


def _inline_and_external_model(directory):
    """x[1,1,H,W] -> score = mean(x) * big[5] * sum(w): big a 32 MiB initializer in the
    model file, w (64 x 2.0) in w.bin beside it."""
    big = numpy_helper.from_array(np.arange(8 << 20, dtype=np.float32), "big")
    w = numpy_helper.from_array(np.full((64,), 2.0, np.float32), "w")
    with open(os.path.join(directory, "w.bin"), "wb") as f:
        f.write(w.raw_data)
    set_external_data(w, "w.bin", 0, len(w.raw_data))
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    idx = numpy_helper.from_array(np.array([5], np.int64), "idx")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("Gather", ["big", "idx"], ["g"]),
             helper.make_node("ReduceSum", ["w"], ["s"], keepdims=1),
             helper.make_node("Mul", ["g", "s"], ["gs"]),
             helper.make_node("Mul", ["m", "gs"], ["score"])]
    graph = helper.make_graph(nodes, "t", [factory.tensor("x", TensorProto.FLOAT,
                                                          [1, 1, "H", "W"])],
                              [factory.tensor("score", TensorProto.FLOAT, [1])],
                              initializer=[big, w, idx])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", factory.OPSET)])
    model.ir_version = factory.IR_VERSION
    path = os.path.join(directory, "mix.onnx")
    onnx.save(model, path)
    return path


def test_a_copy_the_budget_refuses_keeps_no_model_directory_open(tmp_path):
    """a4ab4dc: when the memory budget has no room for the copy to specialise from,
    static_shapes stops, but the descriptor of the model's directory (kept for the
    specialised sessions' external data) stayed open for the session's whole life; every
    other way of not specialising closes it."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    path = _inline_and_external_model(str(model_dir))
    size = os.path.getsize(path)
    x = np.ones((1, 1, 8, 8), np.float32)
    with vmafdnn.Session(path, static_shapes="on", max_memory_bytes=size + (4 << 20),
                         max_model_bytes=64 << 20) as s:
        assert s.run([x])["score"][0] == 5 * 128
        assert "no room for a copy" in s.static_runs.reason
        assert str(model_dir) not in _open_dirs()
    # With room for the copy the directory is kept, as it must be.
    with vmafdnn.Session(path, static_shapes="on", max_memory_bytes=0,
                         max_model_bytes=64 << 20) as s:
        assert s.static_runs.reason == ""
        assert str(model_dir) in _open_dirs()


def _many_metrics(path, n):
    path.write_text(json.dumps({"frames": [{"frameNum": i, "metrics": {f"m{k}": 1.0
                                                                       for k in range(n)}}
                                           for i in range(2)]}))
    return path


def test_plot_more_metrics_chosen_than_panels_says_they_were_chosen(tmp_path, capsys):
    """22c9b87: with --metric given more than MAX_PANELS times, the message said "the reports
    have N metrics ... choose some with --metric" (N the count chosen, not the reports')."""
    pytest.importorskip("matplotlib")
    from vmafdnn import plot
    from vmafdnn.cli import main
    many = _many_metrics(tmp_path / "many.json", plot.MAX_PANELS + 10)
    chosen = [a for k in range(plot.MAX_PANELS + 1) for a in ("--metric", f"m{k}")]
    assert main(["plot", str(many), "-o", str(tmp_path / "x.png"), *chosen]) == 2
    err = capsys.readouterr().err
    assert f"{plot.MAX_PANELS + 1} metrics chosen" in err and "reports have" not in err, err
    assert f"choose at most {plot.MAX_PANELS}" in err and err.count("\n") == 1, err


def test_plot_a_metric_chosen_twice_is_one_panel(tmp_path):
    """22c9b87: --metric m1 twice drew the same panel twice (and counted twice against
    MAX_PANELS)."""
    pytest.importorskip("matplotlib")
    from vmafdnn import plot
    many = _many_metrics(tmp_path / "many.json", 3)
    fig = plot.build_figure([("a", plot.load_report(many))], ["m1", "m0", "m1"])
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["m1", "m0"]
    fig = plot.build_figure([("a", plot.load_report(many))], ["m1"] * (plot.MAX_PANELS + 1))
    assert len(fig.axes) == 1
