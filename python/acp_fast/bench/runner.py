"""Running ``acp-fast bench``: the corpora, the probe that stops a contender too slow for a
corpus, the checked and timed passes of every task, the scaling task and the memory probe."""

from __future__ import annotations

import argparse
import functools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import traffic
from . import contenders as C
from . import state as S
from .environment import cpu_seconds, environment
from .results import SCALING_MIN_TIME, SCALING_PROFILE, SCALING_REPEAT_BELOW, Row, Run
from .timing import Progress, gc_off, measure

#: The first probe pass (frames) and the time that ends probing (see probe(), --pass-budget).
PROBE_FRAMES = 500
PROBE_SECONDS = 0.05
#: Passes over each of the sizes a stop rests on: a contender is stopped only when the fastest of
#: this many passes at each size still projects past the budget (noise only ever adds time).
CONFIRM_PASSES = 3

#: The probe's clock (a test injects noise through it).
clock: Callable[[], float] = time.perf_counter


def corpus_sizes(args: argparse.Namespace, profiles: Sequence[str]) -> Dict[str, int]:
    sizes = {profile: C.frames_for_mb(profile, args.mb) for profile in profiles}
    for profile, n in args.frames:
        for name in [profile] if profile else profiles:
            if name in sizes:
                sizes[name] = n
    return sizes


@dataclass
class Probe:
    """What ``probe`` measured: ``points`` are ``(frames, fastest pass in seconds)``,
    ``passes`` how many passes each point took, ``projected`` the projected full pass that
    decided, ``stop`` whether it stops the contender, ``cleared`` how many projections past the
    budget did not survive the passes timed again (a hiccup of the machine, not the contender)."""

    points: List[Tuple[int, float]] = field(default_factory=list)
    passes: List[int] = field(default_factory=list)
    projected: float = 0.0
    stop: bool = False
    #: The stop rests on the linear projection (a lower bound) rather than on the growth.
    linear: bool = False
    cleared: int = 0


def _stop_note(found: Probe, n: int, budget: float) -> str:
    (k, seconds), passes = found.points[-1], found.passes[-1]
    if found.linear:
        growth = ""
        if len(found.points) >= 2:
            growth = f"; growth exponent {S.growth_exponent(found.points[-2:]):.2f} from {found.points[-2][0]:,} frames"
        evidence = f"the fastest of {passes} passes over the first {k:,} frames took {seconds:.3f} s{growth}"
        projected = f"{found.projected:,.1f} s or more"
    else:
        (k0, seconds0), passes = found.points[-2], min(found.passes[-2:])
        evidence = (
            f"the fastest of {passes} passes over the first {k0:,} and {k:,} frames took {seconds0:.3f} s and "
            f"{seconds:.3f} s: growth exponent {S.growth_exponent(found.points[-2:]):.2f}"
        )
        projected = f"{found.projected:,.1f} s"
    return (
        f"stopped: one pass over {n:,} frames projected at {projected}, over --pass-budget {budget:g} s "
        f"({evidence}); see the scaling task"
    )


def probe(contender: C.Contender, corpus: C.Corpus, prefixes: Dict[int, C.Corpus], budget: float) -> Probe:
    """Passes over growing prefixes of ``corpus`` (500, 1,000, 2,000, ... frames, up to half the
    corpus) that decide whether a full pass would take more than ``budget`` seconds (a contender
    whose cost per frame grows with the stream would otherwise hold the run for minutes).

    A stop rests on measured evidence that survives noise, never on one pass:

    - the contender is stopped when a pass, scaled linearly to the whole corpus, is past the
      budget (a lower bound for anything whose cost per frame does not fall as the stream
      grows), but only once that size has been timed again until it has ``CONFIRM_PASSES``
      passes, the fastest of which counts: one slow pass (the machine busy for a moment) can
      look ten or a hundred times slower than it is, the fastest of three cannot be inflated by
      one;
    - growth faster than linear between two small prefixes (caches: 500 frames fit in them, 4,000
      may not) is not extrapolated across the corpus: the probe goes on to the next size, and
      only at the largest (a quarter of the corpus or more) does the growth of the last two
      sizes count, both timed again alternately (a burst of load then touches both).

    Probing ends early, with no stop, once a pass takes ``PROBE_SECONDS`` and nothing projects
    past the budget."""
    make = contender.make
    assert make is not None, f"{contender.key} cannot run here: {contender.skip}"
    found = Probe()
    runs: Dict[int, Callable[[], Any]] = {}
    total = corpus.n_frames

    def one_pass(n: int) -> float:
        run = runs[n]
        C.prepare(run)
        start = clock()
        run()
        return clock() - start

    def linear() -> float:
        n, seconds = found.points[-1]
        return seconds * total / n

    def confirm(sizes: int) -> None:
        """Time the last ``sizes`` sizes again, alternately (a burst of load then touches them
        all), until each has ``CONFIRM_PASSES`` passes; the fastest pass of each counts."""
        last = range(max(0, len(found.points) - sizes), len(found.points))
        while any(found.passes[i] < CONFIRM_PASSES for i in last):
            for i in last:
                if found.passes[i] < CONFIRM_PASSES:
                    size, fastest = found.points[i]
                    found.points[i] = (size, min(fastest, one_pass(size)))
                    found.passes[i] += 1

    n = PROBE_FRAMES
    with gc_off(collect=False):  # as in the timed passes
        while 2 * n <= total:
            if n not in prefixes:
                prefixes[n] = corpus.prefix(n)
            runs[n] = make(prefixes[n])
            found.points.append((n, one_pass(n)))
            found.passes.append(1)
            largest = 4 * n > total  # no larger prefix to probe
            found.projected = S.project(found.points, total)
            if linear() > budget or (largest and found.projected > budget):
                confirm(2 if largest else 1)  # at the largest size, the growth of the last two may decide
                found.projected = S.project(found.points, total)
                if linear() > budget and not (largest and found.projected > linear()):
                    found.projected, found.linear, found.stop = linear(), True, True
                    break
                if largest and found.projected > budget:
                    found.stop = True
                    break
                found.cleared += 1
            if found.projected > budget:
                # Faster than linear between two small prefixes: measured further before it counts.
                n *= 2
                continue
            if found.points[-1][1] >= PROBE_SECONDS and len(found.points) >= 2:
                break
            n *= 2
    return found


def over_budget(
    contender: C.Contender,
    corpus: C.Corpus,
    budget: float,
    prefixes: Optional[Dict[int, C.Corpus]] = None,
    found: Optional[Probe] = None,
) -> Optional[str]:
    """Why ``contender`` is stopped on ``corpus`` (a full pass projected past ``budget`` seconds
    by ``probe``), or None when it may run. ``found``, when given, receives the probe."""
    result = probe(contender, corpus, {} if prefixes is None else prefixes, budget)
    if found is not None:
        found.__dict__.update(result.__dict__)
    return _stop_note(result, corpus.n_frames, budget) if result.stop else None


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
        found = Probe()
        row.stopped = over_budget(contender, corpus, args.pass_budget, prefixes, found)
        row.hiccups = found.cleared
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
            contender.id,
            contender.name,
            makers[contender.id],
            sizes,
            args.scaling_budget,
            min_time=SCALING_MIN_TIME,
            repeat_below=SCALING_REPEAT_BELOW,
            progress=on_size,
        )
        run.scaling.append(result)
        run.sample_load()
        exponent = f"exponent {result.exponent:.2f}" if result.exponent is not None else "one point"
        progress.step(label, exponent + ("; " + result.stopped if result.stopped else ""))


def execute(args: argparse.Namespace, backends: Dict[str, Any]) -> Run:
    started, cpu_started = time.perf_counter(), cpu_seconds()
    run = Run(args, environment(backends))
    run.sample_load()
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
            run.sample_load()
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
    run.sample_load()
    run.elapsed = time.perf_counter() - started
    run.cpu_seconds = cpu_seconds() - cpu_started
    return run
