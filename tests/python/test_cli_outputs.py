"""Issue 25, the command line's outputs and the numbers it reads: no writer
replaces a file the run reads (models, sidecars, required models, forms,
features, clips; through links too), every output path is checked before the
first frame ("-" is stdout for the report), the features file is streamed
with a cap and only from a regular file or stdin, and every number from a
file or a flag is range-checked where it is parsed."""
import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import vmafdnn
from vmafdnn import scoring
from vmafdnn.video import Frame, write_y4m

CLI = [sys.executable, "-m", "vmafdnn"]


def cli(*args, input=None, cwd=None, timeout=120):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, cwd=cwd,
                          input=input if input is not None else b"", timeout=timeout)


def err(proc) -> str:
    return proc.stderr.decode("utf-8", "replace")


def one_error(proc, code, *fragments):
    text = err(proc)
    assert proc.returncode == code, (proc.returncode, text)
    assert text.startswith("vmafdnn: error: ") and text.count("\n") == 1, text
    assert "Traceback" not in text and "internal error" not in text, text
    for fragment in fragments:
        assert fragment in text, text


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """A 48x48 Y4M pair of 4 frames."""
    folder = tmp_path_factory.mktemp("clips")
    chroma = np.full((24, 24), 128, np.uint8)
    paths = []
    for name, base in (("ref.y4m", 40), ("dist.y4m", 44)):
        frames = [Frame(np.full((48, 48), base + i, np.uint8), chroma, chroma, 8, i, "420")
                  for i in range(4)]
        write_y4m(folder / name, frames, fps=25)
        paths.append(folder / name)
    return paths


@pytest.fixture(scope="module")
def header(clips):
    """The reference's Y4M header: on stdin with no frame after it, a run
    that reads a frame ends in "no frames"; one refused first never does."""
    return clips[0].read_bytes().split(b"\n", 1)[0] + b"\n"


def stage_model(tmp_path, name="psnr_y", as_name="m"):
    src = vmafdnn.models.path(name)
    model = tmp_path / f"{as_name}.onnx"
    shutil.copyfile(src, model)
    shutil.copyfile(src.with_suffix(".json"), tmp_path / f"{as_name}.json")
    kernels = src.with_name(f"{name}_kernels.onnx")  # its CPU form, which the sidecar names
    if kernels.is_file():
        shutil.copyfile(kernels, tmp_path / kernels.name)
    return model


def digest(*paths):
    return [p.read_bytes() for p in paths]


# -- 3. outputs over inputs ---------------------------------------------------------

@pytest.mark.parametrize("target", ["model", "sidecar", "symlink to sidecar",
                                    "hard link to model"])
def test_report_never_replaces_a_model_or_its_sidecar(clips, header, tmp_path, target):
    model = stage_model(tmp_path)
    sidecar = tmp_path / "m.json"
    out = {"model": model, "sidecar": sidecar}.get(target)
    if target == "symlink to sidecar":
        out = tmp_path / "link.json"
        out.symlink_to(sidecar)
    elif target == "hard link to model":
        out = tmp_path / "hard.onnx"
        os.link(model, out)
    before = digest(model, sidecar)
    # The distorted clip is stdin with a header and no frame: the refusal
    # must come before the first frame is read.
    proc = cli("-r", clips[0], "-d", "-", "--tiny-model", model, "-o", out, input=header)
    one_error(proc, 2, f"the report {out} is also the", "m.onnx")
    assert digest(model, sidecar) == before


def vmaf_staged(tmp_path):
    if "vmaf" not in vmafdnn.models.MODEL_NAMES:
        pytest.skip("VMAF was not built")
    for name in ("vmaf", "vmaf_features", "vmaf_features_kernels", "vmaf_motion2"):
        stage_model(tmp_path, name, name)
    return tmp_path / "vmaf.onnx"


@pytest.mark.parametrize("victim, role", [
    ("vmaf_motion2.onnx", "model"),              # pulled in by vmaf.json's "requires"
    ("vmaf_motion2.json", "sidecar of model"),
    ("vmaf_features.json", "sidecar of model"),
    ("vmaf_features_kernels.onnx", "form"),          # the form that scores on the CPU EP
])
def test_report_never_replaces_a_required_model_or_a_form(clips, header, tmp_path, victim,
                                                          role):
    vmaf = vmaf_staged(tmp_path)
    out = tmp_path / victim
    before = out.read_bytes()
    proc = cli("-r", clips[0], "-d", "-", "--tiny-model", vmaf, "--tiny-device", "cpu",
               "-o", out, input=header)
    one_error(proc, 2, f"is also the {role}")
    assert out.read_bytes() == before


def test_plot_never_replaces_an_input(clips, tmp_path):
    model = stage_model(tmp_path)
    as_svg = tmp_path / "model.svg"  # a model file whose name is a plot's
    shutil.copyfile(model, as_svg)
    shutil.copyfile(tmp_path / "m.json", tmp_path / "model.svg.json")
    dist_png = tmp_path / "dist.png"  # a Y4M clip (recognised by content)
    shutil.copyfile(clips[1], dist_png)
    features = tmp_path / "features.svg"
    features.write_text('{"frames": []}')
    for args, out, role in (
            (["--tiny-model", as_svg], as_svg, "model"),
            (["--tiny-model", "psnr_y"], dist_png, "distorted input"),
            (["--tiny-model", "psnr_y", "--features", features], features, "features file")):
        before = out.read_bytes()
        d = dist_png if out == dist_png else clips[1]
        proc = cli("-r", clips[0], "-d", d, *args, "--plot", out)
        one_error(proc, 2, f"the plot (--plot) {out} is also the {role}")
        assert out.read_bytes() == before


def test_bdrate_plot_never_replaces_the_results(tmp_path):
    results = tmp_path / "results.csv"
    lines = ["title,codec,bitrate,psnr_y"] + [
        f"a,{codec},{rate * scale:g},{quality}" for codec, scale in (("x264", 1), ("x265", .7))
        for rate, quality in ((1000, 30), (2000, 33), (4000, 36), (8000, 39))]
    results.write_text("\n".join(lines) + "\n")
    before = results.read_bytes()
    link = tmp_path / "curves.png"  # before: the plot went through the link, exit 0
    link.symlink_to(results)
    proc = cli("bdrate", results, "--anchor", "x264", "--test", "x265", "--metric", "psnr_y",
               "--plot", link)
    one_error(proc, 2, f"the plot (--plot) {link} is also the results file")
    assert results.read_bytes() == before
    proc = cli("bdrate", results, "--anchor", "x264", "--test", "x265", "--metric", "psnr_y",
               "--plot", tmp_path / "fine.png")
    assert proc.returncode == 0, err(proc)


def test_outputs_that_are_not_inputs_are_written(clips, tmp_path):
    model = stage_model(tmp_path)
    out = tmp_path / "report.json"
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", model, "-o", out)
    assert proc.returncode == 0, err(proc)
    assert len(json.loads(out.read_text())["frames"]) == 4


# -- 9. output paths checked before the first frame -------------------------------------

def test_report_path_errors_come_before_the_first_frame(clips, header, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    for out, code, fragment in ((folder, 2, "is a directory"),
                                ("", 2, "path is empty"),
                                ("/dev/zero", 2, "is a character device"),
                                (tmp_path / "no" / "r.json", 1, "does not exist"),
                                (clips[0] / "r.json", 1, "not a directory")):
        proc = cli("-r", clips[0], "-d", "-", "--tiny-model", "psnr_y", "-o", out,
                   input=header)
        one_error(proc, code, fragment)
    for out, fragment in ((folder, "is a directory"), ("", "path is empty"),
                          ("-", "cannot go to stdout")):
        proc = cli("-r", clips[0], "-d", "-", "--tiny-model", "psnr_y", "--plot", out,
                   input=header)
        one_error(proc, 2, "plot (--plot)", fragment)
        proc = cli("plot", clips[0], "-o", out)
        one_error(proc, 2, "plot (-o)", fragment)


def test_a_feature_name_the_report_cannot_carry_is_refused_before_the_first_frame(
        clips, header, tmp_path):
    # Before: a model keyed "Frame" (or a features file's metric so named)
    # was scored over every frame, and only then did the CSV writer refuse
    # the second "Frame" column (exit 1). Now the report format's name rules
    # are checked once the models are attached: with no frame on stdin, a
    # run that reached the frames would end in "no frames" instead.
    model = stage_model(tmp_path, as_name="Frame")
    sidecar = json.loads(model.with_suffix(".json").read_text())
    sidecar.pop("name", None)
    model.with_suffix(".json").write_text(json.dumps(sidecar))
    out = tmp_path / "r.csv"
    proc = cli("-r", clips[0], "-d", "-", "--tiny-model", model, "-o", out, input=header)
    one_error(proc, 2, "the CSV report cannot be written: feature name \"Frame\" clashes "
                       "with the CSV frame number column")
    assert not out.exists()
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", model, "--csv")
    one_error(proc, 2, "\"Frame\" clashes")
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", model, "-o", tmp_path / "r.json")
    assert proc.returncode == 0, err(proc)
    features = tmp_path / "f.json"
    features.write_text('{"frames": [{"frameNum": 0, "metrics": {"=x": 1}}, '
                        '{"frameNum": 1, "metrics": {"\'=x": 2}}]}')
    proc = cli("-r", clips[0], "-d", "-", "--tiny-model", "psnr_y", "--features", features,
               "-o", out, input=header)
    one_error(proc, 2, "\"=x\" and \"'=x\" would be the same CSV column")
    features.write_text('{"frames": [{"frameNum": 0, "metrics": {"frameNum": 1}}]}')
    with pytest.raises(vmafdnn.UsageError, match="clashes with the XML frame number"):
        vmafdnn.score(clips[0], clips[1], ["psnr_y"], fmt="xml", features=features)


@pytest.mark.parametrize("fmt", ["--json", "--csv", "--xml"])
def test_dash_is_stdout_and_the_summary_goes_to_stderr(clips, tmp_path, fmt):
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "-o", "-", fmt,
               cwd=tmp_path)
    assert proc.returncode == 0, err(proc)
    assert not (tmp_path / "-").exists()
    text = proc.stdout.decode()
    if fmt == "--json":
        assert len(json.loads(text)["frames"]) == 4
    elif fmt == "--csv":
        assert text.startswith("Frame,") and text.count("\n") == 5, text
    else:
        assert text.startswith("<VMAF") and "</VMAF>" in text, text
    assert "psnr_y: " in err(proc) and "report: stdout" in err(proc)
    assert "psnr_y: " not in text
    quiet = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "-o", "-", "-q")
    assert quiet.returncode == 0 and quiet.stderr == b"" and json.loads(quiet.stdout)


def test_a_dash_on_a_closed_descriptor_is_named(clips, tmp_path):
    """A process started with stdout or stdin closed has None for it in Python: "-" there was
    an internal error (AttributeError); it names the closed stream."""
    cmd = " ".join([sys.executable, "-m", "vmafdnn"])
    for redirect, args, stream in (
            (">&-", f"-r {clips[0]} -d {clips[1]} --tiny-model psnr_y -o -", "standard output"),
            ("<&-", f"-r - -d {clips[1]} --tiny-model psnr_y", "standard input")):
        proc = subprocess.run(f"exec {redirect}; exec {cmd} {args}", shell=True, cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              **({} if redirect == ">&-" else {"stdout": subprocess.PIPE}))
        assert proc.returncode == 1, proc.stderr
        assert f"vmafdnn: error: [Errno 9] {stream} is closed" in proc.stderr
        assert "internal error" not in proc.stderr


def test_fifo_and_dev_null_are_written_in_place(clips, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "-o", fifo, "--json")
    reader.join(30)
    assert proc.returncode == 0, err(proc)
    assert len(json.loads(got[0])["frames"]) == 4
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "-o", os.devnull)
    assert proc.returncode == 0, err(proc)


def test_paths_check_output_python():
    from vmafdnn.paths import UsageError, check_output
    assert check_output("-", "report", stdout_ok=True) is None
    with pytest.raises(UsageError, match="cannot go to stdout"):
        check_output("-", "plot")
    with pytest.raises(UsageError, match="is a directory"):
        vmafdnn.score([np.zeros((8, 8), np.uint8)], [np.zeros((8, 8), np.uint8)],
                      ["psnr_y"], output=os.getcwd())


# -- 11. the features file: streamed, capped, regular files or stdin -------------------

def test_features_from_devices_and_fifos_are_refused(clips, tmp_path):
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "--features",
               "/dev/zero", timeout=30)
    one_error(proc, 2, "features file /dev/zero is a character device", "--features -")
    fifo = tmp_path / "features.fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "--features", fifo,
               timeout=30)
    one_error(proc, 2, "is a FIFO")
    # Explicitly a stream: stdin.
    body = json.dumps({"frames": [{"frameNum": i, "metrics": {"extra": i / 2}}
                                  for i in range(4)]}).encode()
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "--features", "-",
               input=body)
    assert proc.returncode == 0, err(proc)
    assert "extra: 0.750000" in proc.stdout.decode()
    proc = cli("-r", "-", "-d", clips[1], "--features", "-")
    one_error(proc, 2, "only one of -r and --features can read stdin")


def test_features_file_cap_names_the_file_and_the_cap(tmp_path, monkeypatch):
    assert scoring.MAX_FEATURES_FILE_BYTES == 256 << 20
    big = tmp_path / "big.json"
    big.write_text('{"frames": [' + ", ".join(
        '{"frameNum": %d, "metrics": {"a": 1}}' % i for i in range(5000)) + "]}")
    with pytest.raises(ValueError, match=f"features file {big} is larger than 65536 bytes"):
        scoring.load_features(big, max_bytes=1 << 16)
    assert len(scoring.load_features(big)) == 5000
    # One frame object is bounded too.
    monkeypatch.setattr(scoring, "MAX_FEATURES_VALUE_BYTES", 1 << 10)
    huge = tmp_path / "huge.json"
    huge.write_text('{"frames": [{"frameNum": 0, "metrics": {"a": "%s"}}]}' % ("x" * 5000))
    with pytest.raises(ValueError, match="frames\\[0\\] is larger than 1024 bytes"):
        scoring.load_features(huge)


def test_features_file_memory_is_proportional(tmp_path):
    """A 39 MB features file (12 metrics x 100,000 frames, libvmaf's layout
    without indentation) must not raise the peak RSS by more than its size:
    parsed whole (json.loads, a dict per frame) it grew by 171 MiB."""
    names = [f"integer_feature_{k}" for k in range(12)]
    path = tmp_path / "features.json"
    with open(path, "w") as f:
        f.write('{"version": "3.0.0", "frames": [')
        for i in range(100_000):
            metrics = ", ".join(f'"{n}": {0.5 + i * 1e-6:.6f}' for n in names)
            f.write(('' if i == 0 else ', ') + '{"frameNum": %d, "metrics": {%s}}' % (i, metrics))
        f.write('], "pooled_metrics": {}}')
    size = path.stat().st_size
    code = (
        "import resource, sys\n"
        "from vmafdnn import scoring\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "f = scoring.load_features(sys.argv[1])\n"
        "assert len(f) == 100000 and f[99999]['integer_feature_3'] == 0.599999\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    grown = int(proc.stdout)
    assert grown < size, f"peak RSS grew by {grown >> 20} MiB for a {size >> 20} MB file"


def test_features_mapping_equals_the_plain_dict(tmp_path):
    body = {"fps": 1.5, "frames": [{"frameNum": 3, "metrics": {"a": 1, "b": 2}},
                                   {"frameNum": 0, "metrics": {"b": 2.5}}],
            "pooled_metrics": {"a": {"mean": 1}}}
    path = tmp_path / "f.json"
    path.write_text(json.dumps(body, indent=2))
    assert scoring.load_features(path) == {3: {"a": 1.0, "b": 2.0}, 0: {"b": 2.5}}
    for text, fragment in (('{"frames": [], "frames": []}', '"frames" appears twice'),
                           ('{"frames": [{"frameNum": 0, "metrics": {}}]} x', "extra data"),
                           ('{"frames": [{"frameNum": 0, "metrics": {"a": 1}', "invalid JSON"),
                           ('{"fps": 1}', 'a \\"frames\\" array'),
                           ('{"frames": [{"frameNum": 0, "metrics": {}}, '
                            '{"frameNum": 0, "metrics": {}}]}', "frame 0 appears twice"),
                           ('{"frames": [' + "[" * 100000 + "]" * 100000 + "]}",
                            "frames\\[0\\] is nested too deeply")):
        path.write_text(text)
        with pytest.raises(ValueError, match=fragment):
            scoring.load_features(path)


# -- 12. numbers from files and flags ---------------------------------------------------

@pytest.mark.parametrize("value, fragment", [
    (str(10 ** 400), "metric 'a' is not a finite number"),
    ("1e999", "metric 'a' is not a finite number"),
    ("-Infinity", "metric 'a' is not a finite number"),
    ('"1.5"', "metric 'a' is not a number"),
    ("true", "metric 'a' is not a number"),
])
def test_bad_metric_values_name_file_line_frame_and_field(clips, tmp_path, value, fragment):
    path = tmp_path / "f.json"
    path.write_text('{"frames": [\n{"frameNum": 0, "metrics": {"b": 1}},\n'
                    '{"frameNum": 1, "metrics": {"a": %s}}]}' % value)
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "--features", path)
    one_error(proc, 1, f"features file {path}: line 3: frames[1] (frameNum 1): {fragment}")


@pytest.mark.parametrize("frame_num, fragment", [
    (str(1 << 24), "must be an integer 0..16777215"),
    (str(10 ** 400), "must be an integer 0..16777215"),
    ("-1", "must be an integer 0..16777215"),
    ("1.5", "must be an integer 0..16777215"),
])
def test_bad_frame_numbers_are_located(clips, tmp_path, frame_num, fragment):
    path = tmp_path / "f.json"
    path.write_text('{"frames": [{"frameNum": %s, "metrics": {"a": 1}}]}' % frame_num)
    proc = cli("-r", clips[0], "-d", clips[1], "--tiny-model", "psnr_y", "--features", path)
    one_error(proc, 1, f"features file {path}: line 1: frames[0]", fragment)


def test_null_and_nan_metrics_are_not_numbers(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{"frames": [{"frameNum": 0, "metrics": {"a": null, "b": NaN}}]}')
    values = scoring.load_features(path)[0]
    assert np.isnan(values["a"]) and np.isnan(values["b"])


@pytest.mark.parametrize("args, fragment", [
    (["--max-memory", "9" * 400], "argument --max-memory"),
    (["--max-model-bytes", "99999999999999999999"], "argument --max-model-bytes"),
    (["-w", str(10 ** 9)], "argument -w/--width"),
    (["-h", "0"], "argument -h/--height"),
    (["--tiny-device-index", str(1 << 40)], "argument --tiny-device-index"),
    (["--ref-offset", str(10 ** 30)], "argument --ref-offset"),
    (["--dist-offset", "-1"], "argument --dist-offset"),
    (["--max-run-time", "1e999"], "argument --max-run-time"),
    (["--tiny-threads", "1e3"], "argument --tiny-threads"),
])
def test_numeric_flags_are_range_checked_where_parsed(clips, args, fragment):
    proc = cli("-r", clips[0], "-d", clips[1], *args)
    one_error(proc, 2, fragment)


def test_bench_numbers_are_bounded(tmp_path):
    model = stage_model(tmp_path)
    for args, fragment in ((["--symbolic-dim", "-5"], "argument --symbolic-dim"),
                           (["--symbolic-dim", str(10 ** 6)], "argument --symbolic-dim"),
                           (["--runs", str(10 ** 12)], "argument --runs"),
                           (["--device-index", str(1 << 40)], "argument --device-index")):
        one_error(cli("bench", model, *args), 2, fragment)


def test_a_small_size_never_becomes_no_limit():
    from vmafdnn.cliargs import byte_size
    assert byte_size("0.1") == 1  # int(0.1) was 0: "no limit"
    assert byte_size("1.5K") == 1536
    assert byte_size("0") == 0


# -- smaller: models listing, plot of batch results ------------------------------------

def test_models_lists_feature_vector_models_as_features():
    if "vmaf_motion2" not in vmafdnn.models.MODEL_NAMES:
        pytest.skip("VMAF was not built")
    proc = cli("models")
    assert proc.returncode == 0, err(proc)
    line = next(ln for ln in proc.stdout.decode().splitlines()
                if ln.startswith("vmaf_motion2 "))
    assert line.split()[1:3] == ["features", "min"] and line.split()[3] == "-", line
    assert vmafdnn.models.describe("vmaf_motion2").kind == "features"


@pytest.mark.parametrize("name, content", [("results.parquet", b"PAR1\x00\x00PAR1"),
                                           ("results.jsonl", b'{"distorted": "a"}\n'),
                                           ("results.csv", b"distorted,psnr_y\na,1\n")])
def test_plot_points_batch_results_to_bdrate(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    proc = cli("plot", path, "-o", tmp_path / "p.png")
    one_error(proc, 2, "looks like batch results", "vmafdnn bdrate", "--plot")
