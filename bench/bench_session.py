"""Per-call overhead of vmafdnn.Session.run against onnxruntime's own
InferenceSession.run on the same tiny model, one thread, same run
(ratio > 1: vmafdnn is cheaper per call).

    python bench/bench_session.py
"""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

import vmafdnn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from common import best_times  # noqa: E402
from tests.models import factory  # noqa: E402


def compare(label, model_path, feeds, number):
    ours = vmafdnn.Session(model_path, device="cpu", threads=1)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    theirs = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    for a, b in zip(ours.run(feeds).values(), theirs.run(None, feeds)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    t = best_times({"ours": lambda: ours.run(feeds), "theirs": lambda: theirs.run(None, feeds)},
                   number=number)
    t_ours, t_theirs = t["ours"], t["theirs"]
    print(f"{label}: vmafdnn.Session.run {t_ours * 1e6:.2f} us/call, "
          f"onnxruntime.InferenceSession.run {t_theirs * 1e6:.2f} us/call, "
          f"ratio {t_theirs / t_ours:.2f}x")


def main():
    print(f"vmafdnn {vmafdnn.__version__} on ONNX Runtime {vmafdnn.ort_version()}, "
          f"onnxruntime (Python) {ort.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        identity = os.path.join(tmp, "identity.onnx")
        onnx.save(factory.identity(8), identity)
        compare("identity, 8 floats", identity,
                {"x": np.arange(8, dtype=np.float32)}, number=2000)
        conv = os.path.join(tmp, "conv.onnx")
        onnx.save(factory.conv_mean(224, 224), conv)
        x = np.random.default_rng(0).random((1, 1, 224, 224), dtype=np.float32)
        compare("conv3x3 + mean, 1x1x224x224", conv, {"x": x}, number=20)


if __name__ == "__main__":
    main()
