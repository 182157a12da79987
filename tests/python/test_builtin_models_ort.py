"""The generated built-in models, run in ONNX Runtime on real frames, against scikit-image/numpy.

Inputs are fed the way the library feeds them: luma as float32 divided by 2^bpc - 1.
"""

import importlib.util
import io
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from scipy import ndimage
from skimage import color, data
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

ROOT = pathlib.Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_builtin_models.py"
MODELS_INIT = ROOT / "python" / "vmafdnn" / "models" / "__init__.py"
NAMES = ("psnr_y", "ssim_y", "sharpness_nr")

PSNR_TOL_DB = 1e-4
SSIM_TOL = 1e-4


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


def test_models_package_finds_generated_files(tmp_path):
    # Load vmafdnn/models/__init__.py as its own package over a generated directory, without
    # importing vmafdnn (whose compiled part this test does not need).
    pkg = tmp_path / "builtin_models_pkg"
    pkg.mkdir()
    shutil.copy(MODELS_INIT, pkg / "__init__.py")
    spec = importlib.util.spec_from_file_location(
        "builtin_models_pkg", pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
        assert mod.MODEL_NAMES == NAMES
        with pytest.raises(FileNotFoundError, match="psnr_y"):
            mod.path("psnr_y")
        generate(pkg)
        for name in NAMES:
            assert mod.path(name) == pkg / f"{name}.onnx"
        with pytest.raises(ValueError, match="unknown built-in model"):
            mod.path("vmaf")
    finally:
        del sys.modules[spec.name]


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
        assert abs(ours - expected) <= SSIM_TOL, (level, spread, ours, expected)


def test_ssim_identical_frames_is_one(sessions):
    ref, _ = make_pair("astronaut", "quantised", 10)
    assert run_fr(sessions["ssim_y"], ref, ref, 10) == pytest.approx(1.0, abs=1e-6)


# --- sharpness_nr ---------------------------------------------------------------------------------

def laplacian_variance(plane):
    x = plane.astype(np.float64)
    lap = (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4 * x[1:-1, 1:-1])
    return lap.var()


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
