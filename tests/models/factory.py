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


def make_model(nodes, inputs, outputs, initializers=(), name="test", checked=True):
    """checked=False: ONNX's checker wants a shape on every graph input and output, which
    ORT (and some exporters) do not."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vmafdnn-tests")
    model.ir_version = IR_VERSION
    if checked:
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


def image_u16():
    """x[1,1,4,4] UINT16 (a picture's samples) -> y = x as FLOAT (image-to-image)."""
    return make_model([helper.make_node("Cast", ["x"], ["y"], to=F32)],
                      [tensor("x", TensorProto.UINT16, [1, 1, 4, 4])],
                      [tensor("y", F32, [1, 1, 4, 4])])


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
    """x[input_dims] -> score[1] = mean(x) (input_dims None: x declares no shape)."""
    nodes, inits = [], []
    src = "x"
    if elem_type != F32:
        nodes.append(helper.make_node("Cast", ["x"], ["xf"], to=F32))
        src = "xf"
    _mean_to(src, "score", nodes, inits, "x")
    return make_model(nodes, [tensor("x", elem_type, input_dims)], [tensor("score", F32, [1])],
                      inits, checked=input_dims is not None)


def mean_of_shapeless_input():
    """x (no shape declared: any rank) -> score[1] = mean(x)."""
    return _mean_model(None)


def shapeless_image_input():
    """x (no shape declared) -> y[1,1,H,W] = x: an image model whose input says nothing."""
    return make_model([helper.make_node("Identity", ["x"], ["y"])], [tensor("x", F32, None)],
                      [tensor("y", F32, [1, 1, "H", "W"])], checked=False)


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


def _batch_image(name):
    return tensor(name, F32, ["N", 1, "H", "W"])


def batch_size():
    """x[N,1,H,W] -> frames[N] = N (how many frames shared the Run), mean[N,1] = each frame's
    mean: a batchable model whose scores show the batching."""
    two = numpy_helper.from_array(np.array([0, 1], np.int64), "to_n1")
    first = numpy_helper.from_array(np.array([0], np.int64), "zero")
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "zero", "one"], ["n"]),
             helper.make_node("Cast", ["n"], ["nf"], to=F32),
             helper.make_node("Expand", ["nf", "n"], ["frames"]),
             helper.make_node("ReduceMean", ["x"], ["m4"], axes=[2, 3], keepdims=0),
             helper.make_node("Reshape", ["m4", "to_n1"], ["mean"])]
    return make_model(nodes, [_batch_image("x")],
                      [tensor("frames", F32, ["N"]), tensor("mean", F32, ["N", 1])],
                      [two, first, one])


def batch_fr():
    """reference[N,1,H,W], distorted[N,1,H,W] -> diff[N] = mean(reference) - mean(distorted)
    per frame."""
    nodes = [helper.make_node("ReduceMean", ["reference"], ["mr"], axes=[1, 2, 3], keepdims=0),
             helper.make_node("ReduceMean", ["distorted"], ["md"], axes=[1, 2, 3], keepdims=0),
             helper.make_node("Sub", ["mr", "md"], ["diff"])]
    return make_model(nodes, [_batch_image("reference"), _batch_image("distorted")],
                      [tensor("diff", F32, ["N"])])


def batch_one_only():
    """Declares a symbolic batch but its Reshape to [1,1,H,W] fails for N > 1: frames must be
    scored one per Run after the batched Run fails."""
    hw = numpy_helper.from_array(np.array([2], np.int64), "two")
    end = numpy_helper.from_array(np.array([4], np.int64), "four")
    ones = numpy_helper.from_array(np.array([1, 1], np.int64), "ones")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "two", "four"], ["hw"]),
             helper.make_node("Concat", ["ones", "hw"], ["to"], axis=0),
             helper.make_node("Reshape", ["x", "to"], ["one"]),
             helper.make_node("ReduceMean", ["one"], ["score"], axes=[1, 2, 3], keepdims=0)]
    return make_model(nodes, [_batch_image("x")], [tensor("score", F32, ["N"])],
                      [hw, end, ones])


def batch_mean():
    """x[N,1,H,W] -> score[N] = each frame's mean: batchable for real."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["score"], axes=[1, 2, 3], keepdims=0)]
    return make_model(nodes, [_batch_image("x")], [tensor("score", F32, ["N"])])


def batch_center():
    """x[N,1,H,W] -> score[N] = mean(x - mean of x over the batch): 0 alone, and 0 batched
    only when the frames are identical: a model whose frames mix that a check on identical
    frames cannot catch."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m0"], axes=[0], keepdims=1),
             helper.make_node("Sub", ["x", "m0"], ["d"]),
             helper.make_node("ReduceMean", ["d"], ["score"], axes=[1, 2, 3], keepdims=0)]
    return make_model(nodes, [_batch_image("x")], [tensor("score", F32, ["N"])])


def batch_rows():
    """Declares score[N] but gives each row's mean over the batch ([H]): with N = H frames the
    count looks right."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["score"], axes=[0, 1, 3], keepdims=0)]
    return make_model(nodes, [_batch_image("x")], [tensor("score", F32, ["N"])])


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


def slow_chain(side=512, steps=400):
    """x[1,1,S,S] -> score[1] = mean(x), after `steps` S x S MatMuls by the
    identity: slow enough (about 1 s on one thread) for a run to be
    cancelled mid-way, since ORT checks for termination between nodes."""
    nodes, inits = [], [numpy_helper.from_array(np.eye(side, dtype=np.float32), "eye"),
                        numpy_helper.from_array(np.array([side, side], np.int64), "square")]
    nodes.append(helper.make_node("Reshape", ["x", "square"], ["h0"]))
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [f"h{i}", "eye"], [f"h{i + 1}"]))
    _mean_to(f"h{steps}", "score", nodes, inits, "h")
    return make_model(nodes, [tensor("x", F32, [1, 1, side, side])],
                      [tensor("score", F32, [1])], inits)


def stall_bright():
    """x[1,1,8,8] -> score[1] = mean(x), after a Loop of 2^62 iterations
    when mean(x) > 0.5 and of none otherwise: a bright frame never finishes
    on its own (only cancel or a time budget ends its run, ORT checking
    between the Loop's iterations), a dark one scores at once. For the
    cancel tests, whose outcome must not depend on how fast a run is or how
    the threads were scheduled."""
    nodes, inits = [], []
    _mean_to("x", "m", nodes, inits, "x")
    inits += [numpy_helper.from_array(np.array([0.5], np.float32), "half_b"),
              numpy_helper.from_array(np.array([1 << 62], np.int64), "forever_b")]
    nodes += [helper.make_node("Greater", ["m", "half_b"], ["bright"]),
              helper.make_node("Cast", ["bright"], ["bright_i"], to=TensorProto.INT64),
              helper.make_node("Mul", ["bright_i", "forever_b"], ["trips1"]),
              helper.make_node("Squeeze", ["trips1"], ["trips"])]
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero_b")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "zero_b"], ["v_out"])], "body",
        [tensor("i", TensorProto.INT64, []), tensor("cond_in", TensorProto.BOOL, []),
         tensor("v_in", F32, [1])],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("v_out", F32, [1])],
        initializer=[zero])
    nodes.append(helper.make_node("Loop", ["trips", "", "m"], ["score"], body=body))
    return make_model(nodes, [tensor("x", F32, [1, 1, 8, 8])], [tensor("score", F32, [1])],
                      inits)


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
    "image_u16": image_u16,
    "dynamic_output": dynamic_output,
    "nr_mean": nr_mean,
    "nr_mean_4x4": nr_mean_4x4,
    "fr_diff": fr_diff,
    "pixels": pixels,
    "dup_outputs": dup_outputs,
    "symbolic_batch_image": symbolic_batch_image,
    "fixed_batch2": fixed_batch2,
    "batch_size": batch_size,
    "batch_fr": batch_fr,
    "batch_one_only": batch_one_only,
    "batch_mean": batch_mean,
    "batch_rows": batch_rows,
    "batch_center": batch_center,
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
    "stall_bright": stall_bright,
    "score_unknown_rank": score_unknown_rank,
    "huge_input": huge_input,
    "hd_mean": hd_mean,
}


# ---- session core: runtime faults, budgets, pass-through, output shapes ----
# (tests/c/test_session_*.c)

I64 = TensorProto.INT64


def _count_from(x, out, nodes):
    """Appends nodes: out = int64 scalar from x[1] (a size chosen at run time,
    so neither shape inference nor constant folding can see it)."""
    nodes += [helper.make_node("Cast", [x], [out + "_v"], to=I64),
              helper.make_node("Squeeze", [out + "_v"], [out])]


def _loop_body(extra_nodes=(), extra_outputs=()):
    """Loop body: v_out = v + 1 (plus any scan outputs)."""
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one_b")
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Add", ["v_in", "one_b"], ["v_out"])] + list(extra_nodes)
    return helper.make_graph(
        nodes, "body",
        [tensor("i", I64, []), tensor("cond_in", TensorProto.BOOL, []), tensor("v_in", F32, [1])],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("v_out", F32, [1])] + list(extra_outputs),
        initializer=[one])


def loop_count():
    """n[1] -> y[1] = n after n iterations of a Loop (each adds 1): run time
    proportional to n, for the cancel / close-while-running tests."""
    nodes = []
    _count_from("n", "m", nodes)
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero")
    nodes.append(helper.make_node("Loop", ["m", "", "zero"], ["y"], body=_loop_body()))
    return make_model(nodes, [tensor("n", F32, [1])], [tensor("y", F32, [1])], [zero])


def loop_forever():
    """x[1] -> y[1]: a Loop with trip count 2^62 (the run-time budget test)."""
    m = numpy_helper.from_array(np.array(1 << 62, np.int64), "m")
    nodes = [helper.make_node("Loop", ["m", "", "x"], ["y"], body=_loop_body())]
    return make_model(nodes, [tensor("x", F32, [1])], [tensor("y", F32, [1])], [m])


def _sum_all(src, out, nodes):
    nodes += [helper.make_node("ReduceSum", [src], [out + "_s"], keepdims=0),
              helper.make_node("Reshape", [out + "_s", "shape1"], [out])]


def _shape1():
    return numpy_helper.from_array(np.array([1], np.int64), "shape1")


def cos_input():
    """n[1] -> y[1] = sum(ConstantOfShape([n], 1.0)): allocates 4n bytes at run
    time."""
    nodes = []
    _count_from("n", "m", nodes)
    nodes += [helper.make_node("Unsqueeze", ["m", "axes0"], ["dims"]),
              helper.make_node("ConstantOfShape", ["dims"], ["big"],
                               value=numpy_helper.from_array(np.array([1.0], np.float32)))]
    _sum_all("big", "y", nodes)
    axes0 = numpy_helper.from_array(np.array([0], np.int64), "axes0")
    return make_model(nodes, [tensor("n", F32, [1])], [tensor("y", F32, [1])],
                      [axes0, _shape1()])


def cos_const_3g():
    """x[1] -> y[1] = x + sum(ConstantOfShape([3 GiB / 4], 1.0)): the shape is
    a constant, so ORT may fold the 3 GiB tensor while creating the session."""
    dims = numpy_helper.from_array(np.array([3 << 28], np.int64), "dims")
    nodes = [helper.make_node("ConstantOfShape", ["dims"], ["big"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32)))]
    _sum_all("big", "s", nodes)
    nodes.append(helper.make_node("Add", ["x", "s"], ["y"]))
    return make_model(nodes, [tensor("x", F32, [1])], [tensor("y", F32, [1])],
                      [dims, _shape1()])


def expand_input():
    """n[1] -> y[1] = sum(Expand(n, [n])): allocates 4n bytes at run time."""
    nodes = []
    _count_from("n", "m", nodes)
    nodes += [helper.make_node("Unsqueeze", ["m", "axes0"], ["dims"]),
              helper.make_node("Expand", ["n", "dims"], ["big"])]
    _sum_all("big", "y", nodes)
    axes0 = numpy_helper.from_array(np.array([0], np.int64), "axes0")
    return make_model(nodes, [tensor("n", F32, [1])], [tensor("y", F32, [1])],
                      [axes0, _shape1()])


def loop_concat():
    """n[1] -> y[1]: a Loop of n iterations, each emitting a 2^20-float scan
    output (4 MiB) that ORT concatenates: 4n MiB in all."""
    dims = numpy_helper.from_array(np.array([1 << 20], np.int64), "dims_b")
    body = _loop_body([helper.make_node("Expand", ["v_in", "dims_b"], ["chunk"])],
                      [tensor("chunk", F32, [1 << 20])])
    body.initializer.append(dims)
    nodes = []
    _count_from("n", "m", nodes)
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero")
    nodes.append(helper.make_node("Loop", ["m", "", "zero"], ["v", "chunks"], body=body))
    _sum_all("chunks", "y", nodes)
    return make_model(nodes, [tensor("n", F32, [1])], [tensor("y", F32, [1])],
                      [zero, _shape1()])


def gather_input():
    """i[1] -> y[1] = table[i]: an index out of range fails inside ORT."""
    table = numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32), "table")
    nodes = [helper.make_node("Cast", ["i"], ["idx"], to=I64),
             helper.make_node("Gather", ["table", "idx"], ["y"], axis=0)]
    return make_model(nodes, [tensor("i", F32, [1])], [tensor("y", F32, [1])], [table])


def expand_to():
    """x[N], n[1] -> y = Expand(x, [n]): N=3, n=2 is impossible."""
    nodes = []
    _count_from("n", "m", nodes)
    nodes += [helper.make_node("Unsqueeze", ["m", "axes0"], ["dims"]),
              helper.make_node("Expand", ["x", "dims"], ["y"])]
    axes0 = numpy_helper.from_array(np.array([0], np.int64), "axes0")
    return make_model(nodes, [tensor("x", F32, ["N"]), tensor("n", F32, [1])],
                      [tensor("y", F32, ["M"])], [axes0])


def reshape_to3():
    """x[N] -> y[3] = Reshape(x, [3]): fails for N != 3."""
    s3 = numpy_helper.from_array(np.array([3], np.int64), "s3")
    return make_model([helper.make_node("Reshape", ["x", "s3"], ["y"])],
                      [tensor("x", F32, ["N"])], [tensor("y", F32, [3])], [s3])


def matmul_free():
    """a[M,K], b[L,P] -> a @ b: fails when K != L."""
    return make_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                      [tensor("a", F32, ["M", "K"]), tensor("b", F32, ["L", "P"])],
                      [tensor("y", F32, ["M", "P"])])


def passthrough(n=4):
    """x[n] -> x: the graph output is the graph input itself (no node)."""
    return make_model([], [tensor("x", F32, [n])], [tensor("x", F32, [n])])


def passthrough_image():
    """x[1,1,H,W] -> x (no node), for the plane helpers."""
    dims = [1, 1, "H", "W"]
    return make_model([], [tensor("x", F32, dims)], [tensor("x", F32, dims)])


def const_output():
    """x[2] -> y[2] = x + 1, and c[3] = an initializer returned as is."""
    c = numpy_helper.from_array(np.array([7, 8, 9], np.float32), "c")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    return make_model([helper.make_node("Add", ["x", "one"], ["y"])],
                      [tensor("x", F32, [2])], [tensor("y", F32, [2]), tensor("c", F32, [3])],
                      [c, one])


def image_transposed():
    """x[1,1,H,W] -> y[1,1,W,H] (symbolic: only the run shows the shape)."""
    return make_model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 3, 2])],
                      [tensor("x", F32, [1, 1, "H", "W"])],
                      [tensor("y", F32, [1, 1, "W", "H"])])


def image_transposed_fixed():
    """x[1,1,2,4] -> y[1,1,4,2]: refused before running."""
    return make_model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 3, 2])],
                      [tensor("x", F32, [1, 1, 2, 4])], [tensor("y", F32, [1, 1, 4, 2])])


def image_flat():
    """x[1,1,H,W] -> y[H*W] (rank 1): the same samples, not an image."""
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
    return make_model([helper.make_node("Reshape", ["x", "minus1"], ["y"])],
                      [tensor("x", F32, [1, 1, "H", "W"])], [tensor("y", F32, ["HW"])],
                      [minus1])


def unknown_rank_output():
    """x[1,1,H,W] -> y: x itself when its sum is > 0, else x flattened. The
    branches differ in rank, so y has no rank ORT could infer."""
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                              [tensor("t", F32, None)])
    else_g = helper.make_graph([helper.make_node("Reshape", ["x", "minus1"], ["e"])], "else",
                              [], [tensor("e", F32, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "test", [tensor("x", F32, [1, 1, "H", "W"])],
                              [tensor("y", F32, None)], initializer=[minus1, zero])
    # ONNX's checker wants a shape on graph outputs, ORT does not: unchecked.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vmafdnn-tests")
    model.ir_version = IR_VERSION
    return model


def scalar_output():
    """x[4] -> y = sum(x) as a true rank-0 scalar."""
    return make_model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
                      [tensor("x", F32, [4])], [tensor("y", F32, [])])


ALL.update({
    "loop_count": loop_count,
    "loop_forever": loop_forever,
    "cos_input": cos_input,
    "cos_const_3g": cos_const_3g,
    "expand_input": expand_input,
    "loop_concat": loop_concat,
    "gather_input": gather_input,
    "expand_to": expand_to,
    "reshape_to3": reshape_to3,
    "matmul_free": matmul_free,
    "passthrough": passthrough,
    "passthrough_image": passthrough_image,
    "const_output": const_output,
    "image_transposed": image_transposed,
    "image_transposed_fixed": image_transposed_fixed,
    "image_flat": image_flat,
    "unknown_rank_output": unknown_rank_output,
    "scalar_output": scalar_output,
    "shapeless_input": mean_of_shapeless_input,
    "shapeless_image_input": shapeless_image_input,
})


# --- temporal models (frame offsets, "input_sources") ------------------------------------------

def temporal_diff():
    """cur[1,1,H,W], prev[1,1,H,W], bpc[1] -> motion[1] = mean(cur) - mean(prev), bits[1] = bpc.
    A sidecar feeds prev from an earlier frame and bpc with the bit depth."""
    nodes, inits = [], []
    _mean_to("cur", "mc", nodes, inits, "c")
    _mean_to("prev", "mp", nodes, inits, "p")
    nodes += [helper.make_node("Sub", ["mc", "mp"], ["motion"]),
              helper.make_node("Identity", ["bpc"], ["bits"])]
    frame = [1, 1, "H", "W"]
    return make_model(nodes, [tensor("cur", F32, frame), tensor("prev", F32, frame),
                              tensor("bpc", F32, [1])],
                      [tensor("motion", F32, [1]), tensor("bits", F32, [1])], inits)


def _batch_temporal(elem_type):
    """cur[N,1,H,W], prev[1,1,H,W], bpc[1] -> motion[N] = mean(cur[b]) - mean(cur[b - 1]),
    with prev standing for cur[-1] (the picture before the Run's first frame), bits[N] = bpc:
    temporal_diff scoring several frames per Run, the previous pictures taken from the batch
    itself. UINT16: the pictures' own samples, normalised by 2^bpc - 1 inside."""
    starts = numpy_helper.from_array(np.array([0, 0], np.int64), "bt_starts")
    ends = numpy_helper.from_array(np.array([-1, 1 << 30], np.int64), "bt_ends")
    axes = numpy_helper.from_array(np.array([0, 1], np.int64), "bt_axes")
    one = numpy_helper.from_array(np.array([1.0], np.float32), "bt_one")
    two = numpy_helper.from_array(np.array([2.0], np.float32), "bt_two")
    nodes = []
    if elem_type == F32:
        cur, prev = "cur", "prev"
    else:
        nodes += [helper.make_node("Pow", ["bt_two", "bpc"], ["bt_range1"]),
                  helper.make_node("Sub", ["bt_range1", "bt_one"], ["bt_max"]),
                  helper.make_node("Cast", ["cur"], ["cur_s"], to=F32),
                  helper.make_node("Cast", ["prev"], ["prev_s"], to=F32),
                  helper.make_node("Div", ["cur_s", "bt_max"], ["cur_f"]),
                  helper.make_node("Div", ["prev_s", "bt_max"], ["prev_f"])]
        cur, prev = "cur_f", "prev_f"
    nodes += [helper.make_node("Slice", [cur, "bt_starts", "bt_ends", "bt_axes"], ["earlier"]),
              helper.make_node("Concat", [prev, "earlier"], ["before"], axis=0),
              helper.make_node("ReduceMean", [cur], ["mc"], axes=[1, 2, 3], keepdims=0),
              helper.make_node("ReduceMean", ["before"], ["mp"], axes=[1, 2, 3], keepdims=0),
              helper.make_node("Sub", ["mc", "mp"], ["motion"]),
              helper.make_node("Mul", ["mc", "bt_zero"], ["zeros"]),
              helper.make_node("Add", ["zeros", "bpc"], ["bits"])]
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "bt_zero")
    return make_model(nodes, [tensor("cur", elem_type, ["N", 1, "H", "W"]),
                              tensor("prev", elem_type, [1, 1, "H", "W"]),
                              tensor("bpc", F32, [1])],
                      [tensor("motion", F32, ["N"]), tensor("bits", F32, ["N"])],
                      [starts, ends, axes, one, two, zero])


def batch_temporal():
    return _batch_temporal(F32)


def batch_temporal_u16():
    return _batch_temporal(TensorProto.UINT16)


def pair_min():
    """a[1], b[1] -> y[1] = min(a, b) (libvmaf's motion2 from motion at offsets 0 and +1)."""
    return make_model([helper.make_node("Min", ["a", "b"], ["y"])],
                      [tensor("a", F32, [1]), tensor("b", F32, [1])], [tensor("y", F32, [1])])


def pair_sum():
    """a[1, 1], b[] -> y[1] = a + b: one-value inputs of other ranks."""
    shape1 = numpy_helper.from_array(np.array([1], np.int64), "shape1")
    return make_model([helper.make_node("Add", ["a", "b"], ["s"]),
                       helper.make_node("Reshape", ["s", "shape1"], ["y"])],
                      [tensor("a", F32, [1, 1]), tensor("b", F32, [])], [tensor("y", F32, [1])],
                      [shape1])


ALL.update({
    "temporal_diff": temporal_diff,
    "pair_min": pair_min,
    "batch_temporal": batch_temporal,
    "batch_temporal_u16": batch_temporal_u16,
    "pair_sum": pair_sum,
    "past_diff": temporal_diff,
})


# Sidecars written beside models (the batch models run at the frame's size).
SIDECARS = {name: '{"native_resolution": true}\n'
            for name in ("batch_size", "batch_fr", "batch_one_only", "batch_mean",
                         "batch_rows", "batch_center")}
# Read the distorted picture one frame back (the batch's first frame's) and the bit depth.
for _name in ("batch_temporal", "batch_temporal_u16"):
    SIDECARS[_name] = ('{"native_resolution": true, "output_keys": ["m", "bits"], '
                       '"input_sources": {"prev": {"picture": "distorted", "offset": -1}, '
                       '"bpc": {"value": "bpc"}}}\n')
# temporal_diff reading the distorted picture one frame back (tests/c/test_batch.c).
SIDECARS["past_diff"] = ('{"native_resolution": true, "output_keys": ["m", "bits"], '
                         '"input_sources": {"prev": {"picture": "distorted", "offset": -1}, '
                         '"bpc": {"value": "bpc"}}}\n')


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name, build in ALL.items():
        onnx.save(build(), os.path.join(outdir, f"{name}.onnx"))
        if name in SIDECARS:
            with open(os.path.join(outdir, f"{name}.json"), "w") as f:
                f.write(SIDECARS[name])


if __name__ == "__main__":
    # factory.py OUTDIR [STAMP]: the stamp file tells meson the set is written.
    write_all(sys.argv[1])
    if len(sys.argv) > 2:
        open(sys.argv[2], "w").close()



# --- batched Runs of past-reading models: attacks (tests/python/test_batch_temporal_attack.py) --

def _frame_means(x, out, nodes):
    """out[N] = mean of each frame of x[N, 1, H, W]."""
    nodes.append(helper.make_node("ReduceMean", [x], [out], axes=[1, 2, 3], keepdims=0))


def _first_n(parts, like, out, nodes, tag):
    """out = Concat(parts, axis 0)[0:N], N the first dim of `like`: the picture k frames
    before each frame of the batch, the Run's past inputs standing for those before it."""
    zero = f"{tag}_zero"
    nodes += [helper.make_node("Concat", list(parts), [f"{tag}_all"], axis=0),
              helper.make_node("Shape", [like], [f"{tag}_n"], start=0, end=1),
              helper.make_node("Constant", [], [zero],
                               value=numpy_helper.from_array(np.array([0], np.int64))),
              helper.make_node("Slice", [f"{tag}_all", zero, f"{tag}_n"], [out])]


def batch_past2():
    """cur[N,1,H,W], prev2[1,1,H,W] -> m[N] = mean(cur[b]) - mean(picture two frames back),
    prev2 standing for the two frames before the Run's first (the only picture two back a
    Run feeds). Frame 1 of a Run needs the picture one frame before the Run, which no input
    carries: right at the clip's first frame only."""
    nodes = []
    _first_n(["prev2", "prev2", "cur"], "cur", "before2", nodes, "p2")
    _frame_means("cur", "mc", nodes)
    _frame_means("before2", "mb", nodes)
    nodes.append(helper.make_node("Sub", ["mc", "mb"], ["m"]))
    frame = ["N", 1, "H", "W"]
    return make_model(nodes, [tensor("cur", F32, frame), tensor("prev2", F32, [1, 1, "H", "W"])],
                      [tensor("m", F32, ["N"])])


def batch_past12():
    """cur[N,1,H,W], prev1, prev2[1,1,H,W] -> m1[N] = mean(cur) - mean(one back),
    m2[N] = mean(cur) - mean(two back): both offsets fed, so every frame of a Run has its
    pictures (frame 1's two back is prev1)."""
    nodes = []
    _first_n(["prev1", "cur"], "cur", "before1", nodes, "p1")
    _first_n(["prev2", "prev1", "cur"], "cur", "before2", nodes, "p2")
    _frame_means("cur", "mc", nodes)
    _frame_means("before1", "mb1", nodes)
    _frame_means("before2", "mb2", nodes)
    nodes += [helper.make_node("Sub", ["mc", "mb1"], ["m1"]),
              helper.make_node("Sub", ["mc", "mb2"], ["m2"])]
    past = [1, 1, "H", "W"]
    return make_model(nodes, [tensor("cur", F32, ["N", 1, "H", "W"]), tensor("prev1", F32, past),
                              tensor("prev2", F32, past)],
                      [tensor("m1", F32, ["N"]), tensor("m2", F32, ["N"])])


def batch_fr_past():
    """ref, dist[N,1,H,W], ref_prev, dist_prev[1,1,H,W] -> r[N], d[N]: each picture's mean
    minus its mean one frame back (a model reading both pictures back)."""
    nodes = []
    for pic in ("ref", "dist"):
        _first_n([f"{pic}_prev", pic], pic, f"{pic}_before", nodes, pic)
        _frame_means(pic, f"{pic}_mc", nodes)
        _frame_means(f"{pic}_before", f"{pic}_mb", nodes)
        nodes.append(helper.make_node("Sub", [f"{pic}_mc", f"{pic}_mb"], [pic[0]]))
    frame, past = ["N", 1, "H", "W"], [1, 1, "H", "W"]
    return make_model(nodes, [tensor("ref", F32, frame), tensor("dist", F32, frame),
                              tensor("ref_prev", F32, past), tensor("dist_prev", F32, past)],
                      [tensor("r", F32, ["N"]), tensor("d", F32, ["N"])])


def batch_past_n():
    """cur[N,1,H,W], prev[N,1,H,W] -> m[N] = mean(cur) - mean(prev): its past picture declares
    the batch too, so it is not batchable (a Run feeds one past picture)."""
    nodes = []
    _frame_means("cur", "mc", nodes)
    _frame_means("prev", "mp", nodes)
    nodes.append(helper.make_node("Sub", ["mc", "mp"], ["m"]))
    frame = ["N", 1, "H", "W"]
    return make_model(nodes, [tensor("cur", F32, frame), tensor("prev", F32, frame)],
                      [tensor("m", F32, ["N"])])


def batch_value_n():
    """cur[N,1,H,W], bpc[N] -> m[N] = mean(cur) + bpc: a value input declaring the batch, not
    batchable (a value input is fed once per Run)."""
    nodes = []
    _frame_means("cur", "mc", nodes)
    nodes.append(helper.make_node("Add", ["mc", "bpc"], ["m"]))
    return make_model(nodes, [tensor("cur", F32, ["N", 1, "H", "W"]), tensor("bpc", F32, ["N"])],
                      [tensor("m", F32, ["N"])])


ALL.update({
    "batch_past2": batch_past2,
    "batch_past12": batch_past12,
    "batch_fr_past": batch_fr_past,
    "batch_past_n": batch_past_n,
    "batch_value_n": batch_value_n,
})


def _fixed_size(model, h, w):
    """The model with its pictures' H and W fixed at h x w (a resize mode brings frames to
    them)."""
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if len(dims) == 4:
            dims[2].dim_value, dims[3].dim_value = h, w
    onnx.checker.check_model(model)
    return model


def batch_temporal_8x8():
    """batch_temporal at a fixed 8x8."""
    return _fixed_size(batch_temporal(), 8, 8)


def batch_temporal_u16_8x8():
    """batch_temporal_u16 at a fixed 8x8."""
    return _fixed_size(batch_temporal_u16(), 8, 8)


ALL.update({
    "batch_temporal_8x8": batch_temporal_8x8,
    "batch_temporal_u16_8x8": batch_temporal_u16_8x8,
})
