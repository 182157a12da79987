"""The C library owns the policy: the catalog of models, the name tables, the
default model sets, the limits and the version; Python, the CLI and a C-only
install use them (include/vmafdnn/catalog.h, issue 10)."""
import glob
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vmafdnn
from vmafdnn import cli, models, names
from vmafdnn._native import ffi, lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _meson_version():
    text = open(os.path.join(ROOT, "meson.build"), encoding="utf-8").read()
    return re.search(r"project\('libvmafdnn'.*?version:\s*'([^']+)'", text, re.S).group(1)


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_builtin_models", os.path.join(ROOT, "tools", "gen_builtin_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- version ----------------------------------------------------------------------------

def test_one_version_everywhere():
    version = _meson_version()
    header = open(os.path.join(ROOT, "include", "vmafdnn", "vmafdnn.h"), encoding="utf-8").read()
    parts = tuple(int(re.search(rf"#define VMAF_DNN_VERSION_{p} (\d+)", header).group(1))
                  for p in ("MAJOR", "MINOR", "PATCH"))
    assert ".".join(map(str, parts)) == version
    assert (lib.VMAF_DNN_VERSION_MAJOR, lib.VMAF_DNN_VERSION_MINOR,
            lib.VMAF_DNN_VERSION_PATCH) == parts
    assert vmafdnn.__version__ == version
    assert importlib.metadata.version("vmafdnn") == version
    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r'^version\s*=', pyproject, re.M)


# -- names ------------------------------------------------------------------------------

def test_python_tables_are_the_c_tables():
    from vmafdnn.context import OUTPUT_FORMATS, POOL_METHODS, RESIZE_MODES
    from vmafdnn.session import DEVICES
    assert DEVICES == names.table("device")
    # values are append-only: these stay first, in this order
    assert list(DEVICES)[:7] == ["auto", "cpu", "cuda", "openvino", "rocm", "openvino-cpu",
                                 "openvino-gpu"]
    assert RESIZE_MODES == names.table("resize")
    assert POOL_METHODS == names.table("pool")
    assert OUTPUT_FORMATS == names.table("format")
    assert names.KIND_NAMES == ("fr", "nr", "features")
    assert names.EP_NAMES[:5] == ("CPU", "CUDA", "OpenVINO:GPU", "OpenVINO:CPU", "ROCm")
    assert names.value("device", "OpenVINO_CPU") == lib.VMAF_DNN_DEVICE_OPENVINO_CPU
    assert names.value("pool", "Harmonic-Mean") == lib.VMAF_DNN_POOL_HARMONIC_MEAN
    with pytest.raises(ValueError, match=r'unknown device "gpu"; valid names: auto, cpu'):
        names.value("device", "gpu")


def test_limits_come_from_c():
    from vmafdnn import video
    assert video.MAX_DIMENSION == lib.VMAF_DNN_MAX_DIMENSION


def test_cli_device_spellings(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["info", "m.onnx", "--device", "OpenVINO_CPU"]).device == \
        "openvino-cpu"
    with pytest.raises(cli._UsageExit, match="valid names: auto, cpu, cuda"):
        parser.parse_args(["info", "m.onnx", "--device", "gpu"])


# -- catalog ----------------------------------------------------------------------------

def test_builtins_are_what_the_generator_makes():
    gen = _generator()
    generated = sorted(gen.BUILDERS)
    meson = open(os.path.join(ROOT, "models", "meson.build"), encoding="utf-8").read()
    listed = re.search(r"builtin_model_names = \[([^\]]*)\]", meson).group(1)
    assert sorted(re.findall(r"'(\w+)'", listed)) == generated
    # The accelerator forms are installed beside them (tests/python/test_accel_forms.py).
    accel = re.search(r"builtin_accel_names = \[([^\]]*)\]", meson).group(1)
    accel = sorted(re.findall(r"'(\w+)'", accel))
    assert accel == sorted(n + gen.ACCEL_SUFFIX for n in gen.ACCEL_BUILDERS)
    # ... and their samples forms, named from the accelerator forms' names
    assert "builtin_samples_names += [name.replace('_accel', '_samples')]" in meson
    samples = sorted(n + gen.SAMPLES_SUFFIX for n in gen.ACCEL_BUILDERS)
    # ... and the kernels forms
    kernels = re.search(r"builtin_kernels_names = \[([^\]]*)\]", meson).group(1)
    kernels = sorted(re.findall(r"'(\w+)'", kernels))
    assert kernels == sorted(n + gen.KERNELS_SUFFIX for n in gen.KERNEL_OPS)
    # VMAF's models are built when libvmaf's parameters could be fetched.
    vmaf = re.search(r"vmaf_model_names = \[([^\]]*)\]", meson).group(1)
    vmaf = re.findall(r"'(\w+)'", vmaf)
    assert list(models.MODEL_NAMES) in (sorted(generated + accel + samples + kernels),
                                        sorted(generated + accel + samples + kernels + vmaf))
    by_name = {e.name: e for e in models.catalog()}
    for name in generated:
        entry = by_name[name]
        assert entry.path.endswith(f"/{name}.onnx") and os.path.isfile(entry.path)
        assert entry.description and entry.meaning and entry.range and entry.min_size


def test_builtin_entries():
    sharp = models.describe("sharpness_nr")
    assert sharp.kind == "nr" and sharp.inputs == ("distorted",)
    assert sharp.outputs == ("sharpness_nr",) and sharp.min_size == (3, 3)
    assert "Variance of the Laplacian of the luma" in sharp.meaning
    assert "Higher means sharper" in sharp.meaning and sharp.higher_is_better is True
    ssim = models.describe("ssim_y")
    assert ssim.kind == "fr" and ssim.inputs == ("reference", "distorted")
    assert ssim.min_size == (11, 11) and ssim.range == (-1.0, 1.0)
    assert models.describe("psnr_y").min_size == (1, 1)


def test_defaults_are_the_c_sets():
    """VMAF joins the FR set where the build generated it (it needs libvmaf's model files)."""
    from vmafdnn import scoring
    fr = ["psnr_y", "ssim_y"] + (["vmaf"] if "vmaf" in models.MODEL_NAMES else [])
    assert models.default_models() == fr
    assert models.default_models(no_reference=True) == ["sharpness_nr"]
    assert scoring.DEFAULT_FR_MODELS == tuple(fr)
    assert scoring.DEFAULT_NR_MODELS == ("sharpness_nr",)


def test_unknown_name_lists_known_ones():
    with pytest.raises(FileNotFoundError, match=r"no model named \"nosuch\".*known models: "
                                                r".*psnr_y.*sharpness_nr.*ssim_y"):
        models.resolve("nosuch")
    assert models.resolve("dir/x") == "dir/x" and models.resolve("x.onnx") == "x.onnx"


def _frames(n=2, h=24, w=32, seed=1):
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    dis = np.clip(ref.astype(int) + rng.integers(-3, 4, ref.shape), 0, 255).astype(np.uint8)
    return ref, dis


def test_model_path_env_adds_models(tmp_path, monkeypatch):
    """A directory on VMAFDNN_MODEL_PATH makes its models names, first match
    wins over the built-ins, for Context, score() and the catalog alike."""
    src = models.path("psnr_y")
    shutil.copy(src, tmp_path / "mine.onnx")
    shutil.copy(src.with_suffix(".json"), tmp_path / "mine.json")
    # the form it scores with on the CPU EP, which its sidecar names
    shutil.copy(src.with_name("psnr_y_kernels.onnx"), tmp_path / "psnr_y_kernels.onnx")
    monkeypatch.setenv("VMAFDNN_MODEL_PATH", str(tmp_path))
    assert models.search_path()[0] == str(tmp_path)
    assert models.resolve("mine") == str(tmp_path / "mine.onnx")
    assert [e.name for e in models.catalog()][0] == "mine"
    ref, dis = _frames()
    with vmafdnn.Context() as ctx:
        ctx.use_model("mine", name="mine")
        ctx.use_model("ssim_y")
        assert ctx.models[0].path == str(tmp_path / "mine.onnx")
        for i in range(len(ref)):
            ctx.read_pictures(ref[i], dis[i], i)
        mse = np.mean((ref[0].astype(float) - dis[0]) ** 2)
        assert ctx.feature("mine", 0) == pytest.approx(10 * np.log10(255 ** 2 / mse), abs=1e-4)


def test_cli_models_and_info(capsys):
    assert cli.main(["models", "-v"]) == 0
    out = capsys.readouterr().out
    for name in models.MODEL_NAMES:
        assert re.search(rf"^{name}\s", out, re.M)
    assert "search path:" in out and "Variance of the Laplacian" in out
    assert cli.main(["info", "sharpness_nr"]) == 0
    out = capsys.readouterr().out
    assert "meaning      Variance of the Laplacian of the luma" in out
    assert "min size     3x3" in out and "higher is better" in out
    assert cli.main(["info", "nosuch"]) != 0
    assert "known models:" in capsys.readouterr().err


# -- a C-only install -------------------------------------------------------------------

C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include <vmafdnn/catalog.h>
int main(void)
{
    VmafDnnContext *ctx = NULL;
    unsigned char ref[64 * 48], dis[64 * 48];
    for (int i = 0; i < 64 * 48; i++) {
        ref[i] = (unsigned char)(i * 13);
        dis[i] = (unsigned char)(ref[i] ^ 2);
    }
    VmafDnnPicture r = {.bpc = 8, .w = {64}, .h = {48}, .stride = {64}, .data = {ref}};
    VmafDnnPicture d = {.bpc = 8, .w = {64}, .h = {48}, .stride = {64}, .data = {dis}};
    if (vmaf_dnn_context_open(&ctx, NULL))
        return 1;
    for (const char *const *m = vmaf_dnn_default_models(VMAF_DNN_MODEL_FR); *m; m++)
        if (vmaf_dnn_use_tiny_model(ctx, *m, NULL)) {
            fprintf(stderr, "%s\n", vmaf_dnn_last_error());
            return 2;
        }
    if (vmaf_dnn_read_pictures(ctx, &r, &d, 0)) {
        fprintf(stderr, "%s\n", vmaf_dnn_last_error());
        return 3;
    }
    double psnr = 0, ssim = 0;
    vmaf_dnn_feature_get(ctx, "psnr_y", 0, &psnr);
    vmaf_dnn_feature_get(ctx, "ssim_y", 0, &ssim);
    printf("%s %s %.6f %.6f\n", vmaf_dnn_version(), vmaf_dnn_tiny_model_path(ctx, 0), psnr, ssim);
    vmaf_dnn_context_close(ctx);
    return 0;
}
"""


def _run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_c_only_install_scores_builtin_models_by_name(tmp_path):
    """meson install -Dpython=disabled ships the built-in models, and a C
    program finds them by name, also after the whole prefix is moved."""
    meson = [shutil.which("meson")] if shutil.which("meson") else \
        [sys.executable, "-m", "mesonbuild.mesonmain"]
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    # plain (no optimisation): the install's layout is under test, not its speed; a
    # release build was 12 of the test's 18 s on a 2-core machine.
    _run(meson + ["setup", str(build), ROOT, f"--prefix={prefix}", "--libdir=lib",
                  "-Dpython=disabled", "-Dtests=false", "-Dmodels=enabled", "-Dvmaf=disabled",
                  "--buildtype=plain"])
    _run(meson + ["install", "-C", str(build), "--quiet"])
    models_dir = prefix / "share" / "vmafdnn" / "models"
    gen = _generator()
    assert sorted(p.name for p in models_dir.glob("*.onnx")) == \
        sorted([f"{n}.onnx" for n in gen.BUILDERS] +
               [f"{n}{suffix}.onnx" for n in gen.ACCEL_BUILDERS
                for suffix in (gen.ACCEL_SUFFIX, gen.SAMPLES_SUFFIX)] +
               [f"{n}{gen.KERNELS_SUFFIX}.onnx" for n in gen.KERNEL_OPS])
    assert (prefix / "include" / "vmafdnn" / "catalog.h").is_file()

    src = tmp_path / "prog.c"
    src.write_text(C_PROGRAM)
    exe = tmp_path / "prog"
    _run(["cc", "-std=c11", "-o", str(exe), str(src), f"-I{prefix / 'include'}",
          f"-L{prefix / 'lib'}", "-lvmafdnn"])
    env = {k: v for k, v in os.environ.items() if k != "VMAFDNN_MODEL_PATH"}
    env["VMAFDNN_ORT_LIBRARY"] = vmafdnn.ort_library_path()
    expected_psnr = 10 * np.log10(255 ** 2 / 4)

    for where in (prefix, tmp_path / "moved"):
        if where != prefix:
            prefix.rename(where)  # relocated: the library finds ../share from itself
        env["LD_LIBRARY_PATH"] = str(where / "lib")
        out = _run([str(exe)], env=env).split()
        assert out[0] == vmafdnn.__version__
        assert out[1] == os.path.realpath(where / "share" / "vmafdnn" / "models" / "psnr_y.onnx")
        assert float(out[2]) == pytest.approx(expected_psnr, abs=1e-4)
        assert 0.9 < float(out[3]) <= 1.0
