"""What the attack review (docs/security.md, "Attack review") found in the
Python package and the CLI, each case as it was reproduced:

* ``-o`` naming an input (``vmafdnn -r ref.y4m -d dist.y4m -o ref.y4m``)
  replaced the reference clip with the report; ``plot r.json -o r.json`` and
  ``--plot`` on the report path likewise;
* ``--features /dev/zero`` (or a pipe that never closes) was read whole:
  3 GB of RSS after 8 s, until the OOM killer;
* ``threads=1.5`` became 1 and ``threads="4"`` 4 silently, ``threads=2**40``
  a bare OverflowError; ``Context(threads=300)`` opened and failed only at
  the first attach;
* ``--ref-offset 99999999999999999999`` ended in an internal islice error.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import vmafdnn
from vmafdnn import scoring
from vmafdnn.scoring import UsageError


def _y4m(path, frames, seed, width=32, height=24):
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
        for _ in range(frames):
            f.write(b"FRAME\n")
            f.write(rng.integers(0, 256, width * height * 3 // 2, dtype=np.uint8).tobytes())
    return str(path)


@pytest.fixture
def clips(tmp_path):
    return _y4m(tmp_path / "ref.y4m", 3, 0), _y4m(tmp_path / "dist.y4m", 3, 1)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vmafdnn", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_report_that_is_an_input_is_refused_before_reading(clips, tmp_path):
    ref, dist = clips
    before = _bytes(ref), _bytes(dist)
    alias = tmp_path / "alias.y4m"
    os.symlink("ref.y4m", alias)
    for output in (ref, dist, str(alias), os.path.relpath(ref)):
        with pytest.raises(UsageError, match="would destroy"):
            vmafdnn.score(ref, dist, ["psnr_y"], output=output)
    features = tmp_path / "features.json"
    features.write_text('{"frames": []}')
    with pytest.raises(UsageError, match="features file"):
        vmafdnn.score(ref, dist, ["psnr_y"], output=str(features), features=str(features))
    assert (_bytes(ref), _bytes(dist)) == before
    assert features.read_text() == '{"frames": []}'
    # An open file object as the input is the same file too.
    with open(ref, "rb") as f:
        with pytest.raises(UsageError, match="reference input"):
            vmafdnn.score(f, dist, ["psnr_y"], output=ref)
    # Not an input: written as before.
    result = vmafdnn.score(ref, dist, ["psnr_y"], output=str(tmp_path / "r.json"))
    assert len(result["frames"]) == 3


def test_cli_never_overwrites_its_inputs(clips, tmp_path):
    ref, dist = clips
    before = _bytes(ref)
    r = _cli("-r", ref, "-d", dist, "--model", "psnr_y", "-o", ref, "-q")
    assert r.returncode == 2, r.stderr
    assert "is also the reference input" in r.stderr
    assert _bytes(ref) == before

    report = str(tmp_path / "r.json")
    r = _cli("-r", ref, "-d", dist, "--model", "psnr_y", "-o", report, "--plot", report, "-q")
    assert r.returncode == 2 and "is also the report" in r.stderr, r.stderr
    assert not os.path.exists(report)  # refused before scoring

    r = _cli("-r", ref, "-d", dist, "--model", "psnr_y", "-o", report, "-q")
    assert r.returncode == 0, r.stderr
    saved = _bytes(report)
    r = _cli("plot", report, "-o", report)
    assert r.returncode == 2 and "is also the input report" in r.stderr, r.stderr
    assert _bytes(report) == saved


def test_features_file_read_is_bounded(monkeypatch, tmp_path):
    monkeypatch.setattr(scoring, "MAX_FEATURES_FILE_BYTES", 1 << 20)
    # Endless: it used to be read until OOM; a device is now refused outright
    # (issue 25; tests/python/test_cli_outputs.py has the rest).
    with pytest.raises(ValueError, match="character device"):
        scoring.load_features("/dev/zero")
    exact = tmp_path / "f.json"
    body = '{"frames": [{"frameNum": 0, "metrics": {"a": 1}}]}'
    exact.write_text(body + " " * ((1 << 20) - len(body)))
    assert scoring.load_features(str(exact)) == {0: {"a": 1.0}}
    with open(exact, "a") as f:
        f.write(" ")
    with pytest.raises(ValueError, match="larger than"):
        scoring.load_features(str(exact))


@pytest.mark.parametrize("opener", ["session", "context"])
def test_config_integers_are_checked_not_cut(opener, models):
    def open_with(**kw):
        if opener == "session":
            return vmafdnn.Session(models.identity, **kw)
        return vmafdnn.Context(**kw)

    for bad in (1.5, "4", True, None if opener == "session" else 2.0):
        if bad is None:
            continue
        with pytest.raises(TypeError, match="threads must be an integer"):
            open_with(threads=bad)
    for bad in (-1, vmafdnn.MAX_THREADS + 1, 2 ** 40):
        with pytest.raises(vmafdnn.InvalidArgumentError, match="threads must be 0..256"):
            open_with(threads=bad)
    for bad in (-1, 2 ** 40, -2 ** 40):
        with pytest.raises(vmafdnn.InvalidArgumentError,
                           match=rf"device_index must be 0\.\.2147483647 \(got {bad}\)"):
            open_with(device_index=bad)
    with open_with(threads=np.int64(1)) as handle:
        assert handle is not None


def test_model_config_integers_are_checked(models):
    with vmafdnn.Context(threads=1) as ctx:
        with pytest.raises(TypeError):
            ctx.use_model("psnr_y", threads=2.5)
        with pytest.raises(vmafdnn.InvalidArgumentError):
            ctx.use_model("psnr_y", device_index=2 ** 40)


def test_offsets_out_of_range_are_usage_errors(clips):
    ref, dist = clips
    with pytest.raises(UsageError, match="ref_offset \\(frames\\) must be"):
        vmafdnn.score(ref, dist, ["psnr_y"], ref_offset=10 ** 20)
    with pytest.raises(UsageError, match="dist_offset \\(frames\\) must be"):
        vmafdnn.score(ref, dist, ["psnr_y"], dist_offset=-1)
    # Before: ValueError "Exceeds the limit (4300 digits) for integer string
    # conversion", raised while wording the message.
    with pytest.raises(UsageError, match=r"ref_offset \(frames\) must be 0\.\.\d+ \(got a "
                                         r"number of more than 4300 digits\)"):
        vmafdnn.score(ref, dist, ["psnr_y"], ref_offset=10 ** 5000)
    with pytest.raises(TypeError):
        vmafdnn.score(ref, dist, ["psnr_y"], dist_offset=1.5)
    # The flag is range-checked where it is parsed, naming the flag (issue 25).
    r = _cli("-r", ref, "-d", dist, "--model", "psnr_y", "--ref-offset", str(10 ** 20))
    assert r.returncode == 2 and "--ref-offset" in r.stderr, r.stderr
    assert f"must be 0..{sys.maxsize} (got {10 ** 20})" in r.stderr, r.stderr


# -- second review: reset, the sparse store, the batch runner -------------------------

def test_batch_results_never_replace_the_job_list_or_a_clip(clips, tmp_path):
    # `vmafdnn batch jobs.csv -o jobs.csv` replaced the job list with the
    # results (exit 0); now a usage error before any job runs, by any
    # spelling, and for the results' journal too.
    from vmafdnn import batch as vbatch
    ref, dist = clips
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("reference,distorted,title\nref.y4m,dist.y4m,t\n")
    before = _bytes(jobs), _bytes(ref), _bytes(dist)
    os.symlink("jobs.csv", tmp_path / "link.csv")
    for output in (jobs, tmp_path / "link.csv", os.path.relpath(jobs)):
        with pytest.raises(UsageError, match="would destroy"):
            vbatch.batch(str(jobs), str(output), workers=1)
    raw = tmp_path / "clip.csv"  # a raw clip may have any name
    raw.write_bytes(b"\0" * (8 * 8 * 3 // 2))
    job = {"distorted": str(raw), "width": 8, "height": 8, "models": ["sharpness_nr"]}
    with pytest.raises(UsageError, match="distorted clip of job 1"):
        vbatch.batch([job], str(raw), workers=1)
    with pytest.raises(UsageError, match="results journal"):
        vbatch.batch([dict(job, distorted=str(tmp_path / "r.csv.partial.jsonl"))],
                     str(tmp_path / "r.csv"), workers=1)
    result = _cli("batch", str(jobs), "-o", str(jobs), "-q", "--workers", "1")
    assert result.returncode == 2 and "would destroy" in result.stderr
    assert (_bytes(jobs), _bytes(ref), _bytes(dist)) == before


def test_reports_of_sparse_high_frames_take_no_time():
    # The writers probed every frame index up to the highest once per
    # feature: 0.4 s a feature stored at frame 2^24 - 1 (64 names: 26 s a
    # report), hours for the names a default budget admits.
    last = 2 ** 24 - 1
    with vmafdnn.Context() as ctx:
        for i in range(64):
            ctx.feature_append(f"h{i}", last, float(i))
        ctx.feature_append("h0", 4095, float("nan"))
        ctx.feature_append("h1", 4096, 2.0)
        import time
        # CPU time (the rendering is this thread's): other load does not stretch it as
        # it does the wall clock.
        t0 = time.thread_time()
        for fmt in ("json", "xml", "csv"):
            text = ctx.render(fmt)
        assert time.thread_time() - t0 < 5
        assert text.splitlines()[1:] == [
            "4095,nan," + "," * 63, "4096,," + "2.000000," + "," * 62,
            str(last) + "," + ",".join(f"{i}.000000" for i in range(64)) + ","]
        frames = ctx.report()["frames"]
        assert [f["frameNum"] for f in frames] == [4095, 4096, last]
