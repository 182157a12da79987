"""The vmafdnn command line tool, end to end in subprocesses: Y4M and raw YUV
pairs, FFmpeg pipes, the one-line errors and exit codes, -q, and the info and
bench subcommands."""
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import vmafdnn

from clips import clips8_fixture, clips10_fixture, synth_fixture  # noqa: F401  (fixtures)
from clips import ffmpeg, run_ffmpeg, to_raw
from vmafdnn.video import Y4MReader, write_y4m

CLI = [sys.executable, "-m", "vmafdnn"]
ERROR_LINE = re.compile(r"vmafdnn: error: \S.*\n")


def vmafdnn_cli(*args, stdin=None, cwd=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True,
                          stdin=stdin if stdin is not None else subprocess.DEVNULL, cwd=cwd)


def assert_error(proc, code, fragment):
    """One line on stderr, nothing on stdout, no traceback, the exit code."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert ERROR_LINE.fullmatch(proc.stderr), proc.stderr
    assert fragment in proc.stderr, proc.stderr
    assert proc.stdout == ""


def pooled_lines(stdout):
    return dict(re.findall(r"^(\w+): ([0-9.]+)$", stdout, re.M))


# -- scoring ------------------------------------------------------------------------

def test_y4m_pair_to_json(clips8, tmp_path):
    out = tmp_path / "report.json"
    proc = vmafdnn_cli("-r", clips8.ref, "-d", clips8.dist, "-o", out, "--json",
                       "--tiny-threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress meter when stderr is not a terminal
    report = json.loads(out.read_text())
    assert [f["frameNum"] for f in report["frames"]] == list(range(clips8.frames))
    expected = vmafdnn.score(clips8.ref, clips8.dist, threads=1)
    printed = pooled_lines(proc.stdout)
    # The default set: psnr_y, ssim_y and, where built, vmaf with its features.
    assert set(printed) == set(expected["pooled_metrics"]) | {"frames"}
    assert ("vmaf" in printed) == ("vmaf" in vmafdnn.models.default_models())
    for name in ("psnr_y", "ssim_y"):
        assert float(printed[name]) == pytest.approx(
            expected["pooled_metrics"][name]["mean"], abs=1e-6)
        assert report["pooled_metrics"][name]["mean"] == pytest.approx(
            expected["pooled_metrics"][name]["mean"], abs=1e-6)
    # Each model and the execution provider it really runs on.
    # (and the form of it that scores, where its sidecar names one for that EP)
    attached = re.findall(r"^model (.+): (fr|nr|features), on (\S+)(?: as (\S+))?$",
                          proc.stdout, re.M)
    assert [(Path(p).name, kind) for p, kind, _, _ in attached] == [
        (Path(m["path"]).name, m["kind"]) for m in expected["models"]]
    assert [Path(p).stem for p, _, _, _ in attached][:2] == ["psnr_y", "ssim_y"]
    assert {ep for _, _, ep, _ in attached} <= {"CPU", "CUDA", "OpenVINO:GPU", "OpenVINO:CPU",
                                                "ROCm"}
    assert [form for _, _, _, form in attached] == [
        Path(m["form"]).name if m.get("form") else "" for m in expected["models"]]
    if "vmaf" in printed:  # VMAF's features through the fused kernels on ORT's CPU EP
        assert ("vmaf_features.onnx", "fr", "CPU", "vmaf_features_kernels.onnx") in [
            (Path(p).name, k, ep, f) for p, k, ep, f in attached]
    assert f"report: {out}" in proc.stdout


@pytest.mark.parametrize("flag,start", [("--xml", "<VMAF version="), ("--csv", "Frame,psnr_y,ssim_y")])
def test_report_format_flags(synth, tmp_path, flag, start):
    out = tmp_path / "report.out"
    proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-o", out, flag, "-q")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith(start)


def test_quiet_prints_nothing(synth, tmp_path):
    proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-o", tmp_path / "r.xml", "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (tmp_path / "r.xml").read_text().startswith("<VMAF version=")


@pytest.mark.parametrize("clip_name", ["clips8", "clips10"])
def test_raw_yuv_with_geometry(request, clip_name, tmp_path):
    clip = request.getfixturevalue(clip_name)
    ref, dist = to_raw(clip.ref, tmp_path / "ref.yuv"), to_raw(clip.dist, tmp_path / "dist.yuv")
    out = tmp_path / "raw.json"
    proc = vmafdnn_cli("-r", ref, "-d", dist, "-w", clip.width, "-h", clip.height, "-p", "420",
                       "-b", clip.bitdepth, "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    expected = vmafdnn.score(clip.ref, clip.dist, threads=1)
    raw = json.loads(out.read_text())
    for got, want in zip(raw["frames"], expected["frames"]):
        for k, v in want["metrics"].items():
            assert got["metrics"][k] == pytest.approx(v, abs=1e-6)
    assert len(raw["frames"]) == clip.frames
    # Without its geometry raw YUV is a usage error.
    assert_error(vmafdnn_cli("-r", ref, "-d", dist), 2, "needs --width (-w)")


def test_ffmpeg_pipe_no_reference(clips8, tmp_path):
    out = tmp_path / "nr.json"
    cmd = (f"{shutil.which('ffmpeg') or ffmpeg()} -nostdin -v error -i {clips8.encoded} "
           f"-f yuv4mpegpipe - | {' '.join(CLI)} -d - --no-reference -o {out}")
    proc = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert len(report["frames"]) == clips8.frames
    assert set(report["pooled_metrics"]) == {"sharpness_nr"}
    expected = vmafdnn.score(None, clips8.dist, threads=1)
    assert report["pooled_metrics"]["sharpness_nr"]["mean"] == pytest.approx(
        expected["pooled_metrics"]["sharpness_nr"]["mean"], abs=1e-6)
    assert "sharpness_nr:" in proc.stdout


def test_reference_from_stdin(synth, tmp_path):
    out = tmp_path / "r.json"
    with open(synth.ref, "rb") as stdin:
        proc = vmafdnn_cli("-r", "-", "-d", synth.dist, "-o", out, "-q", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    expected = vmafdnn.score(synth.ref, synth.dist, threads=1)
    assert json.loads(out.read_text())["pooled_metrics"]["psnr_y"]["mean"] == pytest.approx(
        expected["pooled_metrics"]["psnr_y"]["mean"], abs=1e-6)


def test_progress_meter_on_a_terminal(clips8):
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CLI, "-r", str(clips8.ref), "-d", str(clips8.dist),
                             "--tiny-model", "psnr_y"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    stdout = proc.stdout.read().decode()
    proc.stdout.close()
    assert proc.wait() == 0, seen
    text = seen.decode()
    assert re.search(rf"vmafdnn: frame {clips8.frames}/{clips8.frames}, [0-9.]+ fps", text), text
    assert "psnr_y:" in stdout and "fps" not in stdout
    # -q: not even on a terminal.
    master, slave = pty.openpty()
    proc = subprocess.run([*CLI, "-r", str(clips8.ref), "-d", str(clips8.dist), "-q",
                           "--tiny-model", "psnr_y"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    os.set_blocking(master, False)
    try:
        leftover = os.read(master, 4096)
    except OSError:
        leftover = b""
    os.close(master)
    assert (proc.returncode, proc.stdout, leftover) == (0, b"", b"")


def test_tiny_model_options(synth, models, tmp_path):
    proc = vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-model", models.nr_mean,
                       "--tiny-resize", "bilinear", "--tiny-device", "cpu", "--tiny-threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^nr_mean: 0\.\d+$", proc.stdout, re.M)
    assert re.search(r"nr_mean.onnx: nr, on CPU$", proc.stdout, re.M)


@pytest.mark.parametrize("what, extra", [
    ("static_shapes", ()),
    # with the models specialised, so that ON takes the binding path on ORT's CPU EP
    ("device_io", ("--tiny-static-shapes", "on")),
])
def test_tiny_specialisation_settings(synth, tmp_path, what, extra):
    """--tiny-static-shapes and --tiny-device-io reach the library (any spelling the names table
    takes): off and ON score the same; an unknown setting is a usage error."""
    flag = "--tiny-" + what.replace("_", "-")
    reports = {}
    for setting in ("off", "ON"):
        out = tmp_path / f"r{setting}.json"
        proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", "psnr_y",
                           "--tiny-model", "ssim_y", *extra, flag, setting, "-q", "-o", out)
        assert proc.returncode == 0, proc.stderr
        reports[setting] = [f["metrics"] for f in json.loads(out.read_text())["frames"]]
    assert reports["off"] == reports["ON"] and len(reports["off"]) > 1
    assert_error(vmafdnn_cli("-d", synth.dist, "--no-reference", flag, "always"), 2,
                 f'unknown {what} setting "always"; valid names: auto, off, on')


def test_summary_says_where_runs_bound_device_io(synth, monkeypatch):
    """The summary says how many runs bound their inputs and outputs (device_io), over the
    context's session and the copies scoring frames in flight: every run with --tiny-device-io
    on (CUDA's form, the samples form, run on ORT's CPU EP through VMAFDNN_MODEL_FORMS=CUDA), none
    mentioned with off; and, either way, that every run took the 8-bit clip's samples as UINT8
    (static shapes on), none with VMAFDNN_UINT8=0."""
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CUDA")
    for setting, threads in (("on", "1"), ("on", "3"), ("off", "3")):
        proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", "psnr_y",
                           "--tiny-static-shapes", "on", "--tiny-device-io", setting,
                           "--tiny-threads", threads)
        assert proc.returncode == 0, proc.stderr
        frames = int(re.search(r"^frames: (\d+)$", proc.stdout, re.M).group(1))
        [line] = [line for line in proc.stdout.splitlines() if line.startswith("model ")]
        bound = f", device-resident I/O on {frames} of {frames} runs"
        narrow = f", UINT8 samples on {frames} of {frames} runs"
        assert line.endswith("as psnr_y_samples.onnx" + (bound if setting == "on" else "") +
                             narrow), line
        assert "device I/O:" not in proc.stdout  # reasons are printed for accelerators only
    monkeypatch.setenv("VMAFDNN_UINT8", "0")
    proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", "psnr_y",
                       "--tiny-static-shapes", "on", "--tiny-device-io", "off")
    assert proc.returncode == 0, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("model ")]
    assert line.endswith("as psnr_y_samples.onnx"), line


def test_tiny_batch(synth, models, tmp_path):
    """--tiny-batch reaches the library: its memory check names the batch; scores equal."""
    reports = {}
    for batch in ("1", "4"):
        out = tmp_path / f"r{batch}.json"
        proc = vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-model", models.batch_mean,
                           "--tiny-device", "cpu", "--tiny-batch", batch, "-q", "-o", out)
        assert proc.returncode == 0, proc.stderr
        reports[batch] = [f["metrics"] for f in json.loads(out.read_text())["frames"]]
    assert [f["batch_mean"] for f in reports["4"]] == pytest.approx(
        [f["batch_mean"] for f in reports["1"]], abs=1e-7)
    proc = vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-model", models.batch_mean,
                       "--tiny-model", models.batch_size, "--tiny-device", "cpu",
                       "--tiny-batch", "2")
    assert proc.returncode == 0, proc.stderr
    # 4 frames: the first Run of 2 checked one per frame, the second kept
    assert re.search(r"batch_mean.onnx: nr, on CPU, 2 of 4 frames in Runs of up to 2$",
                     proc.stdout, re.M), proc.stdout
    assert re.search(r"batch_size.onnx: nr, on CPU, one frame per Run \(its batched Run "
                     r"disagreed", proc.stdout, re.M), proc.stdout
    assert_error(vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-model",
                             models.batch_mean, "--tiny-batch", "64", "--tiny-threads", "2",
                             "--max-memory", "100k"),
                 1, "64 frames per Run")
    assert_error(vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-batch", "65"), 2,
                 "--tiny-batch: must be 0..64 (got 65)")


def test_features_file(synth, models, tmp_path):
    model = tmp_path / "fv.onnx"
    shutil.copyfile(models.fv_weighted, model)
    (tmp_path / "fv.json").write_text(json.dumps({"features": ["adm2", "motion2"]}))
    log = {"frames": [{"frameNum": i, "metrics": {"adm2": 1.0, "motion2": 2.0}}
                      for i in range(synth.frames)]}
    (tmp_path / "log.json").write_text(json.dumps(log))
    proc = vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", model,
                       "--features", tmp_path / "log.json")
    assert proc.returncode == 0, proc.stderr
    assert float(pooled_lines(proc.stdout)["fv"]) == pytest.approx(21.0, abs=1e-5)


# -- errors: one line, no traceback, 2 for usage and 1 at run time ------------------

def test_usage_errors(synth):
    assert_error(vmafdnn_cli(), 2, "no input given")
    assert_error(vmafdnn_cli("-r", synth.ref), 2, "distorted video is required")
    assert_error(vmafdnn_cli("-d", synth.dist), 2, "reference is required")
    assert_error(vmafdnn_cli("-r", "-", "-d", "-"), 2, "only one of -r and -d")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--no-reference"), 2,
                 "drop -r")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--bogus"), 2,
                 "unrecognized arguments: --bogus")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-b", "7"), 2, "invalid choice")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-w", "0"), 2,
                 "must be 1..32768 (got 0)")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--json", "--xml"), 2,
                 "not allowed with")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-resize", "area"), 2,
                 'unknown resize mode "area"; valid names: none, bilinear')
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-h"), 2,
                 "-h/--height: expected one argument")
    # Geometry that contradicts the Y4M header.
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-w", "100"), 2,
                 f"Y4M header says width {synth.width} but 100 was given")


def test_missing_files(synth, tmp_path):
    assert_error(vmafdnn_cli("-r", tmp_path / "nope.y4m", "-d", synth.dist), 1,
                 "nope.y4m does not exist")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", tmp_path / "gone.y4m"), 1,
                 "gone.y4m does not exist")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model",
                             tmp_path / "nope.onnx"), 1, "nope.onnx")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--features",
                             tmp_path / "nope.json"), 1, "nope.json does not exist")


def test_size_and_format_mismatch(clips8, clips10, tmp_path):
    small = tmp_path / "small.y4m"
    run_ffmpeg("-i", clips8.dist, "-vf", "scale=176:144", "-pix_fmt", "yuv420p", small)
    assert_error(vmafdnn_cli("-r", clips8.ref, "-d", small), 1,
                 "size mismatch: reference is 352x288 but distorted is 176x144")
    deep = tmp_path / "deep.y4m"
    run_ffmpeg("-i", clips8.dist, "-pix_fmt", "yuv420p10le", "-strict", "-1", deep)
    assert_error(vmafdnn_cli("-r", clips8.ref, "-d", deep), 1,
                 "bit depth mismatch: reference is 8-bit but distorted is 10-bit")


def test_frame_count_mismatch(synth, tmp_path):
    short = tmp_path / "short.y4m"
    with Y4MReader(synth.dist) as reader:
        write_y4m(short, list(reader)[:3])
    out = tmp_path / "partial.json"
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", short, "-o", out), 1,
                 "reference has at least 4 frames but distorted has 3 frames")
    assert len(json.loads(out.read_text())["frames"]) == 3


@pytest.mark.parametrize("content,fragment", [
    (b"GARBAGE\n", "not a Y4M stream"),
    (b"YUV4MPEG2 W64 C420jpeg\n", "no H (height) parameter"),
    (b"YUV4MPEG2 W64 H48 F25:1 C411\n", "4:1:1"),
    (b"YUV4MPEG2 W64 H48 F25:1 C420jpeg\nFRAME\n" + bytes(100), "truncated"),
])
def test_bad_y4m(synth, tmp_path, content, fragment):
    bad = tmp_path / "bad.y4m"
    bad.write_bytes(content)
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", bad), 1, fragment)


def stage(models, tmp_path, model, as_name, sidecar=None):
    path = tmp_path / f"{as_name}.onnx"
    shutil.copyfile(getattr(models, model), path)
    if sidecar is not None:
        (tmp_path / f"{as_name}.json").write_text(sidecar)
    return path


def test_bad_models(synth, models, tmp_path):
    def fails(path, fragment, *extra):
        assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", path,
                                 *extra), 1, fragment)

    not_onnx = tmp_path / "text.onnx"
    not_onnx.write_text("hello")
    fails(not_onnx, "text.onnx")                                                    # not ONNX
    fails(stage(models, tmp_path, "symbolic_hw_mean", "sym"), "sym.onnx")           # refused
    fails(stage(models, tmp_path, "output_1x4", "cols"), "cols.onnx")               # wrong shape
    fails(stage(models, tmp_path, "nr_mean", "small"), "small.onnx takes 8x8")      # 64x48
    fails(stage(models, tmp_path, "nr_mean", "broken", "{oops"), "broken.json")     # bad JSON
    fails(stage(models, tmp_path, "nr_mean", "typed", '{"resize": "area"}'), "typed.json")
    unreadable = stage(models, tmp_path, "nr_mean", "dir")
    (tmp_path / "dir.json").mkdir()                                     # unreadable sidecar
    fails(unreadable, "dir.json")
    assert_error(vmafdnn_cli("-d", synth.dist, "--no-reference", "--tiny-model", "psnr_y"), 1,
                 "no_reference")


def test_missing_features(synth, models, tmp_path):
    model = stage(models, tmp_path, "fv_weighted", "fv", '{"features": ["adm2", "motion2"]}')
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"frames": [{"frameNum": 0, "metrics": {"adm2": 1.0}}]}))
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", model,
                             "--features", log), 1, '"motion2" at frame 0')
    # No features file at all: the same error, for the first feature.
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", model), 1,
                 '"adm2" at frame 0')
    log.write_text("{broken")
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "--tiny-model", model,
                             "--features", log), 1, "invalid JSON")


def test_unwritable_output(synth, tmp_path):
    assert_error(vmafdnn_cli("-r", synth.ref, "-d", synth.dist, "-o",
                             tmp_path / "no" / "such" / "dir.json"), 1, "dir.json")


# -- the rest of the tool ---------------------------------------------------------------

def test_help_and_version():
    proc = vmafdnn_cli("--help")
    assert proc.returncode == 0
    assert "-h HEIGHT, --height HEIGHT" in proc.stdout
    assert "vmafdnn info MODEL" in proc.stdout and "--tiny-model" in proc.stdout
    proc = vmafdnn_cli("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"vmafdnn {vmafdnn.__version__}")


def test_info_and_bench_still_work(models):
    proc = vmafdnn_cli("info", vmafdnn.models.path("psnr_y"), "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^attached EP  CPU$", proc.stdout, re.M)
    assert re.search(r"; CPU kernels (x86-64-v4|avx2|baseline)\)$", proc.stdout, re.M)
    assert re.search(r"^input  reference\s+float32\s+\[1, 1, \?, \?\]$", proc.stdout, re.M)
    proc = vmafdnn_cli("bench", models.identity, "--runs", "20", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert "20 runs: median" in proc.stdout
    assert_error(vmafdnn_cli("info", "/nonexistent/model.onnx"), 1, "model.onnx")
    assert_error(vmafdnn_cli("info"), 2, "info: give a MODEL, or --devices")
    assert_error(vmafdnn_cli("bench", models.identity, "--runs", "x"), 2, "'x' is not an integer")


def test_bench_feeds_samples_models_what_their_sidecars_say():
    """A model taking samples (UINT16) and the values its sidecar feeds (bpc, device_type):
    bench gives it 8-bit samples and bpc 8, where random floats in [0, 1) were refused as
    samples and would be no bit depth the library's operators take."""
    folder = os.path.dirname(str(vmafdnn.models.path("psnr_y")))
    for name in ("ssim_y_kernels", "float_ssim_kernels", "psnr_y_samples",
                 "vmaf_features_kernels"):
        path = os.path.join(folder, name + ".onnx")
        if not os.path.exists(path):
            assert name.startswith("vmaf_"), path  # VMAF's need libvmaf's model files
            continue
        proc = vmafdnn_cli("bench", path, "--runs", "3", "--threads", "1", "--device", "cpu")
        assert proc.returncode == 0, (name, proc.stderr)
        assert "3 runs: median" in proc.stdout, proc.stdout


def test_bench_reads_a_sidecar_within_bounds(models, tmp_path):
    """bench reads the model's sidecar only for its value inputs, as the batch key does
    (results.read_sidecar): a FIFO in its place is not waited on, an endless or malformed one
    is passed over, and the model is still timed."""
    for name, make in [("fifo", os.mkfifo),
                       ("huge", lambda p: open(p, "w").write("{" + " " * (2 << 20) + "}")),
                       ("list", lambda p: open(p, "w").write("[1, 2]")),
                       ("sources", lambda p: open(p, "w").write('{"input_sources": 7}'))]:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(models.identity, folder / "m.onnx")
        make(str(folder / "m.json"))
        proc = subprocess.run([*CLI, "bench", str(folder / "m.onnx"), "--runs", "3"],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=120)
        assert proc.returncode == 0, (name, proc.stderr)
        assert "3 runs: median" in proc.stdout, (name, proc.stdout)


def test_console_script(synth):
    script = Path(sysconfig.get_path("scripts")) / "vmafdnn"
    assert script.exists(), f"the vmafdnn console script is not installed at {script}"
    proc = subprocess.run([str(script), "-r", str(synth.ref), "-d", str(synth.dist),
                           "--tiny-model", "psnr_y"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "psnr_y:" in proc.stdout


def test_console_entry_sets_blas_threads_before_numpy():
    # The package imports numpy only on first use, so the console entry can
    # keep OpenBLAS from starting a spinning thread per core; a caller's own
    # value stays.
    probe = ("import os, sys, vmafdnn; assert 'numpy' not in sys.modules, 'import vmafdnn loaded numpy'\n"
             "import vmafdnn._console as c; sys.argv = ['vmafdnn', '--version']\n"
             "try:\n    c.main()\nexcept SystemExit:\n    pass\n"
             "import numpy; print(os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "1"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**env, "OPENBLAS_NUM_THREADS": "3"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "3"


def test_package_names_resolve_lazily():
    # Every public name is there, whether reached as an attribute, by a
    # from-import or by `import *`; an unknown one is an AttributeError.
    for name in vmafdnn.__all__:
        assert getattr(vmafdnn, name) is not None, name
    assert set(vmafdnn.__all__) <= set(dir(vmafdnn))
    assert callable(vmafdnn.batch) and callable(vmafdnn.batch.read_results)
    with pytest.raises(AttributeError, match="no_such_name"):
        vmafdnn.no_such_name  # noqa: B018
    namespace = {}
    exec("from vmafdnn import *", namespace)
    assert namespace["Session"] is vmafdnn.Session


def _fresh(code: str, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, **kwargs)


def test_submodules_are_attributes_of_the_package_as_before_lazy_imports():
    # Before: with the package's names imported on first use, `import vmafdnn;
    # vmafdnn.models.path("psnr_y")` (the README's Python example) was an
    # AttributeError unless something had imported vmafdnn.models first;
    # eager imports had made every submodule an attribute.
    names = ["batch", "bdrate", "cli", "cliargs", "context", "convert", "errors", "frames",
             "jobs", "media", "models", "names", "paths", "plot", "results", "runners",
             "scoring", "session", "video"]
    probe = ("import sys, vmafdnn; assert 'numpy' not in sys.modules; "
             f"print([type(getattr(vmafdnn, n)).__name__ for n in {names!r}]); "
             "print(vmafdnn.models.path('psnr_y').name)")
    proc = _fresh(probe)
    assert proc.returncode == 0, proc.stderr
    kinds, model = proc.stdout.splitlines()
    assert "AttributeError" not in proc.stderr and model == "psnr_y.onnx"
    assert set(names) <= set(dir(vmafdnn))
    assert not set(dir(vmafdnn)) & {"_console", "__main__"}


def test_importing_every_module_of_the_package_runs_nothing():
    # Before: a tool that imports every module of a package (pydoc, sphinx,
    # pkgutil.walk_packages, pytest --doctest-modules) ran the command line
    # when it reached vmafdnn.__main__ (an error on stderr, SystemExit 2),
    # and importing vmafdnn._console set OPENBLAS_NUM_THREADS=1 for the
    # whole process and every child it starts afterwards.
    probe = ("import importlib, os, sys; sys.argv = ['host-program', '--flag']; "
             "importlib.import_module('vmafdnn.__main__'); "
             "importlib.import_module('vmafdnn._console'); "
             "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    proc = _fresh(probe)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.strip() == "None"
    # The console entry still sets it before numpy is imported, and python -m
    # vmafdnn runs the tool.
    probe = ("import os, sys, vmafdnn._console as c; sys.argv = ['vmafdnn', '--version']\n"
             "try:\n    c.main()\nexcept SystemExit:\n    pass\n"
             "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)")
    proc = _fresh(probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "1 True", proc.stdout
    proc = subprocess.run([sys.executable, "-m", "vmafdnn", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("vmafdnn "), proc.stderr


def test_the_callable_batch_module_pickles_by_name():
    # Before: "cannot pickle '_CallableModule' object" for vmafdnn.batch, so
    # functools.partial(vmafdnn.batch, ...) could not go to a process pool.
    import copy
    import functools
    import pickle
    assert pickle.loads(pickle.dumps(vmafdnn.batch)) is vmafdnn.batch
    assert copy.copy(vmafdnn.batch) is vmafdnn.batch and copy.deepcopy(vmafdnn.batch) is vmafdnn.batch
    job = pickle.loads(pickle.dumps(functools.partial(vmafdnn.batch, workers=1)))
    assert job.func is vmafdnn.batch and job.keywords == {"workers": 1}
