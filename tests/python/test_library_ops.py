"""The library's own ONNX operators (domain org.vmafdnn, csrc/custom_ops.h) through a session:
registered on every session, admitted by the scanner and nothing else of their domain, every
input checked before a kernel sees it (a third-party model may use them), and the forms
mechanism that swaps VMAF's features graph for them on ORT's CPU EP."""
import errno
import json
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

import vmafdnn

DOMAIN = "org.vmafdnn"


def ops_model(ops=("VifInteger", "AdmInteger", "MotionInteger"), domain=DOMAIN, egl=None):
    """reference, distorted: float [1,1,H,W] (samples / (2^bpc - 1)), bpc: float [1] ->
    the outputs of the named operators, through Samples."""
    nodes = [helper.make_node("Samples", [x, "bpc"], [x + "_s"], domain=DOMAIN)
             for x in ("reference", "distorted")]
    outputs = []
    n_out = {"VifInteger": 4, "AdmInteger": 5, "MotionInteger": 1}
    attrs = {} if egl is None else {"enhn_gain_limit": float(egl)}
    for op in ops:
        names = [f"{op}_{i}" for i in range(n_out.get(op, 1))]
        nodes.append(helper.make_node(op, ["reference_s", "distorted_s", "bpc"], names,
                                      domain=domain,
                                      **(attrs if op != "MotionInteger" else {})))
        outputs += names
    frame = [1, 1, "H", "W"]
    graph = helper.make_graph(
        nodes, "library_ops",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, frame)
         for n in ("reference", "distorted")]
        + [helper.make_tensor_value_info("bpc", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(DOMAIN, 1),
                                                    helper.make_opsetid(domain, 1)])
    model.ir_version = 8
    return model


def planes(h=72, w=96, seed=0, bpc=8):
    rng = np.random.default_rng(seed)
    peak = 2 ** bpc - 1
    ref = rng.integers(0, peak + 1, (1, 1, h, w)).astype(np.float32)
    dist = np.clip(ref + rng.normal(0, peak / 40, ref.shape), 0, peak).round().astype(np.float32)
    return ref / peak, dist / peak


def feeds(ref, dist, bpc=8):
    return {"reference": ref, "distorted": dist, "bpc": np.array([bpc], np.float32)}


@pytest.fixture(scope="module")
def ops_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("ops") / "ops.onnx"
    path.write_bytes(ops_model().SerializeToString())
    return str(path)


def test_identical_planes_score_perfect(ops_path):
    ref, _ = planes()
    with vmafdnn.Session(ops_path, device="cpu") as s:
        out = s.run(feeds(ref, ref))
    for i in range(4):
        assert out[f"VifInteger_{i}"][0] == pytest.approx(1.0, abs=1e-6)
    # libvmaf's integer ADM is 1 within its fixed point (~1e-5) on identical planes
    assert out["AdmInteger_0"][0] == pytest.approx(1.0, abs=1e-4)
    assert out["MotionInteger_0"][0] == 0.0


@pytest.mark.parametrize("bpc", [8, 10, 12, 16])
def test_every_depth_runs_and_distortion_lowers_the_scores(ops_path, bpc):
    ref, dist = planes(bpc=bpc)
    with vmafdnn.Session(ops_path, device="cpu") as s:
        out = s.run(feeds(ref, dist, bpc))
    for i in range(4):
        assert 0.0 < out[f"VifInteger_{i}"][0] < 1.0
    assert 0.0 < out["AdmInteger_0"][0] < 1.0
    assert out["MotionInteger_0"][0] > 0.0


def test_the_gain_limit_attribute_is_read(tmp_path):
    """An enhanced (sharpened) distorted picture scores above 1 without the limit... and at most
    1 with libvmaf's neg limit of 1.0."""
    ref, _ = planes(seed=3)
    blurred = ref.copy()
    blurred[..., 1:-1, 1:-1] = (ref[..., :-2, 1:-1] + ref[..., 2:, 1:-1] + ref[..., 1:-1, :-2]
                                + ref[..., 1:-1, 2:] + 4 * ref[..., 1:-1, 1:-1]) / 8
    blurred = (blurred * 255).round() / 255
    scores = {}
    for egl in (100.0, 1.0):
        path = tmp_path / f"egl{egl}.onnx"
        path.write_bytes(ops_model(("VifInteger",), egl=egl).SerializeToString())
        with vmafdnn.Session(str(path), device="cpu") as s:
            # the blurred picture as reference, the original as the "enhanced" distorted one
            scores[egl] = s.run(feeds(blurred.astype(np.float32), ref))["VifInteger_0"][0]
    assert scores[1.0] <= 1.0 + 1e-6
    assert scores[100.0] > scores[1.0]


@pytest.mark.parametrize("bad, fragment", [
    ({"reference": 1.5}, "outside [0, 1]"),
    ({"reference": np.nan}, "outside [0, 1]"),
    ({"distorted": -0.25}, "outside [0, 1]"),
    ({"bpc": 7}, "bpc"),
    ({"bpc": 17}, "bpc"),
    ({"bpc": 8.5}, "bpc"),
    ({"bpc": np.nan}, "bpc"),
])
def test_hostile_values_fail_the_run_naming_what(ops_path, bad, fragment):
    ref, dist = planes()
    f = feeds(ref.copy(), dist.copy())
    for name, value in bad.items():
        if name == "bpc":
            f["bpc"] = np.array([value], np.float32)
        else:
            f[name][0, 0, 3, 5] = value
    with vmafdnn.Session(ops_path, device="cpu") as s:
        with pytest.raises(vmafdnn.DnnError) as e:
            s.run(f)
    assert e.value.errno == errno.ENOEXEC
    assert fragment in str(e.value) and DOMAIN in str(e.value)


def test_planes_of_two_sizes_are_refused(ops_path):
    ref, _ = planes(72, 96)
    _, dist = planes(72, 98)
    with vmafdnn.Session(ops_path, device="cpu") as s:
        with pytest.raises(vmafdnn.DnnError, match="differ in size"):
            s.run(feeds(ref, dist))


@pytest.mark.parametrize("h, w", [(1, 1), (8, 8), (33, 2), (2, 33)])
def test_planes_too_small_for_a_kernel_are_refused_not_read_past(ops_path, h, w):
    ref, dist = planes(h, w)
    with vmafdnn.Session(ops_path, device="cpu") as s:
        with pytest.raises(vmafdnn.DnnError) as e:
            s.run(feeds(ref, dist))
    assert e.value.errno == errno.ENOEXEC and "plane" in str(e.value)
    assert "needs planes of at least" in str(e.value)  # not a bare "Invalid argument"


def test_kernel_memory_is_charged_to_the_budget(ops_path):
    """Room for ORT's tensors (the two uint16 planes Samples makes) and not for the kernels'
    own buffers: the run fails with -EDQUOT, as for any block past the budget."""
    h, w = 360, 640
    ref, dist = planes(h, w)
    with vmafdnn.Session(ops_path, device="cpu", max_memory_bytes=2 * h * w * 2 + 4096) as s:
        with pytest.raises(vmafdnn.DnnError) as e:
            s.run(feeds(ref, dist))
    assert e.value.errno == errno.EDQUOT
    with vmafdnn.Session(ops_path, device="cpu", max_memory_bytes=64 << 20) as s:
        assert s.run(feeds(ref, dist))["AdmInteger_0"][0] < 1.0


def test_sessions_on_threads_agree(ops_path):
    import concurrent.futures
    ref, dist = planes(144, 176, seed=5)
    with vmafdnn.Session(ops_path, device="cpu") as s:
        expected = s.run(feeds(ref, dist))

    def work(_):
        with vmafdnn.Session(ops_path, device="cpu") as t:
            return t.run(feeds(ref, dist))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for got in pool.map(work, range(8)):
            assert {k: v.tolist() for k, v in got.items()} == \
                   {k: v.tolist() for k, v in expected.items()}


# --- the scanner: exactly these operators of exactly this domain -----------------------------

def test_an_unknown_operator_of_the_domain_is_refused(tmp_path):
    path = tmp_path / "unknown.onnx"
    path.write_bytes(ops_model(("Exec",)).SerializeToString())
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Session(str(path), device="cpu")
    assert e.value.errno == errno.EPERM and "org.vmafdnn:Exec" in str(e.value)


def test_the_operators_in_another_domain_are_refused(tmp_path):
    path = tmp_path / "other.onnx"
    path.write_bytes(ops_model(("VifInteger",), domain="com.example").SerializeToString())
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Session(str(path), device="cpu")
    assert e.value.errno == errno.EPERM and "com.example:VifInteger" in str(e.value)


@pytest.mark.parametrize("attrs, fragment", [
    ({"enhn_gain_limit": 1}, "must be a float"),        # an int 1 where 1.0 was meant
    ({"enhn_gain_limit": "1"}, "must be a float"),
    ({"enhn_gain_limit": [1.0]}, "must be a float"),
    ({"enhn_gain_lmit": 1.0}, 'takes no attribute "enhn_gain_lmit"'),
])
def test_attributes_the_kernels_would_ignore_are_refused(tmp_path, attrs, fragment):
    """A wrong-typed or misspelt gain limit was ignored by the kernel, which then scored with
    libvmaf's default limit of 100 (a 'neg' model scoring as vmaf_v0.6.1, silently)."""
    model = ops_model(("VifInteger",))
    vif = next(n for n in model.graph.node if n.op_type == "VifInteger")
    vif.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    path = tmp_path / "attr.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Session(str(path), device="cpu")
    assert e.value.errno == errno.EPERM and fragment in str(e.value)


def test_samples_and_motion_take_no_attributes(tmp_path):
    model = ops_model(("MotionInteger",))
    samples = next(n for n in model.graph.node if n.op_type == "Samples")
    samples.attribute.append(helper.make_attribute("enhn_gain_limit", 1.0))
    path = tmp_path / "attr.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(vmafdnn.DnnError, match='takes no attribute "enhn_gain_limit"'):
        vmafdnn.Session(str(path), device="cpu")


def test_a_narrowed_allow_list_names_them_with_their_domain(ops_path):
    standard_only = ["Identity", "Add"]
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Session(ops_path, device="cpu", allowed_ops=standard_only)
    assert e.value.errno == errno.EPERM
    ours = [f"{DOMAIN}:{op}" for op in ("Samples", "VifInteger", "AdmInteger", "MotionInteger")]
    with vmafdnn.Session(ops_path, device="cpu", allowed_ops=ours) as s:
        assert s.attached_ep == "CPU"
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Session(ops_path, device="cpu", allowed_ops=[f"{DOMAIN}:Exec"])
    assert e.value.errno == errno.EINVAL


# --- forms: a sidecar names a model's form for an EP ----------------------------------------

def features_dir(tmp_path):
    """A copy of the built-in VMAF features model, its CPU and accelerator forms and the
    sidecar."""
    from vmafdnn import models as builtin
    src = os.path.dirname(builtin.resolve("vmaf_features"))
    for name in ("vmaf_features", "vmaf_features_kernels", "vmaf_features_accel"):
        for ext in (".onnx", ".json"):
            shutil.copy(os.path.join(src, name + ext), tmp_path / (name + ext))
    return tmp_path


def test_the_features_use_their_cpu_form_on_the_cpu_ep(tmp_path):
    d = features_dir(tmp_path)
    ctx = vmafdnn.Context()
    info = ctx.use_model(str(d / "vmaf_features.onnx"))
    assert info.attached_ep == "CPU"
    assert info.form == str(d / "vmaf_features_kernels.onnx")
    assert info.ep_nodes in (None, (3, 3))


def test_forms_can_be_turned_off(tmp_path, monkeypatch):
    d = features_dir(tmp_path)
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "0")
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert info.form is None


def edit_sidecar(path, **changes):
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("forms, fragment", [
    ({"CPU": "../vmaf_features_kernels.onnx"}, "inside the model's directory"),
    ({"CPU": "/etc/passwd"}, "inside the model's directory"),
    ({"CPU": 3}, "forms"),
    ([], "must be an object"),
])
def test_a_form_outside_the_directory_or_malformed_is_refused(tmp_path, forms, fragment):
    d = features_dir(tmp_path)
    edit_sidecar(d / "vmaf_features.json", forms=forms)
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert e.value.errno == errno.EINVAL and fragment in str(e.value)


def test_a_form_with_another_interface_fails_the_attach(tmp_path, ops_path):
    d = features_dir(tmp_path)
    shutil.copy(ops_path, d / "other.onnx")
    edit_sidecar(d / "vmaf_features.json", forms={"CPU": "other.onnx"})
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert e.value.errno == errno.EINVAL and "other inputs or outputs" in str(e.value)


def test_a_missing_form_fails_the_attach_naming_it(tmp_path):
    d = features_dir(tmp_path)
    os.remove(d / "vmaf_features_kernels.onnx")
    with pytest.raises(vmafdnn.DnnError) as e:
        vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert e.value.errno == errno.ENOENT and "vmaf_features_kernels.onnx" in str(e.value)


def test_form_ep_names_are_compared_without_case(tmp_path):
    d = features_dir(tmp_path)
    edit_sidecar(d / "vmaf_features.json", forms={"cpu": "vmaf_features_kernels.onnx"})
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert info.form == str(d / "vmaf_features_kernels.onnx")


@pytest.mark.parametrize("value, used", [("0", False), ("false", False), (" Off ", False),
                                         ("no", False), ("1", True), ("", True)])
def test_forms_off_values(tmp_path, monkeypatch, value, used):
    d = features_dir(tmp_path)
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", value)
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert (info.form is not None) == used


@pytest.mark.parametrize("value, form", [("CUDA", "vmaf_features_accel.onnx"),
                                         (" openvino:GPU ", "vmaf_features_accel.onnx"),
                                         ("cpu", "vmaf_features_kernels.onnx"),
                                         ("auto", "vmaf_features_kernels.onnx")])
def test_forms_of_another_ep_on_request(tmp_path, monkeypatch, value, form):
    """VMAFDNN_MODEL_FORMS=<EP name>: the form the sidecar names for that EP ("*" for every EP
    but the CPU's), run on the EP that attached (ORT's CPU EP here)."""
    d = features_dir(tmp_path)
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", value)
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert info.attached_ep == "CPU" and info.form == str(d / form)


def test_forms_of_an_ep_the_sidecar_does_not_name_leave_the_model_on_its_file(tmp_path,
                                                                             monkeypatch):
    d = features_dir(tmp_path)
    edit_sidecar(d / "vmaf_features.json", forms={"CPU": "vmaf_features_kernels.onnx"})
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert info.attached_ep == "CPU" and info.form is None


def test_a_policy_that_refuses_the_form_says_how_to_go_without_it(tmp_path):
    d = features_dir(tmp_path)
    import onnx

    def op_types(graph):
        for n in graph.node:
            yield n.op_type
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    yield from op_types(g)
    ops = sorted(set(op_types(onnx.load(str(d / "vmaf_features.onnx")).graph)))
    with pytest.raises(vmafdnn.DnnError, match="VMAFDNN_MODEL_FORMS=0"):
        vmafdnn.Context(allowed_ops=ops).use_model(str(d / "vmaf_features.onnx"))


def test_a_form_for_another_ep_is_not_used(tmp_path):
    d = features_dir(tmp_path)
    edit_sidecar(d / "vmaf_features.json", forms={"CUDA": "vmaf_features_kernels.onnx"})
    info = vmafdnn.Context().use_model(str(d / "vmaf_features.onnx"))
    assert info.attached_ep == "CPU" and info.form is None
