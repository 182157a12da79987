"""The FFmpeg filters of the patch series in ffmpeg/, run in a real ffmpeg.

The patched ffmpeg is the one tools/build_ffmpeg.sh builds: $VMAFDNN_FFMPEG,
else ${VMAFDNN_CACHE_DIR:-~/.cache/vmafdnn}/ffmpeg/bin/ffmpeg (the default
version's). Without it these tests skip with a hint, except in CI (CI set),
where they fail. Clips come from Debian's own ffmpeg (clips.py), which is not
the patched build; so do the mp4/mov/mkv/webm files the container tests
decode with the patched build.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import vmafdnn
from vmafdnn.session import MAX_BATCH, MAX_THREADS

from clips import clips8_fixture, clips10_fixture, ffmpeg, run_ffmpeg  # noqa: F401  (fixtures)

CACHE = Path(os.environ.get("VMAFDNN_CACHE_DIR", Path.home() / ".cache" / "vmafdnn")) / "ffmpeg"
TOL = 1e-6


def _need(what: str, hint: str):
    if os.environ.get("CI"):
        pytest.fail(f"{what}; CI must run the FFmpeg filter tests ({hint})")
    pytest.skip(f"{what}: {hint}")


@pytest.fixture(scope="module")
def patched():
    """(ffmpeg path, environment) for the patched build."""
    exe = Path(os.environ.get("VMAFDNN_FFMPEG", CACHE / "bin" / "ffmpeg"))
    if not os.access(exe, os.X_OK):
        _need(f"no patched ffmpeg at {exe}",
              "run tools/build_ffmpeg.sh, or set VMAFDNN_FFMPEG")
    env = dict(os.environ)
    env.setdefault("VMAFDNN_BUILTIN_MODELS", str(CACHE / "prefix" / "share" / "vmafdnn" / "models"))
    if not Path(env["VMAFDNN_BUILTIN_MODELS"], "psnr_y.onnx").is_file():
        _need(f"no built-in models in {env['VMAFDNN_BUILTIN_MODELS']}",
              "run tools/build_ffmpeg.sh, or set VMAFDNN_BUILTIN_MODELS")
    env.setdefault("VMAFDNN_ORT_LIBRARY", vmafdnn.ort_library_path())
    return str(exe), env


def ffmpeg_major(patched) -> int:
    """The patched ffmpeg's major version (Debian's "7.1.5-0+deb13u1" -> 7)."""
    return int(run(patched, "-version").stdout.split()[2].split(".")[0])


# Every ffmpeg run here takes seconds; a filter that hangs (FFmpeg 5.1's tool once waited
# forever on a filter holding frames) fails its own test instead of the whole run's timeout.
RUN_TIMEOUT_S = 120


def run(patched, *args, check=True):
    exe, env = patched
    try:
        proc = subprocess.run([exe, "-nostdin", "-hide_banner", "-y", *map(str, args)],
                              env=env, capture_output=True, text=True, check=False,
                              timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ffmpeg {' '.join(map(str, args))} did not end in {RUN_TIMEOUT_S} s")
    if check and proc.returncode != 0:
        pytest.fail(f"ffmpeg {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def frame_metadata(path: Path):
    """Per-frame {key: value} of the lavfi.vmafdnn.* keys printed by the
    metadata filter (mode=print:file=...)."""
    frames = []
    for line in path.read_text().splitlines():
        if line.startswith("frame:"):
            frames.append({})
        elif line.startswith("lavfi.vmafdnn."):
            key, value = line[len("lavfi.vmafdnn."):].split("=", 1)
            frames[-1][key] = float(value)
    return frames


def score_with_filter(patched, tmp_path, inputs, options, frames=None):
    meta = tmp_path / "meta.txt"
    pads = "[0:v][1:v]" if len(inputs) == 2 else "[0:v]"
    args = [a for clip in inputs for a in ("-i", clip)]
    proc = run(patched, *args, "-lavfi",
               f"{pads}vmafdnn={options},metadata=mode=print:file={meta}", "-f", "null", "-")
    return frame_metadata(meta), proc.stderr


# Scores of models that run behind (VMAF's motion2 and SVM need the next frame's features)
# used to exist only after the frame had left the filter (in the report, not the metadata);
# the filter now holds a frame until every model has scored it, so none is missing.
LATE = set()


def runs_with_options(patched, tmp_path, clips, option_sets):
    """(per-frame metadata, the report's frames) of the filter on the clip pair, for each
    option string of option_sets in turn."""
    runs = []
    for options in option_sets:
        log = tmp_path / "log.json"
        got, _ = score_with_filter(patched, tmp_path, [clips.dist, clips.ref],
                                   f"{options}:log_path={log}")
        runs.append((got, json.loads(log.read_text())["frames"]))
    return runs


def assert_frames_match(got, expected):
    assert len(got) == len(expected["frames"])
    for frame, want in zip(got, expected["frames"]):
        assert set(frame) == set(want["metrics"])
        assert set(want["metrics"]) - set(frame) <= LATE
        for key, value in frame.items():
            assert value == pytest.approx(want["metrics"][key], abs=TOL), (want["frameNum"], key)


@pytest.mark.parametrize("clip_name", ["clips8", "clips10"])
def test_scores_match_python(patched, tmp_path, request, clip_name):
    clips = request.getfixturevalue(clip_name)
    got, log = score_with_filter(patched, tmp_path, [clips.dist, clips.ref], "threads=1")
    expected = vmafdnn.score(clips.ref, clips.dist, threads=1)
    assert len(got) == clips.frames
    assert_frames_match(got, expected)
    # The uninit summary: pooled means and the EP of every model.
    for name, pooled in expected["pooled_metrics"].items():
        mean = re.search(rf"{name} mean: ([0-9.]+)", log)
        assert mean and float(mean.group(1)) == pytest.approx(pooled["mean"], abs=1e-6)
    # The default set is the library's (vmaf_dnn_default_models), VMAF where it was built.
    ran = [Path(p).stem for p in re.findall(r"model (\S+)\.onnx ran on \S+", log)]
    assert [m["path"] for m in expected["models"]] and \
        ran == [Path(m["path"]).stem for m in expected["models"]]
    assert ("vmaf" in ran) == Path(patched[1]["VMAFDNN_BUILTIN_MODELS"], "vmaf.onnx").is_file()


def _report_rows(path: Path, fmt: str):
    """[{metric: value}] per frame from a report in `fmt`."""
    if fmt == "json":
        return [f["metrics"] for f in json.loads(path.read_text())["frames"]]
    if fmt == "xml":
        frames = ET.parse(path).getroot().find("frames")
        return [{k: float(v) for k, v in f.attrib.items() if k != "frameNum"} for f in frames]
    with open(path, newline="") as f:
        return [{k: float(v) for k, v in row.items() if k != "Frame" and v != ""}
                for row in csv.DictReader(f)]


@pytest.mark.parametrize("fmt", ["json", "xml", "csv"])
def test_report_formats(patched, tmp_path, clips8, fmt):
    log = tmp_path / f"log.{fmt}"
    got, _ = score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                               f"threads=1:log_path={log}:log_fmt={fmt}")
    rows = _report_rows(log, fmt)
    assert len(rows) == clips8.frames
    for row, frame in zip(rows, got):
        assert set(frame) <= set(row)
        for key, value in frame.items():
            assert row[key] == pytest.approx(value, abs=1e-6)  # reports print 6 decimals


def test_no_reference(patched, tmp_path, clips8):
    got, _ = score_with_filter(patched, tmp_path, [clips8.dist], "no_reference=1:threads=1")
    expected = vmafdnn.score(None, clips8.dist, no_reference=True, threads=1)
    assert list(got[0]) == ["sharpness_nr"]
    assert_frames_match(got, expected)


def test_explicit_models_and_paths(patched, tmp_path, clips8):
    """Built-in names and .onnx paths mix in one '|'-separated list."""
    builtin = Path(patched[1]["VMAFDNN_BUILTIN_MODELS"])
    got, _ = score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                               f"model=ssim_y|{builtin / 'psnr_y.onnx'}:threads=1")
    expected = vmafdnn.score(clips8.ref, clips8.dist, ["ssim_y", "psnr_y"], threads=1)
    assert list(got[0]) == ["ssim_y", "psnr_y"]
    assert_frames_match(got, expected)


@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv420p10le", "gray12le"])
def test_pre_identity_is_bit_exact(patched, tmp_path, models, clips8, pix_fmt):
    def md5s(chain):
        out = tmp_path / "frames.md5"
        run(patched, "-i", clips8.ref, "-vf", chain, "-f", "framemd5", out)
        return [line.split(",")[-1] for line in out.read_text().splitlines()
                if not line.startswith("#")]

    plain = md5s(f"format={pix_fmt}")
    assert len(plain) == clips8.frames
    assert md5s(f"format={pix_fmt},vmafdnn_pre=model={models.image_identity}:chroma=1") == plain
    assert md5s(f"format={pix_fmt},vmafdnn_pre=model={models.image_identity}") == plain
    assert md5s(f"format={pix_fmt},vmafdnn_pre=model={models.image_invert}") != plain


def test_pre_inverts_luma_only(patched, tmp_path, models, clips8):
    """image_invert on luma: Y becomes 255 - Y, chroma is copied."""
    raw_in, raw_out = tmp_path / "in.yuv", tmp_path / "out.yuv"
    run(patched, "-i", clips8.ref, "-frames:v", 1, "-f", "rawvideo", raw_in)
    run(patched, "-i", clips8.ref, "-frames:v", 1, "-vf",
        f"vmafdnn_pre=model={models.image_invert}", "-f", "rawvideo", raw_out)
    a, b = raw_in.read_bytes(), raw_out.read_bytes()
    luma = clips8.width * clips8.height
    assert len(a) == len(b) == luma * 3 // 2
    assert all(x + y == 255 for x, y in zip(a[:luma], b[:luma]))
    assert a[luma:] == b[luma:]


def test_bad_model_path(patched, tmp_path, clips8):
    missing = tmp_path / "missing.onnx"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"vmafdnn=model={missing}", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert f"Cannot use model '{missing}'" in proc.stderr
    assert "No such file or directory" in proc.stderr

    proc = run(patched, "-i", clips8.ref, "-vf", f"vmafdnn_pre=model={missing}",
               "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert f"Cannot use model '{missing}'" in proc.stderr


def test_refused_model(patched, tmp_path, models, clips8):
    """A full-reference model under no_reference is refused at init."""
    proc = run(patched, "-i", clips8.dist, "-lavfi", "vmafdnn=no_reference=1:model=psnr_y",
               "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "full-reference" in proc.stderr


def test_mismatched_sizes(patched, tmp_path, clips8):
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               "[1:v]scale=176:144[r];[0:v][r]vmafdnn", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert (f"The main input is {clips8.width}x{clips8.height} but the reference input "
            "is 176x144") in proc.stderr


def test_no_model_directory(patched, tmp_path, clips8):
    exe, env = patched
    env = {k: v for k, v in env.items() if k != "VMAFDNN_BUILTIN_MODELS"}
    proc = run((exe, env), "-i", clips8.dist, "-i", clips8.ref, "-lavfi", "vmafdnn",
               "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "VMAFDNN_BUILTIN_MODELS" in proc.stderr


def test_report_fps_is_the_frame_rate(patched, tmp_path, clips8):
    """The context is opened once the input's frame rate is known (it used to
    be opened at init, and every report said fps 0)."""
    log = tmp_path / "log.json"
    score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                      f"threads=1:log_path={log}")
    assert json.loads(log.read_text())["fps"] == pytest.approx(25)


# Lossless encodes of the Y4M clips in real containers: the patched ffmpeg
# must demux and decode them to the very frames of the Y4M pair, so the
# filter's scores equal the Y4M pair's.
LOSSLESS = {
    "h264.mp4": ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0"],
    "hevc.mov": ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "lossless=1:log-level=error"],
    "vp9.mkv": ["-c:v", "libvpx-vp9", "-lossless", "1", "-cpu-used", "8", "-row-mt", "1"],
    "av1.webm": ["-c:v", "libaom-av1", "-aom-params", "lossless=1", "-cpu-used", "8", "-row-mt", "1"],
}


@pytest.mark.parametrize("name", LOSSLESS)
def test_decodes_real_containers(patched, tmp_path, clips8, name):
    encoder = LOSSLESS[name][1]
    if f" {encoder} " not in subprocess.run([ffmpeg(), "-hide_banner", "-encoders"],
                                            capture_output=True, text=True).stdout:
        _need(f"the system ffmpeg has no {encoder} encoder to make the {name} clips",
              "install Debian's ffmpeg")
    pair = []
    for clip in (clips8.dist, clips8.ref):
        pair.append(tmp_path / f"{clip.stem}.{name}")
        run_ffmpeg("-i", clip, *LOSSLESS[name], "-pix_fmt", clips8.pix_fmt, pair[-1])
    got, _ = score_with_filter(patched, tmp_path, pair, "threads=1")
    expected = vmafdnn.score(clips8.ref, clips8.dist, threads=1)
    assert len(got) == clips8.frames
    assert_frames_match(got, expected)


# ---- the model policy (the same one every front end takes) -----------------

def test_model_dir_confines_models(patched, tmp_path, models, clips8):
    builtin = Path(patched[1]["VMAFDNN_BUILTIN_MODELS"])
    jail = tmp_path / "jail"
    jail.mkdir()
    for f in [*builtin.glob("psnr_y.*"), builtin / "psnr_y_kernels.onnx"]:
        shutil.copy(f, jail)
    # A bare name is looked up in model_dir.
    got, _ = score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                               f"model_dir={jail}:model=psnr_y:threads=1")
    assert_frames_match(got, vmafdnn.score(clips8.ref, clips8.dist, ["psnr_y"], threads=1))
    # A model outside it is refused by both filters, even as an absolute path.
    for args in (["-i", clips8.dist, "-i", clips8.ref, "-lavfi",
                  f"vmafdnn=model_dir={jail}:model={builtin / 'ssim_y.onnx'}"],
                 ["-i", clips8.ref, "-vf",
                  f"vmafdnn_pre=model_dir={jail}:model={models.image_identity}"]):
        proc = run(patched, *args, "-f", "null", "-", check=False)
        assert proc.returncode != 0
        assert "Cannot use model" in proc.stderr and "Permission denied" in proc.stderr


@pytest.mark.parametrize("filt", ["vmafdnn", "vmafdnn_pre"])
def test_max_model_bytes(patched, tmp_path, models, clips8, filt):
    model = "psnr_y" if filt == "vmafdnn" else models.image_identity
    inputs = ["-i", clips8.dist, "-i", clips8.ref] if filt == "vmafdnn" else ["-i", clips8.ref]
    proc = run(patched, *inputs, "-lavfi", f"{filt}=model={model}:max_model_bytes=64",
               "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "Cannot use model" in proc.stderr and "Argument list too long" in proc.stderr


def test_max_memory(patched, tmp_path, clips8):
    """psnr_y takes the frame's size (native resolution), and 352x288 needs
    about 800 KB of per-frame buffers: over a 64 KiB budget the first frame
    is refused."""
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               "vmafdnn=model=psnr_y:max_memory=65536", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "max_memory_bytes of 65536" in proc.stderr and "Disk quota exceeded" in proc.stderr


def test_max_run_ms(patched, tmp_path, models, clips8):
    """slow_chain takes about a second a run; a 50 ms budget stops the first."""
    proc = run(patched, "-i", clips8.dist, "-lavfi",
               f"vmafdnn=no_reference=1:model={models.slow_chain}:resize=bilinear:"
               "threads=1:max_run_ms=50", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "Scoring frame 0 failed" in proc.stderr and "Connection timed out" in proc.stderr


def test_threads_score_frames_in_flight(patched, tmp_path, models, clips8):
    """threads=N > 1 is the context's total, as in the other front ends: N frames in flight,
    so a frame's failure surfaces at a later call, named as scored in flight (with threads=1
    the read that scores it fails: test_max_run_ms)."""
    proc = run(patched, "-i", clips8.dist, "-lavfi",
               f"vmafdnn=no_reference=1:model={models.slow_chain}:resize=bilinear:"
               "threads=3:max_run_ms=50", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert "Scoring failed: frame 0 (scored in flight)" in proc.stderr
    assert "Connection timed out" in proc.stderr


@pytest.mark.parametrize("filt", ["vmafdnn=no_reference=1:", "vmafdnn_pre="])
def test_threads_is_the_filters_own_option(patched, models, clips8, filt):
    """threads is the filter's own option on every FFmpeg version, with its range. Before
    7.0, libavfilter sets a key that is also one of AVFilterContext's options (threads) on
    the AVFilterContext, not the filter: the filters take it from there (FFmpeg 5.1 ignored
    threads before they did; test_threads_score_frames_in_flight shows it is used)."""
    proc = run(patched, "-i", clips8.dist, "-vf",
               f"{filt}model={models.image_identity}:threads={MAX_THREADS + 1}",
               "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert f"for parameter 'threads' out of range [0 - {MAX_THREADS}]" in proc.stderr


def test_frames_in_flight_give_the_frames_and_scores_of_one_at_a_time(patched, tmp_path,
                                                                     clips8):
    """threads=3 (VMAF's features graph copied per worker, motion2 and the SVM on the filter's
    thread, frames leaving as the library counts them done), batch=2 and static_shapes=on
    (every model specialised to the frame size): every output frame, in order, with the
    metadata and the report of one frame at a time as opened."""
    (one, one_report), *others = runs_with_options(
        patched, tmp_path, clips8,
        ("threads=1:static_shapes=off", "threads=3:batch=2:static_shapes=on", "threads=2"))
    assert len(one) == clips8.frames and one[0]
    for other, other_report in others:
        assert other == one and other_report == one_report
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               "[0:v][1:v]vmafdnn=static_shapes=sometimes", "-f", "null", "-", check=False)
    assert proc.returncode != 0 and "static_shapes" in proc.stderr
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"[0:v][1:v]vmafdnn=batch={MAX_BATCH + 1}", "-f", "null", "-", check=False)
    assert proc.returncode != 0
    assert f"for parameter 'batch' out of range [0 - {MAX_BATCH}]" in proc.stderr


def test_frames_kept_by_the_library_are_not_written_under_it(patched, tmp_path, clips8):
    """The filter lends the library its frames (vmaf_dnn_read_pictures_kept: references, no
    copies) while they are in flight or read as past pictures: a filter after it that paints
    every frame it is passed (in place where the frame is writable), and a split that shares
    the inputs with such a painter, change no score of frames in flight."""
    meta = tmp_path / "meta.txt"
    paint = "lutyuv=y=255:u=128:v=128"  # in place where the frame is writable
    graphs = {
        "alone": f"[0:v][1:v]vmafdnn=threads=1,metadata=mode=print:file={meta}",
        "painted after": f"[0:v][1:v]vmafdnn=threads=3,{paint},metadata=mode=print:file={meta}",
        "shared inputs": f"[0:v]split[d][dp];[1:v]split[r][rp];[d][r]vmafdnn=threads=3,"
                         f"metadata=mode=print:file={meta}[out];[dp]{paint},nullsink;"
                         f"[rp]{paint},nullsink;[out]null",
    }
    runs = {}
    for name, graph in graphs.items():
        run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi", graph, "-f", "null", "-")
        runs[name] = frame_metadata(meta)
    assert len(runs["alone"]) == clips8.frames and runs["alone"][0]
    assert runs["painted after"] == runs["alone"]
    assert runs["shared inputs"] == runs["alone"]


def test_device_io_binds_with_the_scores_of_orts_copies(patched, tmp_path, clips8):
    """device_io (VmafDnnConfig.device_io) on binds the inputs and outputs of every specialised
    session, also on ORT's CPU EP, where every slot lives in host memory: with static_shapes=on
    the filter then scores through the binding path, one frame at a time and with frames in
    flight (a binding per worker), and gives the metadata and the report of ORT's own copies
    (device_io=off) as they are."""
    (copied, copied_report), *bound = runs_with_options(
        patched, tmp_path, clips8,
        ("threads=1:static_shapes=on:device_io=off", "threads=1:static_shapes=on:device_io=on",
         "threads=3:batch=2:static_shapes=on:device_io=on"))
    assert len(copied) == clips8.frames and copied[0]
    for other, other_report in bound:
        assert other == copied and other_report == copied_report


_SUMMARY = re.compile(r"\] model (\S+) ran on (\S+?)(?: as (\S+))?: (\d+) runs, (\d+) specialised "
                      r"to their sizes, (\d+) with device-resident I/O \((\d+) from pinned "
                      r"memory\), (\d+) on a recorded graph, (\d+) fed UINT8 samples$",
                      re.MULTILINE)


def _summary(stderr: str):
    """{model stem: (EP, form's base name or None, runs, specialised, device-resident I/O,
    recorded graph, fed UINT8 samples)} from the filter's model lines at its close; the runs
    from pinned memory checked 0 (ORT's CPU EP copies nothing to a device)."""
    lines = {}
    for path, ep, form, *counts in _SUMMARY.findall(stderr):
        runs, fixed, bound, pinned, captured, narrow = map(int, counts)
        assert pinned == 0, (path, counts)
        lines[Path(path).stem] = (ep, form or None, runs, fixed, bound, captured, narrow)
    return lines


@pytest.mark.parametrize("threads", [1, 3])
def test_summary_counts_specialised_and_device_io_runs(patched, tmp_path, clips8, threads):
    """The model lines of the close say how the runs went (vmaf_dnn_tiny_model_static_runs,
    the copies scoring frames in flight counted with the context's own session, so the counts
    are those of one run per frame whatever the schedule): with static_shapes=on and
    device_io=on on ORT's CPU EP, every run of psnr_y and ssim_y is specialised and binds its
    I/O; device_io=off binds none, and its reason is logged at the verbose level only on the
    CPU. The model that scores through its CPU form says so ("as <form>"), and the forms whose
    samples reach only the library's ops (psnr_y's and ssim_y's kernels forms) take the 8-bit
    clip as UINT8."""
    builtin = Path(patched[1]["VMAFDNN_BUILTIN_MODELS"])
    n = clips8.frames
    for device_io in ("on", "off"):
        got, log = score_with_filter(
            patched, tmp_path, [clips8.dist, clips8.ref],
            f"threads={threads}:device=cpu:static_shapes=on:device_io={device_io}")
        assert len(got) == n
        lines = _summary(log)
        assert {"psnr_y", "ssim_y"} <= set(lines) and \
            len(lines) == len(re.findall(r"\] model .* ran on", log)), log[-3000:]
        for stem, (ep, form, runs, fixed, bound, captured, narrow) in lines.items():
            assert ep == "CPU" and runs == n and fixed in (0, n), (stem, lines[stem])
            # the 8-bit clip's runs go as UINT8 where the library's ops read the samples
            assert narrow == (fixed if (form or "").endswith("_kernels.onnx")
                              else 0), (stem, lines[stem])
            assert bound == (fixed if device_io == "on" else 0) and captured == 0, (stem,
                                                                                  lines[stem])
            assert form is None or ("/" not in form and (builtin / form).is_file()), form
        for stem in ("psnr_y", "ssim_y"):  # through their kernels forms, on the CPU EP
            assert lines[stem] == ("CPU", f"{stem}_kernels.onnx", n, n,
                                   n if device_io == "on" else 0, 0, n)
        assert "device I/O:" not in log  # the CPU's reason is verbose
    proc = run(patched, "-v", "verbose", "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"[0:v][1:v]vmafdnn=model=psnr_y:threads={threads}:device=cpu:static_shapes=on:"
               "device_io=off", "-f", "null", "-")
    assert _summary(proc.stderr)["psnr_y"] == ("CPU", "psnr_y_kernels.onnx", n, n, 0, 0, n)
    assert re.search(r"\] model \S+psnr_y\.onnx: device I/O: .*device_io", proc.stderr), \
        proc.stderr[-3000:]



def test_summary_counts_uint8_runs_of_an_8bit_clip(patched, clips8):
    """With the CUDA forms taken on ORT's CPU EP (VMAFDNN_MODEL_FORMS=CUDA: psnr_y's samples
    form) and static shapes on, every run of the 8-bit clip takes its samples as UINT8, and
    the model line says so; VMAFDNN_UINT8=0 keeps them UINT16 with the same scores."""
    exe, env = patched
    got = {}
    for uint8 in ("1", "0"):
        proc = run((exe, dict(env, VMAFDNN_MODEL_FORMS="CUDA", VMAFDNN_UINT8=uint8)), "-i",
                   clips8.dist, "-i", clips8.ref, "-lavfi",
                   "[0:v][1:v]vmafdnn=model=psnr_y:device=cpu:static_shapes=on:device_io=on",
                   "-f", "null", "-")
        [line] = [m for m in _SUMMARY.finditer(proc.stderr) if "psnr_y" in m.group(1)]
        assert line.group(3) == "psnr_y_samples.onnx", line.group(0)
        runs, narrow = int(line.group(4)), int(line.group(9))
        assert runs == clips8.frames and narrow == (runs if uint8 == "1" else 0), line.group(0)
        got[uint8] = re.findall(r"psnr_y mean: (\S+)", proc.stderr)
    assert got["1"] == got["0"] and got["1"], got

@pytest.mark.parametrize("filt", ["vmafdnn=no_reference=1", "vmafdnn_pre=model={identity}"])
def test_device_io_values(patched, tmp_path, models, clips8, filt):
    """device_io takes auto, off and on (or 0 to 2), in both filters, each with the same output
    (on: the binding path on ORT's CPU EP); another name or a number out of range is refused
    when the filter is initialised."""
    filt = filt.format(identity=models.image_identity)

    def output(value):
        meta, md5 = tmp_path / "meta.txt", tmp_path / "frames.md5"
        run(patched, "-i", clips8.dist, "-frames:v", 3, "-vf",
            f"{filt}:static_shapes=on:device_io={value},metadata=mode=print:file={meta}",
            "-f", "framemd5", md5)
        return frame_metadata(meta), [line.split(",")[-1] for line in md5.read_text().splitlines()
                                      if not line.startswith("#")]

    outputs = {value: output(value) for value in ("auto", "off", "on", "0", "2")}
    first = outputs["off"]
    assert len(first[1]) == 3 and all(out == first for out in outputs.values())
    for value in ("sometimes", "3", "-1"):
        proc = run(patched, "-i", clips8.dist, "-vf", f"{filt}:device_io={value}",
                   "-f", "null", "-", check=False)
        assert proc.returncode != 0 and "device_io" in proc.stderr, value
    assert "for parameter 'device_io' out of range [0 - 2]" in proc.stderr


# ---- FFmpeg's own ONNX Runtime backend in the same build -------------------

def test_ffmpeg_onnx_backend_alongside(patched, tmp_path, models, clips8):
    """FFmpeg 9's dnn_processing (its ONNX Runtime backend) and our filters in
    one graph of one ffmpeg: both use the one ONNX Runtime in the process."""
    version = run(patched, "-version").stdout.split()[2]
    filters = run(patched, "-filters").stdout
    if " dnn_processing " not in filters:
        if int(version.split(".")[0]) < 9:
            pytest.skip(f"FFmpeg {version} has no ONNX Runtime backend (9.0 added it)")
        _need("the patched FFmpeg has no dnn_processing filter",
              "tools/build_ffmpeg.sh builds it when the onnxruntime package is installed")
    meta = tmp_path / "meta.txt"
    run(patched, "-i", clips8.ref, "-lavfi",
        f"[0:v]split[a][b];[a]dnn_processing=dnn_backend=onnx:model={models.image_identity}:"
        f"input=x:output=y,vmafdnn_pre=model={models.image_identity}[p];"
        f"[p][b]vmafdnn=model=psnr_y:threads=1,metadata=mode=print:file={meta}",
        "-f", "null", "-")
    got = frame_metadata(meta)
    assert len(got) == clips8.frames
    # Identity twice: the copy matches the reference (PSNR capped at 60 dB).
    assert all(frame["psnr_y"] >= 50 for frame in got)


def test_bottom_up_frames_score_like_top_down(patched, tmp_path, clips8):
    """FFmpeg hands bottom-up frames (negative linesizes) after vflip and from some
    decoders: the filter scores them (every FFmpeg version refused the first frame), and
    two flips give the scores of none."""
    meta = tmp_path / "meta.txt"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"[0:v]vflip,vflip[d];[1:v]vflip,vflip[r];[d][r]vmafdnn=model=psnr_y:threads=1,"
               f"metadata=mode=print:file={meta}", "-f", "null", "-")
    flipped = frame_metadata(meta)
    assert "failed" not in proc.stderr and len(flipped) == clips8.frames
    straight, _ = score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                                    "model=psnr_y:threads=1")
    assert [f["psnr_y"] for f in flipped] == [f["psnr_y"] for f in straight]
    # One flip of both inputs: the same picture pair upside down, the same PSNR.
    run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
        f"[0:v]vflip[d];[1:v]vflip[r];[d][r]vmafdnn=model=psnr_y:threads=1,"
        f"metadata=mode=print:file={meta}", "-f", "null", "-")
    assert [f["psnr_y"] for f in frame_metadata(meta)] == \
        pytest.approx([f["psnr_y"] for f in straight], abs=1e-9)


# ---- the filters as a front end: changes mid-stream, the report's path, EOF ----------

# A scale that evaluates per frame makes frames taller from frame 2 on without a
# reconfiguration of the links after it (FFmpeg's own way to change sizes mid-stream).
GROW = "scale=w=iw:h='if(gte(n,2),2*ih,ih)':eval=frame"


@pytest.mark.parametrize("chroma", [0, 1])
def test_pre_refuses_size_change_mid_stream(patched, tmp_path, models, clips8, chroma):
    """vmafdnn_pre allocated its output at the link's size and wrote the frame's:
    a taller frame overran the heap (SIGSEGV; with chroma=1 free(): invalid size)."""
    proc = run(patched, "-i", clips8.ref, "-vf",
               f"{GROW},vmafdnn_pre=model={models.image_identity}:chroma={chroma}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert "Frame size or format changed mid-stream" in proc.stderr
    assert f"configured as {clips8.width}x{clips8.height} yuv420p" in proc.stderr
    assert f"a frame is {clips8.width}x{2 * clips8.height} yuv420p" in proc.stderr


@pytest.mark.parametrize("which", ["both", "main", "reference", "both_resized"])
def test_vmafdnn_refuses_size_change_mid_stream(patched, tmp_path, models, clips8, which):
    """Frames of another size than the inputs were configured with went to the library:
    psnr_y (native resolution) failed with a bare "Numerical result out of range", and a
    model of fixed size with resize=bilinear scored them and the filter sent 352x576
    frames down a 352x288 link (exit 0). Now refused by name, before any scoring."""
    d = f"[0:v]{GROW}[d]" if which != "reference" else "[0:v]null[d]"
    r = f"[1:v]{GROW}[r]" if which != "main" else "[1:v]null[r]"
    model = f"{models.fr_diff}:resize=bilinear" if which == "both_resized" else "psnr_y"
    log = tmp_path / "log.json"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"{d};{r};[d][r]vmafdnn=model={model}:threads=1:log_path={log}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    name = "reference" if which == "reference" else "main"
    assert f"Frame size or format changed mid-stream on input '{name}'" in proc.stderr
    # The frames before the change were scored: the report says so.
    assert 1 <= len(json.loads(log.read_text())["frames"]) <= 2


# A pixel format cannot change inside a filter graph (formats are negotiated once), but a
# decoder's can: an H.264 stream whose second half is coded in another chroma format or
# depth (a new SPS) decodes to frames of that format. By default ffmpeg then reconfigures
# the whole graph (the filters are created again and never see the change); with
# -reinit_filter 0 on the input it hands the changed frames to the configured graph
# (buffersrc only warns "Changing video frame properties on the fly"), straight to the
# filter when nothing is between them. FFmpeg 9.0 does both (the tests below check it).
# _RACE_7: in FFmpeg 7's ffmpeg tool (7.1.5 here) the frames an input decodes before the
# other input's first frame wait in a queue, each one replacing the input's parameters, and
# the graph is configured with the last one's: when one decoder ran past the change first,
# the graph is configured with the second half's format and its first frame is refused
# (with or without -reinit_filter 0), by timing (1 run in 5 to 20 on 2 cores). 8.1 and 9.0
# never did it in these tests; 5.1 reads its inputs in one thread.
FORMATS = ("yuv444p", "yuv420p10le")


def _h264_halves(clip, folder, second):
    """`clip` coded twice in H.264, first yuv420p then `second`, in one Matroska stream."""
    parts = []
    for i, pix_fmt in enumerate(("yuv420p", second)):
        part = folder / f"{clip.stem}_{i}_{pix_fmt}.h264"
        run_ffmpeg("-i", clip, "-c:v", "libx264", "-preset", "veryfast", "-crf", "20",
                   "-bf", "0", "-pix_fmt", pix_fmt, "-f", "h264", part)
        parts.append(part.read_bytes())
    raw = folder / f"{clip.stem}_to_{second}.h264"
    raw.write_bytes(b"".join(parts))
    mkv = raw.with_suffix(".mkv")
    run_ffmpeg("-fflags", "+genpts", "-r", "25", "-f", "h264", "-i", raw, "-c", "copy", mkv)
    return mkv


@pytest.fixture(scope="module")
def format_changes(tmp_path_factory, clips8):
    """{(clip, second half's format): mkv}: the distorted and reference clips coded
    yuv420p, then yuv420p again ("steady") or in another format."""
    folder = tmp_path_factory.mktemp("format_changes")
    return {(name, second): _h264_halves(getattr(clips8, name), folder, second)
            for name in ("dist", "ref") for second in ("yuv420p",) + FORMATS}


NO_REINIT = ("-reinit_filter", "0")


@pytest.mark.parametrize("second", FORMATS)
@pytest.mark.parametrize("chroma", [0, 1])
def test_pre_refuses_format_change_mid_stream(patched, models, clips8, format_changes,
                                              second, chroma):
    """A frame of another pixel format than vmafdnn_pre was configured with (4:4:4 chroma
    planes twice as large, or 16-bit samples where 8-bit ones were allocated) is refused
    by name, as a size change is."""
    proc = run(patched, *NO_REINIT, "-i", format_changes["ref", second], "-vf",
               f"vmafdnn_pre=model={models.image_identity}:chroma={chroma}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert "Changing video frame properties on the fly" in proc.stderr  # FFmpeg handed it on
    assert "Frame size or format changed mid-stream" in proc.stderr
    assert f"configured as {clips8.width}x{clips8.height} yuv420p" in proc.stderr
    assert f"a frame is {clips8.width}x{clips8.height} {second}" in proc.stderr


@pytest.mark.parametrize("second", FORMATS)
@pytest.mark.parametrize("which", ["both", "main", "reference"])
def test_vmafdnn_refuses_format_change_mid_stream(patched, tmp_path, clips8, format_changes,
                                                  which, second):
    """Each input's frames are checked against the format it was configured with: a
    change on either input is refused by name before the frame is scored; the frames
    before it were scored and reported."""
    dist = format_changes["dist", second if which != "reference" else "yuv420p"]
    ref = format_changes["ref", second if which != "main" else "yuv420p"]
    log = tmp_path / "log.json"
    proc = run(patched, *NO_REINIT, "-i", dist, *NO_REINIT, "-i", ref, "-lavfi",
               f"[0:v][1:v]vmafdnn=model=psnr_y:threads=1:log_path={log}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    name = "reference" if which == "reference" else "main"
    assert f"Frame size or format changed mid-stream on input '{name}'" in proc.stderr
    size = f"{clips8.width}x{clips8.height}"
    if ffmpeg_major(patched) == 7 and f"configured as {size} {second}" in proc.stderr:
        # FFmpeg 7's ffmpeg tool, by timing: the frames of an input decoded before the
        # other input's first frame wait, each replacing the input's parameters, and the
        # graph is configured with the last one's (the second half's) when the other input
        # catches up. The filter refuses the first frame, by name (_RACE_7).
        assert f"a frame is {size} yuv420p" in proc.stderr
        assert "No frame was scored" in proc.stderr
        return
    assert f"a frame is {size} {second}" in proc.stderr
    frames = json.loads(log.read_text())["frames"]
    assert 1 <= len(frames) <= clips8.frames
    assert all(f["metrics"]["psnr_y"] > 20 for f in frames)


def _logged_psnr(stderr: str, fps: int = 25):
    """{frame index (by pts): psnr_y} printed by metadata=mode=print (to the log: a file
    would be truncated by the filter made again at a reconfiguration)."""
    found, index = {}, None
    for line in stderr.splitlines():
        m = re.search(r"\bframe:\s*\d+\s+pts:\s*-?\d+\s+pts_time:([-0-9.e]+)", line)
        if m:
            index = round(float(m.group(1)) * fps)
        m = re.search(r"lavfi\.vmafdnn\.psnr_y=([-0-9.e]+)", line)
        if m:
            found[index] = float(m.group(1))
    return found


def test_a_format_change_reconfigures_the_graph_by_default(patched, tmp_path, clips8,
                                                           format_changes):
    """Without -reinit_filter 0, ffmpeg creates the graph again at the change: the filter
    never sees a changed frame, and every frame it scores is scored as that half alone
    scores it. The old graph is dropped without a flush, so frames held in it at that
    moment (in the filter or FFmpeg's frame sync, waiting for the other input) are
    lost: 0 to 3 of 16 here, by timing (ffmpeg/README.md). FFmpeg 5.1 reconfigures
    without saying so and loses none; FFmpeg 7's ffmpeg tool lets one input's decoder run
    further ahead of the other's: up to 7 of the first 8 frames are lost, and the graph may
    be configured with the second half's format from the start (_RACE_7), so that the
    filter refuses the first frame."""
    second, n = "yuv444p", clips8.frames
    major = ffmpeg_major(patched)
    size = f"{clips8.width}x{clips8.height}"
    proc = run(patched, "-i", format_changes["dist", second], "-i",
               format_changes["ref", "yuv420p"], "-lavfi",
               "[0:v][1:v]vmafdnn=model=psnr_y:threads=1,metadata=mode=print",
               "-f", "null", "-", check=major != 7)
    if proc.returncode != 0:
        assert f"configured as {size} {second} but a frame is {size} yuv420p" in proc.stderr, \
            proc.stderr[-2000:]
        return
    if major >= 7:
        assert "Reconfiguring filter graph because video parameters changed to yuv444p" \
            in proc.stderr
    # The filter was closed and made again: two instances, each reporting at its close
    # (counted: the second may be allocated where the first was).
    assert len(re.findall(r"\[Parsed_vmafdnn_0 @ 0x[0-9a-f]+\] model .* ran on",
                          proc.stderr)) == 2, proc.stderr[-3000:]
    assert "changed mid-stream" not in proc.stderr
    got = _logged_psnr(proc.stderr)
    # Each half alone: its own H.264 stream, scored by a graph that never changes.
    alone = {}
    for half, dist_fmt in enumerate(("yuv420p", second)):
        pair = []
        for name, pix_fmt in (("dist", dist_fmt), ("ref", "yuv420p")):
            mkv = tmp_path / f"{name}{half}.mkv"
            raw = format_changes[name, "yuv420p"].parent / \
                f"{getattr(clips8, name).stem}_{half}_{pix_fmt}.h264"
            run_ffmpeg("-fflags", "+genpts", "-r", "25", "-f", "h264", "-i", raw, "-c", "copy",
                       mkv)
            pair.append(mkv)
        scored = _logged_psnr(run(patched, "-i", pair[0], "-i", pair[1], "-lavfi",
                                  "[0:v][1:v]vmafdnn=model=psnr_y:threads=1,"
                                  "metadata=mode=print", "-f", "null", "-").stderr)
        assert sorted(scored) == list(range(n))
        alone.update({half * n + i: v for i, v in scored.items()})
    assert set(got) <= set(alone), got
    if major != 7:
        assert len(got) >= n
        # (9.0's tool has dropped up to 4 of the frames its graph held at the change: 5-7 of 8
        # in a fresh CI run, 4 in 1 of 20 runs of ffmpeg/README.md's check)
        assert set(range(n - 4)) <= set(got), "frames long before the change were lost"
    assert got == pytest.approx({i: alone[i] for i in got}, abs=1e-6)
    assert any(i >= n for i in got), got  # the second half (the 4:4:4 frames) was scored too


def _model_copy(patched, tmp_path, names=("psnr_y",)):
    jail = tmp_path / "models"
    jail.mkdir(exist_ok=True)
    for name in names:
        builtin = Path(patched[1]["VMAFDNN_BUILTIN_MODELS"])
        for f in [*builtin.glob(f"{name}.*"), *builtin.glob(f"{name}_kernels.onnx")]:
            shutil.copy(f, jail)
    return jail


@pytest.mark.parametrize("target", ["model", "sidecar", "hardlink", "symlink", "missing_sidecar"])
def test_log_path_is_not_a_model(patched, tmp_path, models, clips8, target):
    """log_path naming the filter's own model (or its sidecar, by any link) replaced it
    (exit 0); the CLI refuses it. Refused at configuration, the file left as it was."""
    jail = _model_copy(patched, tmp_path)
    model = jail / "psnr_y.onnx"
    victim = {"model": model, "sidecar": jail / "psnr_y.json", "hardlink": tmp_path / "hard",
              "symlink": tmp_path / "sym", "missing_sidecar": jail / "fr_diff.json"}[target]
    options = "threads=1"
    if target == "hardlink":
        os.link(model, victim)
    elif target == "symlink":
        victim.symlink_to(model)
    elif target == "missing_sidecar":
        # fr_diff runs without a sidecar: the report would have become one.
        model = jail / "fr_diff.onnx"
        shutil.copy(models.fr_diff, model)
        options += ":resize=bilinear"
    before = victim.read_bytes() if victim.exists() else None
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"vmafdnn=model={model}:{options}:log_path={victim}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert f"log_path '{victim}' is the sidecar of model" in proc.stderr \
        if "sidecar" in target else f"log_path '{victim}' is model" in proc.stderr
    assert "choose another path" in proc.stderr
    assert (victim.read_bytes() if victim.exists() else None) == before


def test_log_path_is_not_a_required_model_or_form(patched, tmp_path, clips8):
    """Every model file the library attached counts: the models VMAF's sidecar "requires"
    (vmaf_features, vmaf_motion2) and the form that scores in a model's place on the CPU
    (vmaf_features_kernels.onnx), with their sidecars."""
    builtin = Path(patched[1]["VMAFDNN_BUILTIN_MODELS"])
    if not (builtin / "vmaf.onnx").is_file():
        pytest.skip("no built-in VMAF model")
    jail = tmp_path / "models"
    shutil.copytree(builtin, jail)
    for victim in ("vmaf_motion2.onnx", "vmaf_features.json", "vmaf_features_kernels.onnx",
                   "vmaf_features_kernels.json"):
        before = (jail / victim).read_bytes()
        proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
                   f"vmafdnn=model={jail / 'vmaf.onnx'}:device=cpu:threads=1:"
                   f"log_path={jail / victim}", "-f", "null", "-", check=False)
        assert proc.returncode > 0, (victim, proc.stderr[-2000:])
        assert f"log_path '{jail / victim}' is" in proc.stderr
        assert (jail / victim).read_bytes() == before


@pytest.mark.parametrize("which", [0, 1])
def test_log_path_is_not_an_input(patched, tmp_path, clips8, which):
    """An input clip the ffmpeg tool has open when the graph is configured (found in
    /proc/self/fd by (st_dev, st_ino)) is refused too; it used to be replaced."""
    clips = [tmp_path / "dist.y4m", tmp_path / "ref.y4m"]
    shutil.copy(clips8.dist, clips[0])
    shutil.copy(clips8.ref, clips[1])
    before = clips[which].read_bytes()
    proc = run(patched, "-i", clips[0], "-i", clips[1], "-lavfi",
               f"vmafdnn=model=psnr_y:threads=1:log_path={clips[which]}",
               "-f", "null", "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert f"log_path '{clips[which]}' is a file this process has open" in proc.stderr
    assert clips[which].read_bytes() == before


def metadata_and_count(patched, tmp_path, inputs, graph):
    """(the frames' metadata, printed only for frames that have some; the number of
    frames out) of `graph` (ending in the filter) on `inputs`."""
    meta, md5 = tmp_path / "meta.txt", tmp_path / "out.md5"
    args = [a for clip in inputs for a in ("-i", clip)]
    run(patched, *args, "-lavfi", f"{graph},metadata=mode=print:file={meta}",
        "-f", "framemd5", md5)
    count = sum(1 for line in md5.read_text().splitlines() if not line.startswith("#"))
    return frame_metadata(meta), count


def test_log_path_directory_checked_at_configuration(patched, tmp_path, clips8):
    """A report whose directory is missing failed only when the filter closed, after the
    whole stream was scored, with exit status 0; now the graph fails to configure."""
    log = tmp_path / "missing" / "log.json"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"vmafdnn=model=psnr_y:threads=1:log_path={log}", "-f", "null", "-",
               check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert (f"Cannot write the report '{log}': directory '{log.parent}': "
            "No such file or directory") in proc.stderr
    assert "psnr_y mean" not in proc.stderr  # nothing was scored
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"vmafdnn=model=psnr_y:threads=1:log_path={tmp_path}", "-f", "null", "-",
               check=False)
    assert proc.returncode > 0 and f"log_path '{tmp_path}' is a directory" in proc.stderr


def test_a_feature_name_log_fmt_cannot_carry_fails_at_configuration(patched, tmp_path, clips8):
    """A model keyed "Frame" with log_fmt=csv was scored over the whole stream and then the
    report was refused ("clashes with the CSV frame number column"), exit status 0; now
    the graph fails to configure (vmaf_dnn_check_output), and JSON still takes the name."""
    jail = _model_copy(patched, tmp_path)
    model = jail / "Frame.onnx"
    shutil.copy(jail / "psnr_y.onnx", model)
    sidecar = json.loads((jail / "psnr_y.json").read_text())
    sidecar.pop("name", None)
    (jail / "Frame.json").write_text(json.dumps(sidecar))
    log = tmp_path / "log.csv"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"vmafdnn=model={model}:threads=1:log_path={log}:log_fmt=csv", "-f", "null",
               "-", check=False)
    assert proc.returncode > 0, proc.stderr[-2000:]
    assert (f"Cannot write the report '{log}': feature name \"Frame\" clashes with the CSV "
            "frame number column") in proc.stderr, proc.stderr[-2000:]
    assert "Frame mean" not in proc.stderr and not log.exists()  # nothing was scored
    run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
        f"vmafdnn=model={model}:threads=1:log_path={tmp_path / 'log.json'}", "-f", "null", "-")
    assert "Frame" in json.loads((tmp_path / "log.json").read_text())["pooled_metrics"]


def test_log_path_not_shared_in_one_graph(patched, tmp_path, clips8):
    """Two vmafdnn filters of one graph with one log_path: one report silently replaced
    the other (exit 0); refused, by name or by link."""
    log = tmp_path / "log.json"
    (tmp_path / "link.json").symlink_to(log)
    for second in (log, tmp_path / "link.json"):
        if second != log:
            log.write_text("{}")  # the link resolves to the same existing file
        proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-filter_complex",
                   "[0:v]split[a][b];[1:v]split[c][d];"
                   f"[a][c]vmafdnn=model=psnr_y:threads=1:log_path={log}[o1];"
                   f"[b][d]vmafdnn=model=ssim_y:threads=1:log_path={second}[o2]",
                   "-map", "[o1]", "-f", "null", "-", "-map", "[o2]", "-f", "null", "-",
                   check=False)
        assert proc.returncode > 0, proc.stderr[-2000:]
        assert "is also the log_path of" in proc.stderr
        assert not log.exists() or log.read_text() == "{}"


def _trimmed_ref(frames):
    return f"[1:v]trim=end_frame={frames},setpts=PTS-STARTPTS[r];[0:v][r]"


@pytest.mark.parametrize("eof_action", ["pass", "endall", "repeat"])
def test_eof_action(patched, tmp_path, clips8, eof_action):
    """A reference shorter than the main input. pass: the main frames after its end go
    through unscored (no metadata, not in the report), as in libvmaf (it used to stop the
    run: "ref is NULL"); endall: the output ends with it; repeat: its last frame is
    repeated and every frame scored."""
    log = tmp_path / "log.json"
    got, count = metadata_and_count(patched, tmp_path, [clips8.dist, clips8.ref],
                                    f"{_trimmed_ref(5)}vmafdnn=threads=1:"
                                    f"eof_action={eof_action}:log_path={log}")
    report = json.loads(log.read_text())
    scored = clips8.frames if eof_action == "repeat" else 5
    assert count == (5 if eof_action == "endall" else clips8.frames)
    assert len(got) == len(report["frames"]) == scored
    for frame, want in zip(got, report["frames"]):
        assert frame == pytest.approx(want["metrics"], abs=1e-6)
    if eof_action != "repeat":
        # The scored frames are those of the clips' first five frames alone (VMAF's
        # motion2 of the last one included: the end of the reference ends the scoring).
        short = [tmp_path / "dist5.y4m", tmp_path / "ref5.y4m"]
        for clip, out in zip((clips8.dist, clips8.ref), short):
            run_ffmpeg("-i", clip, "-frames:v", 5, out)
        assert_frames_match(got[:5], vmafdnn.score(short[1], short[0], threads=1))


def test_metadata_has_every_score(patched, tmp_path, clips8):
    """VMAF's motion2 and SVM run a frame behind: the filter holds each frame until its
    scores are all there (the last at EOF, from vmaf_dnn_flush), so the metadata of every
    frame equals the report, key for key, in order."""
    if not Path(patched[1]["VMAFDNN_BUILTIN_MODELS"], "vmaf.onnx").is_file():
        pytest.skip("no built-in VMAF model")
    log = tmp_path / "log.json"
    got, _ = score_with_filter(patched, tmp_path, [clips8.dist, clips8.ref],
                               f"threads=1:log_path={log}")
    full = json.loads(log.read_text())
    report = full["frames"]
    assert len(got) == len(report) == clips8.frames
    for frame, want in zip(got, report):
        assert {"vmaf", "motion2"} <= set(frame)
        assert set(frame) == set(want["metrics"])
        assert frame == pytest.approx(want["metrics"], abs=1e-6)
    # The report is the Python front end's (the CLI's), but for "fps": the filter writes
    # the stream's frame rate, the others libvmaf's processing speed.
    cli = tmp_path / "cli.json"
    vmafdnn.score(clips8.ref, clips8.dist, threads=1, output=cli)
    cli = json.loads(cli.read_text())
    assert {k: v for k, v in full.items() if k != "fps"} == \
        {k: v for k, v in cli.items() if k != "fps"}
    # Stopping early (-frames:v) still gives every output frame all its scores.
    meta = tmp_path / "meta5.txt"
    run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
        f"[0:v][1:v]vmafdnn=threads=1,metadata=mode=print:file={meta}",
        "-frames:v", 5, "-f", "null", "-")
    early = frame_metadata(meta)
    # (The graph may run a frame or two ahead of -frames:v, as with any filter.)
    assert len(early) >= 5 and all({"vmaf", "motion2"} <= set(f) for f in early)
    for i in range(4):
        assert early[i] == pytest.approx(got[i], abs=1e-6)


@pytest.mark.parametrize("empty", ["reference", "main"])
def test_empty_input(patched, tmp_path, clips8, empty):
    """No frame on one input: nothing is scored, the run says so and writes no report
    (the CLI refuses such inputs); the main frames, if any, pass through unscored
    (it used to stop on "ref is NULL")."""
    log = tmp_path / "log.json"
    log.write_text("stale")
    chain = ("[0:v]null[d];[1:v]trim=end_frame=0[r];[d][r]" if empty == "reference" else
             "[0:v]trim=end_frame=0[d];[1:v]null[r];[d][r]")
    meta, md5 = tmp_path / "meta.txt", tmp_path / "out.md5"
    proc = run(patched, "-i", clips8.dist, "-i", clips8.ref, "-lavfi",
               f"{chain}vmafdnn=model=psnr_y:threads=1:log_path={log},"
               f"metadata=mode=print:file={meta}", "-f", "framemd5", md5, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"No frame was scored: the report '{log}' is not written" in proc.stderr
    assert log.read_text() == "stale"
    assert frame_metadata(meta) == []
    count = sum(1 for line in md5.read_text().splitlines() if not line.startswith("#"))
    assert count == (clips8.frames if empty == "reference" else 0)


def test_interrupted_run_reports_what_it_output(patched, tmp_path, clips8):
    """SIGINT (ffmpeg's q) ends the streams: the frames held for VMAF's motion2 and SVM get
    their scores from the flush and go out, so every frame the metadata shows is in the report
    with the same scores. FFmpeg may close the graph with a frame still between the filters
    (a CI run saw 607 reported, 606 printed): such a frame was scored, so it is in
    the report, like the frames read ahead when -frames:v closes the output first. Their number
    is bounded by what the filter holds (VMAF runs one frame behind) plus the link's queue."""
    import signal
    import time
    if not Path(patched[1]["VMAFDNN_BUILTIN_MODELS"], "vmaf.onnx").is_file():
        pytest.skip("no built-in VMAF model")
    exe, env = patched
    meta, log = tmp_path / "meta.txt", tmp_path / "log.json"
    proc = subprocess.Popen([exe, "-nostdin", "-hide_banner", "-y",
                             "-stream_loop", "-1", "-i", clips8.dist,
                             "-stream_loop", "-1", "-i", clips8.ref, "-lavfi",
                             f"vmafdnn=threads=1:log_path={log},"
                             f"metadata=mode=print:file={meta}", "-f", "null", "-"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and \
                (not meta.exists() or meta.read_text().count("frame:") < 20):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 255 and "Exiting normally, received signal 2" in err, err[-2000:]
    got = frame_metadata(meta)
    report = json.loads(log.read_text())["frames"]
    assert len(got) >= 20
    assert len(got) <= len(report) <= len(got) + 4, (len(got), len(report))
    for frame, want in zip(got, report):
        assert frame == pytest.approx(want["metrics"], abs=1e-6)
