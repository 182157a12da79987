"""Picture inputs that take the frame's own samples (UINT16), not normalised fp32.

A tiny model whose picture inputs are UINT16 is fed the samples as the caller
gave them (0..2^bpc-1), resized ones rounded back to samples, past pictures
kept as samples; a session's UINT16 input takes whole numbers only; and a
sidecar form may take samples where its model takes normalised pictures
(the VMAF features' CPU form does). Each samples model here has a FLOAT twin
that computes the same from the normalised picture, so the two paths are
compared on the same frames.
"""
import errno
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vmafdnn

F32, U16 = TensorProto.FLOAT, TensorProto.UINT16


def save(tmp_path, name, nodes, inputs, outputs, sidecar=None):
    """The model (Reshape target "one" = [1] included) and its sidecar."""
    one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=[one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    if sidecar is not None:
        (tmp_path / f"{name}.json").write_text(json.dumps(sidecar))
    return str(path)


def picture(name, elem, h="H", w="W"):
    return helper.make_tensor_value_info(name, elem, [1, 1, h, w])


def as_samples(x, out, nodes, elem):
    """Appends nodes: `out` = x as fp32 samples; a FLOAT x (normalised) becomes
    floor(x * (2^bpc - 1) + 0.5), what the library rounds resized planes to."""
    if elem == U16:
        nodes.append(helper.make_node("Cast", [x], [out], to=F32))
        return
    nodes += [helper.make_node("Constant", [], [out + "_two"], value_float=2.0),
              helper.make_node("Constant", [], [out + "_one"], value_float=1.0),
              helper.make_node("Constant", [], [out + "_half"], value_float=0.5),
              helper.make_node("Pow", [out + "_two", "bpc"], [out + "_p"]),
              helper.make_node("Sub", [out + "_p", out + "_one"], [out + "_max"]),
              helper.make_node("Mul", [x, out + "_max"], [out + "_s"]),
              helper.make_node("Add", [out + "_s", out + "_half"], [out + "_r"]),
              helper.make_node("Floor", [out + "_r"], [out])]


def mean_model(tmp_path, name, elem, size=("H", "W"), resize=None):
    """x -> score = mean of x's samples (bpc fed by the sidecar)."""
    nodes = []
    as_samples("x", "xs", nodes, elem)
    nodes += [helper.make_node("ReduceMean", ["xs"], ["m"], keepdims=0),
              helper.make_node("Reshape", ["m", "one"], ["score"])]
    graph_inputs = [picture("x", elem, *size),
                    helper.make_tensor_value_info("bpc", F32, [1])]
    sidecar = {"output_keys": [name], "input_sources": {"bpc": {"value": "bpc"}}}
    if size == ("H", "W"):
        sidecar["native_resolution"] = True
    if resize:
        sidecar["resize"] = resize
    return save(tmp_path, name, nodes, graph_inputs,
                [helper.make_tensor_value_info("score", F32, [1])], sidecar)


def motion_model(tmp_path, name, elem):
    """x, prev (x one frame back) -> score = mean |x - prev| in samples."""
    nodes = []
    as_samples("x", "xs", nodes, elem)
    as_samples("prev", "ps", nodes, elem)
    nodes += [helper.make_node("Sub", ["xs", "ps"], ["d"]),
              helper.make_node("Abs", ["d"], ["a"]),
              helper.make_node("ReduceMean", ["a"], ["m"], keepdims=0),
              helper.make_node("Reshape", ["m", "one"], ["score"])]
    path = save(tmp_path, name, nodes,
                [picture("x", elem), picture("prev", elem),
                 helper.make_tensor_value_info("bpc", F32, [1])],
                [helper.make_tensor_value_info("score", F32, [1])],
                {"native_resolution": True, "output_keys": [name], "input_names": ["x"],
                 "input_sources": {"prev": {"picture": "distorted", "offset": -1},
                                   "bpc": {"value": "bpc"}}})
    return path


def frames(n, h, w, bpc, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bpc == 8 else np.uint16
    return [rng.integers(0, 1 << bpc, (h, w)).astype(dtype) for _ in range(n)]


def score(paths, clip, bpc, threads=1):
    with vmafdnn.Context(threads=threads, device="cpu") as ctx:
        infos = [ctx.use_model(p) for p in paths]
        for i, d in enumerate(clip):
            ctx.read_pictures(None, d, i, bitdepth=None if bpc == 8 else bpc)
        ctx.flush()
        return infos, {name: [ctx.feature(name, i) for i in range(len(clip))]
                       for name in ctx.features}


@pytest.mark.parametrize("bpc", [8, 10, 16])
def test_a_samples_model_reads_the_samples_as_given(tmp_path, bpc):
    clip = frames(3, 9, 13, bpc)
    samples = mean_model(tmp_path, "s", U16)
    twin = mean_model(tmp_path, "f", F32)
    _, got = score([samples, twin], clip, bpc)
    # A float32 ReduceMean of 117 whole samples: exact to fp32 rounding.
    assert got["s"] == pytest.approx([float(np.mean(d, dtype=np.float64)) for d in clip],
                                     rel=1e-6)
    assert got["s"] == pytest.approx(got["f"], rel=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_resized_pictures_are_rounded_back_to_samples(tmp_path, mode):
    clip = frames(2, 12, 10, 10, seed=3)
    samples = mean_model(tmp_path, "s", U16, size=(5, 7), resize=mode)
    twin = mean_model(tmp_path, "f", F32, size=(5, 7), resize=mode)
    _, got = score([samples, twin], clip, 10)
    assert got["s"] == pytest.approx(got["f"], rel=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_past_pictures_are_kept_as_samples(tmp_path, threads):
    clip = frames(5, 6, 8, 10, seed=1)
    samples = motion_model(tmp_path, "s", U16)
    twin = motion_model(tmp_path, "f", F32)
    _, got = score([samples, twin], clip, 10, threads=threads)
    want = [0.0] + [float(np.mean(np.abs(clip[i].astype(np.int64) - clip[i - 1])))
                    for i in range(1, len(clip))]
    assert got["s"] == pytest.approx(want, rel=1e-6)
    assert got["s"] == pytest.approx(got["f"], rel=1e-6)


def test_samples_and_fp32_models_share_a_context(tmp_path):
    """The fp32 planes are still made for the models that read them."""
    clip = frames(2, 16, 16, 8, seed=2)
    ref = frames(2, 16, 16, 8, seed=9)
    samples = mean_model(tmp_path, "s", U16)
    with vmafdnn.Context(threads=1, device="cpu") as ctx:
        ctx.use_model(samples)
        ctx.use_model("psnr_y")
        for i in range(2):
            ctx.read_pictures(ref[i], clip[i], i)
        both = [ctx.feature("psnr_y", i) for i in range(2)]
        mean = [ctx.feature("s", i) for i in range(2)]
    with vmafdnn.Context(threads=1, device="cpu") as ctx:
        ctx.use_model("psnr_y")
        for i in range(2):
            ctx.read_pictures(ref[i], clip[i], i)
        alone = [ctx.feature("psnr_y", i) for i in range(2)]
    assert both == alone
    assert mean == pytest.approx([float(np.mean(d, dtype=np.float64)) for d in clip], rel=1e-6)


def test_picture_inputs_take_samples_all_alike(tmp_path):
    nodes = [helper.make_node("Cast", ["a"], ["af"], to=F32),
             helper.make_node("Sub", ["af", "b"], ["d"]),
             helper.make_node("ReduceMean", ["d"], ["m"], keepdims=0),
             helper.make_node("Reshape", ["m", "one"], ["score"])]
    path = save(tmp_path, "mixed", nodes, [picture("a", U16, 4, 4), picture("b", F32, 4, 4)],
                [helper.make_tensor_value_info("score", F32, [1])],
                {"input_names": ["a", "b"]})
    with pytest.raises(vmafdnn.UnsupportedError) as e:
        vmafdnn.Context(device="cpu").use_model(path)
    assert e.value.errno == errno.ENOTSUP
    assert '"a" is UINT16' in str(e.value) and "all alike" in str(e.value)


def test_only_picture_inputs_take_samples(tmp_path):
    nodes = [helper.make_node("Cast", ["k"], ["kf"], to=F32),
             helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("Reshape", ["m", "one"], ["mr"]),
             helper.make_node("Add", ["mr", "kf"], ["score"])]
    path = save(tmp_path, "scalar16", nodes,
                [picture("x", F32, 4, 4), helper.make_tensor_value_info("k", U16, [1])],
                [helper.make_tensor_value_info("score", F32, [1])],
                {"input_sources": {"k": {"value": "bpc"}}})
    with pytest.raises(vmafdnn.UnsupportedError) as e:
        vmafdnn.Context(device="cpu").use_model(path)
    assert '"k"' in str(e.value) and "FLOAT" in str(e.value)


# --- a session's UINT16 input ------------------------------------------------------------------

@pytest.fixture
def sum16(tmp_path):
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=F32),
             helper.make_node("ReduceSum", ["xf"], ["y"], keepdims=0)]
    return save(tmp_path, "sum16", nodes, [helper.make_tensor_value_info("x", U16, [4])],
                [helper.make_tensor_value_info("y", F32, [])])


def test_a_uint16_input_takes_whole_numbers(sum16):
    with vmafdnn.Session(sum16, device="cpu") as s:
        assert s.inputs[0].dtype == np.uint16
        values = [0, 1, 1023, 65535]
        for feed in (np.array(values, np.uint16), np.array(values, np.float32)):
            assert float(s.run({"x": feed})["y"]) == sum(values)
        assert float(s.run({"x": np.array([1, 2, 3, 255], np.uint8)})["y"]) == 261


@pytest.mark.parametrize("bad", [0.5, -1.0, 65536.0, float("nan"), float("inf")])
def test_a_uint16_input_refuses_what_it_cannot_hold(sum16, bad):
    with vmafdnn.Session(sum16, device="cpu") as s:
        with pytest.raises(vmafdnn.RangeError) as e:
            s.run({"x": np.array([0, 1, bad, 3], np.float32)})
    assert e.value.errno == errno.ERANGE
    assert '"x" is UINT16: element 2' in str(e.value)


def test_a_uint16_input_refuses_other_arrays(sum16):
    with vmafdnn.Session(sum16, device="cpu") as s:
        with pytest.raises(vmafdnn.InvalidArgumentError, match="uint8 or uint16"):
            s.run({"x": np.zeros(4, np.int32)})


# --- forms -----------------------------------------------------------------------------------

def test_a_form_may_take_samples_where_its_model_takes_fp32(tmp_path, monkeypatch):
    clip = frames(3, 10, 12, 10, seed=4)
    model = mean_model(tmp_path, "m", F32)
    form = mean_model(tmp_path, "m_samples", U16)
    sidecar = json.loads((tmp_path / "m.json").read_text())
    sidecar["forms"] = {"CPU": "m_samples.onnx"}
    (tmp_path / "m.json").write_text(json.dumps(sidecar))
    infos, got = score([model], clip, 10)
    assert infos[0].form == form
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "0")
    infos, own = score([model], clip, 10)
    assert infos[0].form is None
    assert got["m"] == pytest.approx(own["m"], rel=1e-6)


def test_a_form_taking_fp32_where_its_model_takes_samples_is_refused(tmp_path):
    model = mean_model(tmp_path, "m", U16)
    mean_model(tmp_path, "m_fp32", F32)
    sidecar = json.loads((tmp_path / "m.json").read_text())
    sidecar["forms"] = {"CPU": "m_fp32.onnx"}
    (tmp_path / "m.json").write_text(json.dumps(sidecar))
    with pytest.raises(vmafdnn.InvalidArgumentError, match="other inputs or outputs"):
        vmafdnn.Context(device="cpu").use_model(model)


def normalised_mean_model(tmp_path, name, samples, sidecar):
    """score = mean of the normalised picture: from FLOAT x (the model: no bpc input), or from
    UINT16 samples and bpc, divided by 2^bpc - 1 in the graph (a samples form, as the built-ins'
    gen_builtin_models.samples_form makes them)."""
    nodes, inputs = [], [picture("x", U16 if samples else F32)]
    x = "x"
    if samples:
        peaks = helper.make_tensor("peaks", F32, [17], [2.0 ** b - 1 for b in range(17)])
        nodes += [helper.make_node("Constant", [], ["peaks"], value=peaks),
                  helper.make_node("Cast", ["bpc"], ["bpc_i"], to=TensorProto.INT64),
                  helper.make_node("Gather", ["peaks", "bpc_i"], ["peak"], axis=0),
                  helper.make_node("Cast", ["x"], ["xf"], to=F32),
                  helper.make_node("Div", ["xf", "peak"], ["xn"])]
        inputs.append(helper.make_tensor_value_info("bpc", F32, [1]))
        x = "xn"
    nodes += [helper.make_node("ReduceMean", [x], ["m"], keepdims=0),
              helper.make_node("Reshape", ["m", "one"], ["score"])]
    return save(tmp_path, name, nodes, inputs,
                [helper.make_tensor_value_info("score", F32, [1])], sidecar)


def bpc_form_pair(tmp_path, sources=None, forms=None):
    """A FLOAT model without bpc and its samples form, which adds bpc; the model's sidecar
    feeds bpc (sources) and names the form for the CPU (forms)."""
    sidecar = {"native_resolution": True, "output_keys": ["m"],
               "input_sources": sources or {"bpc": {"value": "bpc"}},
               "forms": forms or {"CPU": "m_samples.onnx"}}
    model = normalised_mean_model(tmp_path, "m", False, sidecar)
    form = normalised_mean_model(tmp_path, "m_samples", True,
                                 {"native_resolution": True, "output_keys": ["m"],
                                  "input_sources": {"bpc": {"value": "bpc"}}})
    return model, form


@pytest.mark.parametrize("threads", [1, 2])
def test_a_form_may_add_the_bpc_its_model_does_not_take(tmp_path, monkeypatch, threads):
    """The form reads bpc, which the model does not declare: the model's sidecar feeds it
    (a "value" source may name an input of a form only), across a change of bit depth, and the
    form gives the model's values (one correctly rounded division, as the library's)."""
    model, form = bpc_form_pair(tmp_path)
    clip = frames(3, 10, 12, 8, seed=5) + frames(3, 10, 12, 10, seed=6)

    def run():
        with vmafdnn.Context(threads=threads, device="cpu") as ctx:
            info = ctx.use_model(model)
            for i, d in enumerate(clip):
                ctx.read_pictures(None, d, i, bitdepth=8 if i < 3 else 10)
            ctx.flush()
            return info.form, [ctx.feature("m", i) for i in range(len(clip))]

    used, got = run()
    assert used == form
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "0")
    used, own = run()
    assert used is None
    assert got == own
    assert got[0] == pytest.approx(float(np.mean(clip[0] / 255.0)), rel=1e-6)
    assert got[5] == pytest.approx(float(np.mean(clip[5] / 1023.0)), rel=1e-6)


def test_a_value_source_no_form_reads_is_refused(tmp_path):
    """A misspelt "value" source is still caught where a sidecar names forms: neither the
    model nor any form declares it."""
    model, _ = bpc_form_pair(tmp_path, sources={"bpc": {"value": "bpc"},
                                                "bcp": {"value": "bpc"}})
    for forms in ("0", "1"):
        with pytest.raises(vmafdnn.InvalidArgumentError,
                           match='names "bcp", which is not an input of the model nor of its '
                                 'forms') as e:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("VMAFDNN_MODEL_FORMS", forms)
                vmafdnn.Context(device="cpu").use_model(model)
        assert e.value.errno == errno.EINVAL


def test_a_model_copied_without_its_forms_scores_where_none_is_used(tmp_path, monkeypatch):
    """The bpc source is taken on trust for a form that cannot be read: the model scores where
    no form is used (ORT's CPU EP here), and fails saying why where that form would score."""
    model, _ = bpc_form_pair(tmp_path, forms={"CUDA": "gone.onnx"})
    with vmafdnn.Context(device="cpu") as ctx:
        assert ctx.use_model(model).form is None
        ctx.read_pictures(None, frames(1, 10, 12, 8)[0], 0)
        ctx.flush()
        assert 0.0 < ctx.feature("m", 0) < 1.0
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    with pytest.raises(vmafdnn.DnnError, match="its form for CUDA, .*gone.onnx, cannot be used") \
            as e:
        vmafdnn.Context(device="cpu").use_model(model)
    assert e.value.errno == errno.ENOENT


def test_a_form_may_add_only_inputs_the_sidecar_feeds_one_number(tmp_path):
    """Inputs a form adds after its model's must each be one number the sidecar feeds: another
    picture does not fit the model, and a number no source feeds is refused by name."""
    model, _ = bpc_form_pair(tmp_path)
    # a second picture after the model's
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]),
             helper.make_node("ReduceMean", ["s"], ["m"], keepdims=0),
             helper.make_node("Reshape", ["m", "one"], ["score"])]
    save(tmp_path, "m_samples", nodes, [picture("x", F32), picture("y", F32)],
         [helper.make_tensor_value_info("score", F32, [1])])
    with pytest.raises(vmafdnn.InvalidArgumentError, match="other inputs or outputs") as e:
        vmafdnn.Context(device="cpu").use_model(model)
    assert e.value.errno == errno.EINVAL
    # one number, but "gain", which no source feeds
    nodes = [helper.make_node("Mul", ["x", "gain"], ["s"]),
             helper.make_node("Mul", ["s", "bpc"], ["t"]),
             helper.make_node("ReduceMean", ["t"], ["m"], keepdims=0),
             helper.make_node("Reshape", ["m", "one"], ["score"])]
    save(tmp_path, "m_samples", nodes,
         [picture("x", F32), helper.make_tensor_value_info("bpc", F32, [1]),
          helper.make_tensor_value_info("gain", F32, [1])],
         [helper.make_tensor_value_info("score", F32, [1])])
    with pytest.raises(vmafdnn.InvalidArgumentError, match='adds input "gain", which the '
                       'sidecar\'s "input_sources" does not feed a "value"') as e:
        vmafdnn.Context(device="cpu").use_model(model)
    assert e.value.errno == errno.EINVAL


# --- a clip whose bit depth changes ---------------------------------------------------------

def rescaled(samples, from_bpc, to_bpc):
    """Samples of one depth as the library hands them to a model of frames of another: the
    normalised value (fp32, as vdnn_plane_normalise makes it) rounded half up at the new depth."""
    norm = (samples.astype(np.float64) * (1.0 / ((1 << from_bpc) - 1))).astype(np.float32)
    return np.floor(norm * np.float32((1 << to_bpc) - 1) + np.float32(0.5)).astype(np.int64)


@pytest.mark.parametrize("threads", [1, 2])
def test_past_pictures_follow_a_change_of_bit_depth(tmp_path, threads):
    """A past picture is kept as samples of its own depth; a later frame of another depth
    reads it at its own depth, as the FLOAT twin reads the normalised picture (no ties: 255
    and 1023 share no factor 2). Before, the old samples came as they were: a 10-bit picture
    read as 8-bit samples by the next 8-bit frame (motion 391 where 0.2 was right)."""
    rng = np.random.default_rng(6)
    ten = [rng.integers(0, 1024, (6, 8)).astype(np.uint16) for _ in range(2)]
    eight = rng.integers(0, 256, (6, 8)).astype(np.uint8)
    samples = motion_model(tmp_path, "s", U16)
    twin = motion_model(tmp_path, "f", F32)
    with vmafdnn.Context(threads=threads, device="cpu") as ctx:
        ctx.use_model(samples)
        ctx.use_model(twin)
        ctx.read_pictures(None, ten[0], 0, bitdepth=10)
        ctx.read_pictures(None, eight, 1)
        ctx.read_pictures(None, ten[1], 2, bitdepth=10)
        ctx.flush()
        got = {name: [ctx.feature(name, i) for i in range(3)] for name in ("s", "f")}
    want = [0.0,
            float(np.mean(np.abs(eight.astype(np.int64) - rescaled(ten[0], 10, 8)))),
            float(np.mean(np.abs(ten[1].astype(np.int64) - rescaled(eight, 8, 10))))]
    assert got["s"] == pytest.approx(want, rel=1e-6)
    assert got["s"] == pytest.approx(got["f"], rel=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_vmaf_motion_across_a_change_of_bit_depth(threads):
    """The VMAF features' CPU form takes samples: its motion reads the previous reference at
    the depth of the frame scored, so a clip going 10 -> 8 bits scores (before: the
    MotionInteger kernel refused the 10-bit past picture as 8-bit samples), as if the
    previous picture had been given at 8 bits."""
    rng = np.random.default_rng(7)
    ref10 = rng.integers(0, 1024, (64, 80)).astype(np.uint16)
    ref8 = rng.integers(0, 256, (64, 80)).astype(np.uint8)
    dist8 = np.clip(ref8.astype(np.int64) + rng.integers(-9, 9, ref8.shape), 0, 255)
    dist8 = dist8.astype(np.uint8)

    def motion(first, bitdepth):
        with vmafdnn.Context(threads=threads, device="cpu") as ctx:
            ctx.use_model("vmaf")
            ctx.read_pictures(first, first, 0, bitdepth=bitdepth)
            ctx.read_pictures(ref8, dist8, 1)
            ctx.flush()
            return ctx.feature("motion", 1), ctx.feature("vmaf", 1)

    got = motion(ref10, 10)
    assert got == motion(rescaled(ref10, 10, 8).astype(np.uint8), None)
    assert got[0] > 0


# --- a model file changed after its attach ----------------------------------------------------

@pytest.mark.parametrize("change", ["plane", "past_picture"])
def test_a_frame_worker_refuses_a_copy_that_reads_other_planes(tmp_path, change):
    """Frame workers open their own copies of the models from the files, and the frames
    carry only the planes the attached models read. A sidecar rewritten after the attach to
    read another plane (the U plane, or the past reference where the past distorted picture
    was kept) must fail the copy as a change of keys does; before, the copy read a plane the
    frame did not carry: a samples model copied from NULL (segmentation fault), as a FLOAT
    model resized from NULL."""
    if change == "plane":
        path = mean_model(tmp_path, "s", U16, size=(4, 4), resize="bilinear")
    else:
        path = motion_model(tmp_path, "s", U16)
    sidecar_path = tmp_path / "s.json"
    sidecar = json.loads(sidecar_path.read_text())
    rng = np.random.default_rng(8)
    y = rng.integers(0, 256, (8, 8)).astype(np.uint8)
    u = rng.integers(0, 256, (4, 4)).astype(np.uint8)
    frame = vmafdnn.video.Frame(y, u, u.copy(), 8, 0, "420")
    with vmafdnn.Context(threads=2, device="cpu") as ctx:
        ctx.use_model(path)
        if change == "plane":
            sidecar["input_sources"]["x"] = {"picture": "distorted", "plane": "u"}
        else:
            sidecar["input_sources"]["prev"]["picture"] = "reference"
        sidecar_path.write_text(json.dumps(sidecar))
        with pytest.raises(vmafdnn.DnnError) as e:
            for i in range(3):
                ctx.read_pictures(None, frame, i)
            ctx.flush()
    assert e.value.errno == errno.EIO
    assert "opened again" in str(e.value)
