"""The issue's targets for ``acp-fast bench`` (Rust backend unless noted), measured and met or not,
from the medians of one run."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import traffic
from .results import Run


def per_frame_spread(points: Sequence[Tuple[int, float]]) -> Tuple[float, str]:
    """How far apart the times per frame of a scaling run are: (slowest / fastest - 1, text).

    Taken at 1k, 10k, 100k and 1M frames when at least two of those were measured, else over
    every point. ``points`` are ``(frames, seconds per pass)``.
    """
    decades = [p for p in points if p[0] in (1_000, 10_000, 100_000, 1_000_000)]
    chosen = decades if len(decades) >= 2 else list(points)
    per_frame = [(n, seconds / n) for n, seconds in chosen]
    times = [t for _, t in per_frame]
    spread = max(times) / min(times) - 1
    listed = ", ".join(f"{n:,} {t * 1e9:.0f} ns" for n, t in per_frame)
    return spread, f"{listed}: slowest {spread * 100:+.0f} % over fastest"


def targets(run: Run) -> List[Dict[str, Any]]:
    """The issue's targets (Rust backend unless noted; medians of this run): measured and met."""
    out: List[Dict[str, Any]] = []

    def add(target: str, measured: List[str], met: List[bool]) -> None:
        if not measured:
            out.append({"target": target, "measured": "not measured in this run", "met": None})
            return
        verdict = "yes" if all(met) else "no" if not any(met) else "partly"
        out.append({"target": target, "measured": "; ".join(measured), "met": verdict})

    def ratio_target(
        target: str,
        task: str,
        contender: str,
        baseline: str,
        floor: float,
        profiles: Sequence[str],
        names: Sequence[Optional[str]] = (None,),
    ) -> None:
        """Speed against ``baseline`` ≥ ``floor`` for each profile and each variant in ``names``
        (None: the contender's primary one); labelled by the profile, or by the variant when
        several are compared."""
        measured, met = [], []
        for profile in profiles:
            for name in names:
                row = run.find(task, profile, contender, name)
                value = run.ratio(row, baseline) if row is not None else None
                if value is not None:
                    label = f"{name}:" if len(names) > 1 else profile
                    measured.append(f"{label} {value:.2f}×")
                    met.append(value >= floor)
        add(target, measured, met)

    state_variants = ("ToolCallStore.feed", "ToolCallStore.feed(changes=False)")

    ratio_target("decode + field access ≥ 20× stdlib json, mixed", "decode", "rust", "json", 20, ["mixed"])
    ratio_target("decode + field access ≥ 5× orjson, mixed", "decode", "rust", "orjson", 5, ["mixed"])
    ratio_target(
        "full materialization ≥ orjson (FrameDecoder.feed + to_dict)",
        "materialize",
        "rust",
        "orjson",
        1.0,
        traffic.PROFILES,
    )
    ratio_target(
        "full materialization ≥ orjson (loads per line)",
        "materialize",
        "rust",
        "orjson",
        1.0,
        traffic.PROFILES,
        names=["loads per line"],
    )
    ratio_target("encode ≥ orjson.dumps", "encode", "rust", "orjson", 1.0, traffic.PROFILES)
    row = run.find("passthrough", "large", "rust")
    if row is not None and row.timed:
        add("passthrough ≥ 2 GB/s, large", [f"{row.mb_per_second / 1e3:.2f} GB/s"], [row.mb_per_second >= 2000])
    else:
        add("passthrough ≥ 2 GB/s, large", [], [])
    measured, met = [], []
    for name in state_variants:
        row = run.find("state", "mixed", "rust", name)
        if row is not None and row.timed:
            measured.append(f"{name}: {row.frames_per_second / 1e6:.2f} M frames/s")
            met.append(row.frames_per_second >= 1e6)
    add("state accumulation from bytes ≥ 1 M frames/s, mixed", measured, met)
    ratio_target(
        "state accumulation ≥ 4× orjson + dict accumulator, mixed",
        "state",
        "rust",
        "orjson",
        4.0,
        ["mixed"],
        names=state_variants,
    )
    result = next((r for r in run.scaling if r.contender == "rust" and r.exponent is not None), None)
    range_note = "; the target's range is 1k → 1M: --scaling-max 1000000"
    if result is not None and result.exponent is not None:
        lo, hi = result.points[0][0], result.points[-1][0]
        text = f"{result.exponent:.3f} ({lo:,} → {hi:,} frames)"
        if hi < 1_000_000:
            text += range_note
        add("state growth exponent ≤ 1.05, 1k → 1M frames", [text], [result.exponent <= 1.05])
        spread, text = per_frame_spread(result.points)
        if hi < 1_000_000:
            text += range_note
        add("state time per frame within 10 % at 1k, 10k, 100k, 1M frames", [text], [spread <= 0.10])
    else:
        add("state growth exponent ≤ 1.05, 1k → 1M frames", [], [])
        add("state time per frame within 10 % at 1k, 10k, 100k, 1M frames", [], [])
    ratio_target("fallback decode + field access ≥ 2× stdlib json", "decode", "python", "json", 2.0, traffic.PROFILES)
    return out
