"""The scoring command attacked again after issue 25's items: standard
output and standard input are files like any other (a report or summary
through a shell redirection never lands in a clip the run reads)."""
import subprocess
import sys

import numpy as np
import pytest

import vmafdnn
from vmafdnn.video import Frame, write_y4m

pytestmark = pytest.mark.skipif(not vmafdnn.available(), reason="ONNX Runtime is not installed")

CLI = [sys.executable, "-m", "vmafdnn"]


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack_cli")
    chroma = np.full((24, 24), 128, np.uint8)
    for name, base in (("ref.y4m", 40), ("dist.y4m", 44)):
        write_y4m(folder / name, [Frame(np.full((48, 48), base + i, np.uint8), chroma, chroma,
                                        8, i, "420") for i in range(3)], fps=25)
    return folder


def _run(args, stdin=None, stdout=None):
    return subprocess.run([*CLI, *map(str, args)], stdin=stdin if stdin is not None else
                          subprocess.DEVNULL, stdout=stdout if stdout is not None else
                          subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("extra,what", [
    (["-o", "-", "-q"], "the report (-o) - (standard output) is also the reference input"),
    (["-o", "REPORT"], "the summary (-q prints none) - (standard output) is also the "
                       "reference input"),
])
def test_stdout_appended_to_a_clip_is_refused(tmp_path, clips, extra, what):
    # Before: `vmafdnn -r ref.y4m ... -o - >> ref.y4m` appended the report to
    # the reference (exit 0), while -o /dev/stdout was refused.
    ref = tmp_path / "ref.y4m"
    ref.write_bytes((clips / "ref.y4m").read_bytes())
    before = ref.read_bytes()
    base = ["-r", ref, "-d", clips / "dist.y4m", "--tiny-model", "psnr_y"]
    args = base + [tmp_path / "r.json" if a == "REPORT" else a for a in extra]
    with open(ref, "ab") as out:
        proc = _run(args, stdout=out)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert what in proc.stderr
    assert ref.read_bytes() == before and not (tmp_path / "r.json").exists()
    # -q with a report file writes nothing to stdout: allowed.
    with open(ref, "ab") as out:
        proc = _run(base + ["-o", tmp_path / "r.json", "-q"], stdout=out)
    assert proc.returncode == 0, proc.stderr
    assert ref.read_bytes() == before


def test_stdin_is_the_file_it_reads(tmp_path, clips):
    # Before: with the reference on stdin (-r - < ref.y4m), -o ref.y4m
    # replaced the clip being read, and -o - >> ref.y4m appended to it.
    ref = tmp_path / "ref.y4m"
    ref.write_bytes((clips / "ref.y4m").read_bytes())
    before = ref.read_bytes()
    base = ["-r", "-", "-d", clips / "dist.y4m", "--tiny-model", "psnr_y", "-q"]
    with open(ref, "rb") as stdin:
        proc = _run(base + ["-o", ref], stdin=stdin)
    assert proc.returncode == 2, proc.stderr
    assert f"the report (-o) {ref} is also the reference input (standard input)" in proc.stderr
    with open(ref, "rb") as stdin, open(ref, "ab") as out:
        proc = _run(base + ["-o", "-"], stdin=stdin, stdout=out)
    assert proc.returncode == 2 and "(standard output) is also the reference input" in \
        proc.stderr
    assert ref.read_bytes() == before
    with open(ref, "rb") as stdin:  # to a file of its own: scored
        proc = _run(base + ["-o", tmp_path / "r.json"], stdin=stdin)
    assert proc.returncode == 0, proc.stderr
