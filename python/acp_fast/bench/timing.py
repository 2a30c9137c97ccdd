"""Timing and progress for ``acp-fast bench``: interleaved timed rounds, and a progress bar."""

from __future__ import annotations

import contextlib
import gc
import shutil
import sys
import time
from typing import Any, Callable, Iterator, List, Optional, Sequence, TextIO


@contextlib.contextmanager
def gc_off(collect: bool = True) -> Iterator[None]:
    """Keep the cyclic garbage collector off for the block (after a collection, by default)."""
    if collect:
        gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def measure(
    runs: Sequence[Callable[[], Any]],
    budget: float,
    min_runs: int,
    max_runs: int,
    on_round: Optional[Callable[[float], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> List[List[float]]:
    """Per-pass times (seconds) of each callable in ``runs``, measured in interleaved rounds.

    Every round runs each callable still in play once, in an order that rotates from round to
    round, so a change in machine load touches all contenders alike and the ratios, taken in the
    same run, stay meaningful. A callable stays in play until it has run ``min_runs`` times and
    spent ``budget`` seconds, or has run ``max_runs`` times: slow contenders get ``min_runs``
    passes, fast ones more. The garbage collector is off while timing (as in ``timeit``;
    allocation-heavy passes are otherwise dominated by collections).
    A callable with a ``prepare`` attribute gets ``prepare()`` (untimed) before every pass.
    ``on_round(fraction)`` is called after every round with the estimated fraction done.
    """
    times: List[List[float]] = [[] for _ in runs]
    spent = [0.0] * len(runs)
    if not runs:
        return times

    def in_play(i: int) -> bool:
        n = len(times[i])
        return n < max_runs and (n < min_runs or spent[i] < budget)

    def fraction() -> float:
        parts = []
        for i in range(len(runs)):
            n = len(times[i])
            if not in_play(i):
                parts.append(1.0)
            else:
                per = spent[i] / n if n else 0.0
                wanted = min(max_runs, max(min_runs, int(budget / per) if per > 0 else max_runs))
                parts.append(n / max(wanted, 1))
        return sum(parts) / len(parts)

    with gc_off():
        index = 0
        while True:
            active = [i for i in range(len(runs)) if in_play(i)]
            if not active:
                break
            shift = index % len(active)
            for i in active[shift:] + active[:shift]:
                hook = getattr(runs[i], "prepare", None)
                if hook is not None:
                    hook()  # fresh input for the pass, untimed
                start = clock()
                runs[i]()
                elapsed = clock() - start
                times[i].append(elapsed)
                spent[i] += elapsed
            index += 1
            if on_round is not None:
                on_round(fraction())
    return times


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """Progress on ``stream`` (stderr): on a terminal one bar redrawn in place with ``\\r``;
    otherwise (a pipe, a CI log) a plain line per finished step, and nothing redrawn.

    ``total`` is the number of steps; ``update(done, label)`` moves the bar to ``done`` steps
    (fractions allowed), ``step(label, detail)`` marks one more step finished.
    """

    def __init__(self, total: float, stream: Optional[TextIO] = None, enabled: bool = True) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.total = max(total, 1e-9)
        self.enabled = enabled
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.done = 0.0
        self.steps = 0
        self.started = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    def _width(self) -> int:
        return max(40, min(120, shutil.get_terminal_size((100, 24)).columns - 1))

    def _bar_line(self, label: str) -> str:
        fraction = min(1.0, max(0.0, self.done / self.total))
        width = self._width()
        elapsed = time.perf_counter() - self.started
        tail = f" {fraction * 100:3.0f}% {_clock(elapsed)} {label}"
        cells = max(10, min(30, width - len(tail) - 2))
        filled = round(fraction * cells)
        line = "[" + "#" * filled + "-" * (cells - filled) + "]" + tail
        return line[:width].ljust(width)

    def update(self, done: float, label: str = "", force: bool = False) -> None:
        self.done = done
        if not (self.enabled and self.tty):
            return
        now = time.perf_counter()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        self.stream.write("\r" + self._bar_line(label))
        self.stream.flush()
        self._drawn = True

    def step(self, label: str, detail: str = "") -> None:
        """One more step finished."""
        self.steps += 1
        self.done = max(self.done, float(self.steps))
        if not self.enabled:
            return
        if self.tty:
            self.update(self.done, label, force=True)
            return
        elapsed = time.perf_counter() - self.started
        total = round(self.total)
        width = len(str(total))
        text = f"[{self.steps:{width}d}/{total}] {self.done / self.total * 100:3.0f}% {_clock(elapsed)} {label}"
        self.stream.write(text + (f": {detail}" if detail else "") + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A message that stays (printed above the bar on a terminal)."""
        if not self.enabled:
            return
        if self.tty and self._drawn:
            self.stream.write("\r" + " " * self._width() + "\r")
        self.stream.write(text + "\n")
        self.stream.flush()
        self._drawn = False

    def close(self) -> None:
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\r" + " " * self._width() + "\r")
            self.stream.flush()
        self._drawn = False
