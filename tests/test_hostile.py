"""The hostile run (``tests/hostile.py``; ``make hostile`` runs it long), short: one corpus per
profile (v2, mixed) of valid traffic with bad lines, the bridge's triggers and mutants, through
the library, the bridge, ``acp-fast proxy`` with each option set, ``validate``, ``inspect`` and
``export``, on the backend under test. Every check of every run must pass; and the harness must
notice a good frame that does not reach the editor."""

from __future__ import annotations

import sys
from pathlib import Path

import hostile


def test_hostile_short(backend_id: str) -> None:
    plan = hostile.Plan(backends=(backend_id,), frames=300, progress=False)
    results = hostile.run(plan, lambda text: print(text, file=sys.stderr))
    text, ok = hostile.summary(results, 0.0)
    assert ok, text
    runs = {(r.run, r.options) for r in results}
    for name, _ in hostile.OPTION_SETS:  # every option set ran (each --bridge on its profile)
        assert ("proxy", name) in runs
    for face in ("validate", "inspect", "export"):
        assert {(f"{face} corpus", "-"), (f"{face} recording", "-")} <= runs
    assert all(r.backend == backend_id for r in results) and {r.profile for r in results} == {"v2", "mixed"}


def test_the_corpus_holds_every_kind_of_line() -> None:
    c = hostile.corpus("v2", 300, seed=3)
    labels = {line.label for line in c.lines}
    for label, _ in hostile.bad_lines("v2"):
        assert label in labels
    for label, _, _ in hostile.triggers(2):
        assert label in labels
    kinds = [line.kind for line in c.lines]
    assert kinds.count("good") == 300 and "mutant" in kinds and "long" in kinds
    assert [line.data for line in c.lines if line.kind == "good"] == hostile.traffic.frames("v2", 300, 3)


def test_the_harness_notices_a_lost_good_frame(backend_id: str, tmp_path: Path) -> None:
    """An agent that leaves out one good frame fails the run, naming the check."""
    c = hostile.corpus("mixed", 60, seed=5)
    work = tmp_path / "w"
    work.mkdir()
    w = hostile.Workdir(work, c)
    agent_file = w.agent_files["hostile"]
    lines = agent_file.read_bytes().splitlines(keepends=True)
    good = [i for i, line in enumerate(lines) if line in {ln.data for ln in c.lines if ln.kind == "good"}]
    del lines[good[len(good) // 2]]
    agent_file.write_bytes(b"".join(lines))
    result = hostile.Result("proxy", "none", backend_id, c.profile, c.seed)
    hostile.run_proxy(c, w, backend_id, "none", (), result, hostile.RSS_LIMIT_MIB)
    assert any("did not reach the editor in order" in f for f in result.failures), result.failures


def test_the_harness_notices_a_bad_line_let_through(backend_id: str, tmp_path: Path) -> None:
    """``--agent-invalid pass`` forwards the agent's bad lines: the refusal check fails the run."""
    c = hostile.corpus("v2", 60, seed=7)
    w = hostile.Workdir(tmp_path, c)
    result = hostile.Result("proxy", "agent-invalid pass", backend_id, c.profile, c.seed)
    hostile.run_proxy(c, w, backend_id, "", ("--agent-invalid", "pass"), result, hostile.RSS_LIMIT_MIB)
    assert any("bad lines reached the editor" in f for f in result.failures), result.failures
