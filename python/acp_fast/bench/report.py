"""Benchmark report: time every contender outside pytest and print a Markdown report to stdout.

    acp-fast bench > /tmp/report.md          (or: python -m acp_fast.bench)

Same corpora and contenders as the pytest benchmarks (contenders.py). Each contender first runs
once untimed (its result is checked against the stdlib ``json`` reference, and the run warms
caches), then the contenders of a group run ``N`` timed passes over the whole corpus in
interleaved rounds, ``timeit``-style: ``perf_counter`` around each pass, garbage collector off
while timing, ``N`` about ``--budget`` seconds per contender, clamped to
``[--min-repeat, --max-repeat]``. The report gives median / min / max per pass, throughput, and
speed ratios against the stdlib and orjson baselines measured in the same run. Progress goes to
stderr. With the default sizes it takes about a minute.

The native module is refused (reported as skipped) when its ``build_profile`` is not "release".
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from . import contenders as C

# The source checkout, when running from one (for the commit id in the report).
ROOT = Path(__file__).resolve().parents[3]



@dataclass
class Row:
    name: str
    is_acp_fast: bool
    times: List[float] = field(default_factory=list)
    skip: Optional[str] = None
    problem: Optional[str] = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def measure(runs: List, budget: float, min_repeat: int, max_repeat: int) -> List[List[float]]:
    """Per-pass times (seconds) of each callable in ``runs``, measured in interleaved rounds.

    Every round runs each callable once (the order rotates from round to round), so a change in
    machine load touches all contenders of a group alike and the ratios stay meaningful. The
    number of rounds is ``budget * len(runs)`` divided by the time of one round, clamped to
    ``[min_repeat, max_repeat]``. The garbage collector is off while timing.
    """
    times: List[List[float]] = [[] for _ in runs]
    if not runs:
        return times
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        rounds = None
        index = 0
        while rounds is None or index < rounds:
            order = list(range(len(runs)))
            shift = index % len(runs)
            order = order[shift:] + order[:shift]
            for i in order:
                start = time.perf_counter()
                runs[i]()
                times[i].append(time.perf_counter() - start)
            if rounds is None:
                one_round = sum(t[0] for t in times)
                rounds = max(min_repeat, min(max_repeat, int(budget * len(runs) / max(one_round, 1e-9))))
            index += 1
    finally:
        if enabled:
            gc.enable()
    return times


def run_group(group: str, corpus: C.Corpus, backends: Dict, args: argparse.Namespace) -> List[Row]:
    expected = C.reference(group, corpus)
    rows: List[Row] = []
    runs = []
    timed: List[Row] = []
    for contender in C.contenders(group, backends):
        row = Row(contender.name, contender.is_acp_fast)
        rows.append(row)
        if contender.skip is not None:
            row.skip = contender.skip
            continue
        run = contender.make(corpus)
        row.problem = C.check(group, corpus, run(), expected)  # also the warm-up pass
        runs.append(run)
        timed.append(row)
    for row, times in zip(timed, measure(runs, args.budget, args.min_repeat, args.max_repeat)):
        row.times = times
        print(
            f"  {group:14} {corpus.name:6} {row.name:40} {row.median * 1e3:9.2f} ms  ({len(times)} runs)",
            file=sys.stderr,
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Environment


def _git(*argv: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info() -> str:
    head = _git("rev-parse", "HEAD")
    if head is None:
        return "unknown (not a git checkout, or no commit yet)"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return f"`{head}`" + (" (with uncommitted changes)" if dirty else "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(module_name: str) -> str:
    try:
        from importlib.metadata import version

        return version(module_name)
    except Exception:  # noqa: BLE001
        return "not installed"


# ---------------------------------------------------------------------------------------------
# Markdown


def _ratio(base: Optional[Row], row: Row) -> str:
    if base is None or not base.times or not row.times:
        return "–"
    return f"{base.median / row.median:.2f}×"


def _mb(corpus: C.Corpus, seconds: float) -> str:
    return f"{corpus.n_bytes / seconds / 1e6:,.0f}"


def group_table(group: str, corpus: C.Corpus, rows: List[Row]) -> List[str]:
    by_name = {row.name: row for row in rows}
    stdlib = by_name.get(C.STDLIB_BASELINE[group])
    fast = by_name.get(C.ORJSON_BASELINE[group])
    out = [
        f"### {group} — {corpus.name} ({corpus.n_frames:,} frames, {corpus.n_bytes / 1e6:.1f} MB)",
        "",
        "| contender | median ms | min ms | max ms | MB/s | vs json | vs orjson | runs | correct |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        name = f"**{row.name}**" if row.is_acp_fast else row.name
        if row.skip is not None:
            out.append(f"| {name} | – | – | – | – | – | – | 0 | skipped: {row.skip} |")
            continue
        correct = "yes" if row.problem is None else f"no: {row.problem}"
        out.append(
            f"| {name} | {row.median * 1e3:.2f} | {min(row.times) * 1e3:.2f} | {max(row.times) * 1e3:.2f} "
            f"| {_mb(corpus, row.median)} | {_ratio(stdlib, row)} | {_ratio(fast, row)} | {len(row.times)} | {correct} |"
        )
    out.append("")
    return out


def summary_table(results: Dict[tuple, List[Row]], backends: Dict) -> List[str]:
    labels = [label for label, _ in C.BACKENDS if not isinstance(backends.get(label), str)]
    if not labels:
        return []
    header = "| group | corpus | " + " | ".join(f"acp_fast[{label}] vs json | vs orjson" for label in labels) + " |"
    out = [
        "## Summary (speed relative to the baselines; higher is faster)",
        "",
        header,
        "|---|---|" + "---:|---:|" * len(labels),
    ]
    for (group, corpus_name), rows in results.items():
        by_name = {row.name: row for row in rows}
        stdlib = by_name.get(C.STDLIB_BASELINE[group])
        fast = by_name.get(C.ORJSON_BASELINE[group])
        cells = []
        for label in labels:
            row = next((r for r in rows if r.name.startswith(f"acp_fast[{label}]") and r.times), None)
            cells += [_ratio(stdlib, row) if row else "–", _ratio(fast, row) if row else "–"]
        out.append(f"| {group} | {corpus_name} | " + " | ".join(cells) + " |")
    out += [
        "",
        "(materialize: the `Message.to_dict` contender, i.e. framing included.)",
        "",
    ]
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="acp-fast bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mixed-frames", type=int, default=C.DEFAULT_SIZES["mixed"], help="frames in the mixed corpus")
    parser.add_argument("--large-frames", type=int, default=C.DEFAULT_SIZES["large"], help="frames in the large corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed passes per contender (about)")
    parser.add_argument("--min-repeat", type=int, default=3)
    parser.add_argument("--max-repeat", type=int, default=25)
    parser.add_argument("--groups", nargs="+", choices=C.GROUPS, default=list(C.GROUPS))
    args = parser.parse_args(argv)

    started = time.perf_counter()
    backends = C.load_backends()
    print("building corpora...", file=sys.stderr)
    corpora = [
        C.build_corpus("mixed", args.mixed_frames, args.seed),
        C.build_corpus("large", args.large_frames, args.seed),
    ]
    results: Dict[tuple, List[Row]] = {}
    for group in args.groups:
        for corpus in corpora:
            results[(group, corpus.name)] = run_group(group, corpus, backends, args)
    elapsed = time.perf_counter() - started

    lines = [
        "# acp-fast benchmark report",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Commit: {commit_info()}",
        f"- Python: {platform.python_version()} ({platform.python_implementation()}, "
        f"{platform.python_compiler()})",
        f"- Platform: {platform.platform()}",
        f"- CPU: {cpu_model()} ({os.cpu_count()} logical CPUs)",
        f"- Libraries: orjson {_version('orjson')}, msgspec {_version('msgspec')}",
        "- Backends: " + "; ".join(C.backend_description(label, module) for label, module in backends.items()),
        "- Corpora (acp_fast.traffic, seed {}): ".format(args.seed)
        + "; ".join(
            f"{c.name}: {c.n_frames:,} frames, {c.n_bytes / 1e6:.1f} MB, {c.average_frame_bytes:,.0f} B/frame"
            for c in corpora
        ),
        f"- Method: per contender one untimed pass (checked against stdlib `json`), then timed passes over "
        f"the whole corpus, about {args.budget:g} s per contender ({args.min_repeat}–{args.max_repeat} passes), "
        f"the contenders of a group interleaved round by round, GC off while timing. Times are per pass; MB/s from the median. \"vs json\" / \"vs orjson\": "
        f"baseline median / contender median in the same run (2.00× = twice as fast). Total run time "
        f"{elapsed:.0f} s.",
        "",
    ]
    lines += summary_table(results, backends)
    lines.append("## Details")
    lines.append("")
    for (group, corpus_name), rows in results.items():
        corpus = next(c for c in corpora if c.name == corpus_name)
        lines += group_table(group, corpus, rows)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
