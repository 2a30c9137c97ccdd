"""``acp-fast bench``: how fast each way of handling ACP traffic is on this machine.

Runs on built-in, seeded ACP traffic (:mod:`acp_fast.traffic`; profiles mixed, large, tiny, v2)
and times every contender (acp-fast's Rust backend and its pure-Python fallback, stdlib json,
orjson, msgspec, and the official ACP Python SDK: json + its pydantic models) at every task
(decode + field access, full materialization, encode, passthrough, tool-call state
accumulation, and how state accumulation scales with the stream's length).

Method: for each task and profile, every contender first runs untimed on the corpus (its result
is checked against a stdlib-json reference); a contender whose one pass is projected past
``--pass-budget`` (from passes over its first 500, 1,000, 2,000, ... frames) is stopped and
reported as such. Then the contenders run timed passes over the whole corpus in interleaved rounds, each
at least ``--min-runs`` times and until it has spent ``--budget`` seconds (at most
``--max-runs``), garbage collector off while timing. The report gives median / min / max per pass, frames/s, MB/s and the
ratios to stdlib json and orjson, taken from medians of the same run. Progress goes to stderr,
the report to stdout; ``--json FILE`` and ``--plot FILE.png`` write machine-readable results and
a chart. A debug build of the native module is refused.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import traffic
from . import contenders as C
from . import state as S
from .timing import Progress, gc_off, measure

# The source checkout this module runs from, if any (for the commit id in the report).
ROOT = Path(__file__).resolve().parents[3]

#: The first probe pass (frames) and the time that ends probing (see probe(), --pass-budget).
PROBE_FRAMES = 500
#: What the memory probe measures, per contender (state.memory_per_tool_call).
MEMORY_NAMES = {
    "rust": "acp-fast (Rust): ToolCallStore",
    "python": "acp-fast (fallback): ToolCallStore",
    "orjson": "orjson.loads + dict accumulator",
}
PROBE_SECONDS = 0.05
SCALING_PROFILE = "mixed"


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Row:
    """One contender (variant) on one task and profile."""

    task: str
    profile: str
    contender: str
    name: str
    primary: bool
    frames: int
    bytes: int
    times: List[float] = field(default_factory=list)
    skip: Optional[str] = None
    stopped: Optional[str] = None
    problem: Optional[str] = None

    @property
    def label(self) -> str:
        return C.CONTENDER_LABELS[self.contender]

    @property
    def timed(self) -> bool:
        return bool(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.median

    @property
    def mb_per_second(self) -> float:
        return self.bytes / self.median / 1e6

    @property
    def ns_per_frame(self) -> float:
        return self.median / max(1, self.frames) * 1e9


@dataclass
class Run:
    """Everything one ``acp-fast bench`` run measured."""

    args: argparse.Namespace
    environment: Dict[str, Any]
    corpora: List[C.Corpus] = field(default_factory=list)
    rows: List[Row] = field(default_factory=list)
    scaling: List[S.ScalingResult] = field(default_factory=list)
    scaling_sizes: List[int] = field(default_factory=list)
    memory: Dict[str, Optional[float]] = field(default_factory=dict)
    elapsed: float = 0.0

    def cells(self) -> List[Tuple[str, str]]:
        seen: List[Tuple[str, str]] = []
        for row in self.rows:
            if (row.task, row.profile) not in seen:
                seen.append((row.task, row.profile))
        return seen

    def cell(self, task: str, profile: str) -> List[Row]:
        return [row for row in self.rows if row.task == task and row.profile == profile]

    def find(self, task: str, profile: str, contender: str, name: Optional[str] = None) -> Optional[Row]:
        for row in self.cell(task, profile):
            if row.contender == contender and (row.primary if name is None else row.name == name):
                return row
        return None

    def ratio(self, row: Row, baseline: str) -> Optional[float]:
        base = self.find(row.task, row.profile, baseline)
        if base is None or not base.timed or not row.timed:
            return None
        return base.median / row.median


# ---------------------------------------------------------------------------------------------
# Environment


def _git(*argv: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info() -> Optional[str]:
    """The commit of the acp-fast source checkout this runs from (``+dirty`` with uncommitted
    changes to tracked files), or None for an installed package."""
    if not ((ROOT / "Cargo.toml").is_file() and (ROOT / "python" / "acp_fast").is_dir()):
        return None
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(distribution: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(distribution)
    except Exception:  # noqa: BLE001 - any failure means "not installed" here
        return None


def environment(backends: Dict[str, Any]) -> Dict[str, Any]:
    import acp_fast

    native = backends.get("rust")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "acp_fast": acp_fast.__version__,
        "commit": commit_info(),
        "native_build": getattr(native, "build_profile", None) if not isinstance(native, str) else None,
        "native": native if isinstance(native, str) else None,
        "python": f"{platform.python_version()} ({platform.python_implementation()}, {platform.python_compiler()})",
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "libraries": {
            name: _version(name) for name in ("orjson", "msgspec", "agent-client-protocol", "pydantic", "matplotlib")
        },
    }


# ---------------------------------------------------------------------------------------------
# Running


def _list_of(valid: Sequence[str], aliases: Optional[Dict[str, str]] = None) -> Callable[[str], List[str]]:
    def parse(text: str) -> List[str]:
        out: List[str] = []
        for item in text.replace(",", " ").split():
            item = (aliases or {}).get(item, item)
            if item == "all":
                out.extend(valid)
            elif item not in valid:
                raise argparse.ArgumentTypeError(f"{item!r} is not one of {', '.join(valid)}")
            else:
                out.append(item)
        return out

    return parse


def _flatten(values: Optional[List[List[str]]], default: Sequence[str]) -> List[str]:
    if not values:
        return list(default)
    out: List[str] = []
    for value in values:
        for item in value:
            if item not in out:
                out.append(item)
    return out


def _frames_spec(text: str) -> Tuple[Optional[str], int]:
    profile, _, number = text.rpartition("=")
    if profile and profile not in traffic.PROFILES:
        raise argparse.ArgumentTypeError(f"unknown profile {profile!r} (one of {', '.join(traffic.PROFILES)})")
    try:
        n = int(number.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or PROFILE=N, found {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"need at least 1 frame, found {text!r}")
    return (profile or None, n)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="acp-fast bench",
        description="Time each way of handling ACP traffic on this machine, on built-in seeded traffic.",
        epilog=(
            "Examples: `acp-fast bench` (everything, about 1-2 minutes); "
            "`acp-fast bench --tasks decode state --profiles mixed --contenders rust orjson`; "
            "`acp-fast bench --tasks scaling --scaling-max 1000000`; "
            "`acp-fast bench --json results.json --plot results.png`."
        ),
    )
    what = ap.add_argument_group("what to run (space- or comma-separated lists; 'all' for every one)")
    what.add_argument(
        "--tasks",
        nargs="+",
        type=_list_of(C.TASKS, {"decode+fields": "decode"}),
        metavar="TASK",
        help=f"tasks: {', '.join(C.TASKS)} (default: all)",
    )
    what.add_argument(
        "--profiles",
        nargs="+",
        type=_list_of(traffic.PROFILES),
        metavar="PROFILE",
        help=f"traffic profiles: {', '.join(traffic.PROFILES)} (default: all; scaling always uses mixed)",
    )
    what.add_argument(
        "--contenders",
        nargs="+",
        type=_list_of(C.CONTENDERS),
        metavar="NAME",
        help=f"contenders: {', '.join(C.CONTENDERS)} (default: all; one not installed is reported as skipped)",
    )
    size = ap.add_argument_group("sizes")
    size.add_argument(
        "--mb", type=float, default=C.DEFAULT_MB, help="corpus size per profile in MB (default %(default)g)"
    )
    size.add_argument(
        "--frames",
        action="append",
        type=_frames_spec,
        default=[],
        metavar="[PROFILE=]N",
        help="frames per corpus instead of --mb: N for every profile, PROFILE=N for one (repeatable)",
    )
    size.add_argument("--seed", type=int, default=0, help="traffic seed (default %(default)s)")
    size.add_argument(
        "--scaling-min",
        type=int,
        metavar="N",
        default=1_000,
        help="shortest stream of the scaling task (default %(default)s)",
    )
    size.add_argument(
        "--scaling-max",
        type=int,
        metavar="N",
        default=100_000,
        help="longest stream of the scaling task (default %(default)s; 1000000 for the full 1k-1M run)",
    )
    size.add_argument(
        "--memory-frames",
        type=int,
        metavar="N",
        default=100_000,
        help="frames of the memory-per-tool-call probe of the state task (0 to skip; default %(default)s)",
    )
    timing = ap.add_argument_group("timing")
    timing.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        default=0.25,
        help="seconds of timed passes per contender and corpus (default %(default)g)",
    )
    timing.add_argument(
        "--min-runs",
        type=int,
        metavar="N",
        default=3,
        help="timed passes per contender, at least (default %(default)s)",
    )
    timing.add_argument(
        "--max-runs",
        type=int,
        metavar="N",
        default=40,
        help="timed passes per contender, at most (default %(default)s)",
    )
    timing.add_argument(
        "--pass-budget",
        type=float,
        metavar="SECONDS",
        default=10.0,
        help="stop a contender whose one pass over a corpus is projected past this many seconds (default %(default)g)",
    )
    timing.add_argument(
        "--scaling-budget",
        type=float,
        metavar="SECONDS",
        default=15.0,
        help="scaling: stop a contender whose next pass is projected past this many seconds (default %(default)g)",
    )
    out = ap.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="write every result as JSON to FILE")
    out.add_argument(
        "--plot", metavar="FILE.png", help="draw a chart to FILE.png (needs matplotlib: pip install 'acp-fast[bench]')"
    )
    out.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    return ap


def corpus_sizes(args: argparse.Namespace, profiles: Sequence[str]) -> Dict[str, int]:
    sizes = {profile: C.frames_for_mb(profile, args.mb) for profile in profiles}
    for profile, n in args.frames:
        for name in [profile] if profile else profiles:
            if name in sizes:
                sizes[name] = n
    return sizes


def _stop_note(points: List[Tuple[int, float]], n: int, projected: float, budget: float) -> str:
    growth = f", growth exponent {S.growth_exponent(points[-2:]):.2f}" if len(points) >= 2 else ""
    return (
        f"stopped: one pass over {n:,} frames projected at {projected:,.1f} s "
        f"({points[-1][1]:.2f} s for the first {points[-1][0]:,} frames{growth}), over --pass-budget "
        f"{budget:g} s; see the scaling task"
    )


def probe(
    contender: C.Contender, corpus: C.Corpus, prefixes: Dict[int, C.Corpus], budget: float
) -> List[Tuple[int, float]]:
    """Passes over growing prefixes of ``corpus`` (500, 1,000, 2,000, ... frames, up to half the
    corpus) until one takes ``PROBE_SECONDS`` or a full pass is projected past ``budget``: the
    points that project a full pass (a contender whose cost per frame grows with the stream would
    otherwise hold the run for minutes)."""
    make = contender.make
    assert make is not None, f"{contender.key} cannot run here: {contender.skip}"
    points: List[Tuple[int, float]] = []
    n = PROBE_FRAMES
    with gc_off(collect=False):  # as in the timed passes
        while 2 * n <= corpus.n_frames:
            if n not in prefixes:
                prefixes[n] = corpus.prefix(n)
            run = make(prefixes[n])
            C.prepare(run)
            start = time.perf_counter()
            run()
            points.append((n, time.perf_counter() - start))
            del run
            if points[-1][1] >= PROBE_SECONDS and len(points) >= 2:
                break
            if S.project(points, corpus.n_frames) > budget:
                break
            n *= 2
    return points


def over_budget(
    contender: C.Contender, corpus: C.Corpus, budget: float, prefixes: Optional[Dict[int, C.Corpus]] = None
) -> Optional[str]:
    """Why ``contender`` is stopped on ``corpus`` (one pass projected past ``budget`` seconds by
    :func:`probe`), or None when it may run."""
    points = probe(contender, corpus, {} if prefixes is None else prefixes, budget)
    if not points:
        return None
    projected = S.project(points, corpus.n_frames)
    return _stop_note(points, corpus.n_frames, projected, budget) if projected > budget else None


def run_cell(
    task: str, corpus: C.Corpus, backends: Dict[str, Any], args: argparse.Namespace, progress: Progress, done: float
) -> List[Row]:
    """Check, then time, every contender of ``task`` on ``corpus``."""
    label = f"{task} · {corpus.profile}"
    candidates = C.contenders(task, backends, args.contenders)
    rows: List[Row] = []
    runs: List[Callable[[], Any]] = []
    timed: List[Row] = []
    prefixes: Dict[int, C.Corpus] = {}
    for index, contender in enumerate(candidates):
        row = Row(
            task, corpus.profile, contender.id, contender.name, contender.primary, corpus.n_frames, corpus.n_bytes
        )
        rows.append(row)
        progress.update(done + 0.3 * index / len(candidates), f"{label} · checking {contender.label}")
        row.skip = C.skip_for_corpus(contender, corpus)
        if row.skip is not None or contender.make is None:
            continue
        row.stopped = over_budget(contender, corpus, args.pass_budget, prefixes)
        if row.stopped is not None:
            continue
        run = contender.make(corpus)
        C.prepare(run)
        with gc_off(collect=False):
            result = run()  # the warm-up pass
        row.problem = C.check(task, corpus, result, contender)
        del result
        runs.append(run)
        timed.append(row)

    def on_round(fraction: float) -> None:
        progress.update(done + 0.3 + 0.7 * fraction, f"{label} · timing")

    for row, times in zip(timed, measure(runs, args.budget, args.min_runs, args.max_runs, on_round)):
        row.times = times
    return rows


def _scaling_makers(frames: List[bytes], backends: Dict[str, Any]) -> Dict[str, Callable[[int], Callable[[], Any]]]:
    """``{contender: make(n)}``: a pass of the state task over the first ``n`` frames."""
    offsets = [0]
    for frame in frames:
        offsets.append(offsets[-1] + len(frame))
    buffer = b"".join(frames)

    def store(module: Any) -> Callable[[int], Callable[[], Any]]:
        def make(n: int) -> Callable[[], Any]:
            data = buffer[: offsets[n]]
            return lambda: module.ToolCallStore(1).feed(data)

        return make

    def lines(accumulate: Callable[[List[bytes]], Any]) -> Callable[[int], Callable[[], Any]]:
        def make(n: int) -> Callable[[], Any]:
            prefix = [frame[:-1] for frame in frames[:n]]
            return lambda: accumulate(prefix)

        return make

    makers: Dict[str, Callable[[int], Callable[[], Any]]] = {}
    for cid in ("rust", "python"):
        if not isinstance(backends.get(cid), str) and backends.get(cid) is not None:
            makers[cid] = store(backends[cid])
    loads = {"json": json.loads, "orjson": getattr(C.orjson, "loads", None)}
    if C.msgspec is not None:
        loads["msgspec"] = C.msgspec.json.Decoder().decode
    for cid, fn in loads.items():
        if fn is not None:
            makers[cid] = lines(functools.partial(S.dict_accumulator, version=1, loads=fn))
    makers["sdk"] = lines(S.sdk_accumulate)
    return makers


def run_scaling(run: Run, backends: Dict[str, Any], progress: Progress, done: float) -> None:
    args = run.args
    sizes = S.scaling_sizes(args.scaling_min, args.scaling_max)
    run.scaling_sizes = sizes
    progress.note(f"scaling: generating {sizes[-1]:,} frames of {SCALING_PROFILE} traffic (seed {args.seed})")
    frames = traffic.frames(SCALING_PROFILE, sizes[-1], args.seed)
    makers = _scaling_makers(frames, backends)
    contenders = C.contenders("scaling", backends, args.contenders)
    for index, contender in enumerate(contenders):
        label = f"scaling · {contender.label}"
        reason = contender.skip
        if reason is None and contender.id == "sdk":
            reason = C.sdk_unavailable()
        if reason is not None or contender.id not in makers:
            run.scaling.append(S.ScalingResult(contender.id, contender.name, skip=reason or "unavailable"))
            progress.step(label, "skipped")
            continue

        def on_size(i: int, index: int = index, label: str = label) -> None:
            progress.update(done + index + (i + 1) / len(sizes), f"{label} · {sizes[i]:,} frames")

        progress.update(done + index, f"{label} · {sizes[0]:,} frames")
        result = S.run_scaling(
            contender.id, contender.name, makers[contender.id], sizes, args.scaling_budget, progress=on_size
        )
        run.scaling.append(result)
        exponent = f"exponent {result.exponent:.2f}" if result.exponent is not None else "one point"
        progress.step(label, exponent + ("; " + result.stopped if result.stopped else ""))


def execute(args: argparse.Namespace, backends: Dict[str, Any]) -> Run:
    started = time.perf_counter()
    run = Run(args, environment(backends))
    corpus_tasks = [task for task in args.tasks if task in C.CORPUS_TASKS]
    memory = "state" in args.tasks and args.memory_frames > 0 and SCALING_PROFILE in args.profiles
    memory_kinds = (
        [
            (cid, module)
            for cid, module in (("rust", "_native"), ("python", "_fallback"), ("orjson", "dict"))
            if cid in args.contenders and C.availability(cid, backends) is None
        ]
        if memory
        else []
    )
    n_scaling = len(C.contenders("scaling", backends, args.contenders)) if "scaling" in args.tasks else 0
    total = len(corpus_tasks) * len(args.profiles) + len(memory_kinds) + n_scaling
    progress = Progress(total, enabled=not args.no_progress)
    progress.note(
        f"acp-fast bench: {', '.join(args.tasks)} on {', '.join(args.profiles)}; contenders "
        f"{', '.join(args.contenders)}"
    )
    if corpus_tasks:
        sizes = corpus_sizes(args, args.profiles)
        for profile in args.profiles:
            progress.update(progress.done, f"generating {profile} traffic")
            run.corpora.append(C.build_corpus(profile, sizes[profile], args.seed))
    done = 0.0
    for task in corpus_tasks:
        for corpus in run.corpora:
            cell_start = time.perf_counter()
            rows = run_cell(task, corpus, backends, args, progress, done)
            run.rows.extend(rows)
            done += 1
            runs = [len(r.times) for r in rows if r.times]
            passes = f"{min(runs)}–{max(runs)} timed passes each" if runs else "nothing timed"
            progress.step(
                f"{task} · {corpus.profile}",
                f"{len(rows)} contenders, {passes}, {time.perf_counter() - cell_start:.1f} s",
            )
    for cid, module in memory_kinds:
        progress.update(done, f"state · memory per tool call · {C.CONTENDER_LABELS[cid]}")
        run.memory[cid] = S.memory_per_tool_call(module, args.memory_frames)
        done += 1
        progress.step(f"state · memory · {C.CONTENDER_LABELS[cid]}")
    if "scaling" in args.tasks:
        run_scaling(run, backends, progress, done)
    progress.close()
    run.elapsed = time.perf_counter() - started
    return run


# ---------------------------------------------------------------------------------------------
# Rendering


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[bool]) -> List[str]:
    """A Markdown pipe table padded so that it also reads as a table on a terminal."""
    rows = [list(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right)) + "|"
    return [line(headers), rule, *(line(r) for r in rows)]


def per_frame(seconds: float) -> str:
    ns = seconds * 1e9
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns / 1e6:.1f} ms"


def _x(value: Optional[float], decimals: int = 2) -> str:
    """A ratio: ``9.46×``; small ones with two significant digits (``0.0021×``)."""
    if value is None:
        return "–"
    if value < 10**-decimals * 10:
        return f"{value:.2g}×"
    return f"{value:.{decimals}f}×"


def _row_status(row: Row, notes: List[str]) -> str:
    """The "correct" cell: "yes", or a word and a note number (the note goes under the table)."""
    if row.skip is None and row.stopped is None and row.problem is None:
        return "yes"
    word, text = (
        ("skipped", row.skip)
        if row.skip is not None
        else ("stopped", row.stopped)
        if row.stopped is not None
        else ("no", f"wrong result: {row.problem}")
    )
    text = f"{row.label}: {text}"
    if text not in notes:
        notes.append(text)
    return f"{word} ({notes.index(text) + 1})"


def header_lines(run: Run) -> List[str]:
    env = run.environment
    libs = env["libraries"]
    lib_text = ", ".join(f"{name} {ver}" for name, ver in libs.items() if ver) or "none"
    native = f"{env['native_build']} build" if env["native_build"] else f"unavailable ({env['native']})"
    lines = [
        "# acp-fast bench",
        "",
        f"- Machine: {env['cpu']} ({env['cpus']} logical CPUs), {env['platform']}",
        f"- Python: {env['python']}",
        f"- acp-fast {env['acp_fast']}, native module: {native}; commit: "
        + (f"`{env['commit']}`" if env["commit"] else "not a source checkout"),
        f"- Libraries: {lib_text}",
        f"- Date: {env['date']}; total run time {run.elapsed:.0f} s",
        f"- Command: `acp-fast bench{(' ' + ' '.join(run.args.argv)) if run.args.argv else ''}`",
    ]
    if run.corpora:
        lines.append(
            f"- Corpora (acp_fast.traffic, seed {run.args.seed}): "
            + "; ".join(
                f"{c.profile} (v{c.version}) {c.n_frames:,} frames, {c.n_bytes / 1e6:.1f} MB, {c.average_frame_bytes:,.0f} B/frame"
                for c in run.corpora
            )
        )
        lines.append(
            f"- Method: per task and corpus, one checked warm-up pass per contender, then timed passes over the "
            f"whole corpus, interleaved round by round: each contender at least {run.args.min_runs} and until it has "
            f"spent {run.args.budget:g} s (at most {run.args.max_runs}); GC off while timing; medians. Ratios = "
            "baseline median / contender median in the same run (2.00× = twice as fast)."
        )
    lines.append("")
    return lines


def summary_lines(run: Run) -> List[str]:
    cells = run.cells()
    if not cells:
        return []
    present = [cid for cid in C.CONTENDERS if any(r.contender == cid for r in run.rows)]
    rows = []
    for task, profile in cells:
        out = [task, profile]
        for cid in present:
            row = run.find(task, profile, cid)
            if row is None or not row.timed:
                out.append("stopped" if row is not None and row.stopped else "–")
                continue
            ratio = run.ratio(row, "json")
            out.append(per_frame(row.median / row.frames) + (f" ({_x(ratio, 1)})" if ratio is not None else ""))
        rows.append(out)
    return [
        "## Summary: median time per frame (speed vs stdlib json)",
        "",
        *table(
            ["task", "profile", *(C.CONTENDER_LABELS[c] for c in present)], rows, [False, False] + [True] * len(present)
        ),
        "",
    ]


def detail_lines(run: Run) -> List[str]:
    lines: List[str] = []
    for task, profile in run.cells():
        corpus = next(c for c in run.corpora if c.profile == profile)
        lines += [
            f"### {task} · {profile} — {C.TASK_TITLES[task]}",
            f"{corpus.n_frames:,} frames, {corpus.n_bytes / 1e6:.1f} MB",
            "",
        ]
        rows = []
        notes: List[str] = []
        for row in run.cell(task, profile):
            name = f"{row.label}: {row.name}"
            if not row.timed:
                rows.append([name, "–", "–", "–", "–", "–", "–", "–", "0", _row_status(row, notes)])
                continue
            rows.append(
                [
                    name,
                    f"{row.median * 1e3:.2f}",
                    f"{min(row.times) * 1e3:.2f}",
                    f"{max(row.times) * 1e3:.2f}",
                    f"{row.frames_per_second / 1e6:.3f}",
                    f"{row.mb_per_second:,.0f}",
                    _x(run.ratio(row, "json")),
                    _x(run.ratio(row, "orjson")),
                    str(len(row.times)),
                    _row_status(row, notes),
                ]
            )
        lines += table(
            [
                "contender",
                "median ms",
                "min ms",
                "max ms",
                "M frames/s",
                "MB/s",
                "vs json",
                "vs orjson",
                "runs",
                "correct",
            ],
            rows,
            [False, True, True, True, True, True, True, True, True, False],
        )
        lines += [""] + [f"{i}. {text}" for i, text in enumerate(notes, 1)] + ([""] if notes else [])
    if run.memory:
        lines += [
            f"### state · memory per retained tool call ({run.args.memory_frames:,}-frame mixed stream, RSS growth of a fresh process)",
            "",
        ]
        lines += table(
            ["contender", "bytes per tool call"],
            [[MEMORY_NAMES[c], "n/a" if v is None else f"{v:,.0f}"] for c, v in run.memory.items()],
            [False, True],
        )
        lines.append("")
    return lines


def scaling_lines(run: Run) -> List[str]:
    if not run.scaling:
        return []
    sizes = run.scaling_sizes
    rows = []
    notes = []
    for result in run.scaling:
        got = dict(result.points)
        cells = [per_frame(got[n] / n) if n in got else "–" for n in sizes]
        exponent = f"{result.exponent:.3f}" if result.exponent is not None else "–"
        note = (result.skip and f"skipped: {result.skip}") or result.stopped or ""
        rows.append([f"{C.CONTENDER_LABELS[result.contender]}: {result.name}", *cells, exponent])
        if note:
            notes.append(f"- {C.CONTENDER_LABELS[result.contender]}: {note}")
    return [
        f"## scaling — {C.TASK_TITLES['scaling']}",
        (
            f"{SCALING_PROFILE} traffic (seed {run.args.seed}), time per frame of one pass over the first N frames "
            "(one untimed warm-up pass at each size, then the median of at least 3 passes and of up to 100 until they take 0.2 s; 1 pass for passes over 2 s; garbage collector on, as in a long-running client); "
            f"exponent = least-squares slope of log(time) vs log(N), 1.0 = linear; a contender whose next pass is "
            f"projected past {run.args.scaling_budget:g} s is stopped."
        ),
        "",
        *table(["contender", *(f"{n:,}" for n in sizes), "exponent"], rows, [False] + [True] * (len(sizes) + 1)),
        "",
        *notes,
        *([""] if notes else []),
    ]


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


def target_lines(run: Run) -> List[str]:
    rows = [[t["target"], t["measured"], t["met"] or "–"] for t in targets(run)]
    return [
        "## Targets (acp-fast Rust backend unless noted; medians of this run)",
        "",
        *table(["target", "measured", "met?"], rows, [False, False, False]),
        "",
    ]


#: A result whose median pass is this much slower than its fastest pass varied too much to trust.
NOISY_SPREAD = 1.25


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


def noise_lines(run: Run, most: int = 8) -> List[str]:
    """A warning listing the results whose passes varied too much (ratios then move)."""
    noisy = noisy_rows(run)
    if not noisy:
        return []
    timed = sum(1 for row in run.rows if len(row.times) >= 3)
    rows = [
        [
            f"{row.task} · {row.profile}",
            f"{row.label}: {row.name}",
            str(len(row.times)),
            f"{min(row.times) * 1e3:.2f}",
            f"{row.median * 1e3:.2f}",
            f"{spread:.2f}×",
        ]
        for row, spread in noisy[:most]
    ]
    return [
        "## Noise",
        "",
        f"{len(noisy)} of {timed} results have a median pass more than "
        f"{(NOISY_SPREAD - 1) * 100:.0f} % slower than their fastest: their passes varied (a busy "
        "machine, or caches and allocator state left by the passes timed between them), so "
        "ratios that involve them move from run to run. Run again on a quiet machine, or with a "
        "longer --budget (more passes per median)." + (f" The {most} worst:" if len(noisy) > most else ""),
        "",
        *table(
            ["task", "contender", "runs", "min ms", "median ms", "median / min"],
            rows,
            [False, False, True, True, True, True],
        ),
        "",
    ]


def render(run: Run) -> str:
    lines = header_lines(run) + summary_lines(run) + target_lines(run) + noise_lines(run)
    if run.rows or run.memory:
        lines += ["## Details", ""] + detail_lines(run)
    lines += scaling_lines(run)
    return "\n".join(lines).rstrip("\n") + "\n"


def to_json(run: Run) -> Dict[str, Any]:
    def row_json(row: Row) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "task": row.task,
            "profile": row.profile,
            "contender": row.contender,
            "label": row.label,
            "name": row.name,
            "primary": row.primary,
            "frames": row.frames,
            "bytes": row.bytes,
            "status": "timed" if row.timed else "skipped" if row.skip else "stopped" if row.stopped else "failed",
            "skip": row.skip,
            "stopped": row.stopped,
            "correct": row.problem is None if row.timed else None,
            "problem": row.problem,
            "runs": len(row.times),
            "times_s": row.times,
        }
        if row.timed:
            out.update(
                median_s=row.median,
                min_s=min(row.times),
                max_s=max(row.times),
                frames_per_s=row.frames_per_second,
                mb_per_s=row.mb_per_second,
                ns_per_frame=row.ns_per_frame,
                vs_json=run.ratio(row, "json"),
                vs_orjson=run.ratio(row, "orjson"),
            )
        return out

    return {
        "format": "acp-fast-bench/1",
        "command": ["acp-fast", "bench", *run.args.argv],
        "environment": run.environment,
        "elapsed_s": run.elapsed,
        "config": {
            "tasks": run.args.tasks,
            "profiles": run.args.profiles,
            "contenders": run.args.contenders,
            "seed": run.args.seed,
            "budget_s": run.args.budget,
            "min_runs": run.args.min_runs,
            "max_runs": run.args.max_runs,
            "pass_budget_s": run.args.pass_budget,
            "scaling_budget_s": run.args.scaling_budget,
        },
        "corpora": [
            {
                "profile": c.profile,
                "protocol_version": c.version,
                "frames": c.n_frames,
                "bytes": c.n_bytes,
                "seed": c.seed,
            }
            for c in run.corpora
        ],
        "results": [row_json(row) for row in run.rows],
        "memory": {
            "frames": run.args.memory_frames,
            "bytes_per_tool_call": dict(run.memory),
        }
        if run.memory
        else None,
        "scaling": {
            "profile": SCALING_PROFILE,
            "sizes": run.scaling_sizes,
            "budget_s": run.args.scaling_budget,
            "contenders": [
                {
                    "contender": r.contender,
                    "label": C.CONTENDER_LABELS[r.contender],
                    "name": r.name,
                    "points": [
                        {"frames": n, "seconds": t, "ns_per_frame": t / n * 1e9, "runs": k}
                        for (n, t), k in zip(r.points, r.runs)
                    ],
                    "exponent": r.exponent,
                    "stopped": r.stopped,
                    "skip": r.skip,
                }
                for r in run.scaling
            ],
        }
        if run.scaling
        else None,
        "targets": targets(run),
        "noisy": [
            {
                "task": row.task,
                "profile": row.profile,
                "contender": row.contender,
                "name": row.name,
                "median_over_min": spread,
            }
            for row, spread in noisy_rows(run)
        ],
    }


# ---------------------------------------------------------------------------------------------
# Plot


def _matplotlib() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


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
        present = [cid for cid in C.CONTENDERS if any(r.contender == cid and r.timed for r in run.rows)]
        height = 0.8 / max(1, len(present))
        for k, cid in enumerate(present):
            ys, xs = [], []
            for i, (task, profile) in enumerate(cells):
                row = run.find(task, profile, cid)
                value = run.ratio(row, "json") if row is not None else None
                if value is not None:
                    ys.append(i + (k - (len(present) - 1) / 2) * height)
                    xs.append(value)
            # bars grow from 1.0 (as fast as json): right = faster, left = slower
            ax.barh(
                ys, [x - 1.0 for x in xs], left=1.0, height=height, color=colors[cid], label=C.CONTENDER_LABELS[cid]
            )
            for i, (task, profile) in enumerate(cells):
                row = run.find(task, profile, cid)
                if row is not None and row.stopped is not None:
                    y = i + (k - (len(present) - 1) / 2) * height
                    ax.text(1.0, y, " stopped (too slow)", color=colors[cid], fontsize="x-small", va="center")
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


# ---------------------------------------------------------------------------------------------
# Entry point


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    args.tasks = _flatten(args.tasks, C.TASKS)
    args.profiles = _flatten(args.profiles, traffic.PROFILES)
    args.contenders = _flatten(args.contenders, C.CONTENDERS)
    for name in ("budget", "pass_budget", "scaling_budget", "mb"):
        if getattr(args, name) < 0:
            print(f"acp-fast bench: --{name.replace('_', '-')} must not be negative", file=sys.stderr)
            return 2
    if args.min_runs < 1 or args.max_runs < args.min_runs:
        print("acp-fast bench: need 1 <= --min-runs <= --max-runs", file=sys.stderr)
        return 2
    if args.scaling_min < 1 or args.scaling_max < args.scaling_min:
        print("acp-fast bench: need 1 <= --scaling-min <= --scaling-max", file=sys.stderr)
        return 2
    if args.plot and _matplotlib() is None:
        print(
            "acp-fast bench: --plot needs matplotlib, which is not installed here.\n"
            "Install it with `pip install matplotlib` (or `pip install 'acp-fast[bench]'`), or run without --plot.",
            file=sys.stderr,
        )
        return 2
    try:
        backends = C.load_backends()
    except C.DebugBuildError as exc:
        if "rust" in args.contenders:
            print(f"acp-fast bench: {exc}", file=sys.stderr)
            return 2
        backends = {"rust": f"{exc}", "python": __import__("acp_fast._fallback", fromlist=["x"])}
    run = execute(args, backends)
    sys.stdout.write(render(run))
    sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(run), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"acp-fast bench: results written to {args.json}", file=sys.stderr)
    if args.plot:
        plot(run, args.plot)
        print(f"acp-fast bench: chart written to {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
