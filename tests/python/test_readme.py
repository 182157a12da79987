"""The README's code blocks work when pasted in order: every ```sh, ```python
and ```c block runs here, in document order, in one working directory made
from a copy of the checkout (sh with bash -e, python with this interpreter,
the C block written to the app.c its text names and built by the sh block
after it). The C program is then built again against the library installed
into a prefix and run from a folder outside the moved-away checkout, as a
user runs it (_run_app_installed). A block preceded by ``<!-- not-tested: reason -->`` is skipped;
that list stays short (system packages, virtual environments, the FFmpeg
build, benchmarks). The blocks of "The two commands" and "What the test
command installs" are the test command itself, which CI runs."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vmafdnn

from clips import ffmpeg

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TEST_COMMAND_SECTIONS = ("The two commands", "What the test command installs")
MAX_NOT_TESTED = 6

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_NOT_TESTED = re.compile(r"<!--\s*not-tested:\s*(.+?)\s*-->\s*$")


def blocks():
    """[(section, lang, code, not-tested reason or None)] in document order."""
    text = README.read_text()
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").splitlines()
        headings = [line for line in before if line.startswith("## ")]
        section = headings[-1][3:].strip() if headings else ""
        marker = _NOT_TESTED.search(before[-1]) if before else None
        out.append((section, m.group(1), m.group(2), marker.group(1) if marker else None))
    return out


def test_every_block_is_run_or_says_why_not():
    found = blocks()
    assert {lang for _, lang, _, _ in found} <= {"sh", "python", "c"}
    not_tested = [(s, why) for s, _, _, why in found
                  if why is not None and s not in TEST_COMMAND_SECTIONS]
    assert len(not_tested) <= MAX_NOT_TESTED, not_tested
    assert all(len(why) > 10 for _, why in not_tested)
    langs = [lang for s, lang, _, why in found if why is None and s not in TEST_COMMAND_SECTIONS]
    assert langs.count("c") == 1 and "python" in langs and langs.count("sh") >= 4


def test_first_hour_names_every_prerequisite():
    text = README.read_text()
    for word in ("python3-venv", "python3-dev", "gcc", "meson", "ninja", "onnx",
                 "VMAFDNN_ORT_LIBRARY", "libonnxruntime.so.1", "python3 -m venv",
                 "vmafdnn/models/"):
        assert word in text, word
    for model in ("psnr_y", "ssim_y", "sharpness_nr"):
        assert re.search(rf"^\| `{model}` \|.*\| .*\.\. .* \|", text, re.M), model


def _copy_checkout(dst: Path) -> None:
    def ignore(directory, names):
        if Path(directory) == ROOT:  # build trees and VCS data stay behind
            return [n for n in names if n.startswith("build") or n == ".git"]
        return [n for n in names if n == "__pycache__"]
    shutil.copytree(ROOT, dst, ignore=ignore, symlinks=True)


@pytest.mark.slow
@pytest.mark.skipif(not vmafdnn.available(), reason="ONNX Runtime is not installed")
def test_readme_blocks_run_in_order(tmp_path):
    pytest.importorskip("matplotlib", reason="the README installs the plot extra")
    pytest.importorskip("onnx", reason="the README's meson build generates models with onnx")
    work = tmp_path / "checkout"
    _copy_checkout(work)
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ffmpeg").symlink_to(ffmpeg())
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(tools), os.path.dirname(sys.executable),
                                   env.get("PATH", "")])
    env.pop("VMAFDNN_ORT_LIBRARY", None)  # the blocks find ONNX Runtime themselves
    env.pop("PKG_CONFIG_PATH", None)
    ran = []
    for section, lang, code, why in blocks():
        if why is not None or section in TEST_COMMAND_SECTIONS:
            continue
        if lang == "c":
            (work / "app.c").write_text(code)
            ran.append("c")
            continue
        # Each sh block is a paste into the same shell: exports carry over.
        cmd = ["bash", "-ec", _shell_prefix(ran) + code] if lang == "sh" else \
            [sys.executable, "-c", code]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, (
            f"README block in '{section}' failed ({lang}, exit {proc.returncode}):\n{code}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
        ran.append(code if lang == "sh" else "")
        if re.search(r"(^|\s)\./app(\s|$)", code, re.M):
            assert re.search(r"psnr_y 42\.110 dB on \S+", proc.stdout), proc.stdout
    assert (work / "report.json").is_file() and (work / "scores.png").stat().st_size > 10000
    assert (work / "scores.svg").is_file() and (work / "app").is_file()
    assert "c" in ran
    _run_app_installed(tmp_path, work, env, ran)


def _run_app_installed(tmp_path, work, env, ran):
    """The README's C program as a user runs it: the library installed (the README's
    `meson install`, here into a prefix of its own instead of /usr/local as root), the
    program built against the installed library alone (pkg-config, an rpath standing in
    for ldconfig) in a folder outside the checkout, the checkout then moved away, and
    run there with no argument and no VMAFDNN_MODEL_PATH: the installed library finds
    its built-in models by itself. A path into the build tree (the old README's
    builddir/models/psnr_y.onnx) fails here, where running inside the checkout hid it."""
    prefix, user = tmp_path / "prefix", tmp_path / "user"
    user.mkdir()
    shutil.copy(work / "app.c", user / "app.c")
    q = shlex.quote
    install = _shell_prefix(ran) + (
        f"meson configure builddir --prefix={q(str(prefix))} -Dpython.install_env=prefix\n"
        "meson install -C builddir --quiet\n")
    proc = subprocess.run(["bash", "-ec", install], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    pcs = sorted(prefix.rglob("libvmafdnn.pc"))
    assert pcs, "meson install wrote no libvmafdnn.pc"
    moved = tmp_path / "checkout.moved"
    work.rename(moved)  # nothing of the build tree is reachable any more
    try:
        build = _shell_prefix(ran) + (
            "unset VMAFDNN_MODEL_PATH VMAFDNN_MODEL_DIR\n"
            f"export PKG_CONFIG_PATH={q(str(pcs[0].parent))}\n"
            "cc app.c -o app $(pkg-config --cflags --libs libvmafdnn) "
            "-Wl,-rpath,\"$(pkg-config --variable=libdir libvmafdnn)\"\n"
            "./app\n")
        proc = subprocess.run(["bash", "-ec", build], cwd=user, env=env, capture_output=True,
                              text=True, timeout=600)
    finally:
        moved.rename(work)
    assert proc.returncode == 0, (
        "the README's C program fails outside the build tree against the installed "
        f"library:\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    assert re.search(r"psnr_y 42\.110 dB on \S+", proc.stdout), proc.stdout


def _shell_prefix(previous) -> str:
    """The export lines of the sh blocks before: a reader pastes into one shell."""
    lines = [line for code in previous for line in code.splitlines()
             if line.startswith("export ")]
    return "".join(f"{line}\n" for line in lines)
