"""Every command-line example of the README runs as written (issue 20).

The README's ``sh`` blocks are read from README.md itself:

* the Quickstart's ``make`` targets exist and resolve (``make -n``: running ``make test`` from
  inside the suite would run the suite again; CI runs it for real) and its ``pip install`` lines
  name extras that pyproject.toml declares;
* every other block runs as a script in an empty directory, with ``acp-fast`` on PATH being the
  package under test: once with no input at all (stdin closed, as in a script or CI) and once on
  a terminal (a pseudo-terminal on stdin, stdout and stderr, as a person pastes it). A command
  that waited for input at a terminal would time out here.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import acp_fast

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TIMEOUT = 120.0


def sh_blocks() -> List[Tuple[str, str]]:
    """``(section heading, block text)`` of every ```sh block of the README, in order."""
    blocks: List[Tuple[str, str]] = []
    heading = ""
    lines = README.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            heading = line[3:].strip()
        if line.strip() == "```sh":
            body = []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((heading, "\n".join(body) + "\n"))
        i += 1
    return blocks


QUICKSTART = [text for heading, text in sh_blocks() if heading == "Quickstart"]
EXAMPLES = [text for heading, text in sh_blocks() if heading != "Quickstart"]


def test_the_readme_has_the_blocks_this_file_checks():
    assert len(QUICKSTART) == 2 and len(EXAMPLES) >= 1
    assert "make bench" in QUICKSTART[0] and "make test" in QUICKSTART[0]
    # then how to use what they installed: the environment, the command, an extra into it
    assert ". .venv/bin/activate" in QUICKSTART[1] and "acp-fast --help" in QUICKSTART[1]
    assert "python -m pip install -e '.[arrow]'" in QUICKSTART[1]
    assert any("acp-fast proxy" in text for text in EXAMPLES)


def _commands(block: str) -> List[str]:
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quickstart_make_targets_resolve():
    targets = [cmd.split()[1] for cmd in _commands(QUICKSTART[0]) if cmd.startswith("make ")]
    assert targets == ["bench", "test"]
    for target in targets:
        done = subprocess.run(
            ["make", "-n", target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "MAKEFLAGS": ""},
        )
        assert done.returncode == 0, done.stderr
        assert "make env" in done.stdout or "ENV_CHECK" in done.stdout  # it installs what it needs first
    assert (
        "-m acp_fast.cli bench"
        in subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    )


def _dry_run(target: str) -> str:
    done = subprocess.run(
        ["make", "-n", target, "PYTHON=/nonexistent/python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_bench_installs_the_bench_extra_only_and_make_test_the_engines():
    """``make bench`` needs none of the analytics engines (issue 32): it checks for and installs the
    ``bench`` extra; ``make test`` the ``test`` and ``lint`` extras; each long pip install shows its
    progress (no ``--quiet``)."""
    bench, test = _dry_run("bench"), _dry_run("test")
    assert "pip install -e '.[bench]'" in bench and '-c "$ENV_CHECK" bench' in bench
    assert "pip install -e '.[test,lint]'" in test and '-c "$ENV_CHECK" test,lint' in test
    for text in (bench, test):
        for line in text.splitlines():
            if "pip install" in line and "--upgrade pip" not in line:
                assert "--quiet" not in line and " -q " not in line, line
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    bench_extra = re.search(r"^bench = \[(.*)\]$", pyproject, re.M).group(1)
    for engine in ("pyarrow", "polars", "duckdb", "dask", "ray", "pandas"):
        assert engine not in bench_extra
        assert engine in re.search(r"^test = \[(.*)\]$", pyproject, re.M).group(1) or engine == "pandas"


def test_pip_install_lines_name_declared_extras():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^(\w+) = \[", table, re.M))
    assert any(" pip install " in cmd for cmd in _commands(QUICKSTART[1]))
    named = re.findall(r"pip install '[^'\[]*\[([a-z,]+)\]'", README)
    assert len(named) >= 3
    for spec in named:
        assert set(spec.split(",")) <= extras, spec


@pytest.fixture
def workdir(tmp_path: Path) -> Tuple[Path, dict]:
    """An empty directory and an environment whose ``acp-fast`` is the package under test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "acp-fast"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m acp_fast.cli "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    package_root = str(Path(acp_fast.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": package_root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
    }
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return run_dir, env


def _check_results(run_dir: Path, output: str) -> None:
    # what the proxy example promises: a recording, the agent's frames, the state, the schema check
    frames = (run_dir / "agent.ndjson").read_bytes().splitlines()
    assert frames[-1] == b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
    assert (run_dir / "session.ndjson").read_bytes().startswith(b'{"acp-fast-recording":1')
    text = " ".join(output.split())
    assert "acp-fast proxy: agent exited with status 0" in text  # --summary
    assert "3 tool calls" in text and "call_1_edit" in text  # inspect
    assert "session.ndjson: recording," in text and "no problems" in text  # validate (the schema included)


def _check_bridge_cancel_export(run_dir: Path, output: str) -> None:
    # what the bridge, cancel and export example promises
    from acp_fast import recording

    editor = (run_dir / "editor.ndjson").read_bytes()
    assert editor.splitlines()[-1] == b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
    assert b'"sessionUpdate":"tool_call",' in editor and b"tool_call_content_chunk" not in editor  # v1 only
    text = " ".join(output.split())
    assert "bridged.ndjson: recording," in text and "protocol v1 (negotiated): no problems" in text
    # the agent's permission request was answered by the proxy, and the turn ended cancelled
    answers = [
        r
        for r in recording.read((run_dir / "cancelled.ndjson").read_bytes())
        if isinstance(r, recording.Record) and r.side == "editor" and r.action == "injected"
    ]
    assert len(answers) == 1 and b'"outcome":"cancelled"' in answers[0].data
    assert (run_dir / "to-editor.ndjson").read_bytes().splitlines()[-1] == (
        b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}'
    )
    assert re.search(r"0 call_1_edit cancelled - no", text)
    # the Parquet files hold every frame of both recordings, and their tool calls
    import pyarrow.parquet as pq

    frames = pq.read_table(run_dir / "frames.parquet")
    recorded = sum(
        isinstance(r, recording.Record)
        for name in ("bridged.ndjson", "cancelled.ndjson")
        for r in recording.read((run_dir / name).read_bytes())
    )
    assert frames.num_rows == recorded and set(frames.column("file").to_pylist()) == {
        "bridged.ndjson",
        "cancelled.ndjson",
    }
    calls = pq.read_table(run_dir / "tool_calls.parquet").to_pylist()
    assert len(calls) == 5 and {"call_1_read", "call_1_edit", "call_1_run"} == {c["tool_call_id"] for c in calls}
    assert "acp-fast export: 2 files" in text and "5 tool calls" in text


def _check(example: str, run_dir: Path, output: str) -> None:
    """The results each example promises."""
    if "--record session.ndjson" in example:
        _check_results(run_dir, output)
    if "--bridge 1:2" in example:
        _check_bridge_cancel_export(run_dir, output)


def test_the_examples_show_the_bridge_the_cancel_answers_and_the_export():
    together = "".join(EXAMPLES)
    for command in ("acp-fast proxy --bridge 1:2", "--answer-cancelled-permissions", "acp-fast export"):
        assert command in together, command
    for doc in ("docs/BRIDGE.md", "docs/ANALYTICS.md", "acp_fast.dask", "acp_fast.ray", "acp_fast.arrow"):
        assert doc in README, doc


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_examples_run_as_a_script(workdir, index):
    run_dir, env = workdir
    script = run_dir.parent / "example.sh"
    script.write_text(EXAMPLES[index], encoding="utf-8")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", str(script)],
        cwd=run_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _check(EXAMPLES[index], run_dir, done.stdout + done.stderr)


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_examples_run_at_a_terminal(workdir, index):
    run_dir, env = workdir
    script = run_dir.parent / "example.sh"
    script.write_text(EXAMPLES[index], encoding="utf-8")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", str(script)],
        cwd=run_dir,
        env={**env, "TERM": "dumb", "COLUMNS": "100"},
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    output = bytearray()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: every process holding the terminal is gone
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            pytest.fail(f"the example waited at a terminal for {TIMEOUT:.0f} s: {output.decode(errors='replace')}")
    finally:
        os.close(leader)
    assert proc.wait(timeout=30) == 0, output.decode(errors="replace")
    _check(EXAMPLES[index], run_dir, output.decode("utf-8", "replace"))
