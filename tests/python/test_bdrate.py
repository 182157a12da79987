"""BD-rate (PCHIP) against the bjontegaard package, ladders from results rows,
rate-quality plots."""
import math
import warnings

import bjontegaard
import numpy as np
import pytest

from vmafdnn import bdrate
from vmafdnn.batch import write_results


def _reference(ra, qa, rt, qt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bjontegaard.bd_rate(ra, qa, rt, qt, method="pchip", require_matching_points=False)


def test_bd_rate_equals_the_bjontegaard_package_pchip():
    # A classic four-point ladder, then random ladders of 2..7 points (also
    # unequal lengths, partial overlaps, non-monotone rate-quality curves).
    ladder = ([100, 200, 400, 800], [30, 33, 36, 39], [90, 170, 350, 700],
              [30.5, 33.2, 36.1, 39.3])
    assert bdrate.bd_rate(*ladder) == pytest.approx(_reference(*ladder), rel=1e-12)
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(300):
        n, m = rng.integers(2, 8, size=2)
        ra, rt = np.sort(rng.uniform(100, 10000, n)), np.sort(rng.uniform(100, 10000, m))
        qa, qt = np.sort(rng.uniform(30, 45, n)), np.sort(rng.uniform(30, 45, m))
        if rng.random() < 0.3:  # a dip: PCHIP's flat slope at an extremum
            ra = rng.permutation(ra)
        expected = _reference(ra, qa, rt, qt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = bdrate.bd_rate(ra, qa, rt, qt)
        if math.isnan(expected):
            assert math.isnan(got)
            continue
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
        compared += 1
    assert compared > 200


def test_bd_rate_is_order_free_and_refuses_what_it_cannot_compute():
    ra, qa, rt, qt = [800, 100, 400, 200], [39, 30, 36, 33], [700, 90, 350, 170], [39.3, 30.5,
                                                                                    36.1, 33.2]
    assert bdrate.bd_rate(ra, qa, rt, qt) == pytest.approx(
        _reference(sorted(ra), sorted(qa), sorted(rt), sorted(qt)), rel=1e-12)
    assert bdrate.bd_rate(ra, qa, ra, qa) == pytest.approx(0.0, abs=1e-12)
    # Half the rate at every quality is -50%.
    assert bdrate.bd_rate(ra, qa, [r / 2 for r in ra], qa) == pytest.approx(-50.0)
    with pytest.warns(UserWarning, match="do not overlap"):
        assert math.isnan(bdrate.bd_rate([1, 2], [30, 31], [1, 2], [40, 41]))
    with pytest.raises(ValueError, match="same quality"):
        bdrate.bd_rate([1, 2, 3], [30, 30, 31], [1, 2], [30, 31])
    with pytest.raises(ValueError, match="two rate-quality points"):
        bdrate.bd_rate([1], [30], [1, 2], [30, 31])
    with pytest.raises(ValueError, match="positive"):
        bdrate.bd_rate([0, 2], [30, 31], [1, 2], [30, 31])


def _ladder_rows():
    rows = []
    for title, shift in (("a", 0.0), ("b", 1.5)):
        for codec, factor in (("x264", 1.0), ("x265", 0.7)):
            for rate in (500, 1000, 2000, 4000):
                rows.append({"title": title, "codec": codec, "bitrate": str(rate * factor),
                             "psnr_y": 20 + shift + 4 * math.log2(rate / 250),
                             "psnr_y_min": 0.0, "psnr_y_harmonic_mean": 0.0, "error": ""})
    rows.append({"title": "a", "codec": "x265", "bitrate": "9", "psnr_y": None,
                 "error": "FileNotFoundError: gone"})
    return rows


def test_ladders_per_title_from_results_files(tmp_path):
    rows = _ladder_rows()
    out = tmp_path / "results.csv"
    write_results(rows, out)
    text, result = bdrate.bdrate_main(out, "x264", "x265")
    assert result["ladder_column"] == "codec" and result["title_column"] == "title"
    assert result["metric"] == "psnr_y"
    # The same curve at 0.7x the rate: -30% on every title.
    assert result["titles"]["a"] == pytest.approx(-30.0)
    assert result["titles"]["b"] == pytest.approx(-30.0)
    assert result["mean"] == pytest.approx(-30.0)
    assert "a: -30.00%" in text and "mean over 2 title(s): -30.00%" in text
    flipped = bdrate.ladder_bd_rates(rows, "x265", "x264", ladder_column="codec")
    assert flipped["mean"] == pytest.approx(100 * (1 / 0.7 - 1))
    with pytest.raises(ValueError, match="cannot tell which column"):
        bdrate.ladder_bd_rates(rows, "x264", "vp9")


def test_a_ladder_column_that_is_also_the_title_column_compares_the_ladders(tmp_path):
    """One title, its two encodes named in the title column: each "title" held one ladder,
    nothing was compared, and the command printed +nan% and exited 1."""
    rows = [{k: v for k, v in dict(r, title=r["codec"]).items() if k != "codec"}
            for r in _ladder_rows() if r["title"] == "a"]
    result = bdrate.ladder_bd_rates(rows, "x264", "x265")
    assert result["ladder_column"] == "title" and result["title_column"] is None
    assert result["mean"] == pytest.approx(-30.0)
    out = tmp_path / "results.csv"
    write_results(rows, out)
    text, result = bdrate.bdrate_main(out, "x264", "x265", title_column="title")
    assert result["mean"] == pytest.approx(-30.0) and "nan" not in text


def test_rate_quality_plot(tmp_path):
    rows = _ladder_rows()
    out = tmp_path / "rq.png"
    assert bdrate.plot_rate_quality(rows, str(out), "psnr_y", "codec") == 2
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text, _ = bdrate.bdrate_main(_write(tmp_path, rows), "x264", "x265",
                                 plot=str(tmp_path / "rq.svg"))
    assert (tmp_path / "rq.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))


def _write(tmp_path, rows):
    path = tmp_path / "r.jsonl"
    write_results(rows, path)
    return path


def test_rate_quality_plot_leaves_matplotlib_as_it_found_it(tmp_path):
    # Before: plot_rate_quality called matplotlib.use("Agg") (switching the
    # caller's backend, a notebook's included) and drew through pyplot's
    # global figure registry, which threads share unsafely.
    import threading

    import matplotlib
    matplotlib.use("svg")
    try:
        bdrate.plot_rate_quality(_ladder_rows(), str(tmp_path / "rq.png"), "psnr_y", "codec")
        assert matplotlib.get_backend().lower() == "svg"
        errors = []

        def draw(k):
            try:
                bdrate.plot_rate_quality(_ladder_rows(), str(tmp_path / f"t{k}.png"), "psnr_y",
                                         "codec")
            except Exception as e:  # noqa: BLE001 - collected for the assert
                errors.append(e)
        threads = [threading.Thread(target=draw, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for k in range(4):
            assert (tmp_path / f"t{k}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        matplotlib.use("agg")


def test_rate_quality_plot_panels_are_bounded(tmp_path):
    # Before: 400 titles drew 400 panels: 158 s and 655 MB for one PNG.
    rows = [dict(r, title=f"{r['title']}{k}") for k in range(40) for r in _ladder_rows()]
    with pytest.raises(ValueError, match="titles: more panels than one plot draws"):
        bdrate.plot_rate_quality(rows, str(tmp_path / "rq.png"), "psnr_y", "codec")
    assert not (tmp_path / "rq.png").exists()
