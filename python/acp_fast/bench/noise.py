"""How noisy an ``acp-fast bench`` run was: results whose passes varied, the share of a CPU the run
got, the machine's load, and a verdict in plain words."""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Tuple

from .results import Row, Run

#: A result whose median pass is this much slower than its fastest pass varied too much to trust.
NOISY_SPREAD = 1.25

#: The verdicts, quietest first.
VERDICTS = ("quiet", "somewhat busy", "busy")

#: The machine's load, as the 1-minute load average (its mean over the run) per CPU: up to
#: ``QUIET_LOAD_PER_CPU`` the machine is quiet (no more runnable processes than CPUs, the bench
#: included), up to ``BUSY_LOAD_PER_CPU`` somewhat busy, above it busy (processes queue for a
#: CPU). A load average of 4.1 is busy on 2 CPUs (2.05 per CPU) and quiet on 8 (0.51 per CPU).
QUIET_LOAD_PER_CPU = 1.0
BUSY_LOAD_PER_CPU = 1.5


def judge(cpu_share: Optional[float], noisy_fraction: float, load_average: Optional[float], cpus: Optional[int]) -> str:
    """The verdict (one of ``VERDICTS``): the worst of three signs, each quiet, somewhat busy or
    busy. ``cpu_share``: the share of one CPU the run got (None: not known), quiet from 0.85,
    somewhat busy from 0.6; ``noisy_fraction``: the share of timed results whose passes varied
    (``noisy_rows``), quiet up to 0.1, somewhat busy up to 0.25; ``load_average`` over ``cpus``
    against ``QUIET_LOAD_PER_CPU`` and ``BUSY_LOAD_PER_CPU`` (either None: not judged)."""
    share_level = 0 if cpu_share is None or cpu_share >= 0.85 else 1 if cpu_share >= 0.6 else 2
    noise_level = 0 if noisy_fraction <= 0.1 else 1 if noisy_fraction <= 0.25 else 2
    load_level = 0
    per_cpu = load_per_cpu(load_average, cpus)
    if per_cpu is not None:
        load_level = 0 if per_cpu <= QUIET_LOAD_PER_CPU else 1 if per_cpu <= BUSY_LOAD_PER_CPU else 2
    return VERDICTS[max(share_level, noise_level, load_level)]


def load_per_cpu(load_average: Optional[float], cpus: Optional[int]) -> Optional[float]:
    """The load average per CPU, None when either is not known."""
    if load_average is None or not cpus or cpus < 1:
        return None
    return load_average / cpus


def noisy_rows(run: Run) -> List[Tuple[Row, float]]:
    """Timed results (3 passes or more) whose median is over ``NOISY_SPREAD`` × their fastest
    pass, with that ratio, the worst first."""
    out = []
    for row in run.rows:
        if len(row.times) >= 3:
            spread = row.median / min(row.times)
            if spread > NOISY_SPREAD:
                out.append((row, spread))
    return sorted(out, key=lambda item: -item[1])


def machine_load(run: Run) -> Dict[str, Any]:
    """What the run saw of the machine, and the verdict (one of ``VERDICTS``).

    ``cpu_share``: CPU seconds over wall seconds, the share of one CPU the run got (the bench is
    one thread that never waits, so anything under 1 was taken by other programs).
    ``noisy``/``judged``: results whose median pass is more than ``NOISY_SPREAD`` × their fastest.
    ``hiccups``: contenders that looked too slow after one pass and ran once timed again.
    ``load_average``: the 1-minute load average sampled during the run (its mean per CPU is one
    of the signs of ``judge``).
    """
    judged = sum(1 for row in run.rows if len(row.times) >= 3)
    noisy = len(noisy_rows(run))
    hiccups = sum(row.hiccups for row in run.rows) + sum(result.hiccups for result in run.scaling)
    share = run.cpu_seconds / run.elapsed if run.elapsed > 0 and run.cpu_seconds > 0 else None
    fraction = noisy / judged if judged else 0.0
    cpus = run.environment.get("cpus") or None
    mean = statistics.fmean(run.loads) if run.loads else None
    return {
        "verdict": judge(share, fraction, mean, cpus),
        "cpu_share": share,
        "load_average": {
            "start": run.loads[0],
            "mean": mean,
            "max": max(run.loads),
            "cpus": cpus,
            "per_cpu": load_per_cpu(mean, cpus),
        }
        if run.loads
        else None,
        "noisy": noisy,
        "judged": judged,
        "noisy_spread": NOISY_SPREAD,
        "hiccups": hiccups,
    }


def load_sentences(run: Run) -> List[str]:
    """The verdict on how busy the machine was, as sentences for the report."""
    load = machine_load(run)
    verdict = load["verdict"]
    parts = []
    if load["cpu_share"] is not None:
        parts.append(f"the run got {min(1.0, load['cpu_share']) * 100:.0f} % of one CPU")
    if load["load_average"] is not None:
        avg = load["load_average"]
        on = ""
        if avg["per_cpu"] is not None:
            on = f" on {avg['cpus']} CPU{'s' if avg['cpus'] != 1 else ''}, {avg['per_cpu']:.2f} per CPU"
        parts.append(f"load average {avg['mean']:.1f}{on} (at most {avg['max']:.1f})")
    if load["judged"]:
        parts.append(
            f"{load['noisy']} of {load['judged']} results had a median pass more than "
            f"{(NOISY_SPREAD - 1) * 100:.0f} % slower than their fastest"
        )
    first = f"Machine {verdict}" + (f": {'; '.join(parts)}." if parts else ".")
    sentences = [first]
    if load["hiccups"]:
        sentences.append(
            f"{load['hiccups']} time(s) a contender looked too slow after one pass and ran normally once its "
            "passes were timed again: a hiccup of the machine, not of the contender."
        )
    if verdict == "quiet":
        sentences.append("Ratios from a quiet run typically repeat within about ±10 %.")
    elif verdict == "somewhat busy":
        sentences.append("Ratios may move by ±15 % or so; run again on a quieter machine for firm figures.")
    else:
        sentences.append(
            "Other programs were taking CPU time, so ratios may be off by 25 % or more: "
            "run again on a quiet machine (or with a longer --budget) for firm figures."
        )
    return sentences
