"""One spelling of "no limit" across every limit option of the command line (issue 32).

Every limit option (``proxy --max-tool-calls`` and the bounds inside sessions, ``inspect
--max-tool-calls`` / ``--max-updates`` / ``--max-entities`` / ``--max-errors``, ``validate
--max-problems``) takes an integer or ``none`` (no limit, the library's ``None``); ``0`` means what
the library's 0 means (keep none, turn off). The two options whose 0 used to mean "no limit"
(``proxy --max-tool-calls``, ``validate --max-problems``) still take it as ``none``, with one
deprecation warning on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fast import builders as B
from acp_fast.cli import proxy as proxy_cli
from acp_fast.cli._usage import bound

PY = sys.executable

PROXY_LIMITS = [
    "--max-tool-calls",
    "--max-terminal-bytes",
    "--max-content-items",
    "--max-plans",
    "--max-permissions",
    "--max-updates",
    "--max-terminals",
    "--max-entities",
]


def _cli(*args: str, backend_id: str = "rust", stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id)
    return subprocess.run([PY, "-m", "acp_fast.cli", *args], input=stdin, capture_output=True, env=env, timeout=60)


@pytest.mark.parametrize("option", PROXY_LIMITS)
def test_every_proxy_limit_takes_none(option):
    ns = proxy_cli.parser().parse_args([option, "none"])
    assert getattr(ns, option[2:].replace("-", "_")) is None
    ns = proxy_cli.parser().parse_args([option, "NONE"])
    assert getattr(ns, option[2:].replace("-", "_")) is None


def test_proxy_max_tool_calls_0_is_deprecated_and_warns_once(capsys):
    p = proxy_cli.parser()
    ns = p.parse_args(["--max-tool-calls", "0", "--max-tool-calls", "0"])
    assert ns.max_tool_calls is None
    err = capsys.readouterr().err
    assert (
        err == "acp-fast proxy: warning: --max-tool-calls 0 for no limit is deprecated; write --max-tool-calls none\n"
    )


def test_the_other_zeros_keep_their_meaning_and_bad_values_say_the_spelling():
    assert proxy_cli.parser().parse_args(["--max-updates", "0"]).max_updates == 0  # keep none
    with pytest.raises(Exception) as info:
        bound(1)("0")
    assert str(info.value) == "expected an integer from 1 to 2**63-1 or none, found 0"
    with pytest.raises(Exception) as info:
        bound(0)("all")
    assert str(info.value) == "expected an integer from 0 to 2**63-1 or none, found 'all'"


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    path = tmp_path / "s.ndjson"
    updates = [
        B.session_update("s1", {"sessionUpdate": "_acme_custom", "n": i}) for i in range(3)
    ]  # updates no rule handles
    calls = [B.tool_call("s1", f"c{i}", f"call {i}", status="completed") for i in range(3)]
    path.write_bytes(b"".join(updates + calls) + b"not json\nnot json either\n")
    return path


def test_inspect_limits_take_none_and_0_keeps_none(stream, backend_id):
    import json

    def state(*options: str):
        done = _cli("inspect", str(stream), "--json", *options, backend_id=backend_id)
        assert done.returncode == 0, done.stderr
        assert done.stderr == b""
        return json.loads(done.stdout)

    everything = state("--max-tool-calls", "none", "--max-updates", "none", "--max-entities", "none")
    bounded = state("--max-tool-calls", "1", "--max-updates", "0")
    every_session, bounded_session = everything["state"]["sessions"]["s1"], bounded["state"]["sessions"]["s1"]
    assert len(every_session["toolCalls"]) == 3 and len(bounded_session["toolCalls"]) == 1
    assert len(every_session["updates"]) == 3 and not bounded_session.get("updates")  # 0: none kept
    done = _cli("inspect", str(stream), "--max-tool-calls", "0", backend_id=backend_id)
    assert done.returncode == 2 and b"expected an integer from 1 to 2**63-1 or none, found 0" in done.stderr
    listed = _cli("inspect", str(stream), "--max-errors", "none", backend_id=backend_id).stdout
    assert listed == _cli("inspect", str(stream), "--max-errors", "5", backend_id=backend_id).stdout


def test_validate_max_problems_none_and_deprecated_0(tmp_path, backend_id):
    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(b"x\n" * 5)
    one = _cli("validate", str(bad), "--max-problems", "1", backend_id=backend_id)
    assert b"... 4 more problems not shown" in one.stdout
    every = _cli("validate", str(bad), "--max-problems", "none", backend_id=backend_id)
    assert every.stdout.count(b"[json]") == 5 and every.stderr == b""
    old = _cli("validate", str(bad), "--max-problems", "0", backend_id=backend_id)
    assert old.stdout == every.stdout
    assert old.stderr == (
        b"acp-fast validate: warning: --max-problems 0 for no limit is deprecated; write --max-problems none\n"
    )
