"""Resuming a batch never replaces a good row with a worse one: a job that
fails in a re-run (its clips moved away, unreadable, the run interrupted)
keeps its earlier successful row in the results file, counts as failed and
is reported; an interrupted re-run leaves the results file as it was."""
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import vmafdnn
from vmafdnn import batch as vbatch
from vmafdnn.video import Frame, write_y4m

W, H, N = 64, 48, 4
SCORES = ("frames", "psnr_y", "psnr_y_min", "ssim_y", "ssim_y_harmonic_mean", "job_key",
          "error", "reference", "distorted")


def _write_clip(path, planes):
    chroma = np.full((H // 2, W // 2), 128, np.uint8)
    write_y4m(path, [Frame(y=p, u=chroma, v=chroma, bitdepth=8, index=i, chroma="420")
                     for i, p in enumerate(planes)])


def _catalogue(root, titles=2, renditions=2):
    """Clips in ``root/clips`` and ``root/jobs.csv`` naming them."""
    clips = root / "clips"
    clips.mkdir(parents=True)
    rng = np.random.default_rng(11)
    jobs = []
    for t in range(titles):
        ref = [rng.integers(0, 256, (H, W), dtype=np.uint8) for _ in range(N)]
        _write_clip(clips / f"ref{t}.y4m", ref)
        for q in range(renditions):
            noise = 4 + 6 * q
            _write_clip(clips / f"dist{t}_{q}.y4m",
                        [np.clip(r.astype(int) + rng.integers(-noise, noise + 1, r.shape), 0,
                                 255).astype(np.uint8) for r in ref])
            jobs.append({"title": f"title{t}", "rendition": str(q),
                         "reference": f"clips/ref{t}.y4m", "distorted": f"clips/dist{t}_{q}.y4m"})
    _write_jobs(root / "jobs.csv", jobs)
    return jobs


def _write_jobs(path, jobs):
    fields = []
    for job in jobs:
        fields += [k for k in job if k not in fields]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(jobs)


def _scores(rows):
    return [{k: r.get(k) for k in SCORES} for r in rows]


def _move_clips_away(root):
    shutil.move(str(root / "clips"), str(root / "elsewhere"))


def _bring_clips_back(root):
    shutil.move(str(root / "elsewhere"), str(root / "clips"))


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_a_rerun_with_the_clips_moved_away_keeps_the_good_rows(tmp_path, ext):
    jobs = _catalogue(tmp_path)
    out = tmp_path / f"results.{ext}"
    first = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert (first.ran, first.failed) == (len(jobs), 0)
    written = vbatch.read_results(out)
    assert all(int(r["frames"]) == N and float(r["psnr_y"]) > 20 for r in written)

    _move_clips_away(tmp_path)
    events = []
    again = vbatch.batch(tmp_path / "jobs.csv", out, workers=1,
                         on_event=lambda kind, i, info: events.append((kind, i)))
    # The rows in the file and the rows returned are the earlier good ones.
    assert _scores(vbatch.read_results(out)) == _scores(written)
    assert _scores(again) == _scores(written)
    assert again.ran == len(jobs) and again.failed == len(jobs)
    assert sorted(again.kept) == list(range(len(jobs)))
    for i, error in again.kept.items():
        assert error.startswith("FileNotFoundError") and "clips" in error, error
    assert sorted(i for kind, i in events if kind == "kept") == list(range(len(jobs)))
    assert not os.path.exists(str(out) + ".partial.jsonl")

    # With the clips back (same size and mtime: the same keys), nothing to do.
    _bring_clips_back(tmp_path)
    back = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert (back.ran, back.skipped, back.failed, back.kept) == (0, len(jobs), 0, {})
    assert _scores(vbatch.read_results(out)) == _scores(written)


def test_the_command_line_reports_the_kept_rows_and_fails(tmp_path):
    jobs = _catalogue(tmp_path, titles=1)
    out = tmp_path / "results.csv"
    cli = [sys.executable, "-m", "vmafdnn", "batch", str(tmp_path / "jobs.csv"), "-o", str(out),
           "--workers", "1"]
    first = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    written = out.read_bytes()
    _move_clips_away(tmp_path)
    again = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert out.read_bytes() == written  # CSV cells are written back as read
    assert again.returncode == 1, again.stderr
    assert f"({len(jobs)} scored, 0 already done, {len(jobs)} failed ({len(jobs)} keeping an " \
        "earlier successful row)" in again.stdout
    kept = [line for line in again.stderr.splitlines()
            if line.endswith("its earlier successful row is kept in the results")]
    assert len(kept) == len(jobs) and "FileNotFoundError" in kept[0], again.stderr
    assert again.stdout.count("(its earlier successful row is kept)") == len(jobs)
    quiet = subprocess.run(cli + ["-q"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 1 and quiet.stdout == ""
    assert quiet.stderr.count("its earlier successful row is kept") == len(jobs)


def test_only_the_jobs_that_fail_keep_their_row_the_others_are_scored(tmp_path):
    """One clip gone, one re-encoded: the re-encoded job's new success
    replaces its row (its key changed), the gone one keeps its row, a new
    job with a missing clip fails its own row (no earlier row to keep)."""
    jobs = _catalogue(tmp_path)
    out = tmp_path / "results.jsonl"
    first = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    os.unlink(tmp_path / jobs[1]["distorted"])
    rng = np.random.default_rng(3)
    _write_clip(tmp_path / jobs[2]["distorted"],
                [rng.integers(0, 256, (H, W), dtype=np.uint8) for _ in range(N)])
    _write_jobs(tmp_path / "jobs.csv",
                jobs + [dict(jobs[0], title="new", distorted="clips/nope.y4m")])
    again = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert _scores([again[1]]) == _scores([first[1]])
    assert (again.ran, again.skipped, again.failed) == (3, len(jobs) - 2, 2)
    assert list(again.kept) == [1]
    assert again[2]["error"] == "" and again[2]["job_key"] != first[2]["job_key"]
    assert again[2]["psnr_y"] != first[2]["psnr_y"]
    assert again[-1]["error"].startswith("FileNotFoundError")
    assert _scores(vbatch.read_results(out)) == _scores(again)


def test_an_interrupted_rerun_leaves_the_results_file_whole(tmp_path):
    jobs = _catalogue(tmp_path)
    out = tmp_path / "results.parquet"
    vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    before = out.read_bytes()
    written = vbatch.read_results(out)
    _move_clips_away(tmp_path)

    def interrupt(kind, index, info):
        if kind == "done":
            raise KeyboardInterrupt  # Ctrl-C in the middle of the re-run

    with pytest.raises(KeyboardInterrupt):
        vbatch.batch(tmp_path / "jobs.csv", out, workers=1, on_event=interrupt)
    assert out.read_bytes() == before
    journal = str(out) + ".partial.jsonl"
    assert [json.loads(line)["error"] != "" for line in open(journal)] == [True]
    # The next run (clips still away) keeps every good row too.
    again = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert _scores(vbatch.read_results(out)) == _scores(written)
    assert again.failed == len(jobs) and len(again.kept) == len(jobs)


def test_good_rows_only_in_the_journal_are_kept_too(tmp_path):
    """A first run interrupted after one job (its row only in the journal),
    then the clips moved away: that row is kept, the jobs that never
    succeeded fail their own rows."""
    jobs = _catalogue(tmp_path)
    out = tmp_path / "results.csv"
    canceller = vmafdnn.Canceller()
    with pytest.raises(vmafdnn.RunCancelledError):
        vbatch.batch(tmp_path / "jobs.csv", out, workers=1, cancel=canceller,
                     on_event=lambda kind, i, info: kind == "done" and canceller.cancel())
    journalled = [json.loads(line) for line in open(str(out) + ".partial.jsonl")]
    assert len(journalled) >= 1 and not out.exists()
    done = {r["job_key"]: r for r in journalled}
    _move_clips_away(tmp_path)
    rows = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    back = vbatch.read_results(out)
    for row in back:
        if row["job_key"] in done:
            assert row["error"] == "" and row["frames"] == str(N)
            assert float(row["psnr_y"]) == done[row["job_key"]]["psnr_y"]
        else:
            assert row["error"].startswith("FileNotFoundError")
    assert sum(1 for row in back if not row["error"]) == len(done)
    assert rows.failed == len(jobs) and len(rows.kept) == len(done)


def test_two_jobs_of_one_pair_each_keep_their_own_row(tmp_path):
    """Same clips and models, other offsets: each keeps its own row, in the
    job list's order, or by labels when the list was reordered."""
    jobs = _catalogue(tmp_path, titles=1, renditions=1)
    shifted = dict(jobs[0], title="shifted", ref_offset="1", dist_offset="1")
    _write_jobs(tmp_path / "jobs.csv", [jobs[0], shifted])
    out = tmp_path / "results.jsonl"
    first = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert [r["frames"] for r in first] == [N, N - 1]
    _move_clips_away(tmp_path)
    again = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert [r["frames"] for r in again] == [N, N - 1]
    assert _scores(again) == _scores(first) and len(again.kept) == 2
    _write_jobs(tmp_path / "jobs.csv", [shifted, jobs[0]])  # reordered
    third = vbatch.batch(tmp_path / "jobs.csv", out, workers=1)
    assert [r["title"] for r in third] == ["shifted", "title0"]
    assert [r["frames"] for r in third] == [N - 1, N]
    assert _scores(third) == _scores(first[::-1])


def test_a_job_rerun_for_its_missing_report_keeps_its_row_when_it_fails(tmp_path):
    """Same key (a clip overwritten in place with the same size and mtime,
    so unreadable now), re-run because its report went missing: the failure
    does not replace the good row."""
    jobs = _catalogue(tmp_path, titles=1, renditions=1)
    out = tmp_path / "results.jsonl"
    first = vbatch.batch(tmp_path / "jobs.csv", out, workers=1, reports=tmp_path / "reports")
    clip = tmp_path / jobs[0]["distorted"]
    st = os.stat(clip)
    clip.write_bytes(b"\0" * st.st_size)
    os.utime(clip, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.unlink(first[0]["report"])
    again = vbatch.batch(tmp_path / "jobs.csv", out, workers=1, reports=tmp_path / "reports")
    assert _scores(vbatch.read_results(out)) == _scores(first)
    assert again.ran == 1 and again.failed == 1 and list(again.kept) == [0]
    assert again.kept[0] != "" and again[0]["job_key"] == first[0]["job_key"]
