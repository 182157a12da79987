"""Issue 9, the command line: SIGINT / SIGTERM during a model run, the policy
and budget flags, thread bounds, escaped names, an endless input pipe, and
linear handling of large feature files."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest

import vmafdnn
from tests.models import factory
from vmafdnn.cli import printable
from vmafdnn.video import Frame, write_y4m

from test_trust import slow_nr_model

CLI = [sys.executable, "-m", "vmafdnn"]


def cli(*args, **kwargs):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True,
                          stdin=kwargs.pop("stdin", subprocess.DEVNULL), **kwargs)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A 16x16 Y4M clip of 4 frames."""
    path = tmp_path_factory.mktemp("clip") / "clip.y4m"
    chroma = np.full((8, 8), 128, np.uint8)
    write_y4m(path, [Frame(np.full((16, 16), 40 + i, np.uint8), chroma, chroma, 8, i, "420")
                     for i in range(4)], fps=25)
    return path


@pytest.fixture(scope="module")
def endless_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("endless") / "endless.onnx"
    onnx.save(slow_nr_model(1 << 62), str(path))
    return path


def wait_for_cpu_seconds(proc, seconds, timeout=120.0):
    """Waits until `proc` has used `seconds` of CPU time (user + system, /proc), however
    slowly a loaded machine lets it get there; a fixed sleep could end before it started."""
    ticks = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + timeout
    while True:
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / ticks >= seconds:
            return
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_a_model_run_within_a_second(clip, endless_model, tmp_path, sig, code):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen([*CLI, "-d", str(clip), "--no-reference", "--tiny-model",
                             str(endless_model), "-o", str(out_dir / "report.json"),
                             "--tiny-threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_cpu_seconds(proc, 2.5)  # started (~1 s of CPU), and inside the endless frame
    assert proc.poll() is None, proc.communicate()
    t0 = time.monotonic()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)
    elapsed = time.monotonic() - t0
    # The run is endless: any bound shows it was stopped. Under a second on a quiet
    # machine; the bound leaves room for a loaded one.
    assert elapsed < 10, elapsed
    assert proc.returncode == code, stderr
    assert f"interrupted by {sig.name}; no report written" in stderr
    assert "Traceback" not in stderr
    assert list(out_dir.iterdir()) == []  # no report, no temporary file


_INTERRUPTED_PLOT = """
import os, signal, sys, time
import vmafdnn.plot

def plotting(*args, **kwargs):  # a plot that takes long: the user presses Ctrl-C meanwhile
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)

vmafdnn.plot.save_plot = plotting
from vmafdnn.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_interruption_after_the_report_says_it_was_written(clip, tmp_path):
    """SIGINT while the plot was drawn, the report written: the message said "no report
    written" of a report that was there."""
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_PLOT, "-d", str(clip),
                           "--no-reference", "-o", str(out), "--plot", str(tmp_path / "p.png"),
                           "-q"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert "interrupted by SIGINT; the report was written, the rest not done" in proc.stderr
    assert len(json.loads(out.read_text())["frames"]) == 4


def test_max_run_time_flag_stops_a_slow_frame(clip, endless_model):
    t0 = time.monotonic()
    proc = cli("-d", clip, "--no-reference", "--tiny-model", endless_model,
               "--max-run-time", "0.3", "--tiny-threads", "1")
    assert proc.returncode == 1, proc.stderr
    assert "max_run_ms (300 ms)" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 8


def test_policy_flags_reach_info_and_bench(tmp_path):
    model = tmp_path / "identity.onnx"
    onnx.save(factory.identity(), str(model))
    elsewhere = tmp_path / "jail"
    elsewhere.mkdir()
    for command in ("info", "bench"):
        proc = cli(command, model, "--max-model-bytes", "16")
        assert proc.returncode == 1 and "cap" in proc.stderr, proc.stderr
        proc = cli(command, model, "--model-dir", elsewhere)
        assert proc.returncode == 1 and "model directory" in proc.stderr, proc.stderr
    proc = cli("bench", model, "--runs", "3", "--max-memory", "512M", "--max-run-time", "2",
               "--max-model-bytes", "1K")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("flag, value, fragment", [
    ("--max-memory", "2X", "is not a size"),
    ("--max-memory", "-1", "is not a size"),
    ("--max-run-time", "-1", "must be a finite number >= 0"),
    ("--max-run-time", "nan", "must be a finite number >= 0"),
    ("--tiny-threads", str(vmafdnn.MAX_THREADS + 1),
     f"must be 0..{vmafdnn.MAX_THREADS} (got {vmafdnn.MAX_THREADS + 1})"),
    # Before: "-1 must be at least 0" / "... is more than the maximum": the
    # range is named whole both ways.
    ("--tiny-device-index", "-1", "--tiny-device-index: must be 0..2147483647 (got -1)"),
    ("--tiny-device-index", "2147483648", "must be 0..2147483647 (got 2147483648)"),
])
def test_bad_policy_and_thread_flags_are_usage_errors(clip, flag, value, fragment):
    proc = cli("-r", clip, "-d", clip, flag, value)
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr


def test_size_parser():
    from vmafdnn.cliargs import byte_size
    assert byte_size("2G") == 2 << 30
    assert byte_size("512M") == 512 << 20
    assert byte_size("512MiB") == 512 << 20
    assert byte_size("1.5g") == 3 << 29
    assert byte_size("4096") == 4096
    assert byte_size("0") == 0


def test_threads_above_the_maximum_for_info(tmp_path):
    model = tmp_path / "identity.onnx"
    onnx.save(factory.identity(), str(model))
    proc = cli("info", model, "--threads", str(vmafdnn.MAX_THREADS + 1))
    assert proc.returncode == 2 and str(vmafdnn.MAX_THREADS) in proc.stderr


def test_printable_escapes_what_could_drive_a_terminal():
    assert printable("psnr_y") == "psnr_y"
    assert printable("a\x1b[31mred\x07") == "a\\x1b[31mred\\x07"
    assert printable("x\u202eevil") == "x\\u202eevil"
    assert printable("caf\u00e9 \u4e2d") == "caf\u00e9 \u4e2d"
    assert printable("bad\udcff") == "bad\\udcff"
    assert printable("line\nbreak\r") == "line\\x0abreak\\x0d"


def test_model_names_are_printed_escaped(tmp_path):
    evil = "y\x1b]0;owned\x07\x1b[2J"
    model = factory.identity()
    model.graph.node[0].output[0] = evil
    model.graph.output[0].name = evil
    path = tmp_path / "m\x1b[31m.onnx"
    onnx.save(model, str(path))
    proc = cli("info", path)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "y\\x1b]0;owned\\x07\\x1b[2J" in proc.stdout
    assert "m\\x1b[31m.onnx" in proc.stdout
    proc = cli("info", tmp_path / "missing\x1b[31m.onnx")
    assert proc.returncode == 1 and "\x1b" not in proc.stderr
    assert "missing\\x1b[31m.onnx" in proc.stderr


def test_an_endless_pipe_against_a_short_file_ends(clip):
    # stdin is an endless Y4M stream; the reference has 4 frames.
    header = clip.read_bytes().split(b"\n", 1)[0] + b"\n"
    feeder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nout = sys.stdout.buffer\nout.write(%r)\n"
         "chunk = b'FRAME\\n' + bytes(16 * 16 + 2 * 8 * 8)\n"
         "while True:\n    out.write(chunk)\n" % header],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        proc = cli("-r", clip, "-d", "-", stdin=feeder.stdout, timeout=60)
        assert time.monotonic() - t0 < 30
    finally:
        feeder.stdout.close()
        feeder.kill()
        feeder.wait()
    assert proc.returncode == 1, proc.stderr
    assert "reference has 4 frames but distorted has at least 5 frames" in proc.stderr


def test_twenty_thousand_features_are_handled_in_linear_time(tmp_path):
    names = [f"f{k}" for k in range(20000)]
    features = tmp_path / "features.json"
    features.write_text(json.dumps({"frames": [
        {"frameNum": i, "metrics": {name: float(i) for name in names}} for i in range(2)]}))
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"frames": [
        {"frameNum": i, "metrics": {name: float(i) for name in names[:2000]}} for i in range(2)]}))
    frames = [np.full((16, 16), 9, np.uint8)] * 2

    def seconds(path):
        t0 = time.monotonic()
        result = vmafdnn.score(frames, frames, ["psnr_y"], features=path, threads=1)
        return time.monotonic() - t0, result

    seconds(small)  # warm: the model's session, imports
    small_s, _ = seconds(small)
    big_s, result = seconds(features)
    assert len(result["pooled_metrics"]) == 20001
    # Ten times the features: linear takes about ten times as long (less: fixed costs),
    # quadratic a hundred; a ratio holds whatever the machine's speed or load.
    assert big_s < 30 * small_s + 0.5, f"{small_s:.2f} s -> {big_s:.2f} s"
