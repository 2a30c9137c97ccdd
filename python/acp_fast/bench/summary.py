"""The short report ``acp-fast bench`` prints by default: plain text that fits ``WIDTH`` columns.

One table of speed against stdlib json per task and profile, the state-scaling exponents, the
memory per tool call, anything that went wrong, how busy the machine was, and where the full
report is (``--detail``, ``--markdown FILE``, ``--json FILE``, ``--plot FILE.png``).
"""

from __future__ import annotations

import textwrap
from typing import Dict, List, Optional, Sequence

from . import contenders as C
from .noise import load_sentences
from .render import per_frame
from .results import SCALING_PROFILE, Row, Run
from .targets import targets

#: The widest line of the summary (a terminal of 100 columns shows it unwrapped).
WIDTH = 100

#: Short column names for the contenders.
SHORT: Dict[str, str] = {
    "rust": "Rust",
    "python": "fallback",
    "json": "json",
    "orjson": "orjson",
    "msgspec": "msgspec",
    "sdk": "ACP SDK",
}


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool], gap: int = 2) -> List[str]:
    """Plain aligned columns (no rules or pipes)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = (" " * gap).join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right))
        return out.rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _wrap(text: str, indent: str = "") -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [""]


def _ratio(value: Optional[float]) -> str:
    if value is None:
        return "–"
    if value >= 10:
        return f"{value:.0f}×"
    if value >= 0.995:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def _mark(row: Row, notes: List[str], short: bool = False) -> str:
    """The cell of a row that was not timed, or timed and wrong: a word and a note number
    (``short``: a shorter word, for a table that would not fit otherwise)."""
    if row.problem is not None:
        text, word = f"{row.label}, {row.task} · {row.profile}: WRONG RESULT: {row.problem}", "WRONG"
    elif row.stopped is not None:
        text, word = f"{row.label}, {row.task} · {row.profile}: {row.stopped}", "stop" if short else "stopped"
    else:
        reason = row.skip or "not run"
        text, word = f"{row.label} on {row.profile}: skipped, {reason}", "skip" if short else "skipped"
    return f"{word} ({_note(notes, text)})"


def header(run: Run) -> List[str]:
    env = run.environment
    native = f"{env['native_build']} build" if env.get("native_build") else "native module unavailable"
    python = str(env.get("python", "?")).split(" ")[0]
    commit = f"commit {env['commit']}" if env.get("commit") else "not a source checkout"
    return _wrap(
        f"acp-fast bench: acp-fast {env.get('acp_fast', '?')} ({native}), {commit}, Python {python}, "
        f"{env.get('cpu', '?')} ({env.get('cpus', '?')} CPUs), {run.elapsed:.0f} s"
    )


def speed_lines(run: Run, notes: List[str]) -> List[str]:
    cells = run.cells()
    if not cells:
        return []
    present = [cid for cid in C.CONTENDERS if any(r.contender == cid for r in run.rows)]
    headers = ["task · profile", "Rust/frame", *(SHORT[c] for c in present)]
    table: List[str] = []
    for short in (False, True):
        rows = []
        for task, profile in cells:
            rust = run.find(task, profile, "rust")
            first = per_frame(rust.median / rust.frames) if rust is not None and rust.timed else "–"
            out = [f"{task} · {profile}", first]
            for cid in present:
                row = run.find(task, profile, cid)
                if row is None:
                    out.append("–")
                elif not row.timed or row.problem is not None:
                    out.append(_mark(row, notes, short))
                else:
                    out.append(_ratio(run.ratio(row, "json")))
            rows.append(out)
        table = columns(headers, rows, [False, True] + [True] * len(present))
        if max(map(len, table)) <= WIDTH:
            break
    legend = "; ".join(f"{SHORT[c]} = {C.CONTENDER_LABELS[c]}" for c in present if SHORT[c] != C.CONTENDER_LABELS[c])
    return [
        "Speed against stdlib json (× faster, medians of the same run; higher is better):",
        "",
        *table,
        *(_wrap(f"({legend}; Rust/frame: median time per frame of acp-fast's Rust backend.)") if legend else []),
        "",
    ]


def scaling_lines(run: Run, notes: List[str]) -> List[str]:
    results = [r for r in run.scaling if r.points or r.skip or r.stopped]
    if not results:
        return []
    sizes = run.scaling_sizes
    shown = sorted({sizes[0], sizes[len(sizes) // 2], sizes[-1]}) if sizes else []
    rows = []
    for result in run.scaling:
        got = dict(result.points)
        cells = [per_frame(got[n] / n) if n in got else "–" for n in shown]
        if result.skip:
            exponent = f"skipped ({_note(notes, f'{C.CONTENDER_LABELS[result.contender]}: {result.skip}')})"
        else:
            exponent = f"{result.exponent:.2f}" if result.exponent is not None else "–"
            if result.stopped:
                text = f"{C.CONTENDER_LABELS[result.contender]}, scaling: {result.stopped}"
                exponent += f", stopped ({_note(notes, text)})"
        rows.append([SHORT[result.contender], *cells, exponent])
    return [
        *_wrap(
            f"State accumulation vs stream length ({SCALING_PROFILE} traffic, time per frame; "
            "growth exponent 1.0 = linear):"
        ),
        "",
        *columns(
            ["contender", *(f"{n:,} frames" for n in shown), "exponent"], rows, [False] + [True] * len(shown) + [True]
        ),
        "",
    ]


def _note(notes: List[str], text: str) -> int:
    if text not in notes:
        notes.append(text)
    return notes.index(text) + 1


def memory_lines(run: Run) -> List[str]:
    if not run.memory:
        return []
    names = {"rust": "Rust", "python": "fallback", "orjson": "orjson + dict"}
    parts = [f"{names[c]} {'n/a' if v is None else f'{v:,.0f} B'}" for c, v in run.memory.items()]
    return _wrap(
        f"Memory per retained tool call ({run.args.memory_frames:,} mixed frames): " + ", ".join(parts) + "."
    ) + [""]


def target_lines(run: Run) -> List[str]:
    lines = ["The project's targets (Rust backend unless noted; benches/RESULTS.md tracks them):"]
    for t in targets(run):
        lines += _wrap(f"- {t['target']}: {t['met'] or '–'} ({t['measured']})")
    return lines + [""]


def checks_line(run: Run) -> List[str]:
    timed = [row for row in run.rows if row.timed]
    wrong = [row for row in timed if row.problem is not None]
    if not timed:
        return []
    if wrong:
        return _wrap(f"{len(wrong)} of {len(timed)} timed results were WRONG (see the notes).") + [""]
    return _wrap(f"Every timed result ({len(timed)}) was checked against a stdlib-json reference: all correct.") + [""]


def summary(run: Run, with_targets: bool = False) -> str:
    """The short report: fits ``WIDTH`` columns."""
    notes: List[str] = []
    lines = header(run) + [""]
    lines += speed_lines(run, notes)
    lines += scaling_lines(run, notes)
    lines += memory_lines(run)
    if with_targets:
        lines += target_lines(run)
    for i, text in enumerate(notes, 1):
        lines += _wrap(f"({i}) {text}")
    if notes:
        lines.append("")
    lines += checks_line(run)
    for sentence in load_sentences(run):
        lines += _wrap(sentence)
    lines.append("")
    lines += _wrap(
        "More: --detail (every table: min/median/max, frames/s, MB/s, ratios to orjson), --markdown FILE, "
        "--json FILE, --plot FILE.png" + ("" if with_targets else ", --targets (the project's own goals)") + "."
    )
    return "\n".join(line.rstrip() for line in lines) + "\n"
