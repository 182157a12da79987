"""The batch runner's front end held to the core's standard (issue 25, items
4-8): labels never replace scores, job lists are read strictly with located
errors, a job cannot hang the batch (FIFOs refused, a time budget per job),
results files are strict JSON and formula-free CSV, and the resume key
covers every model file a job loads."""
import csv
import json
import math
import os
import signal
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import vmafdnn
from local_ray import init_local_ray
from vmafdnn import batch as vbatch
from vmafdnn import runners
from vmafdnn.video import Frame, write_y4m

W, H, N = 64, 48, 3


def _write_clip(path, planes):
    chroma = np.full((H // 2, W // 2), 128, np.uint8)
    write_y4m(path, [Frame(y=p, u=chroma, v=chroma, bitdepth=8, index=i, chroma="420")
                     for i, p in enumerate(planes)])


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    root = tmp_path_factory.mktemp("trust_clips")
    rng = np.random.default_rng(5)
    ref = [rng.integers(0, 256, (H, W), dtype=np.uint8) for _ in range(N)]
    dist = [np.clip(r.astype(int) + rng.integers(-8, 9, r.shape), 0, 255).astype(np.uint8)
            for r in ref]
    _write_clip(root / "ref.y4m", ref)
    _write_clip(root / "dist.y4m", dist)
    return root


def _write_csv(path, header, rows, bom=False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        f.write(header + "\n")
        for row in rows:
            f.write(row + "\n")


def _jobs_csv(tmp_path, clips, header="title,reference,distorted", extra=""):
    path = tmp_path / "jobs.csv"
    _write_csv(path, header, [f"a,{clips / 'ref.y4m'},{clips / 'dist.y4m'}{extra}"])
    return path


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "vmafdnn", "batch", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


# -- item 4: a label never replaces a score ------------------------------------------------

@pytest.mark.parametrize("column", ["error", "frames", "job_key", "worker", "attempts",
                                    "file_kbps"])
def test_a_label_named_like_a_result_column_is_refused_at_parse_time(tmp_path, clips, column):
    jobs = _jobs_csv(tmp_path, clips, header=f"title,reference,distorted,{column}", extra=",x")
    with pytest.raises(ValueError) as e:
        vbatch.read_jobs(jobs)
    assert f"{jobs}:1: field \"{column}\"" in str(e.value)
    assert "result column" in str(e.value)


def test_a_label_named_like_a_models_score_is_refused(tmp_path, clips):
    # The case: a psnr_y label "99" replaced the computed 26.63.
    jobs = _jobs_csv(tmp_path, clips, header="title,reference,distorted,psnr_y", extra=",99")
    with pytest.raises(ValueError, match=r"jobs.csv:2: field \"psnr_y\".*score column"):
        vbatch.batch(jobs, tmp_path / "out.csv", workers=1, models=["psnr_y"])
    assert not (tmp_path / "out.csv").exists()
    jobs = _jobs_csv(tmp_path, clips, header="title,reference,distorted,ssim_y_min", extra=",1")
    with pytest.raises(ValueError, match=r"field \"ssim_y_min\""):
        vbatch.read_jobs(jobs, default_models=["psnr_y", "ssim_y"])


def test_a_model_output_named_like_a_label_fails_the_row_naming_the_clash(tmp_path, clips):
    # A model whose file name says nothing of its output: only the worker sees the clash.
    models = tmp_path / "models"
    models.mkdir()
    source = vmafdnn.models.path("psnr_y")
    shutil.copy(source, models / "other.onnx")
    shutil.copy(source.with_suffix(".json"), models / "other.json")
    shutil.copy(source.with_name("psnr_y_kernels.onnx"), models)  # its CPU form
    jobs = [{"title": "t", "psnr_y": "99", "reference": str(clips / "ref.y4m"),
             "distorted": str(clips / "dist.y4m"), "models": [str(models / "other.onnx")]}]
    rows = vbatch.batch(jobs, tmp_path / "out.jsonl", workers=1)
    assert rows.failed == 1
    assert rows[0]["error"].startswith("ColumnClash:") and '"psnr_y"' in rows[0]["error"]
    assert rows[0]["psnr_y"] == "99" and "psnr_y_min" not in rows[0]  # no score under the label


def test_an_empty_error_label_cannot_hide_a_missing_clip(tmp_path, clips):
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "reference,distorted,error", [f"{clips / 'ref.y4m'},{tmp_path / 'gone.y4m'},"])
    result = _cli(jobs, "-o", tmp_path / "out.csv")
    assert result.returncode != 0
    assert 'field "error"' in result.stderr and "internal error" not in result.stderr
    assert not (tmp_path / "out.csv").exists()


def test_a_results_file_fed_back_as_a_job_list_is_refused_before_any_job(tmp_path, clips):
    jobs = _jobs_csv(tmp_path, clips)
    rows = vbatch.batch(jobs, tmp_path / "results.csv", workers=1, models=["psnr_y"])
    assert rows.failed == 0
    for name in ("results.csv",):
        t0 = time.perf_counter()
        with pytest.raises(ValueError) as e:
            vbatch.batch(tmp_path / name, tmp_path / "again.csv", workers=1)
        assert time.perf_counter() - t0 < 5
        assert f"{tmp_path / name}:1: field" in str(e.value)
        assert "results file" in str(e.value)
        assert not (tmp_path / "again.csv").exists()
    vbatch.write_results(rows, tmp_path / "results.jsonl")
    with pytest.raises(ValueError, match=r"results.jsonl:1: field .*result column"):
        vbatch.read_jobs(tmp_path / "results.jsonl")
    result = _cli(tmp_path / "results.csv", "-o", tmp_path / "again.csv")
    assert result.returncode != 0 and "results file" in result.stderr
    assert "unsupported operand" not in result.stderr and "internal error" not in result.stderr


# -- item 5: job lists read strictly -----------------------------------------------------

def test_a_bom_before_the_header_is_dropped(tmp_path, clips):
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "reference,distorted", [f"{clips / 'ref.y4m'},{clips / 'dist.y4m'}"],
               bom=True)
    job, = vbatch.read_jobs(jobs)
    assert job["reference"] == str(clips / "ref.y4m")  # not a label "\ufeffreference"
    assert not any(k.startswith("\ufeff") for k in job)


def test_spaces_around_header_names_are_stripped_as_in_cells(tmp_path, clips):
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "title, reference , distorted",
               [f"a, {clips / 'ref.y4m'}, {clips / 'dist.y4m'}"])
    job, = vbatch.read_jobs(jobs)
    assert job["reference"] == str(clips / "ref.y4m") and job["title"] == "a"
    rows = vbatch.batch(jobs, tmp_path / "out.csv", workers=1, models=["psnr_y"])
    assert rows.failed == 0 and rows[0]["psnr_y"] < 60  # scored against its reference


@pytest.mark.parametrize("header,why", [
    ("distorted,title,title", 'column "title" is given twice'),
    ("distorted, title,title ", 'column "title" is given twice'),
    ("distorted,Reference", 'did you mean "reference"'),
    ("distorted,ref-offset", 'did you mean "ref_offset"'),
    ("distorted,dist offset", 'did you mean "dist_offset"'),
    ("distorted,,x", "empty name"),
])
def test_bad_headers_are_refused_with_their_line(tmp_path, header, why):
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, header, ["a.y4m" + ",x" * header.count(",")])
    with pytest.raises(ValueError) as e:
        vbatch.read_jobs(jobs)
    assert str(e.value).startswith(f"{jobs}:1: ") and why in str(e.value), str(e.value)


@pytest.mark.parametrize("line,field,why", [
    ('{"distorted": "a.y4m", "ref_offset": 1e999}', "ref_offset", "integer"),
    ('{"distorted": "a.y4m", "ref_offset": 100000000000000000000}', "ref_offset", "0..2147483647"),
    ('{"distorted": "a.y4m", "dist_offset": -1}', "dist_offset", "0..2147483647"),
    ('{"distorted": "a.y4m", "dist_offset": 1.5}', "dist_offset", "integer"),
    ('{"distorted": "a.y4m", "dist_offset": "3"}', None, None),
    ('{"distorted": "a.y4m", "width": 0}', "width", "1..32768"),
    ('{"distorted": "a.y4m", "bitdepth": 99}', "bitdepth", "8..16"),
    ('{"distorted": 5}', "distorted", "a path is a string"),
    ('{"distorted": ["a.y4m"]}', "distorted", "a path is a string"),
    ('{"distorted": "a\\u0000b.y4m"}', "distorted", "NUL"),
    ('{"distorted": ""}', "distorted", "missing"),
    ('{"distorted": "-"}', "distorted", "stdin"),
    ('{"distorted": "a.y4m", "reference": 7}', "reference", "a path is a string"),
    ('{"distorted": "a.y4m", "models": "psnr_y"}', None, None),
    ('{"distorted": "a.y4m", "models": [1]}', "models", "strings"),
    ('{"distorted": "a.y4m", "models": {"a": 1}}', "models", "strings"),
    ('{"distorted": "a.y4m", "scale": "maybe"}', "scale", "true or false"),
    ('{"distorted": "a.y4m", "scale": 2}', "scale", "true or false"),
    ('{"distorted": "a.y4m", "pix_fmt": 420}', "pix_fmt", "pixel format"),
    ('{"distorted": "a.y4m", "title": {"x": 1}}', "title", "a label is a string"),
    ('{"distorted": "a.y4m", "title": [1]}', "title", "a label is a string"),
    ('{"distorted": "a.y4m", "bitrate": 1e999}', "bitrate", "finite"),
])
def test_malformed_jsonl_values_get_file_line_and_field(tmp_path, line, field, why):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"distorted": "ok.y4m"}\n\n' + line + "\n")
    if field is None:  # accepted: a CSV-style string for a number, one model as a string
        vbatch.read_jobs(jobs)
        return
    with pytest.raises(ValueError) as e:
        vbatch.read_jobs(jobs)
    text = str(e.value)
    assert text.startswith(f"{jobs}:3: field \"{field}\": "), text
    assert why in text, text
    assert "OverflowError" not in text and "islice" not in text


@pytest.mark.parametrize("line,why", [
    ('{"distorted": "a.y4m", "bitrate": NaN}', "NaN is not a number JSON allows"),
    ('{"distorted": "a.y4m", "bitrate": Infinity}', "Infinity"),
    ('{"distorted": "a.y4m", "distorted": "b.y4m"}', 'column "distorted" is given twice'),
    ('["a.y4m"]', "a job is a JSON object"),
    ('"a.y4m"', "a job is a JSON object"),
    ('{"distorted": "a.y4m"', "invalid JSON"),
])
def test_malformed_jsonl_lines_are_located(tmp_path, line, why):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(line + "\n")
    with pytest.raises(ValueError) as e:
        vbatch.read_jobs(jobs)
    assert str(e.value).startswith(f"{jobs}:1: ") and why in str(e.value), str(e.value)


@pytest.mark.parametrize("content,why", [
    (b"distorted,title\na.y4m,x\x00y\n", "2: a NUL byte"),
    (b"distorted,title\na.y4m,\xff\n", "2: not UTF-8"),
    (b"distorted,title\na.y4m,x,y\n", "2: 3 cells but 2 columns"),
    (b"distorted,ref_offset\na.y4m,1_000\n", '2: field "ref_offset"'),
    (b"distorted,ref_offset\na.y4m,1e3\n", '2: field "ref_offset"'),
    (b"distorted,ref_offset\na.y4m,99999999999999999999\n", '2: field "ref_offset"'),
    (b"", "empty"),
])
def test_malformed_csv_is_located(tmp_path, content, why):
    jobs = tmp_path / "jobs.csv"
    jobs.write_bytes(content)
    with pytest.raises(ValueError) as e:
        vbatch.read_jobs(jobs)
    assert str(e.value).startswith(f"{jobs}:") and why in str(e.value), str(e.value)


def test_a_device_or_folder_as_the_job_list_is_refused_before_reading(tmp_path):
    with pytest.raises(ValueError, match="/dev/zero: a job list is a file, not a device"):
        vbatch.read_jobs("/dev/zero")
    with pytest.raises(ValueError, match="not a directory"):
        vbatch.read_jobs(tmp_path)


def test_a_job_list_from_a_pipe_is_read(tmp_path, clips):
    import threading
    fifo = tmp_path / "jobs.csv"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as f:
            f.write(f"reference,distorted\n{clips / 'ref.y4m'},{clips / 'dist.y4m'}\n")
    threading.Thread(target=feed, daemon=True).start()
    job, = vbatch.read_jobs(fifo)
    assert job["reference"] == str(clips / "ref.y4m")


def test_a_results_file_that_is_not_a_regular_file_is_not_read_back(tmp_path):
    from vmafdnn.results import good_rows
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    assert good_rows(str(fifo)) == []  # before: blocked opening the FIFO


def test_the_command_line_reports_a_bad_value_with_its_location(tmp_path):
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"distorted": "a.y4m", "ref_offset": 1e999}\n')
    result = _cli(jobs, "-o", tmp_path / "out.csv")
    assert result.returncode != 0
    assert f'{jobs}:1: field "ref_offset"' in result.stderr, result.stderr
    assert "internal error" not in result.stderr and "OverflowError" not in result.stderr


# -- item 6: no job hangs the batch -------------------------------------------------------

def test_a_fifo_clip_fails_its_row_and_the_batch_goes_on(tmp_path, clips):
    fifo = tmp_path / "clip.y4m"
    os.mkfifo(fifo)
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "title,reference,distorted",
               [f"fifo,{clips / 'ref.y4m'},{fifo}", f"ok,{clips / 'ref.y4m'},{clips / 'dist.y4m'}"])
    out = tmp_path / "out.csv"
    # Before: the worker blocked opening the FIFO, for ever; results never written.
    result = _cli(jobs, "-o", out, "--workers", "1", "--tiny-model", "psnr_y", timeout=120)
    assert result.returncode == 1, result.stderr
    rows = vbatch.read_results(out)
    assert "FIFO" in rows[0]["error"] and "--allow-pipes" in rows[0]["error"]
    assert rows[1]["error"] == "" and float(rows[1]["psnr_y"]) > 0


def test_devices_and_folders_are_not_clips(tmp_path, clips):
    jobs = [{"distorted": "/dev/zero", "reference": str(clips / "ref.y4m")},
            {"distorted": str(tmp_path), "reference": str(clips / "ref.y4m")}]
    rows = vbatch.batch(jobs, workers=1, models=["psnr_y"])
    assert "character device" in rows[0]["error"] and "directory" in rows[1]["error"]


def test_a_job_past_its_time_budget_is_killed_and_fails_its_row(tmp_path, clips):
    fifo = tmp_path / "stuck.y4m"
    os.mkfifo(fifo)  # allowed on purpose, and nobody ever writes it: a hung read
    jobs = [{"title": "stuck", "reference": str(clips / "ref.y4m"), "distorted": str(fifo)},
            {"title": "ok", "reference": str(clips / "ref.y4m"),
             "distorted": str(clips / "dist.y4m")}]
    t0 = time.monotonic()
    rows = vbatch.batch(jobs, tmp_path / "out.jsonl", workers=1, models=["psnr_y"],
                        allow_pipes=True, timeout=4)
    assert time.monotonic() - t0 < 60
    assert rows[0]["error"].startswith("JobTimeout:") and rows[0]["attempts"] == 1
    assert rows[1]["error"] == "" and rows[1]["frames"] == N
    assert rows.failed == 1
    assert [r["title"] for r in vbatch.read_results(tmp_path / "out.jsonl")] == ["stuck", "ok"]


def _children(pid):
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return kids


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def _maps(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _waits_for_the_fifo(pid):
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "poll" in wchan or wchan == "wait_for_partner"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_with_a_batch_killed_by_sigkill(tmp_path, clips):
    """A batch process killed by SIGKILL cannot stop its workers: they went on with their jobs
    as orphans, up to the job timeout (an hour by default). Now each ends with it."""
    fifo = tmp_path / "stuck.y4m"
    os.mkfifo(fifo)  # nobody writes it: the job blocks for ever
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "title,reference,distorted", [f"stuck,{clips / 'ref.y4m'},{fifo}"])
    proc = subprocess.Popen([sys.executable, "-m", "vmafdnn", "batch", str(jobs), "-o",
                             str(tmp_path / "out.csv"), "--workers", "1", "--allow-pipes",
                             "--tiny-model", "psnr_y"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.monotonic() + 120
        while not workers:  # a worker in its job: waiting for the FIFO's writer
            assert proc.poll() is None and time.monotonic() < deadline
            workers = [k for k in _children(proc.pid)
                       if "libvmafdnn" in _maps(k) and _waits_for_the_fifo(k)]
            time.sleep(0.1)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 20
        while any(_state(k) not in ("Z", "gone") for k in workers):
            assert time.monotonic() < deadline, [(k, _state(k)) for k in workers]
            time.sleep(0.1)
    finally:
        proc.kill()
        for k in workers:  # orphans of a failed check
            if _state(k) not in ("Z", "gone"):
                os.kill(k, signal.SIGKILL)


def test_every_job_has_a_time_budget_by_default():
    import inspect

    from vmafdnn import cli
    assert inspect.signature(vbatch.batch).parameters["timeout"].default == \
        vbatch.DEFAULT_JOB_TIMEOUT > 0
    args = cli.build_parser().parse_args(["batch", "jobs.csv", "-o", "r.csv"]) \
        if hasattr(cli, "build_parser") else None
    if args is not None:
        assert args.job_timeout == vbatch.DEFAULT_JOB_TIMEOUT
    with pytest.raises(ValueError, match="timeout"):
        vbatch.batch([{"distorted": "x.y4m"}], timeout=float("inf"))


# -- item 7: results other tools read -------------------------------------------------------

def _strict_json(line):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")
    return json.loads(line, parse_constant=refuse)


def test_results_jsonl_and_the_journal_are_strict_json(tmp_path):
    rows = [{"title": "a", "psnr_y": math.nan, "ssim_y": math.inf, "x": -math.inf,
             "frames": 3, "error": ""}]
    vbatch.write_results(rows, tmp_path / "r.jsonl")
    got, = [_strict_json(line) for line in open(tmp_path / "r.jsonl")]
    assert got["psnr_y"] is None and got["ssim_y"] is None and got["x"] is None
    assert got["frames"] == 3
    from vmafdnn.results import Journal
    journal = Journal(str(tmp_path / "r.jsonl"))
    journal.append(rows[0])
    journal.close()
    got, = [_strict_json(line) for line in open(tmp_path / "r.jsonl.partial.jsonl")]
    assert got["psnr_y"] is None


FORMULAS = ["=HYPERLINK(\"http://evil\",\"x\")", "@SUM(1+1)", "+cmd|' /C calc'!A0",
            "-2+3", "\tx", "\r=1"]


def test_results_csv_cells_and_headers_never_start_a_formula(tmp_path):
    rows = [{"title": f, "=cmd|x": "a", "@h": 1, "-5": "-5", "n": -2.5, "k": -3, "s": "+1.5e3",
             "models": "=evil;psnr_y", "error": "", "plain": "a=b"} for f in FORMULAS]
    vbatch.write_results(rows, tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="") as f:
        table = list(csv.reader(f))
    header, body = table[0], table[1:]
    assert header[:4] == ["title", "'=cmd|x", "'@h", "-5"]
    for row in body:
        for cell in row + header:
            assert not cell.startswith(("=", "@", "\t", "\r")), cell
            if cell.startswith(("-", "+")):
                float(cell)  # only numbers may start with '-' or '+'
    cells = dict(zip(header, body[0]))
    assert cells["title"] == "'" + FORMULAS[0] and cells["'=cmd|x"] == "a"
    assert cells["n"] == "-2.5" and cells["k"] == "-3" and cells["-5"] == "-5"
    assert cells["s"] == "+1.5e3" and cells["plain"] == "a=b" and cells["models"] == "'=evil;psnr_y"
    assert [dict(zip(header, r))["title"] for r in body] == ["'" + f for f in FORMULAS]


def test_csv_columns_equal_once_escaped_are_refused(tmp_path):
    with pytest.raises(ValueError, match="would both be written as"):
        vbatch.write_results([{"=a": 1, "'=a": 2}], tmp_path / "r.csv")


def test_labels_with_formulas_reach_results_csv_quoted(tmp_path, clips):
    jobs = tmp_path / "jobs.csv"
    with open(jobs, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["title", "=label", "reference", "distorted"])
        w.writerow(["=HYPERLINK(\"http://evil\")", "@SUM(A1)", clips / "ref.y4m",
                    clips / "dist.y4m"])
    vbatch.batch(jobs, tmp_path / "out.csv", workers=1, models=["psnr_y"])
    with open(tmp_path / "out.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0][:2] == ["title", "'=label"]
    assert table[1][:2] == ["'=HYPERLINK(\"http://evil\")", "'@SUM(A1)"]


def test_the_rule_is_the_c_writers(tmp_path):
    from vmafdnn.results import csv_text
    for text, want in [("=x", "'=x"), ("+x", "'+x"), ("-x", "'-x"), ("@x", "'@x"),
                       ("\tx", "'\tx"), ("\rx", "'\rx"), ("-5", "-5"), ("+1.5e3", "+1.5e3"),
                       ("-.5", "-.5"), ("-5.", "-5."), ("-e5", "'-e5"), ("-", "'-"),
                       ("x=1", "x=1"), ("", "")]:
        assert csv_text(text) == want, text


# -- item 8: the resume key covers every model file loaded ---------------------------------

def _model_pair(folder, name, source, sidecar=None):
    source = vmafdnn.models.path(source)
    shutil.copy(source, folder / f"{name}.onnx")
    data = json.loads(source.with_suffix(".json").read_text())
    data.update(sidecar or {})
    (folder / f"{name}.json").write_text(json.dumps(data))
    for form in (data.get("forms") or {}).values():  # the forms it names, beside it
        for f in form if isinstance(form, list) else [form]:
            if not (folder / f).exists():
                shutil.copy(source.with_name(f), folder / f)


def test_a_regenerated_required_model_is_scored_again(tmp_path, clips):
    models = tmp_path / "models"
    models.mkdir()
    _model_pair(models, "main", "psnr_y", {"requires": ["helper.onnx"]})
    _model_pair(models, "helper", "ssim_y")
    jobs = [{"title": "t", "reference": str(clips / "ref.y4m"),
             "distorted": str(clips / "dist.y4m"), "models": [str(models / "main.onnx")]}]
    out = tmp_path / "out.jsonl"
    first = vbatch.batch(jobs, out, workers=1)
    assert first.failed == 0 and first.ran == 1 and "ssim_y" in first[0]
    again = vbatch.batch(jobs, out, workers=1)
    assert again.skipped == 1 and again.ran == 0  # nothing changed: nothing to do
    # The required model regenerated (another graph, same file names).
    _model_pair(models, "helper", "sharpness_nr")
    st = os.stat(models / "main.onnx")
    third = vbatch.batch(jobs, out, workers=1)
    assert os.stat(models / "main.onnx").st_mtime_ns == st.st_mtime_ns
    assert third.ran == 1 and third.skipped == 0, "a stale required model's score was kept"
    assert "sharpness_nr" in third[0] and "ssim_y" not in third[0]
    assert third[0]["job_key"] != first[0]["job_key"]


def test_a_model_touched_without_a_change_keeps_the_key(tmp_path, clips):
    models = tmp_path / "models"
    models.mkdir()
    _model_pair(models, "main", "psnr_y")
    jobs = [{"reference": str(clips / "ref.y4m"), "distorted": str(clips / "dist.y4m"),
             "models": [str(models / "main.onnx")]}]
    out = tmp_path / "out.jsonl"
    vbatch.batch(jobs, out, workers=1)
    os.utime(models / "main.onnx", ns=(1, 1))  # same content: by hash, the same model
    assert vbatch.batch(jobs, out, workers=1).skipped == 1


def test_rows_of_an_older_key_are_scored_again_once(tmp_path, clips):
    jobs = [{"reference": str(clips / "ref.y4m"), "distorted": str(clips / "dist.y4m")}]
    out = tmp_path / "out.jsonl"
    rows = vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    old = dict(rows[0], job_key="0123456789abcdef01234567")  # as an older version keyed it
    vbatch.write_results([old], out)
    assert vbatch.batch(jobs, out, workers=1, models=["psnr_y"]).ran == 1
    assert vbatch.batch(jobs, out, workers=1, models=["psnr_y"]).skipped == 1


#: The run options of a batch as batch() passes them to the key (its defaults).
_RUN = {"models": ["psnr_y"], "device": "auto", "device_index": 0, "fp16_io": False,
        "resize": "none", "threads": 1, "gpus_per_worker": 0}


def _key(clips, hasher=None, **changes):
    job, = vbatch.read_jobs([{"reference": str(clips / "ref.y4m"),
                              "distorted": str(clips / "dist.y4m")}])
    from vmafdnn.results import job_key
    return job_key(job, dict(_RUN, **changes), hasher)


def _explains(ep):
    """An explain_device that resolves every device to ``ep``."""
    def explain(device="auto", device_index=0, fp16_io=False):
        return f"CUDA: not available: stub\n{ep}: selected (stub)\n"
    return explain


@pytest.mark.parametrize("option, value", [
    ("device", "cpu"), ("device", "cuda"), ("device_index", 1), ("fp16_io", True),
    ("resize", "bilinear"), ("threads", 2), ("threads", 0), ("gpus_per_worker", 1)])
def test_each_run_option_is_part_of_the_key(clips, option, value):
    assert _RUN[option] != value
    assert _key(clips, **{option: value}) != _key(clips), f"{option}={value!r} kept the key"


def test_unchanged_run_options_keep_the_key(clips):
    assert _key(clips) == _key(clips) == _key(clips, **dict(_RUN))
    assert _key(clips, device_index=1, threads=2) == _key(clips, threads=2, device_index=1)


def test_the_onnx_runtime_version_is_part_of_the_key(clips, monkeypatch):
    # Another ONNX Runtime (a pip upgrade between runs) may score the same model otherwise.
    before = _key(clips)
    monkeypatch.setattr(vmafdnn, "ort_version", lambda: "1.99.0")
    assert _key(clips) != before, "a row scored by another ONNX Runtime was kept"


def test_the_library_version_is_part_of_the_key(clips, monkeypatch):
    # The kernels forms are one node of the library's own operators: another release of the
    # library may score an unchanged model file otherwise.
    before = _key(clips)
    monkeypatch.setattr(vmafdnn, "__version__", "9.9.9")
    assert _key(clips) != before, "a row scored by another libvmafdnn was kept"


def test_the_library_sources_are_part_of_the_key(clips, monkeypatch):
    # Within one version (0.1.0 all through development, or a distribution's patched build)
    # a rebuilt library's kernels may score otherwise: the digest of its sources tells.
    before = _key(clips)
    assert _key(clips) == before
    monkeypatch.setattr(vmafdnn, "source_digest", lambda: "0123456789abcdef")
    assert _key(clips) != before, "a row scored by a library built from other sources was kept"


def test_what_the_device_resolves_to_is_part_of_the_key(clips, monkeypatch):
    # "auto" on a machine with CUDA binds the CUDA EP; on one without, the CPU EP:
    # the same options, other scores. The key has the EP the chain selects here.
    monkeypatch.setattr(vmafdnn, "explain_device", _explains("CPU"))
    on_cpu = _key(clips)
    monkeypatch.setattr(vmafdnn, "explain_device", _explains("CUDA"))
    on_cuda = _key(clips)
    assert on_cpu != on_cuda, "a row scored on the CPU EP was kept where auto means CUDA"
    # Only the EP selected counts, not why the others were passed over.
    monkeypatch.setattr(vmafdnn, "explain_device", lambda *a, **k: "CUDA: selected (stub)\n")
    assert _key(clips) == on_cuda


def test_the_runtime_is_asked_once_per_batch(clips, monkeypatch):
    from vmafdnn.results import Hasher
    calls = []
    real = vmafdnn.explain_device

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(vmafdnn, "explain_device", counted)
    hasher = Hasher()
    keys = {_key(clips, hasher) for _ in range(5)}
    assert len(keys) == 1 and len(calls) == 1


def test_a_batch_resumed_where_the_device_resolves_otherwise_scores_again(tmp_path, clips,
                                                                           monkeypatch):
    jobs = [{"reference": str(clips / "ref.y4m"), "distorted": str(clips / "dist.y4m")}]
    out = tmp_path / "out.jsonl"
    first = vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    assert first.ran == 1
    assert vbatch.batch(jobs, out, workers=1, models=["psnr_y"]).skipped == 1
    monkeypatch.setattr(vmafdnn, "explain_device", _explains("CUDA"))
    again = vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    assert again.ran == 1 and again.skipped == 0
    assert again[0]["job_key"] != first[0]["job_key"]
    monkeypatch.undo()
    monkeypatch.setattr(vmafdnn, "ort_version", lambda: "1.99.0")
    assert vbatch.batch(jobs, out, workers=1, models=["psnr_y"]).ran == 1


def test_a_stuck_job_on_ray_has_its_actor_killed_and_fails_its_row(tmp_path, clips):
    import ray
    started = not ray.is_initialized()
    if started:
        init_local_ray()
    try:
        fifo = tmp_path / "stuck.y4m"
        os.mkfifo(fifo)
        ok = {"reference": str(clips / "ref.y4m"), "distorted": str(clips / "dist.y4m")}
        jobs = [dict(ok, title="stuck", distorted=str(fifo))] + \
            [dict(ok, title=f"ok{i}") for i in range(3)]
        t0 = time.monotonic()
        # One actor, two jobs in flight on it: the one queued behind the stuck job
        # goes to the replacement actor without being charged an attempt.
        rows = vbatch.batch(jobs, tmp_path / "out.jsonl", ray=True, workers=1,
                            models=["psnr_y"], allow_pipes=True, timeout=6)
        assert time.monotonic() - t0 < 120
        assert rows[0]["error"].startswith("JobTimeout:"), rows[0]
        assert [r["error"] for r in rows[1:]] == ["", "", ""]
        assert all(r["attempts"] == 1 for r in rows[1:])
        assert rows.failed == 1
    finally:
        if started:
            ray.shutdown()


def test_a_loaded_model_file_outside_the_key_fails_the_row(clips):
    # The worker checks the library's own list of what it loaded (models pulled
    # in by "requires", the form that scores) against the files the key hashed:
    # a sidecar rule the key missed fails loudly instead of caching stale rows.
    options = {"models": None, "device": "cpu", "device_index": 0, "threads": 1,
               "fp16_io": False, "resize": "none", "policy": {}, "reuse": True,
               "reports": None, "report_format": "json", "allow_pipes": False,
               "key_files": {"psnr_y": []}}
    job, = vbatch.read_jobs([{"reference": str(clips / "ref.y4m"),
                              "distorted": str(clips / "dist.y4m"), "models": ["psnr_y"]}])
    job["job_key"] = "k"
    scorer = runners.Scorer(options)
    try:
        row = scorer.run(job)
        assert "not part of the job key" in row["error"], row
        from vmafdnn.results import key_files
        options["key_files"] = {"psnr_y": key_files("psnr_y")}
        row = scorer.run(job)
        assert row["error"] == "" and row["frames"] == N
    finally:
        scorer.close()


def test_formula_like_labels_still_pair_kept_rows_from_a_csv_results_file(tmp_path, clips):
    # Item 2's rule across item 7's: a CSV results file gives "=a" back as "'=a"; a re-run
    # whose clips are gone still pairs each job with its own row by labels.
    work = tmp_path / "clips"
    shutil.copytree(clips, work)
    base = {"reference": str(work / "ref.y4m"), "distorted": str(work / "dist.y4m")}
    jobs = [dict(base, title="=a"), dict(base, title="=b", ref_offset=1, dist_offset=1)]
    out = tmp_path / "results.csv"
    first = vbatch.batch(jobs, out, workers=1, models=["psnr_y"])
    assert [r["frames"] for r in first] == [N, N - 1]
    shutil.move(str(work), str(tmp_path / "gone"))
    again = vbatch.batch(jobs[::-1], out, workers=1, models=["psnr_y"])
    assert len(again.kept) == 2
    assert [r["title"] for r in again] == ["=b", "=a"]
    assert [int(r["frames"]) for r in again] == [N - 1, N]


def test_a_label_close_to_a_result_column_is_refused(tmp_path):
    jobs = tmp_path / "jobs.csv"
    _write_csv(jobs, "distorted,Frames", ["a.y4m,3"])
    with pytest.raises(ValueError, match=r'field "Frames": too close to the result column '
                                         r'"frames"'):
        vbatch.read_jobs(jobs)


def test_an_edited_journal_report_entry_is_not_taken_as_a_report(tmp_path):
    from vmafdnn.results import done_rows
    rows = [{"job_key": "a", "report": 0}, {"job_key": "b", "report": str(tmp_path)},
            {"job_key": "c", "report": ["x"]}]
    assert done_rows(rows, str(tmp_path)) == {}  # fd 0 and a folder are not report files


# -- outputs never replace inputs (issue 25 item 3, for the batch's writers) --------------

def test_results_never_replace_a_file_a_model_reads(tmp_path, clips):
    """The results file is refused before any work when it is a file of a job's models
    (the model, its sidecar, the models its sidecar requires and theirs, its forms), by any
    spelling: here a required model whose name has a results file's extension."""
    models = tmp_path / "models"
    models.mkdir()
    _model_pair(models, "main", "psnr_y", {"requires": ["helper.csv"]})
    shutil.copy(vmafdnn.models.path("ssim_y"), models / "helper.csv")
    before = (models / "helper.csv").read_bytes()
    jobs = [{"title": "t", "reference": str(clips / "ref.y4m"),
             "distorted": str(clips / "dist.y4m"), "models": [str(models / "main.onnx")]}]
    for out in (models / "helper.csv", tmp_path / "link.csv"):
        if out.name == "link.csv":
            out.symlink_to(models / "helper.csv")
        with pytest.raises(vmafdnn.UsageError, match="helper.csv of model"):
            vbatch.batch(jobs, out, workers=1)
        proc = _cli(_jobs_csv(tmp_path, clips), "--tiny-model", models / "main.onnx", "-o", out)
        assert proc.returncode == 2 and "helper.csv of model" in proc.stderr, proc.stderr
        assert (models / "helper.csv").read_bytes() == before


def _report_name(tmp_path, clips, fmt):
    """The job list (JSON Lines, named .json) of one job and the name of its per-job
    report, from a first run."""
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps({"reference": str(clips / "ref.y4m"),
                                "distorted": str(clips / "dist.y4m"),
                                "models": ["psnr_y"]}) + "\n")
    first = tmp_path / "first"
    rows = vbatch.batch(jobs, reports=first, report_format=fmt, workers=1)
    assert rows[0]["error"] == "" and len(os.listdir(first)) == 1
    return jobs, os.listdir(first)[0]


def test_a_per_job_report_never_replaces_the_job_list(tmp_path, clips):
    """Issue 25 item 3 for per-job reports: a report is named <clip>-<job key>.<fmt>,
    and the key does not cover the job list's own name, so a job list named like its
    job's report (JSON Lines may be named .json) was replaced by the report (exit 0)."""
    jobs, name = _report_name(tmp_path, clips, "json")
    reports = tmp_path / "reports"
    reports.mkdir()
    moved = reports / name
    os.replace(jobs, moved)
    before = moved.read_bytes()
    with pytest.raises(vmafdnn.UsageError, match=r"report of job 1 .* is also the job list"):
        vbatch.batch(moved, reports=reports, workers=1)
    assert moved.read_bytes() == before and os.listdir(reports) == [name]


def test_a_per_job_report_never_replaces_the_results_file(tmp_path, clips):
    """The results file named like a job's CSV report: the report was written there,
    then replaced by the results, whose row named the results file as its report."""
    jobs, name = _report_name(tmp_path, clips, "csv")
    reports = tmp_path / "reports"
    reports.mkdir()
    with pytest.raises(vmafdnn.UsageError, match=r"report of job 1 .* is also the results file"):
        vbatch.batch(jobs, reports / name, reports=reports, report_format="csv", workers=1)
    assert os.listdir(reports) == []


def test_a_per_job_report_cannot_be_named_like_a_clip_or_model(tmp_path, clips):
    """The worker's check that a report is not one of its job's clips or model files
    cannot be reached by renaming: the report's name embeds the job key, which covers
    each clip's and model file's absolute path, so the clip moved to its report's name
    gets another key and another report name (reaching it takes a SHA-256 fixed point
    on the key's first 12 hex digits). The check stays as a defence."""
    jobs, name = _report_name(tmp_path, clips, "json")
    reports = tmp_path / "reports"
    reports.mkdir()
    clip = reports / name  # the distorted clip, under its own report's name
    shutil.copy2(clips / "dist.y4m", clip)
    job = {"reference": str(clips / "ref.y4m"), "distorted": str(clip), "models": ["psnr_y"]}
    rows = vbatch.batch([job], reports=reports, workers=1)
    assert rows[0]["error"] == "" and rows[0]["report"] != str(clip)
    assert sorted(os.listdir(reports)) == sorted([name, os.path.basename(rows[0]["report"])])
    assert clip.read_bytes() == (clips / "dist.y4m").read_bytes()


def test_options_are_never_abbreviated(tmp_path, clips):
    """`--model M` was taken as --model-dir M (argparse's prefix matching): the default
    models scored the batch and exit 0. Every option is spelled out or refused."""
    proc = _cli(_jobs_csv(tmp_path, clips), "--model", clips / "ref.y4m", "-o",
                tmp_path / "r.csv")
    assert proc.returncode == 2 and "unrecognized arguments: --model" in proc.stderr
    assert not (tmp_path / "r.csv").exists()


def test_the_form_setting_is_part_of_the_key(tmp_path, clips, monkeypatch):
    """VMAFDNN_MODEL_FORMS decides which file scores a model with forms (VMAF's features:
    the kernels, the pure-ONNX graph or, VMAFDNN_MODEL_FORMS=CUDA, the accelerator form): a row
    scored one way is not kept for another."""
    jobs = [{"title": "t", "reference": str(clips / "ref.y4m"),
             "distorted": str(clips / "dist.y4m"), "models": ["psnr_y"]}]
    keys = {}
    for value in ("0", "1", "CUDA", " true ", "cuda"):
        monkeypatch.setenv("VMAFDNN_MODEL_FORMS", value)
        keys[value] = vbatch.job_key(jobs[0] | {"models": None}, {"models": ["psnr_y"]})
    assert len({keys["0"], keys["1"], keys["CUDA"]}) == 3 and keys[" true "] == keys["1"]
    assert keys["cuda"] == keys["CUDA"]  # one spelling per EP, as the library reads it
