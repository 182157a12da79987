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
