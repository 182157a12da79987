"""Batch scoring: local worker processes and a local Ray instance give the
rows that scoring each pair alone gives; failures stay in their row; a killed
worker's job is retried elsewhere; a re-run does no work."""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import vmafdnn
from local_ray import init_local_ray
from vmafdnn import batch as vbatch
from vmafdnn.video import Frame, write_y4m

W, H, N = 64, 48, 4


def _frames(planes):
    chroma = np.full((H // 2, W // 2), 128, np.uint8)
    return [Frame(y=p, u=chroma, v=chroma, bitdepth=8, index=i, chroma="420")
            for i, p in enumerate(planes)]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    """Two titles, three renditions each (more noise: "lower bitrate")."""
    root = tmp_path_factory.mktemp("catalogue")
    rng = np.random.default_rng(7)
    jobs = []
    for t in range(2):
        ref = [rng.integers(0, 256, (H, W), dtype=np.uint8) for _ in range(N)]
        write_y4m(root / f"ref{t}.y4m", _frames(ref))
        for q, noise in enumerate((12, 6, 2)):
            dist = [np.clip(r.astype(int) + rng.integers(-noise, noise + 1, r.shape), 0, 255)
                    .astype(np.uint8) for r in ref]
            write_y4m(root / f"dist{t}_{q}.y4m", _frames(dist))
            jobs.append({"title": f"title{t}", "rendition": str(q),
                         "bitrate": str(500 * 2 ** q), "reference": f"ref{t}.y4m",
                         "distorted": f"dist{t}_{q}.y4m"})
    with open(root / "jobs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(jobs[0]))
        w.writeheader()
        w.writerows(jobs)
    return root, jobs


def _alone(root, job, **kw):
    ref = root / job["reference"] if job.get("reference") else None
    return vmafdnn.score(ref, root / job["distorted"], threads=1, **kw)


def _check_rows_match_alone(root, jobs, rows):
    assert len(rows) == len(jobs)
    for job, row in zip(jobs, rows):
        assert row["error"] == "", row
        assert row["title"] == job["title"] and row["rendition"] == job["rendition"]
        alone = _alone(root, job)
        assert row["frames"] == len(alone["frames"]) == N
        for name, pooled in alone["pooled_metrics"].items():
            for method, suffix in vbatch.POOL_SUFFIXES.items():
                # Bit-identical: the same sessions and C pooling, one job's window.
                assert row[name + suffix] == pooled[method], (name, method, row)
        assert row["attached_ep"] == "CPU"


def test_local_rows_equal_scoring_each_pair_alone(catalogue, tmp_path):
    root, jobs = catalogue
    out = tmp_path / "results.parquet"
    rows = vmafdnn.batch(root / "jobs.csv", out, workers=2)  # the module is callable
    assert (rows.ran, rows.skipped, rows.failed) == (len(jobs), 0, 0)
    _check_rows_match_alone(root, jobs, rows)
    # Two workers for six jobs: a context was opened at most once per worker,
    # never once per job (reset reopens native-resolution models: docs/batch.md).
    assert sum(1 for r in rows if r["load_s"] > 0) <= 2
    written = vbatch.read_results(out)
    assert [r["job_key"] for r in written] == [r["job_key"] for r in rows]
    assert written[0]["psnr_y"] == rows[0]["psnr_y"]
    assert not os.path.exists(str(out) + ".partial.jsonl")


def _same_report(a, b) -> bool:
    """Byte-equal but for "fps", which reports give as the measured speed."""
    def text(path):
        data = open(path, "rb").read()
        return re.sub(rb'("fps": |fps=")[0-9.]+', rb"\1-", data)
    return text(a) == text(b)


def test_reports_are_those_of_score(catalogue, tmp_path):
    root, jobs = catalogue
    rows = vbatch.batch(root / "jobs.csv", tmp_path / "r.jsonl", workers=1,
                        reports=tmp_path / "reports", report_format="json")
    _check_rows_match_alone(root, jobs, rows)
    assert (rows[0]["width"], rows[0]["height"], rows[0]["fps"]) == (W, H, 25.0)
    for job, row in zip(jobs, rows):
        _alone(root, job, output=tmp_path / "alone.json")
        assert _same_report(row["report"], tmp_path / "alone.json")
    for fmt in ("csv", "xml"):
        again = vbatch.batch(root / "jobs.csv", None, workers=1, reports=tmp_path / fmt,
                             report_format=fmt)
        _alone(root, jobs[1], output=tmp_path / f"alone.{fmt}")
        assert _same_report(again[1]["report"], tmp_path / f"alone.{fmt}")
    # A report that went missing is made again on the next run.
    os.unlink(rows[0]["report"])
    resumed = vbatch.batch(root / "jobs.csv", tmp_path / "r.jsonl", workers=1,
                           reports=tmp_path / "reports")
    assert resumed.ran == 1 and os.path.exists(rows[0]["report"])


def test_bad_jobs_fail_their_row_and_the_batch_goes_on(catalogue, tmp_path, models):
    root, jobs = catalogue
    big = tmp_path / "big.y4m"
    rng = np.random.default_rng(1)
    write_y4m(big, [Frame(y=rng.integers(0, 256, (2 * H, 2 * W), dtype=np.uint8),
                          u=np.zeros((H, W), np.uint8), v=np.zeros((H, W), np.uint8),
                          bitdepth=8, index=0, chroma="420")])
    bad = [
        dict(jobs[0], distorted=str(root / "missing.y4m"), reference=str(root / "ref0.y4m")),
        dict(jobs[0], distorted=str(big), reference=str(root / "ref0.y4m")),
        dict(jobs[0], distorted=str(root / "dist0_0.y4m"), reference=str(root / "ref0.y4m"),
             models=[str(tmp_path / "nope.onnx")]),
        dict(jobs[0], distorted=str(root / "dist0_0.y4m"), reference=str(root / "ref0.y4m"),
             models=["sharpness_nr"]),
    ]
    good = [dict(j, reference=str(root / j["reference"]), distorted=str(root / j["distorted"]))
            for j in jobs[:2]]
    rows = vbatch.batch(bad + good, workers=1)
    assert rows.failed == 3
    assert rows[0]["error"].startswith("FileNotFoundError") and "missing.y4m" in rows[0]["error"]
    assert rows[1]["error"].startswith("InputMismatchError") and "size mismatch" in \
        rows[1]["error"]
    assert "nope.onnx" in rows[2]["error"]
    assert rows[3]["error"] == "" and "sharpness_nr" in rows[3]  # per-job models
    _check_rows_match_alone(root, jobs[:2], rows[4:])


def test_a_worker_reuses_its_context_across_jobs_failures_and_sizes(catalogue, tmp_path,
                                                                   models):
    """One worker, reports on: each model set is loaded once; a job failing
    inside the context (a frame count mismatch after 3 frames) and temporal
    models (m: a past picture, native resolution, meeting a new frame size;
    m2: the next frame's m, as vmaf's motion2) leave the next job the scores
    and report of a fresh context."""
    root, jobs = catalogue
    temporal = tmp_path / "diff.onnx"
    temporal.write_bytes(open(models.temporal_diff, "rb").read())
    (tmp_path / "diff.json").write_text(json.dumps({
        "native_resolution": True, "output_keys": ["m", "bits"],
        "input_sources": {"prev": {"picture": "distorted", "offset": -1},
                          "bpc": {"value": "bpc"}}}))
    ahead = tmp_path / "min.onnx"
    ahead.write_bytes(open(models.pair_min, "rb").read())
    (tmp_path / "min.json").write_text(json.dumps({
        "output_keys": ["m2"], "input_sources": {"a": {"feature": "m"},
                                                 "b": {"feature": "m", "offset": 1}}}))
    temporal_models = [str(temporal), str(ahead)]
    big = tmp_path / "big.y4m"
    rng = np.random.default_rng(2)
    write_y4m(big, [Frame(y=rng.integers(0, 256, (2 * H, 2 * W), dtype=np.uint8),
                          u=np.zeros((H, W), np.uint8), v=np.zeros((H, W), np.uint8),
                          bitdepth=8, index=i, chroma="420") for i in range(3)])
    listed = [dict(j, reference=str(root / j["reference"]), distorted=str(root / j["distorted"]))
              for j in jobs]
    nr = [dict(listed[0], title="nr", reference=None, models=temporal_models),
          dict(listed[0], title="nr big", reference=None, distorted=str(big),
               models=temporal_models)]
    short = dict(listed[0], title="short reference", ref_offset=1)
    order = [listed[0], nr[0], short, nr[1], listed[4]]
    for reports in (tmp_path / "reports", None):
        rows = vbatch.batch(order, workers=1, reports=reports, report_format="xml")
        assert [bool(r["error"]) for r in rows] == [False, False, True, False, False]
        assert "frame count mismatch" in rows[2]["error"]
        assert [r["load_s"] > 0 for r in rows] == [True, True, False, False, False]
        assert len({r["worker"] for r in rows}) == 1
        _check_rows_match_alone(root, [jobs[0], jobs[4]], [rows[0], rows[4]])
        assert (rows[3]["width"], rows[3]["height"], rows[3]["frames"]) == (2 * W, 2 * H, 3)
        for row in (rows[1], rows[3]):
            alone = vmafdnn.score(None, row["distorted"], temporal_models, threads=1,
                                  output=tmp_path / "alone.xml")
            for key in ("m", "m2"):
                for method, suffix in vbatch.POOL_SUFFIXES.items():
                    assert row[key + suffix] == alone["pooled_metrics"][key][method], (key, row)
            if reports:
                assert _same_report(row["report"], tmp_path / "alone.xml")
        if reports:
            for k in (0, 4):
                _alone(root, jobs[k], output=tmp_path / "alone.xml")
                assert _same_report(rows[k]["report"], tmp_path / "alone.xml")


def test_a_second_run_does_no_work(catalogue, tmp_path):
    root, jobs = catalogue
    out = tmp_path / "results.csv"
    first = vbatch.batch(root / "jobs.csv", out, workers=2)
    assert first.ran == len(jobs)
    events = []
    again = vbatch.batch(root / "jobs.csv", out, workers=2,
                         on_event=lambda kind, i, info: events.append(kind))
    assert (again.ran, again.skipped, events) == (0, len(jobs), [])
    assert [r["psnr_y"] for r in again] == [repr(r["psnr_y"]) for r in first]
    # A re-encoded rendition (new mtime) and a new job are the only work.
    os.utime(root / jobs[2]["distorted"], ns=(time.time_ns(), time.time_ns() + 10**9))
    more = jobs + [dict(jobs[0], title="copy", ref_offset="1", dist_offset="1")]
    started = []
    third = vbatch.batch(more, out, workers=2, base_dir=str(root),
                         on_event=lambda kind, i, info: kind == "start" and started.append(i))
    assert sorted(started) == [2, len(jobs)] and third.skipped == len(jobs) - 1
    assert third[-1]["frames"] == N - 1 and third[-1]["title"] == "copy"


def test_an_interrupted_batch_resumes_from_its_journal(catalogue, tmp_path):
    root, jobs = catalogue
    out = tmp_path / "results.parquet"
    canceller = vmafdnn.Canceller()

    def on_event(kind, index, info):
        if kind == "done":
            canceller.cancel()  # stop after the first result

    with pytest.raises(vmafdnn.RunCancelledError):
        vbatch.batch(root / "jobs.csv", out, workers=1, cancel=canceller, on_event=on_event)
    journal = str(out) + ".partial.jsonl"
    assert not out.exists() and os.path.exists(journal)
    kept = [json.loads(line) for line in open(journal)]
    assert len(kept) >= 1
    rows = vbatch.batch(root / "jobs.csv", out, workers=2)
    assert rows.skipped == len(kept) and rows.ran == len(jobs) - len(kept)
    _check_rows_match_alone(root, jobs, rows)
    assert not os.path.exists(journal)


def _fifo_job(root, tmp_path, jobs):
    """A job whose distorted clip is a FIFO: its worker blocks in open()
    until the test writes the clip, so a kill lands mid-job for sure."""
    fifo = tmp_path / "slow.y4m"
    os.mkfifo(fifo)
    data = (root / jobs[0]["distorted"]).read_bytes()

    def feed():
        with open(fifo, "wb") as f:  # blocks until the retried worker opens it
            f.write(data)

    return dict(jobs[0], title="fifo", distorted=str(fifo),
                reference=str(root / jobs[0]["reference"])), feed


def _killer(target: int, feed, killed: list):
    """on_event: SIGKILL the worker that starts job ``target`` (first
    attempt); once its death is seen (the "retry"), feed the FIFO."""
    def on_event(kind, index, info):
        if index != target:
            return
        if kind == "start" and info["attempt"] == 1:
            killed.append(info["worker"])
            os.kill(info["worker"], signal.SIGKILL)
        elif kind == "retry":
            threading.Thread(target=feed, daemon=True).start()
    return on_event


def test_a_killed_local_worker_has_its_job_retried_elsewhere(catalogue, tmp_path):
    root, jobs = catalogue
    fifo_job, feed = _fifo_job(root, tmp_path, jobs)
    listed = [dict(j, reference=str(root / j["reference"]), distorted=str(root / j["distorted"]))
              for j in jobs]
    killed = []
    rows = vbatch.batch(listed[:3] + [fifo_job] + listed[3:], workers=2, timeout=120,
                        allow_pipes=True, on_event=_killer(3, feed, killed))
    assert rows.failed == 0 and rows.retried == 1 and len(killed) == 1
    assert rows[3]["attempts"] == 2
    assert not rows[3]["worker"].endswith(f":{killed[0]}")
    _check_rows_match_alone(root, [dict(jobs[0], title="fifo")], [rows[3]])
    _check_rows_match_alone(root, jobs, rows[:3] + rows[4:])


def test_a_job_that_kills_every_worker_fails_after_its_retries(catalogue, tmp_path):
    root, jobs = catalogue
    fifo = tmp_path / "never.y4m"
    os.mkfifo(fifo)
    job = dict(jobs[0], distorted=str(fifo), reference=str(root / jobs[0]["reference"]))

    def on_event(kind, index, info):
        if kind == "start":
            os.kill(info["worker"], signal.SIGKILL)

    rows = vbatch.batch([job], workers=1, retries=1, allow_pipes=True, on_event=on_event)
    assert rows[0]["attempts"] == 2 and rows[0]["error"].startswith("WorkerDied")
    assert "SIGKILL" in rows[0]["error"]


def test_job_lists_and_results_formats(catalogue, tmp_path):
    root, jobs = catalogue
    jsonl = tmp_path / "jobs.jsonl"
    with open(jsonl, "w") as f:
        for j in jobs[:2]:
            f.write(json.dumps(dict(j, reference=str(root / j["reference"]),
                                    distorted=str(root / j["distorted"]),
                                    models=["psnr_y"], bitrate=int(j["bitrate"]))) + "\n")
    for ext in ("csv", "jsonl", "parquet"):
        rows = vbatch.batch(jsonl, tmp_path / f"out.{ext}", workers=1)
        back = vbatch.read_results(tmp_path / f"out.{ext}")
        assert [str(r["bitrate"]) for r in back] == [j["bitrate"] for j in jobs[:2]]
        assert float(back[1]["psnr_y"]) == rows[1]["psnr_y"] and "ssim_y" not in back[1]
    with pytest.raises(ValueError, match="distorted"):
        vbatch.read_jobs([{"reference": "a.y4m"}])
    with pytest.raises(ValueError, match="unknown format"):
        vbatch.batch(jsonl, tmp_path / "out.xlsx")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vmafdnn", *args], capture_output=True,
                          text=True, timeout=300)


def test_command_line_batch_then_bdrate(catalogue, tmp_path):
    root, jobs = catalogue
    # Two "codecs" over the same clips, B labelled at 0.8x A's bitrate: the
    # same rate-quality curve shifted, so B's BD-rate is exactly -20%.
    ladder = tmp_path / "ladder.csv"
    with open(ladder, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["title", "codec", "bitrate", "reference",
                                          "distorted"])
        w.writeheader()
        for j in jobs:
            for codec, factor in (("A", 1.0), ("B", 0.8)):
                w.writerow({"title": j["title"], "codec": codec,
                            "bitrate": float(j["bitrate"]) * factor,
                            "reference": str(root / j["reference"]),
                            "distorted": str(root / j["distorted"])})
    out = tmp_path / "results.parquet"
    first = _cli("batch", str(ladder), "-o", str(out), "--workers", "2")
    assert first.returncode == 0, first.stderr
    assert f"({2 * len(jobs)} scored, 0 already done, 0 failed" in first.stdout
    again = _cli("batch", str(ladder), "-o", str(out))
    assert again.returncode == 0 and "(0 scored, 12 already done" in again.stdout
    bd = _cli("bdrate", str(out), "--anchor", "A", "--test", "B", "--plot",
              str(tmp_path / "rq.png"))
    assert bd.returncode == 0, bd.stderr
    assert "title0: -20.00%" in bd.stdout and "mean over 2 title(s): -20.00%" in bd.stdout
    assert (tmp_path / "rq.png").stat().st_size > 1000
    missing = _cli("batch", str(tmp_path / "nope.csv"), "-o", str(out))
    assert missing.returncode == 1 and "nope.csv" in missing.stderr
    no_output = _cli("batch", str(ladder))
    assert no_output.returncode == 2 and "-o RESULTS" in no_output.stderr


# -- Ray ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_instance():
    ray = init_local_ray()
    yield ray
    ray.shutdown()


def test_ray_rows_equal_scoring_each_pair_alone_and_survive_a_kill(catalogue, tmp_path,
                                                                    ray_instance):
    root, jobs = catalogue
    rows = vbatch.batch(root / "jobs.csv", tmp_path / "ray.parquet", ray=True)
    assert rows.ran == len(jobs) and rows.failed == 0
    _check_rows_match_alone(root, jobs, rows)
    assert len({r["worker"] for r in rows}) == 2  # both CPUs of the instance

    fifo_job, feed = _fifo_job(root, tmp_path, jobs)
    listed = [dict(j, reference=str(root / j["reference"]), distorted=str(root / j["distorted"]))
              for j in jobs]
    killed = []
    rows = vbatch.batch(listed[:2] + [fifo_job] + listed[2:], tmp_path / "ray2.jsonl",
                        ray=True, allow_pipes=True, on_event=_killer(2, feed, killed))
    assert rows.failed == 0 and rows.retried >= 1 and len(killed) == 1
    assert rows[2]["attempts"] == 2
    _check_rows_match_alone(root, [dict(jobs[0], title="fifo")], [rows[2]])
    _check_rows_match_alone(root, jobs, rows[:2] + rows[3:])
    again = vbatch.batch(listed[:2] + listed[2:], tmp_path / "ray2.jsonl", ray=True)
    assert again.ran == 0 and again.skipped == len(jobs)


def test_results_written_from_several_threads_at_once_stay_whole(tmp_path):
    # The temporary name was <path>.<pid>.tmp: two batch() calls of one
    # process aimed at one file wrote through the same temporary.
    out = tmp_path / "results.jsonl"
    tables = [[{"job": f"t{t}", "row": i, "pad": "x" * 2000} for i in range(200)]
              for t in range(4)]
    errors = []

    def write(rows):
        try:
            for _ in range(10):
                vbatch.write_results(rows, out)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=write, args=(rows,)) for rows in tables]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows in [[dict(r) for r in table] for table in tables]
    assert sorted(os.listdir(tmp_path)) == ["results.jsonl"]
    out.unlink()  # a new file gets the umask's mode (an existing one keeps its own)
    old = os.umask(0o027)
    try:
        vbatch.write_results(tables[0], out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o640


def test_results_through_a_symlink_keep_the_link_and_the_mode(tmp_path):
    target = tmp_path / "store" / "results.jsonl"
    target.parent.mkdir()
    target.write_text("")
    os.chmod(target, 0o600)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    vbatch.write_results([{"job": "a", "psnr_y": 40.0}], link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["job"] == "a"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(target.parent)) == ["results.jsonl"]
