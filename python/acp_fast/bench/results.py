"""What one ``acp-fast bench`` run measured: a ``Row`` per contender, task and profile, and
the ``Run`` that holds them (with the scaling and memory results)."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import contenders as C
from . import state as S
from .environment import load_average

#: The traffic profile of the scaling task (and of the memory probe).
SCALING_PROFILE = "mixed"
#: Scaling: the passes at each size go on until they add up to this many seconds (state.run_scaling).
SCALING_MIN_TIME = 0.1
#: Scaling: a pass of this many seconds or more is timed once (twice before a stop rests on it).
SCALING_REPEAT_BELOW = 1.0


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
    #: Projections past --pass-budget that the passes timed again did not confirm (runner.probe).
    hiccups: int = 0

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
    #: ``--detail`` / ``--markdown``: long tool output through the proxy with and without
    #: ``--coalesce`` (``coalesce.run_all`` rows), at the sizes of ``COALESCE_SIZES``.
    coalesce: List[Dict[str, Any]] = field(default_factory=list)
    elapsed: float = 0.0
    #: CPU seconds the run used (this process and its children): over ``elapsed``, the share of
    #: one CPU the machine gave the run.
    cpu_seconds: float = 0.0
    #: The 1-minute load average, sampled at the start, after every step and at the end.
    loads: List[float] = field(default_factory=list)

    def sample_load(self) -> None:
        """Add the current 1-minute load average to ``loads`` (where the system has one)."""
        load = load_average()
        if load is not None:
            self.loads.append(load)

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
