"""vmafdnn plot / --plot: one panel per metric, reports overlaid, mean and min
marked, PNG and SVG that are not blank."""
import errno
import json
import math
import os

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="plots need matplotlib: pip install 'vmafdnn[plot]'")

import vmafdnn  # noqa: E402
from vmafdnn import plot  # noqa: E402
from vmafdnn.cli import main  # noqa: E402

from clips import synth_fixture  # noqa: E402,F401


def report(n=30, offset=0.0, nulls=()):
    frames = []
    for i in range(n):
        metrics = {"psnr_y": 35 + 3 * math.sin(i / 4) + offset,
                   "ssim_y": 0.95 + 0.02 * math.cos(i / 3)}
        if i in nulls:
            metrics["psnr_y"] = None
        frames.append({"frameNum": i, "metrics": metrics})
    return {"version": "x", "fps": 25.0, "frames": frames}


def write(path, data):
    path.write_text(json.dumps(data))
    return path


def png_pixels(path):
    """(width, height, RGBA uint8 array) of a PNG file."""
    from matplotlib import image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = (image.imread(str(path)) * 255).round().astype(np.uint8)
    return pixels.shape[1], pixels.shape[0], pixels


def test_figure_has_one_panel_per_metric_and_a_curve_per_report():
    fig = plot.build_figure([("a", report()), ("b", report(offset=-2, nulls={3}))])
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["psnr_y", "ssim_y"]
    for ax in fig.axes:
        labels = [line.get_label() for line in ax.get_lines()]
        assert labels[0] == "a" and labels[3] == "b"
        assert any(label.startswith("a mean ") for label in labels)
        assert any(label.startswith("b min ") for label in labels)
    # b's mean skips the null frame; its min is the frame where it is lowest.
    psnr = report(offset=-2, nulls={3})["frames"]
    finite = [(f["metrics"]["psnr_y"], f["frameNum"]) for f in psnr
              if f["metrics"]["psnr_y"] is not None]
    mean = sum(v for v, _ in finite) / len(finite)
    low, at = min(finite)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert f"b mean {mean:.4g}" in labels
    assert f"b min {low:.4g} (frame {at})" in labels


def test_metrics_select_and_order_the_panels():
    fig = plot.build_figure([("a", report())], metrics=["ssim_y"])
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["ssim_y"]
    with pytest.raises(ValueError, match="metric\\(s\\) vmaf not in the report\\(s\\); they "
                                         "have: psnr_y, ssim_y"):
        plot.build_figure([("a", report())], metrics=["vmaf"])


def test_a_metric_not_in_the_report_is_a_usage_error(tmp_path, capsys):
    # Before: exit 1, as for a failure while running, though the command line
    # named the metric. Now exit 2, naming it and the metrics there are.
    a = write(tmp_path / "a.json", report())
    out = tmp_path / "x.png"
    assert main(["plot", str(a), "-o", str(out), "--metric", "vmaf", "--metric",
                 "psnr_y"]) == 2
    err = capsys.readouterr().err
    assert err == ("vmafdnn: error: metric(s) vmaf not in the report(s); they have: psnr_y, "
                   "ssim_y\n"), err
    assert not out.exists()
    with pytest.raises(vmafdnn.UsageError):
        plot.build_figure([("a", report())], metrics=["vmaf"])
    # A report of many metrics is not listed whole in the one line.
    many = write(tmp_path / "many.json", {"frames": [
        {"frameNum": 0, "metrics": {f"m{k}": 1.0 for k in range(1000)}}]})
    assert main(["plot", str(many), "-o", str(out), "--metric", "m\x1b[2J"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmafdnn: error: metric(s) m\\x1b[2J not in the report(s); they "
                          "have: m0, m1, "), err
    assert err.endswith(", m19 and 980 more\n") and err.count("\n") == 1, err
    # More metrics than one plot draws and no --metric: the caller's choice to make too.
    # Before: exit 1, as for a failure while running.
    assert main(["plot", str(many), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmafdnn: error: the reports have 1000 metrics, more panels than "
                          f"one plot draws (MAX_PANELS, {plot.MAX_PANELS}): choose some with "
                          "--metric NAME (metrics=[...]) among m0, m1, "), err
    assert err.endswith(", m19 and 980 more\n") and not out.exists()
    assert main(["plot", str(many), "-o", str(out), "--metric", "m999"]) == 0 and out.exists()


def test_png_is_written_and_not_blank(tmp_path):
    a = write(tmp_path / "enc_a.json", report())
    b = write(tmp_path / "enc_b.json", report(offset=-2))
    out = tmp_path / "scores.png"
    assert main(["plot", str(a), str(b), "-o", str(out)]) == 0
    width, height, pixels = png_pixels(out)
    assert (width, height) == (1000, 100 * (2.6 * 2 + 0.6))
    colours = np.unique(pixels.reshape(-1, 4), axis=0)
    assert len(colours) > 20  # curves, text, grid: far from a blank canvas
    # The first two default colours are on the canvas (the two reports' curves).
    for rgb in ((0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)):
        assert ((pixels[..., :3] == rgb).all(axis=-1)).sum() > 50


def test_svg_names_the_panels(tmp_path):
    a = write(tmp_path / "a.json", report())
    out = tmp_path / "scores.svg"
    plot.plot_reports([a], out, labels=["x264 crf 40"])
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for word in ("psnr_y", "ssim_y", "x264 crf 40"):
        assert f"<!-- {word}" in text or word in text


@pytest.mark.parametrize("content,fragment", [
    ("<VMAF/>", "not a JSON report"),
    ('{"frames": 3}', 'expected the "frames" array'),
    ('{"frames": [{"frameNum": "abc", "metrics": {"a": 1}}]}', '"frameNum" must be an integer'),
    ('{"frames": [{"frameNum": 1%s, "metrics": {"a": 1}}]}' % ("0" * 400), '"frameNum"'),
    ('{"frames": [{"frameNum": [1], "metrics": {"a": 1}}]}', '"frameNum" must be an integer'),
    ('{"frames": [{"frameNum": 0, "metrics": {"a": "x"}}]}', "metric 'a' is not a number"),
    ('{"frames": ' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
    (b"\xff\xfe{}", "not UTF-8"),
    ('{"frames": []}', "the report has no frames to plot"),
])
def test_bad_reports_are_named(tmp_path, content, fragment, capsys):
    # Before: numpy's "inhomogeneous shape", "internal error: OverflowError",
    # "maximum recursion depth exceeded", none naming the file.
    bad = tmp_path / "bad.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["plot", str(bad), "-o", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"vmafdnn: error: {bad}: ") and fragment in err


def test_output_is_checked_before_anything_runs(tmp_path, capsys):
    a = write(tmp_path / "a.json", report())
    # Bad usage: exit 2 (before, 1, as for a failure while running).
    assert main(["plot", str(a), "-o", str(tmp_path / "x.jpg")]) == 2
    assert "the extension must be .png or .svg" in capsys.readouterr().err
    assert main(["plot", str(a), "-o", str(tmp_path / "x.png"), "--label", "a", "--label",
                 "b"]) == 2
    assert "2 labels (--label) for 1 reports" in capsys.readouterr().err
    assert main(["plot", str(a), "-o", str(tmp_path / "no" / "x.png")]) == 1
    assert "directory" in capsys.readouterr().err and not (tmp_path / "no").exists()


@pytest.mark.skipif(not vmafdnn.available(), reason="ONNX Runtime is not installed")
def test_plot_option_draws_at_the_end_of_a_run(synth, tmp_path, capsys):
    out, rep = tmp_path / "run.png", tmp_path / "run.json"
    assert main(["-r", str(synth.ref), "-d", str(synth.dist), "-o", str(rep),
                 "--plot", str(out)]) == 0
    assert f"plot: {out}" in capsys.readouterr().out
    width, height, pixels = png_pixels(out)
    assert width == 1000 and len(np.unique(pixels.reshape(-1, 4), axis=0)) > 20
    # A bad --plot is refused before scoring: no report is written.
    rep.unlink()
    assert main(["-r", str(synth.ref), "-d", str(synth.dist), "-o", str(rep),
                 "--plot", str(tmp_path / "x.gif")]) == 2
    assert not rep.exists()


# -- what plot reads: regular files, capped, streamed (issue 25, leftover a) ----------------

def _plot_cli(*args, timeout=60):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "vmafdnn", "plot", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def test_endless_and_special_files_are_refused_before_a_byte_is_read(tmp_path):
    # Before: /dev/zero was read whole (until memory ran out) and a FIFO with
    # no writer blocked for ever; now both are refused at once, exit 2,
    # naming the file and what it is.
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "a character device"), (fifo, "a FIFO"),
                       (tmp_path, "a directory")):
        proc = _plot_cli(path, "-o", tmp_path / "x.png")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and f"the report {path} is {kind}" in proc.stderr
    assert not (tmp_path / "x.png").exists()


def test_a_report_over_the_cap_is_refused_naming_the_file_and_the_cap(tmp_path, monkeypatch,
                                                                    capsys):
    a = write(tmp_path / "a.json", report(n=200))
    monkeypatch.setattr(plot, "MAX_REPORT_BYTES", 4096)
    assert main(["plot", str(a), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert f"the report {a} is larger than 4096 bytes (MAX_REPORT_BYTES)" in err
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(ValueError, match="MAX_REPORT_BYTES") as e:
        plot.load_report(a)
    assert e.value.errno == errno.EFBIG and e.value.filename == str(a)


def test_panels_and_curves_are_bounded(tmp_path, capsys):
    # Before: 300 metrics drew 300 panels (minutes, 650 MB, then a PNG
    # beyond matplotlib's 65,536 pixels); now the message says what to do.
    many = tmp_path / "many.json"
    write(many, {"frames": [{"frameNum": i, "metrics": {f"m{k}": 1.0 for k in range(300)}}
                            for i in range(2)]})
    assert main(["plot", str(many), "-o", str(tmp_path / "x.png")]) == 2  # a usage error: choose the metrics
    assert "300 metrics" in capsys.readouterr().err
    assert main(["plot", str(many), "-o", str(tmp_path / "x.png"), "--metric", "m7"]) == 0
    a = write(tmp_path / "a.json", report(n=3))
    with pytest.raises(ValueError, match="at most 64"):
        plot.build_figure([(str(k), plot.load_report(a)) for k in range(65)])
