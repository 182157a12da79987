"""The generated built-in models, run in ONNX Runtime on real frames, against scikit-image/numpy.

Inputs are fed the way the library feeds them: luma as float32 divided by 2^bpc - 1.
"""

import io
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from scipy import ndimage
from skimage import color, data
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

ROOT = pathlib.Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_builtin_models.py"
NAMES = ("psnr_y", "ssim_y", "sharpness_nr")

PSNR_TOL_DB = 1e-4
# Both the whole-frame graphs before the strip rewrite and the strip graphs are within ~5e-7 of
# scikit-image's double-precision SSIM on real frames; flat halves plus small noise (the fp32
# filter's worst case) are within ~1.3e-5.
SSIM_TOL = 2e-6
SSIM_TOL_ADVERSARIAL = 3e-5


def generate(outdir):
    subprocess.run([sys.executable, str(GENERATOR), str(outdir)], check=True)
    return outdir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("builtin_models"))


@pytest.fixture(scope="module")
def sessions(model_dir):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return {name: ort.InferenceSession(str(model_dir / f"{name}.onnx"), opts,
                                       providers=["CPUExecutionProvider"])
            for name in NAMES}


def normalise(plane, bpc):
    return (plane.astype(np.float32) / np.float32(2 ** bpc - 1))[None, None]


def run_fr(sess, ref, dis, bpc):
    out = sess.run(None, {"reference": normalise(ref, bpc), "distorted": normalise(dis, bpc)})
    assert out[0].shape == (1,) and out[0].dtype == np.float32
    return float(out[0][0])


def run_nr(sess, dis, bpc):
    out = sess.run(None, {"distorted": normalise(dis, bpc)})
    assert out[0].shape == (1,) and out[0].dtype == np.float32
    return float(out[0][0])


def luma8(rgb):
    return np.round(color.rgb2gray(rgb) * 255).astype(np.uint8)


def jpeg(plane, quality):
    image = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    image.fromarray(plane).save(buf, "JPEG", quality=quality)
    return np.array(image.open(buf))


def blur_noise(plane, peak, seed):
    rng = np.random.default_rng(seed)
    out = ndimage.gaussian_filter(plane.astype(np.float64), 1.2) + rng.normal(0, peak / 100,
                                                                             plane.shape)
    return np.clip(np.round(out), 0, peak).astype(plane.dtype)


def quantised(plane, step):
    return ((plane.astype(np.int64) // step) * step + step // 2).clip(0, 255).astype(plane.dtype)


def to_10bit(plane8, seed):
    rng = np.random.default_rng(seed)
    return np.clip(plane8.astype(np.int64) * 4 + rng.integers(-2, 3, plane8.shape),
                   0, 1023).astype(np.uint16)


REFERENCES = {
    "camera": lambda: data.camera(),
    "astronaut": lambda: luma8(data.astronaut()),
    "coffee_511x383": lambda: luma8(data.coffee())[:383, :511],
    "grass": lambda: data.grass(),
}
DISTORTIONS = ("jpeg10", "jpeg60", "blur_noise", "quantised")


def make_pair(ref_name, distortion, bpc):
    """Integer (reference, distorted) planes at `bpc` bits."""
    ref = REFERENCES[ref_name]()
    if distortion.startswith("jpeg"):
        dis = jpeg(ref, int(distortion[4:]))
    elif distortion == "blur_noise":
        dis = blur_noise(ref, 255, seed=1)
    else:
        dis = quantised(ref, 12)
    if bpc == 10:
        ref, dis = to_10bit(ref, seed=2), to_10bit(dis, seed=3)
    return ref, dis


CASES = [(r, d, b) for r in REFERENCES for d in DISTORTIONS for b in (8, 10)]


def case_id(case):
    return f"{case[0]}-{case[1]}-{case[2]}bit"


def frame_1080p():
    from skimage.transform import resize
    big = resize(luma8(data.astronaut()).astype(np.float64), (1080, 1920), order=3)
    ref = np.clip(np.round(big), 0, 255).astype(np.uint8)
    return ref, blur_noise(ref, 255, seed=4)


# --- the files themselves -------------------------------------------------------------------------

def test_generator_is_deterministic(model_dir, tmp_path):
    again = generate(tmp_path / "again")
    for name in NAMES:
        for ext in (".onnx", ".json"):
            assert (model_dir / (name + ext)).read_bytes() == (again / (name + ext)).read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_model_interface(model_dir, sessions, name):
    model = onnx.load(str(model_dir / f"{name}.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]

    side = json.loads((model_dir / f"{name}.json").read_text())
    sess = sessions[name]
    inputs = sess.get_inputs()
    assert [i.name for i in inputs] == side["input_names"]
    for i in inputs:
        assert i.type == "tensor(float)"
        assert i.shape == [1, 1, "H", "W"]
    outputs = sess.get_outputs()
    # [1], not rank 0: OpenVINO declines rank-0 outputs.
    assert [(o.name, o.type, o.shape) for o in outputs] == [(name, "tensor(float)", [1])]
    assert side["output_names"] == [name]
    assert side["name"] == name
    assert side["kind"] == ("fr" if len(inputs) == 2 else "nr")
    assert side["native_resolution"] is True
    assert side["higher_is_better"] is True
    assert side["opset"] == 17
    assert isinstance(side["description"], str) and side["description"]
    lo, hi = side["range"]
    assert lo < hi


def test_psnr_sidecar_carries_libvmaf_cap(model_dir):
    side = json.loads((model_dir / "psnr_y.json").read_text())
    assert side["cap_db_per_bpc"] == [6, 12]
    assert "6*bpc+12" in side["description"]


def _library_allow_list():
    """The C scanner's built-in operator allow-list and Loop cap, read from the sources."""
    scan = (ROOT / "csrc" / "onnx_scan.c").read_text()
    body = scan[scan.index("builtin_ops[] = {"):]
    body = body[:body.index("};")]
    ops = set(re.findall(r'"([A-Za-z]+)"', body))
    header = (ROOT / "include" / "vmafdnn" / "vmafdnn.h").read_text()
    max_loops = int(re.search(r"#define VMAF_DNN_MAX_LOOP_NODES (\d+)u", header).group(1))
    return ops, max_loops


def _nodes(graph, depth=0):
    for node in graph.node:
        yield node, depth
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attr.g, depth + 1)


@pytest.mark.parametrize("name", NAMES)
def test_models_pass_the_library_scanner_rules(model_dir, name):
    # The library refuses an operator off its allow-list, subgraph nodes included; the strip
    # Loops must stay within its default Loop cap.
    allowed, max_loops = _library_allow_list()
    assert {"Conv", "Loop", "Sum", "ReduceSumSquare"} <= allowed  # the parse found the list
    nodes = list(_nodes(onnx.load(str(model_dir / f"{name}.onnx")).graph))
    assert all(n.domain in ("", "ai.onnx") for n, _ in nodes)
    assert {n.op_type for n, _ in nodes} <= allowed
    assert sum(n.op_type == "Loop" for n, _ in nodes) <= max_loops
    assert max(d for _, d in nodes) <= 1


RSS_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np, onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random((1, 1, 2160, 3840), dtype=np.float32) for i in sess.get_inputs()}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sess.run(None, feeds)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
""")


@pytest.mark.parametrize("name,limit_mib", [("psnr_y", 48), ("ssim_y", 100), ("sharpness_nr", 48)])
def test_peak_memory_does_not_grow_with_the_frame(model_dir, name, limit_mib):
    # The models work in row strips, so a 2160p run adds little beyond its two 32 MiB inputs.
    # The whole-frame graphs added 131 (psnr_y), 601 (ssim_y) and 332 MiB (sharpness_nr) here;
    # the strip graphs 7, 41 and 12 MiB.
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(model_dir / f"{name}.onnx")],
                         check=True, capture_output=True, text=True).stdout
    assert int(out.split()[-1]) <= limit_mib, out


# --- psnr_y ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_psnr_matches_skimage(sessions, case):
    ref, dis = make_pair(*case)
    bpc = case[2]
    ours = run_fr(sessions["psnr_y"], ref, dis, bpc)
    expected = peak_signal_noise_ratio(ref, dis, data_range=2 ** bpc - 1)
    assert abs(ours - expected) <= PSNR_TOL_DB, (ours, expected)

    # Same fp32 inputs, float64 arithmetic: only the model's rounding is left.
    r, d = (normalise(p, bpc).astype(np.float64) for p in (ref, dis))
    exact = 10 * np.log10(1 / np.mean((r - d) ** 2))
    assert abs(ours - exact) <= 1e-5, (ours, exact)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (63, 5), (64, 9), (65, 3), (129, 17)])
def test_psnr_strip_edges(sessions, shape):
    # psnr_y sums 64-row strips: one short strip, exact multiples and one row over.
    rng = np.random.default_rng(shape[0])
    ref = rng.integers(0, 1024, shape).astype(np.uint16)
    dis = np.clip(ref.astype(np.int64) + rng.integers(-40, 41, shape), 0, 1023).astype(np.uint16)
    r, d = (normalise(p, 10).astype(np.float64) for p in (ref, dis))
    exact = 10 * np.log10(1 / np.mean((r - d) ** 2))
    assert run_fr(sessions["psnr_y"], ref, dis, 10) == pytest.approx(exact, abs=1e-5)


def test_psnr_1080p(sessions):
    ref, dis = frame_1080p()
    ours = run_fr(sessions["psnr_y"], ref, dis, 8)
    assert abs(ours - peak_signal_noise_ratio(ref, dis, data_range=255)) <= PSNR_TOL_DB


@pytest.mark.parametrize("bpc", (8, 10))
def test_psnr_identical_frames_is_finite(sessions, bpc):
    # 200 dB from the MSE floor; the library caps it at 6*bpc+12 dB (cap_db_per_bpc).
    ref, _ = make_pair("camera", "quantised", bpc)
    assert run_fr(sessions["psnr_y"], ref, ref, bpc) == pytest.approx(200.0, abs=1e-4)


# --- ssim_y ---------------------------------------------------------------------------------------

def skimage_ssim(ref, dis, bpc):
    return structural_similarity(ref, dis, gaussian_weights=True, sigma=1.5,
                                 use_sample_covariance=False, data_range=2 ** bpc - 1)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ssim_matches_skimage(sessions, case):
    ref, dis = make_pair(*case)
    ours = run_fr(sessions["ssim_y"], ref, dis, case[2])
    expected = skimage_ssim(ref, dis, case[2])
    assert abs(ours - expected) <= SSIM_TOL, (ours, expected)


def test_ssim_1080p(sessions):
    ref, dis = frame_1080p()
    ours = run_fr(sessions["ssim_y"], ref, dis, 8)
    assert abs(ours - skimage_ssim(ref, dis, 8)) <= SSIM_TOL


@pytest.mark.parametrize("level", (3, 128, 250))
def test_ssim_flat_frames_with_noise(sessions, level):
    # Small variances on a large mean: the case where E[x^2] - E[x]^2 loses digits in fp32.
    rng = np.random.default_rng(level)
    ref = np.full((270, 480), level, np.uint8)
    ref[:, 240:] = 255 - level  # two flat halves, so centring on the frame mean cannot help
    for spread in (1, 8):
        dis = np.clip(ref.astype(np.int64) + rng.integers(-spread, spread + 1, ref.shape),
                      0, 255).astype(np.uint8)
        ours = run_fr(sessions["ssim_y"], ref, dis, 8)
        expected = skimage_ssim(ref, dis, 8)
        assert abs(ours - expected) <= SSIM_TOL_ADVERSARIAL, (level, spread, ours, expected)


# ssim_y filters 3 sub-strips of up to 24 output rows per Loop iteration; a sub-strip that would
# run off the bottom starts earlier and skips the rows already counted. Heights around those
# boundaries (valid rows 1, 2, 3, 24, 25, 72, 73, 74, 95, 97 and 145), odd widths, 8 and 10 bits.
STRIP_SHAPES = [(11, 11), (12, 40), (13, 17), (34, 30), (35, 33), (82, 64), (83, 91), (84, 12),
                (105, 75), (107, 50), (155, 201)]


@pytest.mark.parametrize("shape", STRIP_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("bpc", (8, 10))
def test_ssim_strip_edges(sessions, shape, bpc):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    peak = 2 ** bpc - 1
    # Smooth content plus noise, so that every row has its own local SSIM.
    base = np.cumsum(rng.normal(0, peak / 50, shape), axis=1) + peak / 2
    ref = np.clip(np.round(base), 0, peak)
    dis = np.clip(np.round(base + rng.normal(0, peak / 40, shape)), 0, peak)
    dtype = np.uint8 if bpc == 8 else np.uint16
    ref, dis = ref.astype(dtype), dis.astype(dtype)
    ours = run_fr(sessions["ssim_y"], ref, dis, bpc)
    assert abs(ours - skimage_ssim(ref, dis, bpc)) <= SSIM_TOL, ours


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"])
def test_ssim_at_every_optimisation_level(model_dir, level):
    # ORT_ENABLE_ALL runs the 16-channel Conv with its NCHWc kernels, lower levels with im2col:
    # both must give the same SSIM.
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    sess = ort.InferenceSession(str(model_dir / "ssim_y.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    ref, dis = frame_1080p()
    assert abs(run_fr(sess, ref, dis, 8) - skimage_ssim(ref, dis, 8)) <= SSIM_TOL


def test_ssim_identical_frames_is_one(sessions):
    ref, _ = make_pair("astronaut", "quantised", 10)
    assert run_fr(sessions["ssim_y"], ref, ref, 10) == pytest.approx(1.0, abs=1e-6)


# --- sharpness_nr ---------------------------------------------------------------------------------

def laplacian_variance(plane):
    x = plane.astype(np.float64)
    lap = (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4 * x[1:-1, 1:-1])
    return lap.var()


@pytest.mark.parametrize("shape", [(3, 3), (4, 5), (33, 7), (34, 40), (35, 3), (67, 29)])
def test_sharpness_strip_edges(sessions, shape):
    # sharpness_nr sums 32-row strips (valid rows 1, 2, 31, 32, 33 and 65 here).
    plane = np.random.default_rng(shape[0]).integers(0, 256, shape).astype(np.uint8)
    expected = laplacian_variance(normalise(plane, 8)[0, 0])
    assert run_nr(sessions["sharpness_nr"], plane, 8) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("ref_name", REFERENCES)
@pytest.mark.parametrize("bpc", (8, 10))
def test_sharpness_orders_blur_and_matches_numpy(sessions, ref_name, bpc):
    sharp = REFERENCES[ref_name]()
    peak = 2 ** bpc - 1
    if bpc == 10:
        sharp = to_10bit(sharp, seed=5)
    planes = [sharp] + [np.round(ndimage.gaussian_filter(sharp.astype(np.float64), s))
                        .astype(sharp.dtype) for s in (1.0, 2.5)]
    scores = [run_nr(sessions["sharpness_nr"], p, bpc) for p in planes]
    assert scores[0] > scores[1] > scores[2] > 0
    for plane, score in zip(planes, scores):
        # On the model's own fp32 input the result is exact up to the float32 output.
        assert score == pytest.approx(laplacian_variance(normalise(plane, bpc)[0, 0]), rel=1e-6)
        # On the integer samples, only the fp32 normalisation of the input differs.
        assert score == pytest.approx(laplacian_variance(plane) / peak ** 2, rel=1e-5)
