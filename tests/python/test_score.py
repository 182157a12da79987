"""vmafdnn.score() on real frames: an FFmpeg testsrc2 clip and its x264
crf-40 encode, 8-bit and 10-bit, checked against scikit-image and FFmpeg's
own psnr filter; the reports it writes; the mismatch and argument errors."""
import csv
import errno
import json
import os
import re
import shutil
import threading
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

import vmafdnn
from vmafdnn.video import Frame, Y4MReader, write_y4m

from clips import clips8_fixture, clips10_fixture, synth_fixture  # noqa: F401  (fixtures)
from clips import run_ffmpeg, to_raw


def luma_planes(path):
    with Y4MReader(path) as reader:
        return [frame.y.copy() for frame in reader]


def metric(result, name):
    return [f["metrics"][name] for f in result["frames"]]


@pytest.fixture(scope="module")
def scored8(clips8):
    return vmafdnn.score(clips8.ref, clips8.dist, threads=1)


@pytest.fixture(scope="module")
def scored10(clips10):
    return vmafdnn.score(clips10.ref, clips10.dist, threads=1)


def ffmpeg_psnr_y(clip, tmp_path):
    """FFmpeg's psnr filter per frame: (the stats file's psnr_y, 2 decimals;
    the frame metadata lavfi.psnr.psnr.y, 6 decimals)."""
    stats, meta = tmp_path / "psnr.log", tmp_path / "meta.txt"
    run_ffmpeg("-i", clip.dist, "-i", clip.ref, "-lavfi",
               f"[0:v][1:v]psnr=stats_file={stats},metadata=mode=print:file={meta}",
               "-f", "null", "-")
    coarse = [float(m) for m in re.findall(r"psnr_y:([0-9.]+|inf)", stats.read_text())]
    fine = [float(m) for m in re.findall(r"lavfi\.psnr\.psnr\.y=([0-9.]+|inf)",
                                         meta.read_text())]
    return coarse, fine


@pytest.mark.parametrize("clip_name", ["clips8", "clips10"])
def test_psnr_matches_skimage_and_ffmpeg(request, clip_name, tmp_path):
    clip = request.getfixturevalue(clip_name)
    result = request.getfixturevalue(clip_name.replace("clips", "scored"))
    ours = metric(result, "psnr_y")
    assert len(ours) == clip.frames
    peak = 2 ** clip.bitdepth - 1
    expected = [peak_signal_noise_ratio(r, d, data_range=peak)
                for r, d in zip(luma_planes(clip.ref), luma_planes(clip.dist))]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-4)
    # Real distortion: far below the cap, not all frames alike.
    assert 20 < min(ours) and max(ours) < 45 and np.ptp(ours) > 0

    coarse, fine = ffmpeg_psnr_y(clip, tmp_path)
    np.testing.assert_allclose(ours, fine, rtol=0, atol=1e-4)
    np.testing.assert_allclose(ours, coarse, rtol=0, atol=0.005 + 1e-9)
    pooled = result["pooled_metrics"]["psnr_y"]
    assert pooled["mean"] == pytest.approx(np.mean(expected), abs=1e-4)
    assert pooled["min"] == pytest.approx(min(expected), abs=1e-4)
    assert pooled["max"] == pytest.approx(max(expected), abs=1e-4)


@pytest.mark.parametrize("clip_name", ["clips8", "clips10"])
def test_ssim_matches_skimage(request, clip_name):
    clip = request.getfixturevalue(clip_name)
    result = request.getfixturevalue(clip_name.replace("clips", "scored"))
    peak = 2 ** clip.bitdepth - 1
    expected = [structural_similarity(r, d, gaussian_weights=True, sigma=1.5,
                                      use_sample_covariance=False, data_range=peak)
                for r, d in zip(luma_planes(clip.ref), luma_planes(clip.dist))]
    np.testing.assert_allclose(metric(result, "ssim_y"), expected, rtol=0, atol=1e-4)
    assert 0.5 < min(expected) and max(expected) < 0.99


def test_result_layout(scored8, clips8):
    assert scored8["version"] == vmafdnn.context.REPORT_VERSION
    assert scored8["fps"] > 0  # libvmaf's meaning: frames scored per second
    assert [f["frameNum"] for f in scored8["frames"]] == list(range(clips8.frames))
    # The default set: psnr_y, ssim_y and, where built, vmaf (its three stages listed).
    vmaf = [["vif_scale0", "vif_scale1", "vif_scale2", "vif_scale3", "adm2", "motion"],
            ["motion2"], ["vmaf"]] if "vmaf" in vmafdnn.models.default_models() else []
    features = [["psnr_y"], ["ssim_y"]] + vmaf
    assert set(scored8["pooled_metrics"]) == {k for f in features for k in f}
    for pooled in scored8["pooled_metrics"].values():
        assert set(pooled) == {"min", "max", "mean", "harmonic_mean"}
    assert [m["features"] for m in scored8["models"]] == features
    assert [m["kind"] for m in scored8["models"]] == \
        ["fr", "fr"] + (["fr", "features", "features"] if vmaf else [])
    assert all(m["attached_ep"] for m in scored8["models"])
    json.dumps(scored8)  # plain data


@pytest.mark.parametrize("clip_name", ["clips8", "clips10"])
def test_identical_clips_hit_the_psnr_cap(request, clip_name):
    clip = request.getfixturevalue(clip_name)
    result = vmafdnn.score(clip.ref, clip.ref, threads=1)
    assert metric(result, "psnr_y") == [6.0 * clip.bitdepth + 12] * clip.frames
    np.testing.assert_allclose(metric(result, "ssim_y"), 1.0, atol=1e-6)


def test_no_reference_scores_sharpness_only(clips8, scored8):
    result = vmafdnn.score(None, clips8.dist, threads=1)
    assert set(result["pooled_metrics"]) == {"sharpness_nr"}
    assert [m["kind"] for m in result["models"]] == ["nr"]
    planes = luma_planes(clips8.dist)
    for plane, value in zip(planes, metric(result, "sharpness_nr")):
        x = plane.astype(np.float64) / 255
        lap = x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4 * x[1:-1, 1:-1]
        assert value == pytest.approx(lap.var(), rel=1e-5)
    # The x264 encode is blurrier than its source.
    sharp_ref = vmafdnn.score(None, clips8.ref, threads=1, no_reference=True)
    assert (sharp_ref["pooled_metrics"]["sharpness_nr"]["mean"]
            > result["pooled_metrics"]["sharpness_nr"]["mean"])


def test_arrays_and_frames_give_the_same_scores(clips8, clips10, scored8, scored10):
    refs, dists = luma_planes(clips8.ref), luma_planes(clips8.dist)
    from_arrays = vmafdnn.score(refs, dists, threads=1)
    assert from_arrays["frames"] == scored8["frames"]
    from_stack = vmafdnn.score(np.stack(refs), np.stack(dists), threads=1)
    assert from_stack["frames"] == scored8["frames"]
    with Y4MReader(clips8.ref) as r, Y4MReader(clips8.dist) as d:
        assert vmafdnn.score(r, d, threads=1)["frames"] == scored8["frames"]
    deep = vmafdnn.score(luma_planes(clips10.ref), luma_planes(clips10.dist), bitdepth=10,
                         threads=1)
    assert deep["frames"] == scored10["frames"]
    assert from_arrays["fps"] > 0  # processing speed, known for arrays too
    with pytest.raises(vmafdnn.UsageError, match="bitdepth"):
        vmafdnn.score(luma_planes(clips10.ref), luma_planes(clips10.dist))


def test_raw_yuv_input(clips10, scored10, tmp_path):
    ref = to_raw(clips10.ref, tmp_path / "ref.yuv")
    dist = to_raw(clips10.dist, tmp_path / "dist.yuv")
    result = vmafdnn.score(ref, dist, width=clips10.width, height=clips10.height,
                           pix_fmt="420", bitdepth=10, threads=1)
    assert result["frames"] == scored10["frames"]
    with pytest.raises(vmafdnn.UsageError, match="needs --width"):
        vmafdnn.score(ref, dist)


def test_models_argument(clips8, scored8, models, tmp_path):
    only_ssim = vmafdnn.score(clips8.ref, clips8.dist, models="ssim_y", threads=1)
    assert set(only_ssim["pooled_metrics"]) == {"ssim_y"}
    assert metric(only_ssim, "ssim_y") == metric(scored8, "ssim_y")
    three = vmafdnn.score(clips8.ref, clips8.dist, models=["psnr_y", "ssim_y", "sharpness_nr"],
                          threads=1)
    assert set(three["pooled_metrics"]) == {"psnr_y", "ssim_y", "sharpness_nr"}
    with pytest.raises(vmafdnn.UsageError, match="at least one model"):
        vmafdnn.score(clips8.ref, clips8.dist, models=[])
    with pytest.raises(vmafdnn.InvalidArgumentError, match="no_reference"):
        vmafdnn.score(None, clips8.dist, models=["psnr_y"])
    with pytest.raises(vmafdnn.RangeError):  # an 8x8 model on CIF frames, no resize
        vmafdnn.score(None, clips8.dist, models=[models.nr_mean])
    resized = vmafdnn.score(None, clips8.dist, models=[models.nr_mean], resize="bilinear")
    assert len(resized["frames"]) == clips8.frames


# -- mismatches ---------------------------------------------------------------------

def test_size_mismatch_names_both_sizes(clips8, tmp_path):
    small = tmp_path / "small.y4m"
    run_ffmpeg("-i", clips8.dist, "-vf", "scale=176:144", "-pix_fmt", "yuv420p", small)
    with pytest.raises(vmafdnn.InputMismatchError,
                       match=r"size mismatch: reference is 352x288 but distorted is 176x144"):
        vmafdnn.score(clips8.ref, small)
    # Arrays: found when the frames arrive.
    with pytest.raises(vmafdnn.InputMismatchError, match=r"at frame 0: reference is 352x288 "
                                                         r"but distorted is 176x144"):
        vmafdnn.score(luma_planes(clips8.ref), luma_planes(small))


def test_bit_depth_mismatch_names_both(clips8, tmp_path):
    deep_file = tmp_path / "deep.y4m"
    run_ffmpeg("-i", clips8.dist, "-pix_fmt", "yuv420p10le", "-strict", "-1", deep_file)
    with pytest.raises(vmafdnn.InputMismatchError,
                       match="bit depth mismatch: reference is 8-bit but distorted is 10-bit"):
        vmafdnn.score(clips8.ref, deep_file)
    deep = [np.zeros((288, 352), np.uint16)] * 2
    with pytest.raises(vmafdnn.InputMismatchError,
                       match="bit depth mismatch at frame 0: reference is 8-bit but "
                             "distorted is 10-bit"):
        vmafdnn.score(luma_planes(clips8.ref)[:2], deep, bitdepth=10)


def test_frame_count_mismatch_names_both_counts_and_keeps_the_report(clips8, tmp_path):
    short = tmp_path / "short.y4m"
    with Y4MReader(clips8.dist) as reader:
        write_y4m(short, list(reader)[:5], fps=25)
    out = tmp_path / "partial.json"
    # Scoring stops at the first frame one side lacks: the longer side is
    # read one frame past the shorter one, never to its end.
    with pytest.raises(vmafdnn.InputMismatchError,
                       match="frame count mismatch: reference has at least 6 frames but "
                             "distorted has 5 frames"):
        vmafdnn.score(clips8.ref, short, output=out)
    partial = json.loads(out.read_text())
    assert [f["frameNum"] for f in partial["frames"]] == [0, 1, 2, 3, 4]
    with pytest.raises(vmafdnn.InputMismatchError,
                       match="reference has 5 frames but distorted has at least 6 frames"):
        vmafdnn.score(short, clips8.dist)


def test_an_interruption_writes_no_report_and_keeps_the_file_there(tmp_path):
    """Ctrl-C (KeyboardInterrupt) inside score() left a report of the frames before it in
    place of the file at output, which looked whole; now, as on the command line, nothing is
    written and the interruption goes on up. An error still leaves its report for a look."""
    out = tmp_path / "r.json"
    out.write_text('{"good": 1}')
    frame = np.full((48, 64), 100, np.uint8)

    def frames(then):
        for _ in range(4):
            yield frame
        raise then

    for stop in (KeyboardInterrupt, SystemExit):
        with pytest.raises(stop):
            vmafdnn.score(frames(stop), frames(stop), ["psnr_y"], threads=2, output=out)
        assert out.read_text() == '{"good": 1}'
    with pytest.raises(ValueError, match="a bad source"):
        vmafdnn.score(frames(ValueError("a bad source")), frames(ValueError("a bad source")),
                      ["psnr_y"], threads=2, output=out)
    assert [f["frameNum"] for f in json.loads(out.read_text())["frames"]] == [0, 1, 2, 3]


class _CountingFrames:
    """An endless iterable of frames that counts what was taken from it."""

    def __init__(self, frame):
        self.frame, self.taken = frame, 0

    def __iter__(self):
        while True:
            self.taken += 1
            yield self.frame


def test_count_mismatch_reads_at_most_one_frame_past_the_shorter_input():
    frame = np.full((16, 16), 100, np.uint8)
    for endless_side in ("reference", "distorted"):
        endless = _CountingFrames(frame)
        sides = {"reference": [frame] * 3, "distorted": [frame] * 3, endless_side: endless}
        counts = {"reference": "3 frames", "distorted": "3 frames",
                  endless_side: "at least 4 frames"}
        with pytest.raises(vmafdnn.InputMismatchError,
                           match=f"reference has {counts['reference']} but distorted has "
                                 f"{counts['distorted']}"):
            vmafdnn.score(sides["reference"], sides["distorted"])
        assert endless.taken == 4, endless_side


def test_count_mismatch_against_an_endless_pipe_ends(tmp_path):
    # A FIFO fed forever, as `ffmpeg ... -f yuv4mpegpipe pipe` would be, against
    # a 3-frame file: scoring must stop at frame 3 instead of reading the pipe
    # to an end it never reaches.
    chroma = np.full((8, 8), 128, np.uint8)
    frame = Frame(np.full((16, 16), 90, np.uint8), chroma, chroma, 8, 0, "420")
    short = tmp_path / "short.y4m"
    write_y4m(short, [frame] * 3, fps=25)
    fifo = tmp_path / "endless.y4m"
    os.mkfifo(fifo)
    header = short.read_bytes().split(b"\n", 1)[0] + b"\n"
    chunk = b"FRAME\n" + bytes([90]) * (16 * 16) + bytes([128]) * (2 * 8 * 8)

    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(header)
                while True:
                    f.write(chunk)
        except (BrokenPipeError, ValueError, OSError):
            pass  # the reader closed the pipe: what should happen

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    # CPU time, which the writer thread and other load do not stretch as they do the
    # wall clock: reading on through the endless pipe would take it all.
    t0 = time.thread_time()
    with pytest.raises(vmafdnn.InputMismatchError,
                       match="reference has 3 frames but distorted has at least 4 frames"):
        vmafdnn.score(short, fifo)
    assert time.thread_time() - t0 < 10
    writer.join(60)  # the pipe closed: it ends at its next write, once scheduled
    assert not writer.is_alive()


def test_empty_clip_is_an_error(tmp_path):
    empty = tmp_path / "empty.y4m"
    empty.write_bytes(b"YUV4MPEG2 W352 H288 F25:1 Ip C420jpeg\n")
    with pytest.raises(ValueError, match="no frames"):
        vmafdnn.score(empty, empty)


def test_argument_errors(synth):
    with pytest.raises(vmafdnn.UsageError, match="both be read from stdin"):
        vmafdnn.score("-", "-")
    with pytest.raises(vmafdnn.UsageError, match="give no reference"):
        vmafdnn.score(synth.ref, synth.dist, no_reference=True)
    with pytest.raises(ValueError, match="unknown report format"):
        vmafdnn.score(synth.ref, synth.dist, fmt="yaml")
    with pytest.raises(FileNotFoundError):
        vmafdnn.score(synth.ref, synth.ref.with_name("missing.y4m"))
    with pytest.raises(TypeError, match="iterable of frames"):
        vmafdnn.score(synth.ref, 42)


def test_progress_callback(synth):
    calls = []
    vmafdnn.score(synth.ref, synth.dist, models="psnr_y",
                  progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, synth.frames) for i in range(1, synth.frames + 1)]


def test_progress_counts_frames_done_not_frames_read_with_frames_in_flight(synth, models):
    """With frames in flight the count is of frames whose scores are in: never above the
    frames read, never going down, and the whole clip once more at the end. batch_mean takes
    4 frames per Run, and its worker waits for the fourth: after the first three reads none is
    done, whatever the timing."""
    calls = []
    vmafdnn.score(None, synth.dist, models=[models.batch_mean], batch=4,
                  progress=lambda done, total: calls.append((done, total)))
    done = [d for d, _ in calls]
    assert done[:3] == [0, 0, 0]
    assert all(d <= read for read, d in enumerate(done[:synth.frames], start=1))
    assert done == sorted(done) and done[-1] == synth.frames
    assert {t for _, t in calls} == {synth.frames}


# -- reports ------------------------------------------------------------------------

def test_reports_in_every_format_agree(clips8, tmp_path):
    outputs = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "xml", "csv")}
    results = {fmt: vmafdnn.score(clips8.ref, clips8.dist, output=path, threads=1)
               for fmt, path in outputs.items()}
    result = results["json"]
    assert results["xml"]["frames"] == result["frames"] == results["csv"]["frames"]
    explicit = tmp_path / "report.out"
    vmafdnn.score(clips8.ref, clips8.dist, output=explicit, fmt="xml", models="psnr_y")
    assert explicit.read_text().startswith("<VMAF version=")

    from_json = json.loads(outputs["json"].read_text())
    assert from_json["version"] == result["version"] and from_json["fps"] > 0
    for got, want in zip(from_json["frames"], result["frames"]):
        assert got["frameNum"] == want["frameNum"]
        for k, v in want["metrics"].items():
            assert got["metrics"][k] == pytest.approx(v, abs=5e-7)
    for name, pooled in result["pooled_metrics"].items():
        for stat, v in pooled.items():
            assert from_json["pooled_metrics"][name][stat] == pytest.approx(v, abs=5e-7)

    root = ET.parse(outputs["xml"]).getroot()
    assert root.get("version") == result["version"]
    assert float(root.find("fyi").get("fps")) > 0
    frames = root.find("frames").findall("frame")
    assert [int(f.get("frameNum")) for f in frames] == list(range(clips8.frames))
    for el, frame in zip(frames, from_json["frames"]):
        for k, v in frame["metrics"].items():
            assert float(el.get(k)) == v  # same 6 decimals
    pooled_xml = {m.get("name"): m for m in root.find("pooled_metrics").findall("metric")}
    assert set(pooled_xml) == set(from_json["pooled_metrics"])
    for name, pooled in from_json["pooled_metrics"].items():
        for stat, v in pooled.items():
            assert float(pooled_xml[name].get(stat)) == v

    with open(outputs["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["Frame"]) for r in rows] == list(range(clips8.frames))
    for row, frame in zip(rows, from_json["frames"]):
        # libvmaf ends every line with a separator: one empty last column.
        assert row.pop("") == ""
        assert set(row) == {"Frame", *frame["metrics"]}
        for k, v in frame["metrics"].items():
            assert float(row[k]) == v


# -- imported features ---------------------------------------------------------------

def test_features_from_a_libvmaf_log(clips8, models, tmp_path):
    model = tmp_path / "fv.onnx"
    shutil.copyfile(models.fv_weighted, model)
    (tmp_path / "fv.json").write_text(json.dumps({"features": ["adm2", "motion2"]}))
    log = {"version": "3.0.0", "frames": [
        {"frameNum": i, "metrics": {"adm2": 0.5 + i, "motion2": float(i), "psnr_y": 99.0}}
        for i in range(clips8.frames)]}
    (tmp_path / "vmaf.json").write_text(json.dumps(log))
    result = vmafdnn.score(clips8.ref, clips8.dist, models=["psnr_y", str(model)],
                           features=tmp_path / "vmaf.json", threads=1)
    fv = metric(result, "fv")
    np.testing.assert_allclose(fv, [0.5 + i + 10 * i for i in range(clips8.frames)], atol=1e-5)
    # A metric named like a model output is computed, not imported.
    assert max(metric(result, "psnr_y")) < 45
    assert metric(result, "adm2")[1] == 1.5

    # A frame without a needed feature: the error names it; frames before it stay.
    del log["frames"][3]["metrics"]["motion2"]
    (tmp_path / "vmaf.json").write_text(json.dumps(log))
    out = tmp_path / "partial.json"
    with pytest.raises(vmafdnn.ModelNotFoundError, match='"motion2" at frame 3') as e:
        vmafdnn.score(clips8.ref, clips8.dist, models=[str(model)],
                      features=tmp_path / "vmaf.json", output=out)
    assert e.value.errno == errno.ENOENT
    partial = json.loads(out.read_text())
    assert [f["frameNum"] for f in partial["frames"] if "fv" in f["metrics"]] == [0, 1, 2]


@pytest.mark.parametrize("text,message", [
    ("{", "invalid JSON"),
    ("[]", "\"frames\" array"),
    ('{"frames": [{"metrics": {}}]}', "frameNum"),
    ('{"frames": [{"frameNum": 0, "metrics": {"a": "x"}}]}', "metric 'a' is not a number"),
    ('{"frames": [{"frameNum": 0, "metrics": {}}, {"frameNum": 0, "metrics": {}}]}',
     "appears twice"),
])
def test_bad_features_file(synth, tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        vmafdnn.score(synth.ref, synth.dist, features=path)
