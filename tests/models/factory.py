"""Small ONNX models for the tests, built with the `onnx` package.

Every model uses opset 17 / IR 8 (onnx's own defaults are newer than any ORT
accepts). ``python tests/models/factory.py OUTDIR [STAMP]`` writes all of them, for
the C tests.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

F32 = TensorProto.FLOAT
F16 = TensorProto.FLOAT16


def make_model(nodes, inputs, outputs, initializers=(), name="test"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vmafdnn-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def tensor(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def identity(n=8, elem_type=F32):
    """x[n] -> y[n] (the per-call overhead model)."""
    return make_model([helper.make_node("Identity", ["x"], ["y"])],
                      [tensor("x", elem_type, [n])], [tensor("y", elem_type, [n])])


def identity_fp16(n=8):
    return identity(n, F16)


def conv_mean(h=16, w=16):
    """x[1,1,H,W] -> 3x3 box-blur conv -> global mean: score[1]."""
    weight = numpy_helper.from_array(np.full((1, 1, 3, 3), 1.0 / 9.0, np.float32), "w")
    shape = numpy_helper.from_array(np.array([1], np.int64), "shape1")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["c"], ["m"], axes=[0, 1, 2, 3], keepdims=1),
        helper.make_node("Reshape", ["m", "shape1"], ["score"]),
    ]
    return make_model(nodes, [tensor("x", F32, [1, 1, h, w])], [tensor("score", F32, [1])],
                      [weight, shape])


def two_outputs(n=4):
    """x[n] -> sum[1] = sum(x), double[n] = 2x."""
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["sum"], keepdims=1),
        helper.make_node("Mul", ["x", "two"], ["double"]),
    ]
    return make_model(nodes, [tensor("x", F32, [n])],
                      [tensor("sum", F32, [1]), tensor("double", F32, [n])], [axes, two])


def symbolic_batch(features=3):
    """x[N,F] -> y[N,1] = row sums; N symbolic."""
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)]
    return make_model(nodes, [tensor("x", F32, ["N", features])], [tensor("y", F32, ["N", 1])],
                      [axes])


def two_inputs(n=4):
    """a[n], b[n] -> diff[n] = a - b (order matters, so binding is visible)."""
    return make_model([helper.make_node("Sub", ["a", "b"], ["diff"])],
                      [tensor("a", F32, [n]), tensor("b", F32, [n])],
                      [tensor("diff", F32, [n])])


def image_identity(h=-1, w=-1):
    """x[1,1,H,W] -> y = x (image-to-image); -1 makes H/W symbolic."""
    dims = [1, 1, "H" if h < 0 else h, "W" if w < 0 else w]
    return make_model([helper.make_node("Identity", ["x"], ["y"])],
                      [tensor("x", F32, dims)], [tensor("y", F32, dims)])


def image_invert():
    """x[1,1,H,W] -> 1 - x (image-to-image with visible effect)."""
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    dims = [1, 1, "H", "W"]
    return make_model([helper.make_node("Sub", ["one", "x"], ["y"])],
                      [tensor("x", F32, dims)], [tensor("y", F32, dims)], [one])


def typed_outputs():
    """x[3] -> as_double, as_int32, as_int64, as_fp16 (Cast of x)."""
    nodes = [
        helper.make_node("Cast", ["x"], ["as_double"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["x"], ["as_int32"], to=TensorProto.INT32),
        helper.make_node("Cast", ["x"], ["as_int64"], to=TensorProto.INT64),
        helper.make_node("Cast", ["x"], ["as_fp16"], to=F16),
    ]
    return make_model(nodes, [tensor("x", F32, [3])], [
        tensor("as_double", TensorProto.DOUBLE, [3]), tensor("as_int32", TensorProto.INT32, [3]),
        tensor("as_int64", TensorProto.INT64, [3]), tensor("as_fp16", F16, [3])])


def int64_input():
    """An input the library cannot feed from fp32."""
    return make_model([helper.make_node("Cast", ["x"], ["y"], to=F32)],
                      [tensor("x", TensorProto.INT64, [2])], [tensor("y", F32, [2])])


def dynamic_output():
    """x[N] -> y[N] = x * x: the output size is only known after the run."""
    return make_model([helper.make_node("Mul", ["x", "x"], ["y"])],
                      [tensor("x", F32, ["N"])], [tensor("y", F32, ["N"])])


ALL = {
    "identity": identity,
    "identity_fp16": identity_fp16,
    "conv_mean": conv_mean,
    "two_outputs": two_outputs,
    "symbolic_batch": symbolic_batch,
    "two_inputs": two_inputs,
    "image_identity": image_identity,
    "image_invert": image_invert,
    "typed_outputs": typed_outputs,
    "int64_input": int64_input,
    "dynamic_output": dynamic_output,
}


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name, build in ALL.items():
        onnx.save(build(), os.path.join(outdir, f"{name}.onnx"))


if __name__ == "__main__":
    # factory.py OUTDIR [STAMP]: the stamp file tells meson the set is written.
    write_all(sys.argv[1])
    if len(sys.argv) > 2:
        open(sys.argv[2], "w").close()
