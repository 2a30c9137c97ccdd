"""The report of ``acp-fast bench``: Markdown tables (that also read as tables on a terminal)
and the machine-readable JSON."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence

from . import contenders as C
from .noise import NOISY_SPREAD, load_sentences, machine_load, noisy_rows
from .results import SCALING_MIN_TIME, SCALING_PROFILE, SCALING_REPEAT_BELOW, Row, Run
from .targets import targets

#: What the memory probe measures, per contender (state.memory_per_tool_call).
MEMORY_NAMES = {
    "rust": "acp-fast (Rust): ToolCallStore",
    "python": "acp-fast (fallback): ToolCallStore",
    "orjson": "orjson.loads + dict accumulator",
}


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[bool]) -> List[str]:
    """A Markdown pipe table padded so that it also reads as a table on a terminal."""
    rows = [list(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right)) + "|"
    return [line(headers), rule, *(line(r) for r in rows)]


def fit(markdown: str, width: int) -> str:
    """The Markdown report for a terminal of ``width`` columns (``--detail`` at a terminal): a
    table wider than that becomes one entry per row (its first cell, then ``header value`` pairs),
    a longer line of text is wrapped; code blocks and what fits stay as they are."""
    import textwrap

    out: List[str] = []
    lines = markdown.splitlines()
    i = 0
    code = False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            code = not code
        if not code and line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            if max(len(b) for b in block) <= width or len(block) < 2:
                out += block
                continue
            cells = [[c.strip() for c in b.strip().strip("|").split("|")] for b in block]
            headers, rows = cells[0], cells[2:]
            for row in rows:
                pairs = "; ".join(f"{h} {c}" for h, c in zip(headers[1:], row[1:]) if c)
                out += textwrap.wrap(f"{row[0]}: {pairs}", width, initial_indent="- ", subsequent_indent="    ") or [""]
            continue
        if not code and len(line) > width:
            indent = " " * (len(line) - len(line.lstrip()))
            out += textwrap.wrap(line, width, subsequent_indent=indent + "  ") or [""]
        else:
            out.append(line)
        i += 1
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")


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
        f"- {' '.join(load_sentences(run))}",
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
            f"(one untimed warm-up pass at each size, then the fastest of at least 3 passes and of up to 100 until they take {SCALING_MIN_TIME:g} s; "
            f"1 pass for passes over {SCALING_REPEAT_BELOW:g} s, 2 before a stop; garbage collector on, as in a long-running client); "
            f"exponent = least-squares slope of log(time) vs log(N), 1.0 = linear; a contender whose next pass is "
            f"projected past {run.args.scaling_budget:g} s is stopped."
        ),
        "",
        *table(["contender", *(f"{n:,}" for n in sizes), "exponent"], rows, [False] + [True] * (len(sizes) + 1)),
        "",
        *notes,
        *([""] if notes else []),
    ]


def target_lines(run: Run) -> List[str]:
    rows = [[t["target"], t["measured"], t["met"] or "–"] for t in targets(run)]
    return [
        "## Targets (acp-fast Rust backend unless noted; medians of this run)",
        "",
        *table(["target", "measured", "met?"], rows, [False, False, False]),
        "",
    ]


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


def render(run: Run, with_targets: bool = False) -> str:
    """The full Markdown report; the project's targets (targets.py) only with ``with_targets``."""
    lines = header_lines(run) + summary_lines(run) + (target_lines(run) if with_targets else []) + noise_lines(run)
    if run.rows or run.memory:
        lines += ["## Details", ""] + detail_lines(run)
    lines += scaling_lines(run)
    if run.coalesce:
        from .coalesce import markdown

        lines += [
            "## Long tool output through the proxy (`--coalesce`)",
            "",
            (
                "Cumulative tool output through `acp-fast proxy` as it is and with `--coalesce 50` (a: one tool "
                "call re-sent whole per output line; b: eight round-robin with message chunks and a permission; c: "
                "a v2 agent's terminal chunks to a v1 editor through `--bridge 1:2`); bytes and frames each side "
                "saw, the editor's CPU to parse them (orjson; the ACP SDK's client when installed), the proxy's CPU "
                "and peak RSS (of the proxy or its agent), the latency added to the final states, and whether the "
                "editor's final state is the one the agent's frames give. `python -m acp_fast.bench.coalesce` runs "
                "it at full size."
            ),
            "",
            *markdown(run.coalesce),
            "",
        ]
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
            "hiccups": row.hiccups,
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
        "cpu_s": run.cpu_seconds,
        "machine_load": machine_load(run),
        "coalesce": run.coalesce,
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
                    "hiccups": r.hiccups,
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
