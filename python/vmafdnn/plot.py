"""Per-frame plots of scoring reports: ``vmafdnn plot REPORT.json [...] -o scores.png``.

One panel per metric, one curve per report (several reports overlay, to
compare encodes), the pooled mean drawn as a dashed line and the worst frame
marked, both with their values in the legend. Reads the JSON reports that
``vmafdnn -o x.json`` and libvmaf write (the same schema). matplotlib is
imported when a plot is drawn, never by ``import vmafdnn``; the figure is
built without pyplot, so no window, display or global backend is involved.
"""
import json
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

__all__ = ["load_report", "build_figure", "check_output", "save_plot", "plot_reports",
           "matplotlib_missing_reason"]

PathLike = Union[str, "os.PathLike[str]"]

# Output formats by extension: matplotlib draws both without extra libraries.
FORMATS = ("png", "svg")


def matplotlib_missing_reason() -> Optional[str]:
    """None when matplotlib can be imported, else why not and what to install."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        return (f"plots need matplotlib, which failed to import ({e}): "
                "pip install 'vmafdnn[plot]' (or pip install matplotlib)")
    return None


_BATCH_RESULTS = (".parquet", ".jsonl", ".csv")


def _batch_results_hint(name: str, head: bytes) -> Optional[str]:
    """The message for a batch results file given where a report is expected:
    per-frame plots read reports; rate-quality plots are bdrate's."""
    if not (head.startswith(b"PAR1") or name.lower().endswith(_BATCH_RESULTS)):
        return None
    return (f"{name} looks like batch results (vmafdnn batch -o), not a per-frame JSON report: "
            f"for rate-quality curves run 'vmafdnn bdrate {name} --anchor A --test B --plot "
            "OUT.png'; 'vmafdnn plot' draws the per-frame reports (-o FILE.json) of single "
            "runs")


def load_report(path: PathLike) -> Dict[str, object]:
    """A JSON report as a dict, checked for the parts a plot reads (frames[].metrics)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
        hint = _batch_results_hint(name, raw[:4])
        if hint is not None:
            from .paths import UsageError
            raise UsageError(hint)
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a JSON report (plots read the JSON written by "
                         "-o FILE.json / --json)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{name}: not a JSON report ({e}); plots read the JSON written "
                         "by -o FILE.json / --json") from None
    frames = data.get("frames") if isinstance(data, dict) else None
    if not isinstance(frames, list) or not all(
            isinstance(fr, dict) and isinstance(fr.get("metrics"), dict) for fr in frames):
        raise ValueError(f"{name}: expected a report with a \"frames\" array of "
                         "{frameNum, metrics} objects")
    if not frames:
        raise ValueError(f"{name}: the report has no frames to plot")
    return data


def _series(report: Dict[str, object]) -> Dict[str, Tuple[List[int], List[float]]]:
    """{metric: (frame numbers, values)}, nulls (NaN/Inf in the report) as NaN."""
    out: Dict[str, Tuple[List[int], List[float]]] = {}
    for position, frame in enumerate(report["frames"]):
        num = frame.get("frameNum", position)
        for key, value in frame["metrics"].items():
            xs, ys = out.setdefault(key, ([], []))
            xs.append(num)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            ys.append(float(value) if ok else math.nan)
    return out


def _pooled(values: Sequence[float]) -> Tuple[float, Optional[int]]:
    """(mean, index of the minimum) over the finite values."""
    finite = [(v, i) for i, v in enumerate(values) if math.isfinite(v)]
    if not finite:
        return math.nan, None
    return sum(v for v, _ in finite) / len(finite), min(finite)[1]


def build_figure(reports: Sequence[Tuple[str, Dict[str, object]]],
                 metrics: Optional[Sequence[str]] = None):
    """A matplotlib Figure: one panel per metric (title = the metric's name),
    one curve per (label, report), mean as a dashed line, minimum marked.

    ``metrics`` limits and orders the panels (default: every metric, in the
    order they first appear).
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if not reports:
        raise ValueError("no reports to plot")
    series = [(label, _series(report)) for label, report in reports]
    names: List[str] = []
    for _, by_metric in series:
        names += [m for m in by_metric if m not in names]
    if metrics is not None:
        unknown = [m for m in metrics if m not in names]
        if unknown:
            raise ValueError(f"metric(s) {', '.join(unknown)} not in the report(s); they "
                             f"have: {', '.join(names)}")
        names = list(metrics)
    if not names:
        raise ValueError("the reports have no metrics to plot")

    fig = Figure(figsize=(10, 2.6 * len(names) + 0.6), layout="constrained")
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    colours = [f"C{k % 10}" for k in range(len(series))]
    for ax, name in zip(axes, names):
        for (label, by_metric), colour in zip(series, colours):
            if name not in by_metric:
                continue
            xs, ys = by_metric[name]
            mean, worst = _pooled(ys)
            ax.plot(xs, ys, color=colour, linewidth=1.2, label=label)
            if math.isfinite(mean):
                ax.axhline(mean, color=colour, linestyle="--", linewidth=0.9,
                           label=f"{label} mean {mean:.4g}")
            if worst is not None:
                ax.plot([xs[worst]], [ys[worst]], marker="v", color=colour, markersize=7,
                        linestyle="none", label=f"{label} min {ys[worst]:.4g} (frame {xs[worst]})")
        ax.set_title(name, loc="left", fontsize="medium")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    axes[-1].set_xlabel("frame")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def _label(path: str, taken: List[str]) -> str:
    """The file's name without .json; the path when two names collide."""
    label = os.path.basename(path)
    if label.lower().endswith(".json"):
        label = label[:-5]
    return path if label in taken else label


def check_output(output: PathLike) -> str:
    """Raises unless a plot can be written to ``output`` (.png or .svg; the
    path checks of vmafdnn.paths.check_output: not empty, not "-", not a
    directory, its directory exists and is writable; matplotlib importable):
    found before a long run, not after."""
    from .paths import check_output as check_path
    out = os.fspath(output)
    check_path(out, "plot")
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"plot output {out}: the extension must be .png or .svg")
    reason = matplotlib_missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    return ext


def save_plot(reports: Sequence[Tuple[str, Dict[str, object]]], output: PathLike,
              metrics: Optional[Sequence[str]] = None):
    """Draws (label, report) pairs into ``output`` (.png or .svg); returns the Figure."""
    ext = check_output(output)
    fig = build_figure(reports, metrics)
    fig.savefig(os.fspath(output), format=ext, dpi=100)
    return fig


def plot_reports(paths: Sequence[PathLike], output: PathLike,
                 labels: Optional[Sequence[str]] = None,
                 metrics: Optional[Sequence[str]] = None):
    """Draws the JSON reports at ``paths`` into ``output`` (.png or .svg); returns
    the Figure. Curves are labelled with ``labels`` or the files' names."""
    check_output(output)
    paths = [os.fspath(p) for p in paths]
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"{len(labels)} labels for {len(paths)} reports")
    reports = []
    taken: List[str] = []
    for k, path in enumerate(paths):
        label = labels[k] if labels is not None else _label(path, taken)
        taken.append(label)
        reports.append((label, load_report(path)))
    return save_plot(reports, output, metrics)
