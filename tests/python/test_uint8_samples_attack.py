"""Attacks on 8-bit samples as UINT8 (fcb122e): models crafted to fool the narrowing rule
(vdnn_onnx_narrow_samples) and clips that change depth, size and past pictures under it.

Each samples model here takes a picture x (UINT16, [1, 1, H, W]) and scores mean + mean of
squares of what its graph makes of it, so that a sample that changes anywhere moves the score.
The same clip is scored with static shapes on (the specialised sessions, UINT8 where the model
narrows) and off (the session as opened, always UINT16): the scores must be the same bits, and
StaticRuns.uint8 must count exactly the runs fed UINT8 (0 where the rule refuses the model).
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

import vmafdnn

F32, U16 = T.FLOAT, T.UINT16
NARROW = {"static_shapes": "on", "device_io": "on"}
WIDE = {"static_shapes": "off", "device_io": "off"}


def pic(name, H="H", W="W"):
    return h.make_tensor_value_info(name, U16, [1, 1, H, W])


def i64(name, values):
    return h.make_tensor(name, T.INT64, [len(values)], values)


def tail(v, nodes):
    """score = mean(float(v)) + mean(float(v)^2), as [1]."""
    nodes += [h.make_node("Cast", [v], ["t_f"], to=F32),
              h.make_node("ReduceMean", ["t_f"], ["t_m"], keepdims=0),
              h.make_node("Mul", ["t_f", "t_f"], ["t_sq"]),
              h.make_node("ReduceMean", ["t_sq"], ["t_q"], keepdims=0),
              h.make_node("Add", ["t_m", "t_q"], ["t_s"]),
              h.make_node("Reshape", ["t_s", "t_one"], ["score"])]
    return nodes


def model(nodes, inputs=None, inits=(), value_info=(), opset=17, check=True):
    g = h.make_graph(nodes, "m", [pic("x")] if inputs is None else inputs,
                     [h.make_tensor_value_info("score", F32, [1])],
                     initializer=[i64("t_one", [1])] + list(inits), value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 7 if opset < 21 else 10
    if check:
        onnx.checker.check_model(m)
    return m.SerializeToString()


def write(tmp_path, name, data, **sidecar):
    import json
    (tmp_path / f"{name}.onnx").write_bytes(data)
    (tmp_path / f"{name}.json").write_text(json.dumps(
        {"native_resolution": True, "output_keys": [name], **sidecar}))
    return str(tmp_path / f"{name}.onnx")


def score(path, clips, context, seed=5):
    """Every frame's score of each clip (the context reset between them) and the runs."""
    rng = np.random.default_rng(seed)
    got = []
    context = dict(context)
    with vmafdnn.Context(device="cpu", threads=context.pop("threads", 1), **context) as ctx:
        ctx.use_model(path)
        for clip in clips:
            for i, bpc in enumerate(clip["bpcs"]):
                d = rng.integers(0, 1 << bpc, tuple(clip["size"]))
                d = d.astype(np.uint8 if bpc == 8 else np.uint16)
                ctx.read_pictures(None, d, i, bitdepth=None if bpc == 8 else bpc)
            ctx.flush()
            got.append({k: [ctx.feature(k, i) for i in range(len(clip["bpcs"]))]
                        for k in sorted(ctx.features)})
            ctx.reset()
        return got, ctx.static_runs(0)


def compare(path, clips, **context):
    """The scores with static shapes on equal those with them off; the runs of the former."""
    got, runs = score(path, clips, {**context, **NARROW})
    want, _ = score(path, clips, {**context, **WIDE})
    assert got == want
    return runs


CLIP = [{"size": [6, 8], "bpcs": [8, 8, 10, 8]}]


# --- the rule: models it must refuse -------------------------------------------------------

def refused_models():
    m = {}
    # Concat of the picture with a UINT16 initializer (65535 does not fit a byte)
    m["concat_initializer"] = model(tail("cc", [
        h.make_node("Reshape", ["x", "m1"], ["xr"]),
        h.make_node("Concat", ["xr", "c16"], ["cc"], axis=0)]),
        inits=[i64("m1", [-1]), h.make_tensor("c16", U16, [3], [1000, 2000, 65535])])
    # Split whose second half is multiplied as UINT16 (255^2 overflows a byte)
    m["split_then_mul"] = model(tail("cc", [
        h.make_node("Split", ["x"], ["a", "b"], axis=2),
        h.make_node("Mul", ["b", "b"], ["bb"]),
        h.make_node("Concat", ["a", "bb"], ["cc"], axis=2)]))
    # one node reading the picture at two positions
    m["read_twice"] = model(tail("mx", [h.make_node("Mul", ["x", "x"], ["mx"])]))
    # an Identity of the picture whose type value_info declares UINT16
    m["value_info"] = model(tail("i1", [h.make_node("Identity", ["x"], ["i1"])]),
                            value_info=[pic("i1")])
    # CastLike taking its target type from the picture
    m["castlike_target"] = model([
        h.make_node("Constant", [], ["k"], value=h.make_tensor("kv", F32, [1], [300.0])),
        h.make_node("CastLike", ["k", "x"], ["kl"]),
        h.make_node("Cast", ["kl"], ["klf"], to=F32),
        h.make_node("Cast", ["x"], ["xf"], to=F32),
        h.make_node("ReduceMean", ["xf"], ["xm"], keepdims=0),
        h.make_node("ReduceSum", ["klf"], ["ks"], keepdims=0),
        h.make_node("Add", ["xm", "ks"], ["a"]),
        h.make_node("Reshape", ["a", "t_one"], ["score"])])
    return m


@pytest.mark.parametrize("name", sorted(refused_models()))
def test_a_model_reading_the_samples_as_numbers_is_not_narrowed(tmp_path, name):
    """The rule refuses the model: no run goes UINT8, every run is specialised all the same
    (one session, UINT16), and the scores are the session as opened's."""
    path = write(tmp_path, name, refused_models()[name])
    runs = compare(path, CLIP)
    assert (runs.uint8, runs.fixed, runs.specialised, runs.reason) == (0, 4, 1, ""), runs


# --- the rule: models it may narrow --------------------------------------------------------

def field(num, wt, payload):
    def varint(v):
        out = bytearray()
        while True:
            b, v = v & 0x7F, v >> 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)
    return varint(num << 3 | wt) + (varint(len(payload)) + payload if wt == 2 else payload)


def picture_in_second_graph(*elem_types):
    """A model whose picture x is declared in a second ModelProto.graph field (a parser
    merges it into the first) with the elem_type fields given as raw varint bytes."""
    base = model(tail("x", []), inputs=[], check=False)
    dims = (field(1, 2, field(1, 0, b"\x01")) * 2 + field(1, 2, field(2, 2, b"H")) +
            field(1, 2, field(2, 2, b"W")))
    tensor = b"".join(field(1, 0, e) for e in elem_types) + field(2, 2, dims)
    vi = field(1, 2, b"x") + field(2, 2, field(1, 2, tensor))
    return base + field(7, 2, field(11, 2, vi))


def narrowed_models():
    m = {}
    m["concat_self"] = model(tail("cc", [h.make_node("Concat", ["x", "x"], ["cc"], axis=2)]))
    # casts to types where a sample of 200 wraps or rounds, weighted apart and summed
    nodes, prev, inits = [], None, []
    for i, to in enumerate([T.INT8, T.UINT8, T.FLOAT16, T.BOOL, T.INT32, T.UINT16, T.DOUBLE,
                            T.INT16, T.BFLOAT16]):
        nodes += [h.make_node("Cast", ["x"], [f"c{i}"], to=to),
                  h.make_node("Cast", [f"c{i}"], [f"f{i}"], to=F32)]
        if prev is None:
            prev = f"f{i}"
            continue
        inits.append(h.make_tensor(f"k{i}", F32, [], [10.0 ** i]))
        nodes += [h.make_node("Mul", [f"f{i}", f"k{i}"], [f"w{i}"]),
                  h.make_node("Add", [prev, f"w{i}"], [f"acc{i}"])]
        prev = f"acc{i}"
    m["many_casts"] = model(tail(prev, nodes), inits=inits)
    # a Cast back to UINT16, then UINT16 arithmetic (the cast's output is not narrowed)
    m["cast16_then_mul"] = model(tail("sq", [
        h.make_node("Cast", ["x"], ["x16"], to=U16),
        h.make_node("Mul", ["x16", "x16"], ["sq"])]))
    # every moving operator chained, the nodes listed last to first
    chain = [h.make_node("Identity", ["x"], ["i1"]),
             h.make_node("Transpose", ["i1"], ["t1"], perm=[0, 1, 3, 2]),
             h.make_node("Flatten", ["t1"], ["fl"], axis=2),
             h.make_node("Unsqueeze", ["fl", "ax0"], ["u1"]),
             h.make_node("Squeeze", ["u1", "ax0"], ["s1"]),
             h.make_node("Slice", ["s1", "st", "en", "axs"], ["sl"]),
             h.make_node("Split", ["sl", "sp"], ["p1", "p2"], axis=1),
             h.make_node("Concat", ["p2", "p1", "p2"], ["cc"], axis=1),
             h.make_node("Reshape", ["cc", "m1"], ["rs"])]
    inits = [i64("ax0", [0]), i64("st", [1]), i64("en", [1 << 40]), i64("axs", [1]),
             i64("m1", [-1]), i64("sp", [7, 40])]  # 6x8: 47 samples after the Slice
    m["chain_out_of_order"] = model(tail("rs", chain[::-1]), inits=inits, check=False)
    # elem_type as a non-canonical varint (0x84 0x80 0x00), in a second graph field
    m["noncanonical_elem_type"] = picture_in_second_graph(b"\x84\x80\x00")
    # elem_type FLOAT then UINT16 (the last one counts)
    m["float_then_uint16"] = picture_in_second_graph(b"\x01", b"\x04")
    return m


@pytest.mark.parametrize("name", sorted(narrowed_models()))
def test_a_model_that_only_moves_and_casts_narrows_and_agrees(tmp_path, name):
    """The 8-bit frames go UINT8 (two sessions: UINT8 and UINT16), the scores are bit for bit
    the session as opened's."""
    path = write(tmp_path, name, narrowed_models()[name])
    runs = compare(path, CLIP)
    assert (runs.uint8, runs.fixed, runs.specialised) == (3, 4, 2), runs


def test_uint16_that_protobuf_truncates_is_not_narrowed(tmp_path):
    """elem_type UINT16, then 2^32 + 4 (ONNX Runtime's int32 reads 4 again; the scanner reads
    no type): the rule must not narrow what it cannot see, and the model still scores."""
    path = write(tmp_path, "big", picture_in_second_graph(b"\x04", b"\x84\x80\x80\x80\x10"))
    runs = compare(path, CLIP)
    assert runs.uint8 == 0 and runs.fixed == 4, runs


def moving_op(op, opset):
    if op == "Slice" and opset < 10:
        return [h.make_node("Slice", ["x"], ["y"], starts=[1], ends=[1000], axes=[3])], []
    if op == "Slice":
        return [h.make_node("Slice", ["x", "s", "e", "a"], ["y"])], \
            [i64("s", [1]), i64("e", [1000]), i64("a", [3])]
    if op in ("Squeeze", "Unsqueeze") and opset < 13:
        return [h.make_node(op, ["x"], ["y"], axes=[0])], []
    if op in ("Squeeze", "Unsqueeze"):
        return [h.make_node(op, ["x", "ax"], ["y"])], [i64("ax", [0])]
    if op == "Split" and opset < 13:
        return [h.make_node("Split", ["x"], ["y", "z"], axis=2, split=[2, 4])], []
    if op == "Split" and opset < 18:
        return [h.make_node("Split", ["x", "sp"], ["y", "z"], axis=2)], [i64("sp", [2, 4])]
    if op == "Split":
        return [h.make_node("Split", ["x"], ["y", "z"], axis=2, num_outputs=2)], []
    return {"Concat": [h.make_node("Concat", ["x", "x"], ["y"], axis=2)],
            "Reshape": [h.make_node("Reshape", ["x", "sh"], ["y"])],
            "Flatten": [h.make_node("Flatten", ["x"], ["y"], axis=2)],
            "Transpose": [h.make_node("Transpose", ["x"], ["y"], perm=[0, 1, 3, 2])],
            "Identity": [h.make_node("Identity", ["x"], ["y"])]}[op], \
        [i64("sh", [-1])] if op == "Reshape" else []


@pytest.mark.parametrize("op", ["Concat", "Slice", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
                                "Transpose", "Identity", "Split"])
@pytest.mark.parametrize("opset", [9, 11, 13, 18, 21])
def test_every_moving_operator_takes_uint8_at_every_opset(tmp_path, op, opset):
    """ONNX Runtime makes the UINT8 session of each operator the rule lets through, at the
    opsets whose signatures differ (attributes before inputs): the 8-bit runs go UINT8 and
    score as UINT16 (a refused UINT8 session would stop specialising, with a reason)."""
    nodes, inits = moving_op(op, opset)
    path = write(tmp_path, f"{op}{opset}", model(tail("y", nodes), inits=inits, opset=opset,
                                                 check=False))
    runs = compare(path, [{"size": [6, 8], "bpcs": [8, 8, 10]}])
    assert (runs.uint8, runs.fixed, runs.reason) == (2, 3, ""), runs


# --- clips ---------------------------------------------------------------------------------

def history_model(tmp_path):
    """x, p1 (one frame back), p2 (two back), concatenated then cast."""
    data = model(tail("cc", [h.make_node("Concat", ["x", "p1", "p2"], ["cc"], axis=2)]),
                 inputs=[pic("x"), pic("p1"), pic("p2")])
    return write(tmp_path, "hist", data, input_names=["x"],
                 input_sources={"p1": {"picture": "distorted", "offset": -1},
                                "p2": {"picture": "distorted", "offset": -2}})


@pytest.mark.parametrize("threads", [1, 3])
def test_a_past_picture_two_frames_back_that_is_not_8bit_keeps_uint16(tmp_path, threads):
    """A frame goes UINT8 only when it and both past pictures it reads are 8-bit: of
    8,10,8,8,8,12,8,8 only frames 0 and 4 (frame 3 reads frame 1 two back, frame 7 frame 5)."""
    runs = compare(history_model(tmp_path), [{"size": [6, 8],
                                              "bpcs": [8, 10, 8, 8, 8, 12, 8, 8]}],
                   threads=threads)
    assert (runs.uint8, runs.fixed) == (2, 8), runs


def test_resized_frames_keep_uint16(tmp_path):
    """W fixed at 8, H native, resized bilinear: a 5x8 clip goes UINT8 at 8 bits, a 5x13 one
    (resized, rounded back to samples) never does, on the same specialised sessions."""
    data = model(tail("t", [h.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2])]),
                 inputs=[pic("x", W=8)])
    path = write(tmp_path, "rz", data, resize="bilinear")
    runs = compare(path, [{"size": [5, 8], "bpcs": [8, 8, 10]},
                          {"size": [5, 13], "bpcs": [8, 8, 10]}])
    assert (runs.uint8, runs.fixed, runs.specialised) == (2, 6, 2), runs


def test_odd_sizes_past_the_sessions_a_model_specialises(tmp_path):
    """Four odd sizes at 8, 9, 8 bits: each size wants a UINT8 and a UINT16 session, so the
    first two sizes fill the four; the rest go as opened, widened, and score the same."""
    path = write(tmp_path, "cs", narrowed_models()["concat_self"])
    runs = compare(path, [{"size": s, "bpcs": [8, 9, 8]}
                          for s in ([7, 9], [1, 49], [49, 1], [3, 17])])
    assert (runs.uint8, runs.fixed, runs.as_opened, runs.specialised) == (4, 6, 6, 4), runs


def budget_scores(path, budget):
    try:
        got, _ = score(path, [{"size": [20, 30], "bpcs": [10, 10, 10, 10]}],
                       {"max_memory_bytes": budget, **NARROW})
        return got
    except vmafdnn.MemoryBudgetError:
        return None


def test_a_10bit_clip_scores_in_the_budget_it_scored_in_before(tmp_path, monkeypatch):
    """The smallest budget (in 500-byte steps) in which a 10-bit clip scores with
    VMAFDNN_UINT8=0 scores it too with UINT8 on: the clip never feeds UINT8, so the model's
    UINT8 copy is never made nor charged (it once was, at open)."""
    path = write(tmp_path, "cs", narrowed_models()["concat_self"])
    monkeypatch.setenv("VMAFDNN_UINT8", "0")
    budget = next(b for b in range(4000, 60000, 500) if budget_scores(path, b) is not None)
    want = budget_scores(path, budget)
    monkeypatch.setenv("VMAFDNN_UINT8", "1")
    assert budget_scores(path, budget) == want


def test_an_8bit_clip_in_tight_budgets_scores_or_says_so(tmp_path, monkeypatch):
    """An 8-bit clip in every budget around the smallest in which it scores with
    VMAFDNN_UINT8=0: with UINT8 on, wherever the room for the model's UINT8 copy, its session
    or a run is refused, the clip either fails with MemoryBudgetError or scores exactly as
    UINT16 does (frames widened to the UINT16 sessions where the copy was refused); and from
    that budget on it scores."""
    path = write(tmp_path, "cs", narrowed_models()["concat_self"])
    clips = [{"size": [20, 30], "bpcs": [8, 8, 8, 8]}]
    monkeypatch.setenv("VMAFDNN_UINT8", "0")

    def at(budget):
        try:
            return score(path, clips, {"max_memory_bytes": budget, **NARROW})
        except vmafdnn.MemoryBudgetError:
            return None
    budget = next(b for b in range(4000, 60000, 500) if at(b) is not None)
    want, _ = at(budget)
    monkeypatch.setenv("VMAFDNN_UINT8", "1")
    for room in range(budget - 4000, budget + 4000, 100):
        got = at(room)
        assert (got is None and room < budget) or got[0] == want, room
