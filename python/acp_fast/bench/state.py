"""The state tasks of ``acp-fast bench``: accumulators, scaling, growth exponent, memory.

* ``state``: applies a seeded ACP stream to a ``ToolCallStore`` straight from bytes and compares
  it, in the same run, with what people write today: a JSON parse per line plus a
  plain-dict accumulator following the same v1/v2 rules (``dict_accumulator``),
  and the official SDK's ``SessionAccumulator`` (``sdk_accumulate``).
* ``scaling``: the same on growing prefixes of one stream: time per frame at each length and the
  growth exponent (slope of log time against log frames; 1.0 is linear). A contender
  whose next pass is projected past a time budget is stopped, and the report says so
  (the SDK's accumulator rebuilds a snapshot of the whole session on every update, so
  its cost per frame grows with the stream: quadratic).

``acp-fast bench --tasks state scaling --profiles mixed`` runs both.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import orjson

from .sdk_models import sdk_path

__all__ = [
    "ScalingResult",
    "dict_accumulator",
    "growth_exponent",
    "memory_per_tool_call",
    "project",
    "run_scaling",
    "scaling_sizes",
    "sdk_accumulate",
]

_DEFAULTS = {"status": "pending", "kind": "other"}


def dict_accumulator(
    lines: Sequence[bytes], version: int = 1, loads: Callable[[bytes], Any] = orjson.loads
) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """The baseline: ``loads`` each line, keep ``{session: {toolCallId: record}}`` with the
    docs/API.md rules (what a careful hand-written Python client does)."""
    state: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for line in lines:
        msg = loads(line)
        if msg.get("method") != "session/update":
            continue
        params = msg["params"]
        update = params["update"]
        kind = update.get("sessionUpdate")
        if kind == "tool_call_update":
            calls = state.setdefault(params["sessionId"], {})
            tcid = update["toolCallId"]
            rec = calls.get(tcid)
            if rec is None:
                rec = calls[tcid] = {
                    "toolCallId": tcid,
                    "status": "pending",
                    "kind": "other",
                    "content": [],
                    "locations": [],
                }
            for k, v in update.items():
                if k == "sessionUpdate" or k == "toolCallId":
                    continue
                if v is None:
                    if version == 2:
                        if k in _DEFAULTS:
                            rec[k] = _DEFAULTS[k]
                        elif k == "content" or k == "locations":
                            rec[k] = []
                        else:
                            rec.pop(k, None)
                else:
                    rec[k] = list(v) if k == "content" else v
        elif kind == "tool_call":
            tcid = update["toolCallId"]
            rec = {"toolCallId": tcid, "status": "pending", "kind": "other", "content": [], "locations": []}
            for k, v in update.items():
                if k != "sessionUpdate" and v is not None:
                    rec[k] = list(v) if k == "content" else v
            state.setdefault(params["sessionId"], {})[tcid] = rec
        elif kind == "tool_call_content_chunk":
            calls = state.setdefault(params["sessionId"], {})
            tcid = update["toolCallId"]
            rec = calls.get(tcid)
            if rec is None:
                rec = calls[tcid] = {
                    "toolCallId": tcid,
                    "status": "pending",
                    "kind": "other",
                    "content": [],
                    "locations": [],
                }
            rec["content"].append(update["content"])
    return state


def sdk_accumulate(lines: Sequence[bytes]) -> Dict[str, Any]:
    """The official SDK's way: ``json.loads`` each line, validate every ``session/update`` as an
    ``acp.schema.SessionNotification``, and merge it into that session's
    ``acp.contrib.session_state.SessionAccumulator`` (one per session: a single accumulator
    resets itself whenever the session id changes). Returns ``{session_id: accumulator}``."""
    sdk = sdk_path()
    validate = sdk.notification.model_validate
    SessionAccumulator = sdk.accumulator
    loads = json.loads
    sessions: Dict[str, Any] = {}
    for line in lines:
        msg = loads(line)
        if msg.get("method") != "session/update":
            continue
        note = validate(msg["params"])
        acc = sessions.get(note.session_id)
        if acc is None:
            acc = sessions[note.session_id] = SessionAccumulator()
        acc.apply(note)
    return sessions


# ---------------------------------------------------------------------------------------------
# Growth


def growth_exponent(points: Sequence[Tuple[int, float]]) -> float:
    """Least-squares slope of log(total time) against log(frames): 1.0 is linear, 2.0 quadratic."""
    if len(points) < 2:
        raise ValueError("the growth exponent needs at least two points")
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den


def project(points: Sequence[Tuple[int, float]], n: int) -> float:
    """Projected time of one pass over ``n`` frames from measured ``(frames, seconds)`` points:
    the last point extrapolated with the exponent of the last two (at least 1: nothing is
    assumed to get cheaper per frame), or linearly from a single point."""
    n1, t1 = points[-1]
    exponent = 1.0
    if len(points) >= 2:
        n0, t0 = points[-2]
        if t0 > 0 and t1 > 0 and n1 != n0:
            exponent = max(1.0, math.log(t1 / t0) / math.log(n1 / n0))
    return float(t1 * (n / n1) ** exponent)


def scaling_sizes(smallest: int = 1_000, largest: int = 100_000) -> List[int]:
    """Stream lengths from ``smallest`` to ``largest`` on the 1-2-5 series (both ends included)."""
    if smallest < 1 or largest < smallest:
        raise ValueError(f"need 1 <= smallest <= largest, found {smallest}, {largest}")
    sizes = [smallest]
    decade = 10 ** math.floor(math.log10(smallest))
    while True:
        for step in (1, 2, 5):
            n = step * decade
            if n > sizes[-1] and n < largest:
                sizes.append(n)
        decade *= 10
        if decade > largest:
            break
    if sizes[-1] != largest:
        sizes.append(largest)
    return sizes


@dataclass
class ScalingResult:
    """One contender's scaling run: ``points`` are ``(frames, fastest seconds per pass)``, ``runs``
    the passes timed at each size."""

    contender: str
    name: str
    points: List[Tuple[int, float]] = field(default_factory=list)
    runs: List[int] = field(default_factory=list)
    stopped: Optional[str] = None
    skip: Optional[str] = None
    #: Projections past the budget that a pass timed again did not confirm (a hiccup).
    hiccups: int = 0

    @property
    def exponent(self) -> Optional[float]:
        return growth_exponent(self.points) if len(self.points) >= 2 else None


def run_scaling(
    contender: str,
    name: str,
    make: Callable[[int], Callable[[], Any]],
    sizes: Sequence[int],
    budget: float,
    clock: Callable[[], float] = time.perf_counter,
    repeat_below: float = 2.0,
    repeats: int = 3,
    min_time: float = 0.2,
    max_repeats: int = 100,
    progress: Optional[Callable[[int], None]] = None,
    confirm: int = 2,
) -> ScalingResult:
    """Time ``make(n)()`` for each ``n`` of ``sizes`` (ascending): the fastest of at least
    ``repeats`` passes, more until they add up to ``min_time`` seconds (at most ``max_repeats``),
    while one pass takes under ``repeat_below`` seconds, else one pass. (Three passes of a
    millisecond each left the smallest sizes to cold caches and noise; a single pass of the
    largest sizes left the growth exponent to the noise of one moment on a shared machine. The
    fastest pass, not the median: the sizes are timed one after the other, not interleaved, and
    a busy machine only ever adds time.) The garbage collector stays on (a client keeping state
    for a long session pays for its passes over a growing heap). Before each size, the pass is
    projected from the points so far (``project``); past ``budget`` seconds the last size is
    first timed again until it has ``confirm`` passes, and only if the projection from its fastest
    pass is still past the budget is the contender stopped (``stopped`` says where and why): one
    slow pass never stops a contender."""
    result = ScalingResult(contender, name)
    last: Optional[Callable[[], Any]] = None

    def timed(run: Callable[[], Any]) -> float:
        start = clock()
        run()
        return clock() - start

    for index, n in enumerate(sizes):
        if result.points:
            projected = project(result.points, n)
            if projected > budget and last is not None and result.runs[-1] < confirm:
                size, fastest = result.points[-1]
                while result.runs[-1] < confirm:
                    fastest = min(fastest, timed(last))
                    result.runs[-1] += 1
                result.points[-1] = (size, fastest)
                projected = project(result.points, n)
                if projected <= budget:
                    result.hiccups += 1
            if projected > budget:
                result.stopped = (
                    f"stopped before {n:,} frames: one pass projected at {projected:,.1f} s "
                    f"(from {result.points[-1][0]:,} frames at {result.points[-1][1]:.2f} s, the fastest of "
                    f"{result.runs[-1]} passes), over the budget of {budget:g} s per pass"
                )
                break
        last = None
        run = make(n)
        # No untimed warm-up pass: the fastest of three or more passes leaves out the first one,
        # which pays the kernel for fresh pages (a warm-up pass at every size used to do that, at
        # the cost of one more pass per size). A pass of repeat_below seconds or more is timed
        # once, and the first touch of fresh memory is a small part of it.
        gc.collect()  # start clean; the collector stays on, as in a long-running client
        times: List[float] = []
        while True:
            times.append(timed(run))
            if times[-1] >= repeat_below:
                break
            if len(times) >= repeats and (sum(times) >= min_time or len(times) >= max_repeats):
                break
        last = run
        result.points.append((n, min(times)))
        result.runs.append(len(times))
        if progress is not None:
            progress(index)
    return result


# ---------------------------------------------------------------------------------------------
# Memory


_MEMORY_PROBE = r"""
import gc, sys
from acp_fast import traffic
kind, n = sys.argv[1], int(sys.argv[2])
data = traffic.generate("mixed", n, seed=7)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
cut = data.index(b"\n", len(data) // 100) + 1
head, tail = data[:cut], data[cut:]
if kind == "dict":
    from acp_fast.bench.state import dict_accumulator
    head, tail = head.splitlines(), tail.splitlines()
    state = {}
    def feed(lines):
        for sid, calls in dict_accumulator(lines).items():
            state.setdefault(sid, {}).update(calls)
    count = lambda: sum(map(len, state.values()))
else:
    backend = __import__("acp_fast." + kind, fromlist=["x"])
    store = backend.ToolCallStore(1)
    feed = lambda d: store.feed(d, changes=False)
    count = lambda: len(store)
feed(head)  # warm up allocator pools and caches
gc.collect()
before = rss()
feed(tail)
gc.collect()
print(rss() - before, count())
"""


def memory_per_tool_call(module: str, n: int) -> Optional[float]:
    """Resident bytes held per retained tool call: RSS growth of a fresh process while a store
    (``module`` = ``"_native"`` or ``"_fallback"``) or the dict accumulator (``"dict"``) takes ``n``
    mixed-profile frames, divided by the tool calls it retains. None where it cannot be measured
    (no ``/proc``, a failing probe)."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, module, str(n)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout.split()
        held, count = int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return held / count if count else None
