"""The batch runner attacked again after issue 25's items (leftovers b and c
and the attack pass that followed): numbers range-checked where they are
given, inputs checked on the descriptor that is read, results files read
back bounded, one batch at a time on a results file."""
import errno
import os
import subprocess
import sys

import numpy as np
import pytest

import vmafdnn
from vmafdnn import batch as vbatch
from vmafdnn.video import Frame, write_y4m

W, H, N = 64, 48, 3


def _write_clip(path, planes):
    chroma = np.full((H // 2, W // 2), 128, np.uint8)
    write_y4m(path, [Frame(y=p, u=chroma, v=chroma, bitdepth=8, index=i, chroma="420")
                     for i, p in enumerate(planes)])


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    root = tmp_path_factory.mktemp("attack_clips")
    rng = np.random.default_rng(7)
    ref = [rng.integers(0, 256, (H, W), dtype=np.uint8) for _ in range(N)]
    dist = [np.clip(r.astype(int) + rng.integers(-8, 9, r.shape), 0, 255).astype(np.uint8)
            for r in ref]
    _write_clip(root / "ref.y4m", ref)
    _write_clip(root / "dist.y4m", dist)
    return root


def _jobs(tmp_path, clips, n=1):
    path = tmp_path / "jobs.csv"
    path.write_text("title,reference,distorted\n" + "".join(
        f"t{k},{clips / 'ref.y4m'},{clips / 'dist.y4m'}\n" for k in range(n)))
    return path


def _cli(*args, timeout=300, **kwargs):
    return subprocess.run([sys.executable, "-m", "vmafdnn", "batch", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def _usage_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


# -- b: numbers range-checked where they are given ------------------------------------------

@pytest.mark.parametrize("flag,value,fragment", [
    ("--tiny-device-index", "-1", "must be at least 0"),
    ("--tiny-device-index", str(2 ** 70), "more than the maximum, 2147483647"),
    ("--tiny-device-index", "2147483648", "more than the maximum, 2147483647"),
    ("--gpus-per-worker", "nan", "finite number"),
    ("--gpus-per-worker", "-1", "finite number"),
    ("--gpus-per-worker", "inf", "finite number"),
    ("--workers", "100000", "more than the maximum"),
    ("--retries", str(2 ** 70), "more than the maximum"),
])
def test_batch_numbers_out_of_range_are_usage_errors(tmp_path, clips, flag, value, fragment):
    # Before: --tiny-device-index 2**70 was accepted, reached every worker
    # and failed every row ("device_index must be >= 0"), exit 1.
    proc = _cli(_jobs(tmp_path, clips), "-o", tmp_path / "r.csv", flag, value, timeout=60)
    _usage_error(proc, f"argument {flag}", fragment)
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("kwargs,kind", [
    ({"device_index": 2 ** 70}, vmafdnn.InvalidArgumentError),
    ({"device_index": -1}, vmafdnn.InvalidArgumentError),
    ({"device_index": True}, TypeError),
    ({"threads": 1.5}, TypeError),
    ({"workers": 0}, vmafdnn.InvalidArgumentError),
    ({"retries": -1}, vmafdnn.InvalidArgumentError),
    ({"gpus_per_worker": float("nan")}, vmafdnn.InvalidArgumentError),
    ({"timeout": float("inf")}, vmafdnn.InvalidArgumentError),
    ({"timeout": 10 ** 400}, vmafdnn.InvalidArgumentError),
])
def test_batch_api_numbers_are_checked_before_any_job(tmp_path, clips, kwargs, kind):
    with pytest.raises(kind) as e:
        vbatch.batch(_jobs(tmp_path, clips), tmp_path / "r.csv", **kwargs)
    if kind is vmafdnn.InvalidArgumentError:
        assert e.value.errno == errno.EINVAL and list(kwargs)[0] in str(e.value)
    assert not (tmp_path / "r.csv").exists()


# -- c: a clip is checked on the descriptor that is read ------------------------------------

def _scorer_options(**kwargs):
    options = dict(models=["psnr_y"], device="auto", device_index=0, threads=1, fp16_io=False,
                   resize="none", policy={}, reports=None, report_format="json", retries=0,
                   reuse=True, allow_pipes=False)
    options.update(kwargs)
    return options


def _run_in_thread(work, timeout=60):
    import threading
    out = {}

    def target():
        try:
            out["result"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked"
    if "error" in out:
        raise out["error"]
    return out["result"]


@pytest.mark.skipif(not vmafdnn.available(), reason="ONNX Runtime is not installed")
def test_a_clip_swapped_for_a_fifo_after_its_check_is_not_what_is_read(tmp_path, clips,
                                                                      monkeypatch):
    # Before: the worker checked the clip by name (os.stat) and the reader
    # opened the name again; a clip replaced by a FIFO in between blocked the
    # worker until the job timeout (an hour by default). Now the clip is
    # opened once, checked on that descriptor and read from it.
    import shutil

    from vmafdnn import runners, scoring
    from vmafdnn.jobs import read_jobs
    dist = tmp_path / "dist.y4m"
    shutil.copy(clips / "dist.y4m", dist)
    job, = read_jobs([{"reference": str(clips / "ref.y4m"), "distorted": str(dist)}])
    job["job_key"] = "0" * 24
    want = vmafdnn.score(clips / "ref.y4m", clips / "dist.y4m", ["psnr_y"])
    real_init = scoring._Input.__init__

    def swap_then_open(self, role, source, *args, **kwargs):
        if role == "distorted":
            dist.unlink()
            os.mkfifo(dist)  # what the name means now: a FIFO nobody writes
        real_init(self, role, source, *args, **kwargs)
    monkeypatch.setattr(scoring._Input, "__init__", swap_then_open)
    scorer = runners.Scorer(_scorer_options())
    try:
        row = _run_in_thread(lambda: scorer.run(job))
    finally:
        scorer.close()
    assert row["error"] == "" and row["frames"] == N
    assert row["psnr_y"] == pytest.approx(want["pooled_metrics"]["psnr_y"]["mean"], abs=1e-6)


def test_open_clip_refuses_what_is_not_a_file_with_errno(tmp_path):
    from vmafdnn.runners import InputKindError, open_clip
    fifo = tmp_path / "clip.y4m"
    os.mkfifo(fifo)
    for path, code, fragment in ((fifo, errno.EINVAL, "--allow-pipes"),
                                 ("/dev/zero", errno.EINVAL, "a character device"),
                                 (tmp_path, errno.EISDIR, "a directory")):
        with pytest.raises(InputKindError, match=fragment) as e:
            open_clip(str(path), "distorted clip")
        assert e.value.errno == code and e.value.filename == str(path)
    with pytest.raises(FileNotFoundError, match="distorted clip .*missing") as e:
        open_clip(str(tmp_path / "missing.y4m"), "distorted clip")
    assert e.value.errno == errno.ENOENT
