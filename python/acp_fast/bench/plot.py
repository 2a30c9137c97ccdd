"""The chart of ``acp-fast bench --plot`` (needs matplotlib)."""

from __future__ import annotations

import platform
from typing import Any, Dict, List, Tuple

from . import contenders as C
from .results import SCALING_PROFILE, Run


def _matplotlib() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def speed_bars(run: Any) -> Tuple[List[str], float, float, Dict[str, Tuple[List[float], List[float]]]]:
    """The speed panel's bars: the contenders shown, the bar height, the base every bar grows
    from (half the smallest ratio, and at most 0.5: below 1.0, json's own ratio, so that every
    bar has a length on the log scale) and, per contender, the bars' y positions and ratios."""
    cells = run.cells()
    present = [cid for cid in C.CONTENDERS if any(r.contender == cid and r.timed for r in run.rows)]
    height = 0.8 / max(1, len(present))
    bars: Dict[str, Tuple[List[float], List[float]]] = {}
    for k, cid in enumerate(present):
        ys: List[float] = []
        xs: List[float] = []
        for i, (task, profile) in enumerate(cells):
            row = run.find(task, profile, cid)
            value = run.ratio(row, "json") if row is not None else None
            if value is not None:
                ys.append(i + (k - (len(present) - 1) / 2) * height)
                xs.append(value)
        bars[cid] = (ys, xs)
    smallest = min((x for _, xs in bars.values() for x in xs if x > 0), default=1.0)
    return present, height, min(0.5, smallest / 2), bars


def plot(run: Run, path: str) -> None:
    plt = _matplotlib()
    if plt is None:  # checked before the run; kept for direct callers
        raise RuntimeError("--plot needs matplotlib: pip install matplotlib (or pip install 'acp-fast[bench]')")
    cells = run.cells()
    panels = (1 if cells else 0) + (1 if run.scaling else 0)
    fig, axes = plt.subplots(
        1, max(1, panels), figsize=(7 * max(1, panels), max(4.5, 0.45 * len(cells) + 2)), squeeze=False
    )
    axes = list(axes[0])
    colors = {
        "rust": "#d9480f",
        "python": "#f59f00",
        "json": "#868e96",
        "orjson": "#1c7ed6",
        "msgspec": "#37b24d",
        "sdk": "#ae3ec9",
    }
    if cells:
        ax = axes.pop(0)
        present, height, base, bars = speed_bars(run)
        for k, cid in enumerate(present):
            ys, xs = bars[cid]
            # bars grow from a base below every ratio (log scale), so that each contender's bar
            # shows, stdlib json's (1.0) included; the black line at 1.0 is json's speed
            ax.barh(
                ys, [x - base for x in xs], left=base, height=height, color=colors[cid], label=C.CONTENDER_LABELS[cid]
            )
            for i, (task, profile) in enumerate(cells):
                row = run.find(task, profile, cid)
                if row is not None and row.stopped is not None:
                    y = i + (k - (len(present) - 1) / 2) * height
                    ax.text(1.0, y, " stopped (over --pass-budget)", color=colors[cid], fontsize="x-small", va="center")
        ax.set_yticks(range(len(cells)))
        ax.set_yticklabels([f"{t} · {p}" for t, p in cells])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("speed vs stdlib json (× faster, log scale; same run, medians)")
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
        ax.grid(axis="x", which="both", alpha=0.3)
    if run.scaling:
        ax = axes.pop(0)
        for result in run.scaling:
            if not result.points:
                continue
            ns = [n for n, _ in result.points]
            per = [t / n * 1e9 for n, t in result.points]
            exponent = f", exp {result.exponent:.2f}" if result.exponent is not None else ""
            stopped = " (stopped)" if result.stopped else ""
            ax.plot(
                ns,
                per,
                marker="o",
                color=colors[result.contender],
                label=f"{C.CONTENDER_LABELS[result.contender]}{exponent}{stopped}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"stream length (frames, {SCALING_PROFILE} traffic)")
        ax.set_ylabel("time per frame (ns, log scale)")
        ax.set_title("state accumulation vs stream length")
        ax.legend(fontsize="small")
        ax.grid(which="both", alpha=0.3)
    env = run.environment
    fig.suptitle(
        f"acp-fast bench — {env['cpu']} ({env['cpus']} CPUs), Python {platform.python_version()}, "
        f"commit {env['commit'] or 'n/a'}, {env['date']}",
        fontsize="medium",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
