"""Bjøntegaard-delta rate between two encoding ladders, and rate-quality plots.

BD-rate is the average bitrate difference (percent) of a test ladder against
an anchor at equal quality: log10(rate) as a function of quality is
interpolated through each ladder's points, both are integrated over the
quality range the two ladders share, and the mean difference d becomes
(10^d - 1) * 100. The interpolation is piecewise cubic Hermite (PCHIP,
Fritsch-Carlson slopes with SciPy's end conditions), which is what current
codec comparisons use instead of the original cubic polynomial fit; it gives
the numbers of the ``bjontegaard`` package's ``method="pchip"`` (checked in
tests/python/test_bdrate.py) without SciPy.

From a batch results file::

    vmafdnn bdrate results.parquet --anchor x264 --test x265 [--metric psnr_y]

rows are grouped per title (``--title-column``, default "title" when the
results have one); anchor and test are values of one label column
(``--ladder-column``, found automatically when one column holds both).
"""
import math
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["bd_rate", "pchip_slopes", "pchip_integral", "ladder_bd_rates", "rate_of",
           "plot_rate_quality", "RATE_COLUMNS"]

#: Where a row's rate comes from, in order: a label the job carried, else the
#: distorted file's size over its duration (batch's ``file_kbps``).
RATE_COLUMNS = ("bitrate", "file_kbps")


def _edge_slope(h0: float, h1: float, m0: float, m1: float) -> float:
    """The one-sided three-point end slope, kept shape-preserving (SciPy's
    PchipInterpolator end condition)."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    if np.sign(d) != np.sign(m0):
        return 0.0
    if np.sign(m0) != np.sign(m1) and abs(d) > abs(3 * m0):
        return 3 * m0
    return d


def pchip_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The derivative at each knot of the monotone piecewise cubic through
    (x, y) (x strictly increasing): Fritsch-Carlson's weighted harmonic mean
    of the neighbouring secants, 0 at a local extremum."""
    h = np.diff(x)
    m = np.diff(y) / h
    if len(x) == 2:
        return np.array([m[0], m[0]])
    d = np.zeros_like(y, dtype=float)
    for k in range(1, len(x) - 1):
        if m[k - 1] == 0 or m[k] == 0 or np.sign(m[k - 1]) != np.sign(m[k]):
            d[k] = 0.0
        else:
            w1, w2 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
            d[k] = (w1 + w2) / (w1 / m[k - 1] + w2 / m[k])
    d[0] = _edge_slope(h[0], h[1], m[0], m[1])
    d[-1] = _edge_slope(h[-1], h[-2], m[-1], m[-2])
    return d


def pchip_integral(x: np.ndarray, y: np.ndarray, lo: float, hi: float) -> float:
    """Integral over [lo, hi] (within [x0, xn]) of the PCHIP through (x, y)."""
    d = pchip_slopes(x, y)
    total = 0.0
    for k in range(len(x) - 1):
        a, b = max(lo, x[k]), min(hi, x[k + 1])
        if a >= b:
            continue
        h = x[k + 1] - x[k]
        m = (y[k + 1] - y[k]) / h
        c2 = (3 * m - 2 * d[k] - d[k + 1]) / h
        c3 = (d[k] + d[k + 1] - 2 * m) / (h * h)

        def antiderivative(t):  # of y_k + d_k t + c2 t^2 + c3 t^3, t = x - x_k
            return t * (y[k] + t * (d[k] / 2 + t * (c2 / 3 + t * c3 / 4)))

        total += antiderivative(b - x[k]) - antiderivative(a - x[k])
    return float(total)


def _curve(rates, quality, what: str) -> Tuple[np.ndarray, np.ndarray]:
    rates = np.asarray(rates, dtype=float)
    quality = np.asarray(quality, dtype=float)
    if rates.shape != quality.shape or rates.ndim != 1:
        raise ValueError(f"{what}: rates and qualities must be two lists of one length")
    if len(rates) < 2:
        raise ValueError(f"{what}: at least two rate-quality points are needed, got "
                         f"{len(rates)}")
    if not (np.all(np.isfinite(rates)) and np.all(np.isfinite(quality))):
        raise ValueError(f"{what}: rates and qualities must be finite numbers")
    if np.any(rates <= 0):
        raise ValueError(f"{what}: rates must be positive (log scale)")
    order = np.argsort(quality, kind="stable")
    quality, log_rate = quality[order], np.log10(rates[order])
    if np.any(np.diff(quality) <= 0):
        raise ValueError(f"{what}: two points have the same quality "
                         f"({quality[np.argmin(np.diff(quality))]:g}); BD-rate needs distinct "
                         "qualities")
    return quality, log_rate


def bd_rate(rate_anchor: Sequence[float], quality_anchor: Sequence[float],
            rate_test: Sequence[float], quality_test: Sequence[float],
            min_overlap: float = 0.75) -> float:
    """BD-rate of test against anchor, in percent (negative: the test needs
    less bitrate for the same quality). Points may come in any order; each
    ladder needs two or more points of distinct quality. NaN (with a
    warning) when the quality ranges do not overlap; a warning when they
    overlap by less than ``min_overlap`` of their union (as the bjontegaard
    package does)."""
    qa, ra = _curve(rate_anchor, quality_anchor, "anchor")
    qt, rt = _curve(rate_test, quality_test, "test")
    lo, hi = max(qa[0], qt[0]), min(qa[-1], qt[-1])
    union = max(qa[-1], qt[-1]) - min(qa[0], qt[0])
    overlap = max(hi - lo, 0.0) / union if union > 0 else 0.0
    if overlap == 0:
        warnings.warn("the two ladders' quality ranges do not overlap: no BD-rate")
        return math.nan
    if overlap < min_overlap:
        warnings.warn(f"the ladders' quality ranges overlap by {overlap:.0%} only (less than "
                      f"{min_overlap:.0%}): the BD-rate extrapolates little but means little")
    diff = (pchip_integral(qt, rt, lo, hi) - pchip_integral(qa, ra, lo, hi)) / (hi - lo)
    return (10 ** diff - 1) * 100


# -- from results files -------------------------------------------------------------------

def _number(value) -> Optional[float]:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def rate_of(row: dict, column: Optional[str] = None) -> Optional[float]:
    """A row's rate: ``column`` when given, else the first of RATE_COLUMNS
    that holds a number."""
    for name in (column,) if column else RATE_COLUMNS:
        value = _number(row.get(name))
        if value is not None:
            return value
    return None


def _find_ladder_column(rows: List[dict], anchor: str, test: str) -> str:
    columns = {}
    for row in rows:
        for key, value in row.items():
            if value is not None:
                columns.setdefault(key, set()).add(str(value))
    found = [c for c, values in columns.items() if anchor in values and test in values]
    if len(found) != 1:
        which = ", ".join(found) if found else "none"
        raise ValueError(f"cannot tell which column holds the ladders {anchor!r} and "
                         f"{test!r} (columns holding both: {which}); give --ladder-column")
    return found[0]


def _title_column(rows: List[dict], title_column: Optional[str]) -> Optional[str]:
    if title_column:
        return title_column
    return "title" if any("title" in row for row in rows) else None


def ladder_bd_rates(rows: List[dict], anchor: str, test: str, metric: Optional[str] = None,
                    ladder_column: Optional[str] = None, title_column: Optional[str] = None,
                    rate_column: Optional[str] = None,
                    min_overlap: float = 0.75) -> Dict[str, object]:
    """BD-rate of ladder ``test`` against ``anchor`` per title of a batch's
    rows (failed rows and rows without a rate or score are left out).
    Returns {"metric", "ladder_column", "title_column", "titles": {title:
    BD-rate or NaN}, "mean": mean over the titles with a value, "skipped":
    {title: why}}."""
    rows = [r for r in rows if not r.get("error")]
    if not rows:
        raise ValueError("no successful rows in the results")
    ladder_column = ladder_column or _find_ladder_column(rows, anchor, test)
    title_column = _title_column(rows, title_column)
    if title_column == ladder_column:
        # Each "title" would hold one ladder and nothing could be compared (it
        # printed +nan%): the column names the ladders, so every row is one title.
        title_column = None
    metric = metric or _default_metric(rows)
    curves: Dict[str, Dict[str, List[Tuple[float, float]]]] = {}
    for row in rows:
        ladder = str(row.get(ladder_column))
        if ladder not in (anchor, test):
            continue
        rate, quality = rate_of(row, rate_column), _number(row.get(metric))
        if rate is None or quality is None:
            continue
        title = str(row.get(title_column)) if title_column else "all"
        curves.setdefault(title, {}).setdefault(ladder, []).append((rate, quality))
    if not curves:
        raise ValueError(f"no row of ladder {anchor!r} or {test!r} has both a rate "
                         f"({rate_column or ' or '.join(RATE_COLUMNS)}) and {metric!r}")
    titles, skipped = {}, {}
    for title, ladders in sorted(curves.items()):
        if anchor not in ladders or test not in ladders:
            skipped[title] = f"no {anchor if anchor not in ladders else test} rows"
            continue
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = bd_rate(*zip(*ladders[anchor]), *zip(*ladders[test]),
                                min_overlap=min_overlap)
            if caught:
                skipped[title] = str(caught[0].message)
        except ValueError as e:
            skipped[title] = str(e)
            continue
        titles[title] = value
    finite = [v for v in titles.values() if not math.isnan(v)]
    return {"metric": metric, "ladder_column": ladder_column, "title_column": title_column,
            "titles": titles, "mean": float(np.mean(finite)) if finite else math.nan,
            "skipped": skipped}


def _default_metric(rows: List[dict]) -> str:
    """The first pooled score of the results (psnr_y for the built-ins)."""
    from .results import is_score
    seen = {k: None for row in rows for k in row}
    for key in seen:
        if is_score(key, seen) and key + "_min" in seen:
            return key
    raise ValueError("the results have no pooled score columns; give --metric")


def plot_rate_quality(rows: List[dict], output: str, metric: Optional[str] = None,
                      ladder_column: Optional[str] = None, title_column: Optional[str] = None,
                      rate_column: Optional[str] = None) -> int:
    """Rate-quality curves of a batch's rows: one panel per title, one curve
    per ladder (every distinct value of ``ladder_column``; without one, one
    curve per title), rate on a log axis. Writes ``output`` (.png or .svg)
    and returns the number of panels."""
    from .plot import DRAW_LOCK, MAX_PANELS, check_output
    ext = check_output(output)
    with DRAW_LOCK:
        return _draw_rate_quality(rows, output, ext, metric, ladder_column, title_column,
                                  rate_column, MAX_PANELS)


def _draw_rate_quality(rows, output, ext, metric, ladder_column, title_column, rate_column,
                       max_panels: int) -> int:
    # A Figure of its own, without pyplot: no global backend switched under
    # the caller (matplotlib.use("Agg") did), no figure registry shared by
    # threads (pyplot's is not thread-safe).
    from matplotlib.figure import Figure

    rows = [r for r in rows if not r.get("error")]
    metric = metric or _default_metric(rows)
    title_column = _title_column(rows, title_column)
    panels: Dict[str, Dict[str, List[Tuple[float, float]]]] = {}
    for row in rows:
        rate, quality = rate_of(row, rate_column), _number(row.get(metric))
        if rate is None or quality is None:
            continue
        title = str(row.get(title_column)) if title_column else "all"
        ladder = str(row.get(ladder_column)) if ladder_column else title
        panels.setdefault(title, {}).setdefault(ladder, []).append((rate, quality))
    if not panels:
        raise ValueError(f"no row has both a rate ({rate_column or ' or '.join(RATE_COLUMNS)})"
                         f" and {metric!r}")
    n = len(panels)
    if n > max_panels:
        raise ValueError(f"{n} titles: more panels than one plot draws (MAX_PANELS, "
                         f"{max_panels}); plot a subset of the results, or give "
                         "--title-column COLUMN with fewer values")
    cols = min(n, 3)
    fig = Figure(figsize=(4.2 * cols, 3.4 * ((n + cols - 1) // cols)))
    axes = fig.subplots((n + cols - 1) // cols, cols, squeeze=False)
    for ax, (title, ladders) in zip(axes.flat, sorted(panels.items())):
        for ladder, points in sorted(ladders.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=ladder)
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel("rate (" + (rate_column or "kbps") + ")")
        ax.set_ylabel(metric)
        ax.grid(True, which="both", alpha=0.3)
        if ladder_column:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(os.fspath(output), format=ext)
    return n


def format_bd_rates(result: Dict[str, object], anchor: str, test: str) -> str:
    """The command's text: one line per title, then the mean."""
    lines = [f"BD-rate of {test} against {anchor} on {result['metric']} "
             f"(PCHIP; negative: {test} saves bitrate)"]
    for title, value in result["titles"].items():
        note = result["skipped"].get(title)
        lines.append(f"  {title}: {value:+.2f}%" + (f" ({note})" if note else ""))
    for title, why in result["skipped"].items():
        if title not in result["titles"]:
            lines.append(f"  {title}: skipped: {why}")
    lines.append(f"mean over {sum(1 for v in result['titles'].values() if not math.isnan(v))} "
                 f"title(s): {result['mean']:+.2f}%")
    return "\n".join(lines)


def bdrate_main(results: str, anchor: str, test: str, metric=None, ladder_column=None,
                title_column=None, rate_column=None, plot=None) -> Tuple[str, Dict]:
    """What ``vmafdnn bdrate`` does: the text to print and the result."""
    from .batch import read_results
    rows = read_results(os.fspath(results))
    result = ladder_bd_rates(rows, anchor, test, metric, ladder_column, title_column,
                             rate_column)
    text = format_bd_rates(result, anchor, test)
    if plot:
        plot_rate_quality(rows, plot, result["metric"], result["ladder_column"],
                          result["title_column"], rate_column)
        text += f"\nplot: {plot}"
    return text, result


def add_arguments(parser) -> None:
    """The ``vmafdnn bdrate`` arguments."""
    parser.add_argument("results", metavar="RESULTS",
                        help="results of vmafdnn batch (.parquet, .csv or .jsonl)")
    parser.add_argument("--anchor", required=True, metavar="A", help="the anchor ladder")
    parser.add_argument("--test", required=True, metavar="B", help="the ladder compared to it")
    parser.add_argument("--metric", help="quality column (default: the first pooled score)")
    parser.add_argument("--ladder-column", metavar="COLUMN",
                        help="column holding A and B (default: the one column that does)")
    parser.add_argument("--title-column", metavar="COLUMN",
                        help="one BD-rate per value of COLUMN (default: title, when present)")
    parser.add_argument("--rate-column", metavar="COLUMN",
                        help=f"rate column (default: {' or '.join(RATE_COLUMNS)})")
    parser.add_argument("--plot", metavar="OUT", help="also draw rate-quality curves (.png/.svg)")


def run_command(args) -> int:
    """``vmafdnn bdrate``: 0 when at least one title got a BD-rate, else 1."""
    from .cliargs import printable
    text, result = bdrate_main(args.results, args.anchor, args.test, args.metric,
                               args.ladder_column, args.title_column, args.rate_column,
                               args.plot)
    print("\n".join(printable(line) for line in text.splitlines()))
    return 0 if result["titles"] else 1
