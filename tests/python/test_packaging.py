"""`python -m build` makes an sdist and a wheel that each install into a fresh
virtual environment and run the main job (tools/main_job.sh).

The build starts from a clean `git clone` of this checkout's HEAD: meson-python
makes the sdist with `meson dist --allow-dirty --no-tests`, which takes the
committed files only (uncommitted changes are left out with a warning), so
that is what a release would contain. `python -m build` then builds the wheel
from the sdist, in an isolated environment whose build requirements pip
fetches (network to the package index is needed, as for any install).

One environment gets the wheel, the other the sdist (built again by pip), each
with the `[cpu]` extra; tools/main_job.sh runs with each one's python on one
second of small video, with the FFmpeg the other real-video tests use (it must
have libx264) first on PATH. Outside CI a missing prerequisite (git, the
`build` module, FFmpeg with libx264) skips the test with a hint; under CI it
fails.
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from clips import ffmpeg

ROOT = Path(__file__).resolve().parents[2]
PROJECT_VERSION = re.search(r"^project\([^)]*?version:\s*'([^']+)'",
                            (ROOT / "meson.build").read_text(), re.M).group(1)
DEMO_SECONDS = 1
DEMO_SIZE = (160, 96)

# What meson needs to configure and build the package from the sdist. The
# test also checks the sdist against `git ls-files` (all of it, nothing more);
# these names keep the message specific when a build input is missing.
BUILD_INPUTS = [
    "pyproject.toml", "meson.build", "meson.options", "README.md",
    "include/meson.build", "include/vmafdnn/vmafdnn.h",
    "csrc/meson.build", "csrc/context.c", "models/meson.build",
    "python/meson.build", "python/vmafdnn/__init__.py", "python/vmafdnn/_ffi_build.py",
    "python/vmafdnn/models/__init__.py",
    "tools/gen_builtin_models.py", "tools/gen_vmaf_models.py",
    "tools/fetch_ort_headers.sh", "tools/fetch_vmaf_reference.sh", "tools/main_job.sh",
    "subprojects/onnxruntime-headers.wrap",
    "subprojects/packagefiles/onnxruntime-headers/meson.build",
]
# Scripts meson runs with run_command(): they must keep their executable bit.
EXECUTABLE = ["tools/fetch_ort_headers.sh", "tools/fetch_vmaf_reference.sh"]
JUNK = re.compile(r"(^|/)(build[^/]*/|\.mesonpy[^/]*/|__pycache__/|\.git/|dist/|vmafdnn-demo/|"
                  r"[^/]*\.egg-info/)|\.(pyc|so|o|a|onnx|whl)$")


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"test_packaging needs {what}, and CI must run it")
    pytest.skip(f"needs {what}")


def _run(cmd, *, timeout=900, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed (exit {proc.returncode})\n"
        f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


def _clean_env(**extra) -> dict:
    """The environment without anything that points at this checkout's own
    install (a venv, an ORT library, a Python path)."""
    env = dict(os.environ)
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "VMAFDNN_ORT_LIBRARY",
                 "PIP_NO_BUILD_ISOLATION", "PIP_USER", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(name, None)
    env.update(extra)
    return env


def _ffmpeg_bin(directory: Path) -> Path:
    """A directory whose ffmpeg is the tests' FFmpeg, after checking libx264."""
    exe = ffmpeg()
    encoders = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True,
                              text=True).stdout
    if " libx264 " not in encoders:
        _missing(f"an ffmpeg with libx264 ({exe} has none; pip install imageio-ffmpeg==0.8.1 "
                 "or set VMAFDNN_TEST_FFMPEG)")
    directory.mkdir()
    (directory / "ffmpeg").symlink_to(exe)
    return directory


def _check_sdist(sdist: Path, clone: Path) -> None:
    top = f"vmafdnn-{PROJECT_VERSION}/"
    with tarfile.open(sdist) as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
    assert all(name.startswith(top) for name in members), sorted(members)[:5]
    files = {name[len(top):]: m for name, m in members.items()}
    missing = [name for name in BUILD_INPUTS if name not in files]
    assert not missing, f"the sdist lacks build inputs: {missing}"
    for name in EXECUTABLE:
        assert files[name].mode & 0o111, f"{name} is not executable in the sdist"
    junk = sorted(name for name in files if JUNK.search(name))
    assert not junk, f"generated or cached files in the sdist: {junk[:20]}"
    tracked = set(_run(["git", "-C", clone, "ls-files"]).stdout.split())
    assert set(files) - {"PKG-INFO"} == tracked, (
        f"sdist vs git ls-files: only in the sdist {sorted(set(files) - tracked - {'PKG-INFO'})}, "
        f"only in git {sorted(tracked - set(files))}")


def _check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    for name in ("vmafdnn/__init__.py", "vmafdnn/libvmafdnn.so", "vmafdnn/models/__init__.py",
                 "vmafdnn/models/psnr_y.onnx", "vmafdnn/models/ssim_y.onnx",
                 "vmafdnn/models/sharpness_nr.onnx"):
        assert name in names, f"{name} is not in {wheel.name}"
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def _check_install(venv: Path, work: Path, clone: Path, ffmpeg_bin: Path, label: str) -> None:
    python = venv / "bin" / "python"
    env = _clean_env(PATH=os.pathsep.join([str(ffmpeg_bin), str(venv / "bin"),
                                            os.environ.get("PATH", "")]),
                     PYTHON=str(python), VMAFDNN_DEMO_SECONDS=str(DEMO_SECONDS),
                     VMAFDNN_DEMO_SIZE="%dx%d" % DEMO_SIZE)
    work.mkdir()
    # The package is the environment's, not this checkout's python/ directory.
    where = _run([python, "-c", "import vmafdnn; print(vmafdnn.__file__)"], cwd=work,
                 env=env).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), (label, where)
    version = _run([venv / "bin" / "vmafdnn", "--version"], cwd=work, env=env).stdout.split()
    assert version == ["vmafdnn", PROJECT_VERSION], (label, version)

    out = work / "demo"
    _run(["bash", clone / "tools" / "main_job.sh", out], cwd=work, env=env, timeout=600)
    report = json.loads((out / "report.json").read_text())
    assert report["version"] == f"libvmafdnn {PROJECT_VERSION}", (label, report["version"])
    assert len(report["frames"]) == 25 * DEMO_SECONDS, label
    pooled = report["pooled_metrics"]
    # libx264 at crf 40 on testsrc2: visibly degraded, far from identical.
    assert 15 < pooled["psnr_y"]["mean"] < 45, (label, pooled)
    assert 0.5 < pooled["ssim_y"]["mean"] < 0.99, (label, pooled)
    for frame in report["frames"]:
        assert 15 < frame["metrics"]["psnr_y"] < 60 and 0.3 < frame["metrics"]["ssim_y"] <= 1
    nr = json.loads((out / "nr.json").read_text())
    assert len(nr["frames"]) == 25 * DEMO_SECONDS and "sharpness_nr" in nr["pooled_metrics"]


@pytest.mark.slow
def test_sdist_and_wheel_install_and_run_the_main_job(tmp_path):
    started = time.monotonic()
    if not (ROOT / ".git").exists():
        _missing(f"a git checkout ({ROOT} has no .git: meson dist makes the sdist from git)")
    try:
        _run(["git", "--version"])
    except FileNotFoundError:
        _missing("git")
    try:
        import build  # noqa: F401
    except ImportError:
        _missing(f"PyPA build in {sys.executable} (pip install build, or the [test] extra)")
    ffmpeg_bin = _ffmpeg_bin(tmp_path / "ffmpeg-bin")

    clone = tmp_path / "src"
    _run(["git", "clone", "--quiet", "--no-hardlinks", ROOT, clone])
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", dist, clone], env=_clean_env(), timeout=1200)
    sdists = sorted(dist.glob("*.tar.gz"))
    wheels = sorted(dist.glob("*.whl"))
    assert [p.name for p in sdists] == [f"vmafdnn-{PROJECT_VERSION}.tar.gz"], sorted(dist.iterdir())
    assert len(wheels) == 1 and wheels[0].name.startswith(f"vmafdnn-{PROJECT_VERSION}-"), wheels
    _check_sdist(sdists[0], clone)
    _check_wheel(wheels[0])
    built = time.monotonic()

    venvs = {"wheel": tmp_path / "venv-wheel", "sdist": tmp_path / "venv-sdist"}
    sources = {"wheel": wheels[0], "sdist": sdists[0]}
    for label, venv in venvs.items():
        _run([sys.executable, "-m", "venv", venv], env=_clean_env())
        # Installed from outside the clone, so nothing can come from it.
        _run([venv / "bin" / "python", "-m", "pip", "install", "-q",
              f"vmafdnn[cpu] @ {sources[label].as_uri()}"],
             cwd=tmp_path, env=_clean_env(), timeout=1200)
    installed = time.monotonic()

    for label, venv in venvs.items():
        _check_install(venv, tmp_path / f"job-{label}", clone, ffmpeg_bin, label)
    print(f"build {built - started:.0f} s, installs {installed - built:.0f} s, "
          f"main jobs {time.monotonic() - installed:.0f} s")
