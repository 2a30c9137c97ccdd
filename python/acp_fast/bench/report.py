"""``acp-fast bench``: how fast each way of handling ACP traffic is on this machine.

Runs on built-in, seeded ACP traffic ([`acp_fast.traffic`][acp_fast.traffic]; profiles mixed, large, tiny, v2)
and times every contender (acp-fast's Rust backend and its pure-Python fallback, stdlib json,
orjson, msgspec, and the official ACP Python SDK: json + its pydantic models) at every task
(decode + field access, full materialization, encode, passthrough, tool-call state
accumulation, and how state accumulation scales with the stream's length).

Method: for each task and profile, every contender first runs untimed on the corpus (its result
is checked against a stdlib-json reference). Before that, a probe times passes over its first
500, 1,000, 2,000, ... frames; a contender whose one pass over the corpus is projected past
``--pass-budget`` is stopped and reported as such, but only once the sizes the projection rests
on have been timed again (three passes each, the fastest counts): one slow pass on a busy machine
never stops a contender. Then the contenders run timed passes over the whole corpus in
interleaved rounds, each at least ``--min-runs`` times and until it has spent ``--budget``
seconds (at most ``--max-runs``), garbage collector off while timing. Ratios to stdlib json and
orjson are taken from medians of the same run.

Output: a short summary on stdout that fits 100 columns (speed against stdlib json per task and
profile, the scaling exponents, memory per tool call, anything stopped, skipped or wrong, and how
busy the machine was); ``--detail`` prints the full Markdown report instead (median / min / max
per pass, frames/s, MB/s, both ratios, and long tool output through the proxy with and without
``--coalesce``, ``bench/coalesce.py`` at small sizes), ``--markdown FILE`` writes it, ``--json FILE`` writes
every number, ``--plot FILE.png`` draws a chart, ``--targets`` adds the project's own goals.
Progress goes to stderr. A debug build of the native module is refused.

This module is the command line; the run itself is in ``runner.py``, its results in
``results.py`` and ``environment.py``, the summary in ``summary.py``, the Markdown report and the
JSON in ``render.py`` with the targets in ``targets.py``, the noise verdict in ``noise.py``, and
the chart in ``plot.py``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# `from .m import X as X`: re-exported, the names tests and benches use from this module.
from .. import traffic
from .._outputs import check_target
from ..cli._usage import Parser, fail, integer, number
from . import contenders as C
from .noise import noisy_rows as noisy_rows
from .plot import _matplotlib, plot
from .render import fit, render, to_json
from .render import noise_lines as noise_lines
from .render import table as table
from .results import Row as Row
from .results import Run as Run
from .runner import _scaling_makers as _scaling_makers
from .runner import corpus_sizes as corpus_sizes
from .runner import execute
from .runner import over_budget as over_budget
from .summary import summary
from .targets import per_frame_spread as per_frame_spread

# ---------------------------------------------------------------------------------------------
# Command line

#: Corpus size per profile (MB) of the command. Half the pytest-benchmark suite's corpora
#: (contenders.DEFAULT_MB): the timed passes are budgeted in seconds, so a bigger corpus only
#: makes the slow contenders' passes longer, and the whole run is meant to take about a minute
#: and a half on a busy 2-core machine.
MB = 2.0


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
    ap = Parser(
        prog="acp-fast bench",
        description="Time each way of handling ACP traffic on this machine, on built-in seeded traffic.",
        epilog=(
            "Examples: `acp-fast bench` (everything, about 40 s on a quiet 2-core machine, 1.5 min on a busy one); "
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
    size.add_argument("--mb", type=number(0), default=MB, help="corpus size per profile in MB (default %(default)g)")
    size.add_argument(
        "--frames",
        action="append",
        type=_frames_spec,
        default=[],
        metavar="[PROFILE=]N",
        help="frames per corpus instead of --mb: N for every profile, PROFILE=N for one (repeatable)",
    )
    size.add_argument("--seed", type=integer(), default=0, help="traffic seed (default %(default)s)")
    size.add_argument(
        "--scaling-min",
        type=integer(1),
        metavar="N",
        default=1_000,
        help="shortest stream of the scaling task (default %(default)s)",
    )
    size.add_argument(
        "--scaling-max",
        type=integer(1),
        metavar="N",
        default=100_000,
        help="longest stream of the scaling task (default %(default)s; 1000000 for the full 1k-1M run)",
    )
    size.add_argument(
        "--memory-frames",
        type=integer(0),
        metavar="N",
        default=50_000,
        help="frames of the memory-per-tool-call probe of the state task (0 to skip; default %(default)s)",
    )
    timing = ap.add_argument_group("timing")
    timing.add_argument(
        "--budget",
        type=number(0),
        metavar="SECONDS",
        default=0.15,
        help="seconds of timed passes per contender and corpus (default %(default)g)",
    )
    timing.add_argument(
        "--min-runs",
        type=integer(1),
        metavar="N",
        default=3,
        help="timed passes per contender, at least (default %(default)s)",
    )
    timing.add_argument(
        "--max-runs",
        type=integer(1),
        metavar="N",
        default=30,
        help="timed passes per contender, at most (default %(default)s)",
    )
    timing.add_argument(
        "--pass-budget",
        type=number(0, finite=False),
        metavar="SECONDS",
        default=1.5,
        help="stop a contender whose one pass over a corpus is projected past this many seconds (default %(default)g)",
    )
    timing.add_argument(
        "--scaling-budget",
        type=number(0, finite=False),
        metavar="SECONDS",
        default=None,
        help="scaling: stop a contender whose next pass is projected past this many seconds (default 5, "
        "or 15 with a --scaling-max over 100000)",
    )
    out = ap.add_argument_group("output (by default a short summary that fits 100 columns)")
    out.add_argument(
        "--detail",
        action="store_true",
        help="print the full Markdown report (every table) instead of the summary; at a terminal, fitted to its width "
        "(--markdown FILE writes it as it is)",
    )
    out.add_argument("--markdown", metavar="FILE", help="write the full Markdown report to FILE")
    out.add_argument("--json", metavar="FILE", help="write every result as JSON to FILE")
    out.add_argument(
        "--targets",
        action="store_true",
        help="add the project's own performance targets, met or not (benches/RESULTS.md tracks them)",
    )
    out.add_argument(
        "--plot", metavar="FILE.png", help="draw a chart to FILE.png (needs matplotlib: pip install 'acp-fast[bench]')"
    )
    out.add_argument(
        "--long-output",
        type=number(0, finite=True),
        metavar="SCALE",
        default=1.0,
        help="--detail / --markdown: the long tool output section (the proxy with and without --coalesce) at "
        "SCALE times its sizes (default 1: a few seconds; 0 leaves it out)",
    )
    out.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    return ap


# ---------------------------------------------------------------------------------------------
# Entry point


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = parser()
    args = ap.parse_args(argv)
    args.argv = argv
    args.tasks = _flatten(args.tasks, C.TASKS)
    args.profiles = _flatten(args.profiles, traffic.PROFILES)
    args.contenders = _flatten(args.contenders, C.CONTENDERS)
    if args.scaling_budget is None:
        args.scaling_budget = 5.0 if args.scaling_max <= 100_000 else 15.0
    if args.max_runs < args.min_runs:
        return fail("acp-fast bench", "need 1 <= --min-runs <= --max-runs")
    if args.scaling_max < args.scaling_min:
        return fail("acp-fast bench", "need 1 <= --scaling-min <= --scaling-max")
    for option, path in (("--json", args.json), ("--markdown", args.markdown), ("--plot", args.plot)):
        problem = check_target(path) if path else None
        if problem is not None:
            ap.error(f"{option} {path}: {problem}")
    if args.plot and _matplotlib() is None:
        return fail(
            "acp-fast bench",
            "--plot needs matplotlib, which is not installed here: pip install matplotlib "
            "(or pip install 'acp-fast[bench]'), or run without --plot",
        )
    try:
        backends = C.load_backends()
    except C.DebugBuildError as exc:
        if "rust" in args.contenders:
            return fail("acp-fast bench", str(exc))
        backends = {"rust": f"{exc}", "python": __import__("acp_fast._fallback", fromlist=["x"])}
    run = execute(args, backends)
    if (args.detail or args.markdown) and args.long_output > 0:
        from . import coalesce

        def note(text: str) -> None:
            if not args.no_progress:
                print(f"acp-fast bench: long tool output, {text} ...", file=sys.stderr, flush=True)

        sizes = {k: max(1, round(n * args.long_output)) for k, n in coalesce.DETAIL_SIZES.items()}
        run.coalesce = coalesce.run_all("abc", sizes, ["--coalesce 50"], note)
    if args.detail:
        text = render(run, args.targets)
        if sys.stdout.isatty():  # fit the terminal; piped or redirected, the Markdown as it is
            text = fit(text, shutil.get_terminal_size().columns)
        sys.stdout.write(text)
    else:
        sys.stdout.write(summary(run, args.targets))
    sys.stdout.flush()
    if args.markdown:
        Path(args.markdown).write_text(render(run, args.targets), encoding="utf-8")
        print(f"acp-fast bench: report written to {args.markdown}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(run), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"acp-fast bench: results written to {args.json}", file=sys.stderr)
    if args.plot:
        plot(run, args.plot)
        print(f"acp-fast bench: chart written to {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
