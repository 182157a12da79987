"""Per-frame plots of scoring reports: ``vmafdnn plot REPORT.json [...] -o scores.png``.

One panel per metric, one curve per report (several reports overlay, to
compare encodes), the pooled mean drawn as a dashed line and the worst frame
marked, both with their values in the legend. Reads the JSON reports that
``vmafdnn -o x.json`` and libvmaf write (the same schema). matplotlib is
imported when a plot is drawn, never by ``import vmafdnn``; the figure is
built without pyplot, so no window, display or global backend is involved.
"""
import math
import os
import threading
from typing import Dict, List, Optional, Sequence, Tuple, Union

__all__ = ["load_report", "build_figure", "check_output", "save_plot", "plot_reports",
           "matplotlib_missing_reason", "MAX_REPORT_BYTES", "MAX_PANELS", "MAX_REPORTS"]

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


#: Largest report ``vmafdnn plot`` reads, the cap of a features file (a
#: 2-hour 60 fps clip with libvmaf's 12 default metrics is ~233 MB). The
#: report is parsed as a stream, one frame at a time, into 8 bytes a value.
MAX_REPORT_BYTES = 256 << 20

#: Most panels (metrics) one plot draws, and most reports it overlays: each
#: panel is 260 pixels tall (300 metrics took minutes and 650 MB, and past
#: 252 a PNG is beyond matplotlib's 65,536 pixels), and ten colours repeat.
MAX_PANELS = 64
MAX_REPORTS = 64

_READS = "plots read JSON reports (-o FILE.json / --json; vmafdnn's or libvmaf's)"


def _load_frames(path: PathLike):
    """The per-frame metrics of the JSON report at ``path``
    (:class:`vmafdnn.scoring.Features`), read as the features file is: a
    regular file (opened, then checked: a FIFO, a device, /dev/zero are
    refused before a byte is read), at most MAX_REPORT_BYTES, streamed;
    frameNum an integer 0..2^24-1, each metric a finite number or null.
    Every error names the file (and the line and frame)."""
    from .paths import UsageError, open_input
    from .scoring import JsonStream, parse_features
    name = os.fsdecode(os.fspath(path))
    with open_input(name, "report", max_bytes=MAX_REPORT_BYTES, cap_name="MAX_REPORT_BYTES",
                    hint=_READS) as f:
        hint = _batch_results_hint(name, f.peek(4)[:4])
        if hint is not None:
            raise UsageError(hint)
        try:
            frames = parse_features(JsonStream(f, name, MAX_REPORT_BYTES, what="",
                                                 cap_name="MAX_REPORT_BYTES"))
        except ValueError as e:
            raise ValueError(f"{e}; not a JSON report: {_READS}") from None
    if not len(frames):
        raise ValueError(f"{name}: the report has no frames to plot")
    return frames


def load_report(path: PathLike) -> Dict[str, object]:
    """A JSON report as a dict {"frames": [{frameNum, metrics}, ...]}, in
    frame order, checked as a plot reads it (see :func:`plot_reports`)."""
    frames = _load_frames(path)
    return {"frames": [{"frameNum": num, "metrics": frames[num]} for num in sorted(frames)]}


def _series(report) -> Dict[str, Tuple[List[int], List[float]]]:
    """{metric: (frame numbers, values)} of a report dict or of the frames
    :func:`_load_frames` read, nulls (NaN/Inf in the report) as NaN."""
    out: Dict[str, Tuple[List[int], List[float]]] = {}
    if isinstance(report, dict):
        frames = [(frame.get("frameNum", position), frame["metrics"])
                  for position, frame in enumerate(report["frames"])]
    else:
        frames = ((num, report[num]) for num in sorted(report))
    for num, metrics in frames:
        for key, value in metrics.items():
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
    if len(reports) > MAX_REPORTS:
        raise ValueError(f"{len(reports)} reports: one plot overlays at most {MAX_REPORTS} "
                         "(MAX_REPORTS)")
    series = [(label, _series(report)) for label, report in reports]
    first_seen: Dict[str, None] = {}
    for _, by_metric in series:
        first_seen.update(dict.fromkeys(by_metric))
    names: List[str] = list(first_seen)
    if metrics is not None:
        unknown = [m for m in metrics if m not in first_seen]
        if unknown:
            # Named on the command line (--metric): a usage error, exit 2.
            from .paths import UsageError
            raise UsageError(f"metric(s) {_listed(unknown)} not in the report(s); they have: "
                             f"{_listed(names)}")
        names = list(dict.fromkeys(metrics))  # a metric named twice is one panel
    if not names:
        raise ValueError("the reports have no metrics to plot")
    if metrics is not None and len(names) > MAX_PANELS:
        from .paths import UsageError
        raise UsageError(f"{len(names)} metrics chosen (--metric NAME, metrics=[...]), more "
                         f"panels than one plot draws (MAX_PANELS, {MAX_PANELS}): choose at "
                         f"most {MAX_PANELS}")
    if len(names) > MAX_PANELS:
        # The caller's choice to make, as for an unknown metric: a usage error (exit 2).
        from .paths import UsageError
        raise UsageError(f"the reports have {len(names)} metrics, more panels than one plot "
                         f"draws (MAX_PANELS, {MAX_PANELS}): choose some with --metric NAME "
                         f"(metrics=[...]) among {_listed(names)}")

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


def _listed(names: Sequence[str], most: int = 20) -> str:
    """Names for a one-line message: the first ``most``, then how many more."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


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
        from .paths import UsageError
        raise UsageError(f"plot output {out}: the extension must be .png or .svg")
    reason = matplotlib_missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    return ext


#: Held while a figure is built and drawn: matplotlib is not thread-safe,
#: with or without pyplot (two threads drawing at once failed in its
#: mathtext parser: "ParseException: Expected end of text"), so the
#: package's plots (here and vmafdnn.bdrate) draw one at a time.
DRAW_LOCK = threading.Lock()


def save_plot(reports: Sequence[Tuple[str, Dict[str, object]]], output: PathLike,
              metrics: Optional[Sequence[str]] = None):
    """Draws (label, report) pairs into ``output`` (.png or .svg); returns the Figure."""
    ext = check_output(output)
    with DRAW_LOCK:
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
        from .paths import UsageError
        raise UsageError(f"{len(labels)} labels (--label) for {len(paths)} reports: give one "
                         "per report, in order")
    if len(paths) > MAX_REPORTS:
        raise ValueError(f"{len(paths)} reports: one plot overlays at most {MAX_REPORTS} "
                         "(MAX_REPORTS)")
    reports = []
    taken: List[str] = []
    for k, path in enumerate(paths):
        label = labels[k] if labels is not None else _label(path, taken)
        taken.append(label)
        reports.append((label, _load_frames(path)))
    return save_plot(reports, output, metrics)
