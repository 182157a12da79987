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


# ---- tiny models for the scoring context (tests/c/test_context.c) ----------


def _mean_to(x, out, nodes, inits, tag):
    """Appends nodes: out[1] = mean of every element of x."""
    shape = numpy_helper.from_array(np.array([1], np.int64), f"shape1_{tag}")
    inits.append(shape)
    nodes += [helper.make_node("ReduceMean", [x], [f"m_{tag}"], keepdims=0),
              helper.make_node("Reshape", [f"m_{tag}", shape.name], [out])]


def _mean_model(input_dims, elem_type=F32):
    """x[input_dims] -> score[1] = mean(x)."""
    nodes, inits = [], []
    src = "x"
    if elem_type != F32:
        nodes.append(helper.make_node("Cast", ["x"], ["xf"], to=F32))
        src = "xf"
    _mean_to(src, "score", nodes, inits, "x")
    return make_model(nodes, [tensor("x", elem_type, input_dims)], [tensor("score", F32, [1])],
                      inits)


def nr_mean():
    """x[1,1,8,8] -> score[1] = mean(x)."""
    return _mean_model([1, 1, 8, 8])


def nr_mean_4x4():
    """x[1,1,4,4] -> score[1] = mean(x) (for resize tests)."""
    return _mean_model([1, 1, 4, 4])


def fr_diff():
    """first[1,1,8,8], second[1,1,8,8] -> diff[1] = mean(first) - mean(second):
    the sign shows which plane was bound to which input."""
    nodes, inits = [], []
    _mean_to("first", "mf", nodes, inits, "first")
    _mean_to("second", "ms", nodes, inits, "second")
    nodes.append(helper.make_node("Sub", ["mf", "ms"], ["diff"]))
    return make_model(nodes, [tensor("first", F32, [1, 1, 8, 8]),
                              tensor("second", F32, [1, 1, 8, 8])],
                      [tensor("diff", F32, [1])], inits)


def pixels():
    """x[1,1,2,2] -> four outputs, one pixel each, named "p.0", "p-1", "p 2", "p3"."""
    shape = numpy_helper.from_array(np.array([4], np.int64), "shape4")
    names = ["p.0", "p-1", "p 2", "p3"]
    nodes = [helper.make_node("Reshape", ["x", "shape4"], ["flat"]),
             helper.make_node("Split", ["flat"], names, axis=0)]
    return make_model(nodes, [tensor("x", F32, [1, 1, 2, 2])],
                      [tensor(n, F32, [1]) for n in names], [shape])


def dup_outputs():
    """x[1,1,4,4] -> "a.b" = mean, "a_b" = 2 mean, "a-b" = 3 mean: all three
    sanitise to the same suffix."""
    nodes, inits = [], []
    _mean_to("x", "a.b", nodes, inits, "x")
    inits += [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
              numpy_helper.from_array(np.array(3.0, np.float32), "three")]
    nodes += [helper.make_node("Mul", ["a.b", "two"], ["a_b"]),
              helper.make_node("Mul", ["a.b", "three"], ["a-b"])]
    return make_model(nodes, [tensor("x", F32, [1, 1, 4, 4])],
                      [tensor(n, F32, [1]) for n in ("a.b", "a_b", "a-b")], inits)


def symbolic_batch_image():
    """x[N,1,4,4] -> score[N] = per-image mean."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["score"], axes=[1, 2, 3], keepdims=0)]
    return make_model(nodes, [tensor("x", F32, ["N", 1, 4, 4])], [tensor("score", F32, ["N"])])


def fixed_batch2():
    return _mean_model([2, 1, 4, 4])


def rank3_input():
    return _mean_model([1, 4, 4])


def two_channel():
    return _mean_model([1, 2, 4, 4])


def symbolic_hw_mean():
    """x[1,1,H,W] -> score[1] = mean(x)."""
    return _mean_model([1, 1, "H", "W"])


def huge_hw():
    return _mean_model([1, 1, 40000, 4])


def fp16_image():
    """x[1,1,4,4] FLOAT16 -> score[1] = mean(x) (FLOAT)."""
    return _mean_model([1, 1, 4, 4], F16)


def output_1x4():
    """x[1,1,4,4] -> column means[1,4]: not a scalar."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["cols"], axes=[1, 2], keepdims=0)]
    return make_model(nodes, [tensor("x", F32, [1, 1, 4, 4])], [tensor("cols", F32, [1, 4])])


def symbolic_output():
    """x[1,1,4,4] -> idx[K] = Range(0, count(x > 0.5)): a size nobody can know
    before the run."""
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("half", 0.5), ("zero", 0.0), ("one", 1.0))]
    nodes = [helper.make_node("Greater", ["x", "half"], ["gt"]),
             helper.make_node("Cast", ["gt"], ["gtf"], to=F32),
             helper.make_node("ReduceSum", ["gtf"], ["count"], keepdims=0),
             helper.make_node("Range", ["zero", "count", "one"], ["idx"])]
    return make_model(nodes, [tensor("x", F32, [1, 1, 4, 4])], [tensor("idx", F32, ["K"])],
                      inits)


def three_images():
    nodes, inits = [], []
    for n in "abc":
        _mean_to(n, f"m{n}", nodes, inits, n)
    nodes += [helper.make_node("Add", ["ma", "mb"], ["ab"]),
              helper.make_node("Add", ["ab", "mc"], ["score"])]
    return make_model(nodes, [tensor(n, F32, [1, 1, 4, 4]) for n in "abc"],
                      [tensor("score", F32, [1])], inits)


def fr_mismatched():
    """Two image inputs of different sizes."""
    nodes, inits = [], []
    _mean_to("a", "ma", nodes, inits, "a")
    _mean_to("b", "mb", nodes, inits, "b")
    nodes.append(helper.make_node("Add", ["ma", "mb"], ["score"]))
    return make_model(nodes, [tensor("a", F32, [1, 1, 4, 4]), tensor("b", F32, [1, 1, 8, 8])],
                      [tensor("score", F32, [1])], inits)


def fv_weighted():
    """x[N,2] -> score[N,1] = x0 + 10 x1."""
    w = numpy_helper.from_array(np.array([[1.0], [10.0]], np.float32), "w")
    return make_model([helper.make_node("MatMul", ["x", "w"], ["score"])],
                      [tensor("x", F32, ["N", 2])], [tensor("score", F32, ["N", 1])], [w])


def image_codec():
    """x[1,1,4,4], codec[1,3] -> score[1] = mean(x) + codec . [1, 10, 100]."""
    nodes, inits = [], []
    _mean_to("x", "mx", nodes, inits, "x")
    inits.append(numpy_helper.from_array(np.array([[1.0], [10.0], [100.0]], np.float32), "w"))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "shape_c"))
    nodes += [helper.make_node("MatMul", ["codec", "w"], ["cw"]),
              helper.make_node("Reshape", ["cw", "shape_c"], ["c1"]),
              helper.make_node("Add", ["mx", "c1"], ["score"])]
    return make_model(nodes, [tensor("x", F32, [1, 1, 4, 4]), tensor("codec", F32, [1, 3])],
                      [tensor("score", F32, [1])], inits)


# ---- models for issue 9: threads, budgets, unknown ranks (test_threads.c,
# test_context.c) -------------------------------------------------------------


def slow_chain(side=512, steps=800):
    """x[1,1,S,S] -> score[1] = mean(x), after `steps` S x S MatMuls by the
    identity: slow enough (about 2 s on one thread) for a run to be
    cancelled mid-way, since ORT checks for termination between nodes."""
    nodes, inits = [], [numpy_helper.from_array(np.eye(side, dtype=np.float32), "eye"),
                        numpy_helper.from_array(np.array([side, side], np.int64), "square")]
    nodes.append(helper.make_node("Reshape", ["x", "square"], ["h0"]))
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [f"h{i}", "eye"], [f"h{i + 1}"]))
    _mean_to(f"h{steps}", "score", nodes, inits, "h")
    return make_model(nodes, [tensor("x", F32, [1, 1, side, side])],
                      [tensor("score", F32, [1])], inits)


def score_unknown_rank():
    """x[1,1,4,4] -> score: mean(x) as [1] when it is > 0.5, else as [1,1].
    One value either way, but the branches differ in rank, so ORT knows no
    rank for it (declared without a shape, a plain output would get the shape
    ORT infers)."""
    nodes, inits = [], []
    _mean_to("x", "m", nodes, inits, "x")
    inits += [numpy_helper.from_array(np.array([1, 1], np.int64), "shape11"),
              numpy_helper.from_array(np.array([0.5], np.float32), "half_s")]
    then_g = helper.make_graph([helper.make_node("Identity", ["m"], ["t"])], "then", [],
                              [tensor("t", F32, None)])
    else_g = helper.make_graph([helper.make_node("Reshape", ["m", "shape11"], ["e"])], "else",
                              [], [tensor("e", F32, None)])
    nodes += [helper.make_node("Greater", ["m", "half_s"], ["gt"]),
              helper.make_node("Squeeze", ["gt"], ["c"]),
              helper.make_node("If", ["c"], ["score"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "test", [tensor("x", F32, [1, 1, 4, 4])],
                              [tensor("score", F32, None)], initializer=inits)
    # ONNX's checker wants a shape on graph outputs, ORT does not: unchecked.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vmafdnn-tests")
    model.ir_version = IR_VERSION
    return model


def huge_input():
    """x[1,1,32768,32768] -> score[1]: 4 GiB as one fp32 plane."""
    return _mean_model([1, 1, 32768, 32768])


def hd_mean():
    """x[1,1,1080,1920] -> score[1] = mean(x)."""
    return _mean_model([1, 1, 1080, 1920])


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
    "nr_mean": nr_mean,
    "nr_mean_4x4": nr_mean_4x4,
    "fr_diff": fr_diff,
    "pixels": pixels,
    "dup_outputs": dup_outputs,
    "symbolic_batch_image": symbolic_batch_image,
    "fixed_batch2": fixed_batch2,
    "rank3_input": rank3_input,
    "two_channel": two_channel,
    "symbolic_hw_mean": symbolic_hw_mean,
    "huge_hw": huge_hw,
    "fp16_image": fp16_image,
    "output_1x4": output_1x4,
    "symbolic_output": symbolic_output,
    "three_images": three_images,
    "fr_mismatched": fr_mismatched,
    "fv_weighted": fv_weighted,
    "image_codec": image_codec,
    "slow_chain": slow_chain,
    "score_unknown_rank": score_unknown_rank,
    "huge_input": huge_input,
    "hd_mean": hd_mean,
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
