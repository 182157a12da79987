"""The batch runner attacked again after issue 25's items (leftovers b and c
and the attack pass that followed): numbers range-checked where they are
given, inputs checked on the descriptor that is read, results files read
back bounded, one batch at a time on a results file."""
import errno
import os
import subprocess
import sys

import pytest

import vmafdnn
from vmafdnn import batch as vbatch

from clips import synth_fixture  # noqa: F401  (fixtures)


@pytest.fixture
def clips(synth):
    """The folder of the shared synthetic pair (ref.y4m, dist.y4m)."""
    return synth.ref.parent


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
    # Before: "-1 must be at least 0" and "... is more than the maximum,
    # 2147483647": the range is now named whole either way.
    ("--tiny-device-index", "-1", "must be 0..2147483647 (got -1)"),
    ("--tiny-device-index", str(2 ** 70), "must be 0..2147483647 (got 1180591620717411303424)"),
    ("--tiny-device-index", "2147483648", "must be 0..2147483647 (got 2147483648)"),
    # Before: "'999...' is not an integer", the 5,000 digits printed whole.
    ("--tiny-device-index", "9" * 5000, "must be 0..2147483647 (got a number of 5000 digits)"),
    ("--gpus-per-worker", "nan", "finite number"),
    ("--gpus-per-worker", "-1", "finite number"),
    ("--gpus-per-worker", "inf", "finite number"),
    ("--workers", "100000", "must be 1..4096 (got 100000)"),
    ("--retries", str(2 ** 70), "must be 0..100 (got 1180591620717411303424)"),
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
    ({"device_index": 10 ** 5000}, vmafdnn.InvalidArgumentError),
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
def test_a_clip_swapped_for_a_fifo_after_its_check_is_not_what_is_read(tmp_path, clips, synth,
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
    assert row["error"] == "" and row["frames"] == synth.frames
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


# -- the results file: regular, read back bounded, one batch at a time ----------------------

def test_a_results_path_that_cannot_hold_results_is_refused_before_any_job(tmp_path, clips):
    # Before: a folder named out.csv was found after every job had run (the
    # error named a temporary file), and a FIFO was replaced by a file.
    jobs = _jobs(tmp_path, clips)
    (tmp_path / "out.csv").mkdir()
    proc = _cli(jobs, "-o", tmp_path / "out.csv", timeout=60)
    _usage_error(proc, f"the results file (-o) {tmp_path / 'out.csv'} is a directory")
    assert not (tmp_path / "out.csv.partial.jsonl").exists()
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    proc = _cli(jobs, "-o", fifo, timeout=60)
    _usage_error(proc, "is a FIFO", "give a regular file")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
    _usage_error(_cli(jobs, "-o", "", timeout=60), "path is empty")


def test_a_second_batch_on_the_same_results_file_is_refused(tmp_path, clips):
    # Before: both ran every job; the first to finish removed the journal the
    # other was still appending to, and the last to finish replaced the
    # results of the other.
    from vmafdnn.results import Journal
    jobs = _jobs(tmp_path, clips)
    out = tmp_path / "out.csv"
    held = Journal(str(out))  # what a running batch holds
    try:
        with pytest.raises(vmafdnn.BusyError, match="another vmafdnn batch") as e:
            vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
        assert e.value.errno == errno.EBUSY
        proc = _cli(jobs, "-o", out, "--tiny-model", "psnr_y", timeout=120)
        assert proc.returncode == 1 and "another vmafdnn batch is writing" in proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert not out.exists()
    finally:
        held.close()
    assert not os.path.exists(str(out) + ".partial.jsonl")  # empty: removed on release
    rows = vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    assert rows.failed == 0 and out.exists()


def test_two_batch_processes_at_once_one_runs_one_is_refused(tmp_path, clips):
    # A real second process while the first is busy: the first's job is a FIFO
    # fed only once the second has been turned away.
    import threading
    fifo = tmp_path / "slow.y4m"
    os.mkfifo(fifo)
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(f"title,reference,distorted\nslow,{clips / 'ref.y4m'},{fifo}\n"
                    f"ok,{clips / 'ref.y4m'},{clips / 'dist.y4m'}\n")
    out = tmp_path / "out.jsonl"
    first = subprocess.Popen([sys.executable, "-m", "vmafdnn", "batch", str(jobs), "-o",
                              str(out), "--workers", "1", "--allow-pipes", "--tiny-model",
                              "psnr_y", "-q"], stderr=subprocess.PIPE, text=True)
    try:
        journal = str(out) + ".partial.jsonl"
        for _ in range(600):
            if os.path.exists(journal):
                break
            assert first.poll() is None, first.stderr.read()
            import time
            time.sleep(0.1)
        second = _cli(jobs, "-o", out, "--allow-pipes", "--tiny-model", "psnr_y", timeout=120)
        assert second.returncode == 1 and "another vmafdnn batch" in second.stderr
        threading.Thread(target=lambda: fifo.write_bytes((clips / "dist.y4m").read_bytes()),
                         daemon=True).start()
        assert first.wait(120) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    rows = vbatch.read_results(out)
    assert [r["title"] for r in rows] == ["slow", "ok"] and all(not r["error"] for r in rows)


def test_the_journal_is_the_batchs_own_file(tmp_path, clips):
    # Before: a link planted as the journal had rows appended to its target
    # (any file of the user's); a FIFO there blocked the batch for ever.
    jobs = _jobs(tmp_path, clips)
    out = tmp_path / "out.csv"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, str(out) + ".partial.jsonl")
    with pytest.raises(ValueError, match="is a symbolic link") as e:
        vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    assert e.value.errno == errno.ELOOP
    assert victim.read_text() == "precious\n" and not out.exists()
    os.unlink(str(out) + ".partial.jsonl")
    os.mkfifo(str(out) + ".partial.jsonl")
    with pytest.raises(ValueError, match="journal .* is a FIFO"):
        _run_in_thread(lambda: vbatch.batch(jobs, out, workers=1, models=["psnr_y"]))


def test_a_row_after_a_line_a_killed_run_left_unfinished_is_read_back(tmp_path):
    # Before: the next row was appended to the unfinished line, and the two
    # were one invalid line: that good row was lost to the next resume.
    from vmafdnn.results import Journal, good_rows
    out = str(tmp_path / "out.csv")
    with open(out + ".partial.jsonl", "w") as f:
        f.write('{"job_key": "aaa", "frames": 3, "error": ""}\n{"job_key": "bb')
    journal = Journal(out)
    journal.append({"job_key": "ccc", "frames": 3, "error": ""})
    journal.close()
    assert sorted(row["job_key"] for row in good_rows(out)) == ["aaa", "ccc"]


@pytest.mark.parametrize("name,content,fragment", [
    ("r.csv", b"title,psnr_y\na\x00,1\n", ":2: a NUL character"),
    ("r.csv", b"title,psnr_y\n\xff\xfe,1\n", ":2: not UTF-8 text"),
    ("r.jsonl", b'{"a": 1}\n' + b'{"a": ' * 100000 + b"1" + b"}" * 100000 + b"\n",
     ":2: invalid JSON: nested too deeply"),
    ("r.jsonl", b'{"a": 1}\n[1, 2]\n', ":2: a row is a JSON object"),
    ("r.csv", b"title,psnr_y\na,1,2\n", ":2: 3 cells but 2 columns"),
    ("r.csv", b'title,psnr_y\n"a,1\n', "malformed CSV"),
])
def test_a_bad_results_file_is_named_with_its_line(tmp_path, name, content, fragment):
    # Before: "'utf-8' codec can't decode byte 0xff", "maximum recursion depth
    # exceeded", a NUL read as data: none naming the file.
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=fragment) as e:
        vbatch.read_results(path)
    assert str(path) in str(e.value)
    proc = subprocess.run([sys.executable, "-m", "vmafdnn", "bdrate", str(path), "--anchor",
                           "a", "--test", "b"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert str(path) in proc.stderr and "internal error" not in proc.stderr


def test_a_long_cell_is_not_a_malformed_file(tmp_path):
    # Before: csv's 128 KiB cell limit surfaced as "internal error: Error:
    # field larger than field limit (131072)".
    path = tmp_path / "r.csv"
    path.write_text("title,error\na," + "x" * 200000 + "\n")
    row, = vbatch.read_results(path)
    assert len(row["error"]) == 200000


def test_results_that_are_endless_or_too_large_are_refused(tmp_path, monkeypatch):
    # Before: a results.jsonl linked to /dev/zero was read until memory ran
    # out (bdrate, resume), and a FIFO blocked for ever.
    from vmafdnn import results
    zero = tmp_path / "r.jsonl"
    os.symlink("/dev/zero", zero)
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    for path, fragment in ((zero, "a character device"), (fifo, "a FIFO")):
        proc = subprocess.run([sys.executable, "-m", "vmafdnn", "bdrate", str(path),
                               "--anchor", "a", "--test", "b"], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    big = tmp_path / "big.csv"
    big.write_text("title,psnr_y\n" + "a,1\n" * 1000)
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 1024)
    with pytest.raises(ValueError, match="MAX_RESULTS_BYTES") as e:
        vbatch.read_results(big)
    assert e.value.errno == errno.EFBIG


def test_a_journal_cannot_be_copied_or_pickled(tmp_path):
    import copy
    import pickle

    from vmafdnn.results import Journal
    with Journal(str(tmp_path / "out.csv")) as journal:
        for clone in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be copied or pickled"):
                clone(journal)


def test_a_pipe_whose_writer_came_and_went_before_the_wait_is_read(tmp_path, monkeypatch):
    # A clip allowed as a FIFO is opened non-blocking (a FIFO never blocks
    # the open) and then waited on. Reopened blocking instead (commit
    # 8aae4e2), a writer that wrote everything and closed in between left its
    # bytes in the pipe and the reopen waiting for another writer, for ever
    # (CI's Ray test with a FIFO clip hung so).
    from vmafdnn import paths
    from vmafdnn.runners import open_clip
    fifo = tmp_path / "clip.y4m"
    os.mkfifo(fifo)
    real_fstat = os.fstat
    fed = []

    def fstat_then_feed(fd):
        st = real_fstat(fd)
        if not fed and paths.stat.S_ISFIFO(st.st_mode):
            fed.append(True)  # the writer comes, writes and goes now
            w = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, b"YUV4MPEG2 W8 H8\n")
            os.close(w)
        return st
    monkeypatch.setattr(paths.os, "fstat", fstat_then_feed)
    for open_it in (lambda: paths.open_input(str(fifo), "clip", fifo_ok=True),
                    lambda: open_clip(str(fifo), "distorted clip", allow_pipes=True)):
        fed.clear()
        f = _run_in_thread(open_it, 30)
        with f:
            assert f.read() == b"YUV4MPEG2 W8 H8\n"


def test_the_reports_folder_is_checked_before_any_job(tmp_path, clips):
    # Before: --reports '' with no -o scored every job and kept nothing (exit
    # 0), and a file given as the folder failed with a bare "File exists".
    jobs = _jobs(tmp_path, clips)
    _usage_error(_cli(jobs, "--reports", "", timeout=60), "(--reports) path '' is empty")
    afile = tmp_path / "afile"
    afile.write_text("x")
    _usage_error(_cli(jobs, "-o", tmp_path / "r.csv", "--reports", afile, timeout=60),
                 f"the reports folder (--reports) {afile} is a file")
    assert afile.read_text() == "x" and not (tmp_path / "r.csv").exists()
    with pytest.raises(ValueError, match="is empty"):
        vbatch.batch(jobs, reports="")


def test_results_are_on_disk_before_the_journal_goes(tmp_path, clips, monkeypatch):
    # Before: the results file was renamed into place without an fsync and
    # the journal, the only other copy of the rows, removed at once: a crash
    # then could leave an empty results file and no journal.
    from vmafdnn import results
    events = []
    real_fsync, real_unlink = os.fsync, os.unlink

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def unlink(path, *args, **kwargs):
        events.append(("unlink", os.fspath(path)))
        return real_unlink(path, *args, **kwargs)
    monkeypatch.setattr(results.os, "fsync", fsync)
    monkeypatch.setattr(results.os, "unlink", unlink)
    out = tmp_path / "out.jsonl"
    rows = vbatch.batch(_jobs(tmp_path, clips), out, workers=1, models=["psnr_y"])
    monkeypatch.undo()
    assert rows.failed == 0
    journal = ("unlink", str(out) + ".partial.jsonl")
    assert journal in events
    before = events[:events.index(journal)]
    assert any(kind == "fsync" and path.endswith(".tmp") for kind, path in before), events
    assert ("fsync", str(tmp_path)) in before, events


def test_label_columns_are_bounded(tmp_path):
    # Before: a JSON Lines list giving each job a label of its own was read,
    # and the results (every row has every column) grew as rows x columns:
    # 1,100 jobs wrote 1.2 million cells; 100,000 would write 10^10.
    from vmafdnn.jobs import MAX_LABEL_COLUMNS
    import json
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"distorted": "d.y4m", f"label{k}": "x"}) + "\n"
                            for k in range(MAX_LABEL_COLUMNS + 1)))
    with pytest.raises(ValueError, match=f"jobs.jsonl:{MAX_LABEL_COLUMNS + 1}: more than "
                       f"{MAX_LABEL_COLUMNS} distinct label columns"):
        vbatch.read_jobs(jobs)
    jobs.write_text("".join(json.dumps({"distorted": "d.y4m", "title": f"t{k}"}) + "\n"
                            for k in range(MAX_LABEL_COLUMNS + 1)))
    assert len(vbatch.read_jobs(jobs)) == MAX_LABEL_COLUMNS + 1  # many values: fine


def test_python_jobs_take_paths_as_python_writes_them(tmp_path, clips):
    # Before: {"distorted": Path(...)} was refused ("a path is a string, got
    # PosixPath"), and so were models given as a tuple or as Path objects.
    from pathlib import Path
    job, = vbatch.read_jobs([{"reference": clips / "ref.y4m", "distorted": Path(clips) /
                              "dist.y4m", "models": (Path("/m/a.onnx"), "psnr_y")}])
    assert job["distorted"] == str(clips / "dist.y4m")
    assert job["reference"] == str(clips / "ref.y4m")
    assert job["models"] == ["/m/a.onnx", "psnr_y"]
    with pytest.raises(ValueError, match='job 1: field "distorted": a path is a string'):
        vbatch.read_jobs([{"distorted": 3}])


def test_a_job_list_without_jobs_does_not_empty_the_results(tmp_path, clips):
    # Before: a job list truncated to its header scored nothing and replaced
    # the results file, every row of it, with an empty one (exit 0).
    out = tmp_path / "out.csv"
    rows = vbatch.batch(_jobs(tmp_path, clips), out, workers=1, models=["psnr_y"])
    assert rows.failed == 0
    before = out.read_bytes()
    empty = tmp_path / "empty.csv"
    empty.write_text("title,reference,distorted\n")
    proc = _cli(empty, "-o", out, "--tiny-model", "psnr_y", timeout=60)
    assert proc.returncode == 1 and f"{empty}: no jobs" in proc.stderr, proc.stderr
    assert out.read_bytes() == before
    with pytest.raises(ValueError, match="jobs: no jobs"):
        vbatch.batch([], out)
    assert out.read_bytes() == before


def test_a_results_link_to_a_file_of_another_format_is_refused(tmp_path, clips):
    # Before: out.csv -> out.jsonl wrote CSV rows into the file named .jsonl (the format
    # came from the name given, the journal and the write from the real file), which every
    # later reader of out.jsonl then misread. A link whose target's name says the same
    # format, or no format, is fine.
    jobs = _jobs(tmp_path, clips)
    (tmp_path / "out.jsonl").write_text("")
    (tmp_path / "out.csv").symlink_to(tmp_path / "out.jsonl")
    with pytest.raises(ValueError, match=r"is a link to .*out\.jsonl: its name says csv, the "
                                         r"file's says jsonl"):
        vbatch.batch(jobs, tmp_path / "out.csv", workers=1, models=["psnr_y"])
    assert (tmp_path / "out.jsonl").read_text() == ""
    proc = _cli(jobs, "-o", tmp_path / "out.csv", "--tiny-model", "psnr_y", timeout=120)
    assert proc.returncode == 1 and "is a link to" in proc.stderr, proc.stderr  # as any bad format
    (tmp_path / "same.csv").symlink_to(tmp_path / "real.csv")
    rows = vbatch.batch(jobs, tmp_path / "same.csv", workers=1, models=["psnr_y"])
    assert rows.failed == 0 and (tmp_path / "real.csv").read_text().startswith("title,")


def test_every_name_of_one_results_file_shares_its_journal_and_lock(tmp_path, clips):
    # Before: the journal was named after the path given, so a symbolic link
    # to the results file (or to its folder, or a spelling through such a
    # link and "..") had a journal and a lock of its own: a second batch
    # through that name ran every job beside the first, each replacing the
    # other's results. The journal now sits beside the real results file.
    from vmafdnn.results import Journal
    jobs = _jobs(tmp_path, clips)
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    out = real_dir / "out.csv"
    (tmp_path / "link.csv").symlink_to(out)            # dangling until written
    (tmp_path / "dir").symlink_to(real_dir)
    (real_dir / "sub").mkdir()
    names = [tmp_path / "link.csv", tmp_path / "dir" / "out.csv",
             str(tmp_path / "dir") + "/sub/../out.csv"]
    held = Journal(str(out))
    try:
        for name in names:
            with pytest.raises(vmafdnn.BusyError, match="another vmafdnn batch") as e:
                vbatch.batch(jobs, name, workers=1, models=["psnr_y"])
            assert e.value.errno == errno.EBUSY
            assert str(out) + ".partial.jsonl" in str(e.value)
        proc = _cli(jobs, "-o", names[0], "--tiny-model", "psnr_y", timeout=120)
        assert proc.returncode == 1 and "another vmafdnn batch" in proc.stderr, proc.stderr
        assert not out.exists()
        assert sorted(os.listdir(tmp_path)) == ["dir", "jobs.csv", "link.csv", "real"]
    finally:
        held.close()
    # Each name resumes from the one journal: a row journalled through one
    # name is not run again through another.
    with Journal(str(names[0])) as journal:
        assert journal.path == str(out) + ".partial.jsonl"
    rows = vbatch.batch(jobs, names[1], workers=1, models=["psnr_y"])
    assert rows.ran == 1 and rows.failed == 0 and out.is_file()
    assert os.path.islink(tmp_path / "link.csv")
    rows = vbatch.batch(jobs, names[0], workers=1, models=["psnr_y"])
    assert rows.ran == 0 and rows.skipped == 1


def test_hard_links_of_a_results_file_are_separate_results_files(tmp_path, clips):
    # A hard link is another name of the same bytes, but the results are
    # replaced by a rename of the name given (as the C report writer does):
    # after a batch through one name the other keeps the rows it had. Each
    # name is its own results file with its own journal, so two batches on
    # the two names do not clash.
    from vmafdnn.results import Journal
    jobs = _jobs(tmp_path, clips)
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("title,reference,distorted,frames,error,job_key\nold,r,d,1,,k\n")
    os.link(first, second)
    before = second.read_bytes()
    with Journal(str(second)):
        rows = vbatch.batch(jobs, first, workers=1, models=["psnr_y"])
    assert rows.failed == 0
    assert second.read_bytes() == before
    assert os.stat(first).st_ino != os.stat(second).st_ino
    assert [r["title"] for r in vbatch.read_results(first)] == ["t0"]
