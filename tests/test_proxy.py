"""``acp-fast proxy`` with real processes and real pipes, on both backends.

The peers are real programs: an ACP client and an ACP agent written with the official SDK
(tests/peers/), ``acp-fast demo-agent``, and small scripted agents that misbehave on purpose.
A transparent tap (tests/peers/tap.py) logs the bytes each side receives, so "byte-exact" is
checked on the wire, not on what the proxy says it did.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import acp_fast
from acp_fast import builders as B
from acp_fast import recording, traffic

PEERS = Path(__file__).resolve().parent / "peers"
PY = sys.executable
PROXY = [PY, "-m", "acp_fast.cli", "proxy"]


@pytest.fixture(params=["rust", "python"])
def env(request) -> Dict[str, str]:
    """The environment of a proxy run on the given backend."""
    e = dict(os.environ)
    e["ACP_FAST_BACKEND"] = request.param
    return e


def proxy(env, *options: str, agent: List[str], stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*PROXY, *options, "--", *agent], input=stdin, capture_output=True, env=env, timeout=timeout)


def script(tmp_path: Path, name: str, source: str) -> List[str]:
    """A scripted agent: ``source`` runs with ``out(bytes)`` writing to stdout unbuffered."""
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import os, sys, time, signal\n"
        "def out(b):\n"
        "    v = memoryview(b)\n"
        "    while v:\n"
        "        v = v[os.write(1, v):]\n" + textwrap.dedent(source)
    )
    return [PY, str(path)]


def frames(n: int, start: int = 0) -> List[bytes]:
    return [B.message_chunk(f"s{i % 3}", f'chunk {i} naïve ✓ "q"\\n') for i in range(start, start + n)]


# --------------------------------------------------------------------------------------------
# real peers: the bytes each side receives are the same with and without the proxy
# --------------------------------------------------------------------------------------------


def read(tap: Path):
    """(bytes the tapped program received, bytes it sent)."""
    return (tap / "in.bin").read_bytes(), (tap / "out.bin").read_bytes()


def _run_sdk_session(tmp_path: Path, env, through_proxy: bool, agent: List[str]):
    client_tap, agent_tap = tmp_path / "client_side", tmp_path / "agent_side"
    if through_proxy:
        record = tmp_path / "rec.ndjson"
        state = tmp_path / "state.json"
        inner = [PY, str(PEERS / "tap.py"), str(agent_tap), "--", *agent]
        cmd = [
            PY,
            str(PEERS / "tap.py"),
            str(client_tap),
            "--",
            *PROXY,
            "--record",
            str(record),
            "--state-json",
            str(state),
            "--",
            *inner,
        ]
    else:
        cmd = [PY, str(PEERS / "tap.py"), str(client_tap), "--", *agent]
    done = subprocess.run([PY, str(PEERS / "sdk_client.py"), *cmd], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout), client_tap


@pytest.mark.parametrize("agent_name", ["sdk_agent", "demo_agent"])
def test_sdk_client_and_agent_see_the_same_bytes_through_the_proxy(tmp_path, env, agent_name):
    agent = [PY, str(PEERS / "sdk_agent.py")] if agent_name == "sdk_agent" else [PY, "-m", "acp_fast.cli", "demo-agent"]
    direct, direct_tap = _run_sdk_session(tmp_path / "direct", env, False, agent)
    proxied, client_tap = _run_sdk_session(tmp_path / "proxied", env, True, agent)
    agent_tap = tmp_path / "proxied" / "agent_side"
    # The client's handlers got the same calls with the same models.
    assert proxied == direct
    assert direct["stop_reason"] == "end_turn"
    assert any(call[0] == "request_permission" for call in direct["calls"])
    # Wire bytes: what the client received through the proxy is what the agent sent, and both
    # are what they were without the proxy; the same the other way.
    client_in, client_out = read(client_tap)
    agent_in, agent_out = read(agent_tap)
    assert client_out == agent_out and client_in == agent_in
    assert (client_in, client_out) == read(direct_tap)
    assert agent_out.count(b"\n") >= 8
    # The recording holds both directions byte-exact and replays to the state the proxy held.
    rec = (tmp_path / "proxied" / "rec.ndjson").read_bytes()
    assert recording.extract(rec, "editor") == client_in
    assert recording.extract(rec, "agent") == client_out
    live = acp_fast.ToolCallStore.from_json((tmp_path / "proxied" / "state.json").read_bytes())
    replayed = acp_fast.ToolCallStore(max_tool_calls=1000)  # the proxy's default bound
    for r in recording.read(rec):
        if isinstance(r, recording.Record):
            replayed.apply(r.data, source=r.source)
    assert replayed.state() == live.state()
    assert any(live.tool_calls(sid) for sid in live.snapshot())
    assert any(p["outcome"] == "selected" for sid in live.snapshot() for p in live.permissions(sid))


def test_generated_traffic_both_directions_byte_exact(tmp_path, env):
    # A byte-exact echo agent: what the editor sends comes back; the proxy relays 2 x 20k frames.
    data = (
        traffic.generate("mixed", 20000, seed=7) + b"\r\n\n  \n" + B.message_chunk("s", "crlf").rstrip(b"\n") + b"\r\n"
    )
    done = proxy(env, "--summary-json", str(tmp_path / "s.json"), agent=["cat"], stdin=data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == data
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["editor_to_agent"]["bytes_out"] == len(data)
    assert summary["agent_to_editor"]["lines"] == data.count(b"\n")
    assert summary["tool_calls"] > 0 and sum(summary["tool_calls_by_status"].values()) == summary["tool_calls"]


def test_last_line_without_newline_is_forwarded(env):
    data = B.message_chunk("s", "a") + B.message_chunk("s", "b").rstrip(b"\n")
    done = proxy(env, agent=["cat"], stdin=data)
    assert done.returncode == 0 and done.stdout == data


def test_editor_writing_one_byte_at_a_time(tmp_path, env):
    data = b"".join(frames(5))
    p = subprocess.Popen(
        [*PROXY, "--", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0
    )
    for i in range(len(data)):
        p.stdin.write(data[i : i + 1])
    p.stdin.close()
    out = p.stdout.read()
    assert p.wait(timeout=30) == 0
    assert out == data


# --------------------------------------------------------------------------------------------
# injected faults
# --------------------------------------------------------------------------------------------


def test_non_json_lines_from_the_agent(tmp_path, env):
    good = frames(4)
    junk = [b"Debug: starting up", b"\xff\xfe not utf-8", b'{"jsonrpc":"2.0"}', b"[1,2]"]
    agent = script(
        tmp_path,
        "noisy",
        f"""
        good, junk = {good!r}, {junk!r}
        for g, j in zip(good, junk):
            out(g); out(j + b"\\n")
    """,
    )
    everything = b"".join(g + j + b"\n" for g, j in zip(good, junk))

    divert = proxy(env, "--record", str(tmp_path / "rec.ndjson"), agent=agent)
    assert divert.returncode == 0
    assert divert.stdout == b"".join(good)  # the editor is protected (default)
    for j in junk:
        assert j + b"\n" in divert.stderr
    records = [r for r in recording.read((tmp_path / "rec.ndjson").read_bytes()) if isinstance(r, recording.Record)]
    assert [r.action for r in records] == [None, "diverted"] * 4
    assert recording.extract((tmp_path / "rec.ndjson").read_bytes(), "agent") == everything

    passed = proxy(env, "--agent-invalid", "pass", agent=agent)
    assert passed.returncode == 0 and passed.stdout == everything
    assert b"agent line 2 column 1: expected a JSON value, found" in passed.stderr

    dropped = proxy(env, "--agent-invalid", "drop", agent=agent)
    assert dropped.returncode == 0 and dropped.stdout == b"".join(good)
    assert b"Debug: starting up" not in dropped.stderr
    assert b"agent line 4 column 1: " in dropped.stderr and b"(dropped)" in dropped.stderr


def test_batch_with_an_invalid_entry_is_a_frame(tmp_path, env):
    batch = b'[{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}},{"id":1}]\n'
    done = proxy(env, agent=["cat"], stdin=batch)
    assert done.returncode == 0 and done.stdout == batch


def test_ten_megabyte_frame(tmp_path, env):
    big = B.message_chunk("s", "x" * (10 << 20))
    data = frames(1)[0] + big + frames(1, 1)[0]
    done = proxy(env, agent=["cat"], stdin=data)
    assert done.returncode == 0 and done.stdout == data


@pytest.mark.parametrize("pieces", [1, 7])
def test_frame_over_the_limit_is_skipped_and_the_stream_goes_on(tmp_path, env, pieces):
    before, after = frames(2), frames(2, 2)
    too_long = B.message_chunk("s", "y" * 5000)
    agent = script(
        tmp_path,
        "long",
        f"""
        before, after, too_long, pieces = {before!r}, {after!r}, {too_long!r}, {pieces}
        for f in before: out(f)
        step = len(too_long) // pieces + 1
        for i in range(0, len(too_long), step):
            out(too_long[i:i + step]); time.sleep(0.02)
        for f in after: out(f)
    """,
    )
    done = proxy(env, "--max-frame-bytes", "1000", "--record", str(tmp_path / "r.ndjson"), agent=agent)
    assert done.returncode == 0
    assert done.stdout == b"".join(before + after)
    assert b"agent line 3: expected a frame of at most 1000 bytes" in done.stderr
    rec = list(recording.read((tmp_path / "r.ndjson").read_bytes()))
    assert [r.too_large for r in rec if isinstance(r, recording.Record)] == [None, None, len(too_long), None, None]


def test_agent_dying_mid_stream(tmp_path, env):
    sent = frames(50)
    agent = script(
        tmp_path,
        "dies",
        f"""
        for f in {sent!r}: out(f)
        out(b'{{"jsonrpc":"2.0","method":"session/upd')
        os.kill(os.getpid(), signal.SIGKILL)
    """,
    )
    done = proxy(env, "--summary", agent=agent)
    assert done.returncode == 128 + signal.SIGKILL
    # Every whole frame reaches the editor; the truncated last line is not JSON-RPC, so it is
    # diverted to stderr like any such line (with --agent-invalid pass it is passed on as is).
    assert done.stdout == b"".join(sent)
    assert b'{"jsonrpc":"2.0","method":"session/upd\n' in done.stderr
    assert b"agent exited with status 137" in done.stderr
    passed = proxy(env, "--agent-invalid", "pass", agent=agent)
    assert passed.returncode == 137
    assert passed.stdout == b"".join(sent) + b'{"jsonrpc":"2.0","method":"session/upd'


def test_exit_status_and_missing_agent(env):
    assert proxy(env, agent=[PY, "-c", "import sys; sys.exit(3)"]).returncode == 3
    missing = proxy(env, agent=["/nonexistent/agent"])
    assert missing.returncode == 127
    assert b"cannot start the agent '/nonexistent/agent'" in missing.stderr
    usage = subprocess.run([*PROXY], capture_output=True, env=env)
    assert usage.returncode == 2 and b"expected the agent command after --" in usage.stderr


def test_editor_closing_stdin_early(tmp_path, env):
    # The agent answers only after its input ends: the proxy must pass end-of-input on and
    # still relay everything the agent writes afterwards.
    requests = [B.request(i, "session/prompt", {"sessionId": "s", "prompt": []}) for i in range(20)]
    agent = script(
        tmp_path,
        "late",
        """
        import json
        lines = sys.stdin.buffer.read().splitlines()
        for line in lines:
            rid = json.loads(line)["id"]
            out(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}}).encode() + b"\\n")
    """,
    )
    done = proxy(env, agent=agent, stdin=b"".join(requests))
    assert done.returncode == 0
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == list(range(20))


def test_strict_answers_invalid_requests(tmp_path, env):
    log = tmp_path / "agent_side"
    good = frames(1)[0]
    data = good + b'{"jsonrpc":"2.0","id":7,"method":5}\n' + b"not json\n" + good
    agent = [PY, str(PEERS / "tap.py"), str(log), "--", "cat"]
    strict = proxy(env, "--strict", agent=agent, stdin=data)
    assert strict.returncode == 0
    assert (log / "in.bin").read_bytes() == good + good  # the agent never saw them
    answers = [json.loads(line) for line in strict.stdout.splitlines() if b'"error"' in line]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(7, -32600), (None, -32700)]
    assert answers[0]["error"]["data"]["line"] == 2 and answers[1]["error"]["data"]["line"] == 3
    assert strict.stdout.count(good) == 2
    lax = proxy(env, "--agent-invalid", "pass", agent=agent, stdin=data)  # cat echoes the bad lines back
    assert (log / "in.bin").read_bytes() == data and lax.stdout == data


def test_signals_are_passed_to_the_agent(tmp_path, env):
    agent = script(
        tmp_path,
        "sig",
        """
        def on_term(signum, frame):
            out(b'{"jsonrpc":"2.0","method":"got","params":{"signal":%d}}\\n' % signum)
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        out(b'{"jsonrpc":"2.0","method":"ready"}\\n')
        while True:
            time.sleep(1)
    """,
    )
    p = subprocess.Popen(
        [*PROXY, "--", *agent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert p.stdout.readline() == b'{"jsonrpc":"2.0","method":"ready"}\n'
    p.send_signal(signal.SIGTERM)
    rest = p.stdout.read()
    assert p.wait(timeout=30) == 0
    assert rest == b'{"jsonrpc":"2.0","method":"got","params":{"signal":%d}}\n' % signal.SIGTERM
    p.stdin.close()


def _peak_rss_kib(pid: int) -> Optional[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def test_slow_reader_keeps_memory_bounded(tmp_path, env):
    # The agent writes 96 MiB as fast as it can; the editor reads slowly. The proxy must push
    # back (stop reading the agent) instead of buffering: its peak RSS stays far below 96 MiB.
    corpus = tmp_path / "big.ndjson"
    corpus.write_bytes(traffic.generate("large", 6000, seed=3))
    size = corpus.stat().st_size
    assert size > 90 << 20
    p = subprocess.Popen(
        [*PROXY, "--max-tool-calls", "50", "--", "cat", str(corpus)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        bufsize=0,
    )
    peak = 0
    received = []
    got = 0
    while True:
        chunk = p.stdout.read(256 << 10)
        if not chunk:
            break
        received.append(chunk)
        got += len(chunk)
        if got < size // 2:
            time.sleep(0.01)  # slow for the first half
        peak = max(peak, _peak_rss_kib(p.pid) or 0)
    assert p.wait(timeout=60) == 0
    assert b"".join(received) == corpus.read_bytes()
    assert 0 < peak < 64 * 1024, f"proxy peak RSS {peak} KiB while relaying {size >> 20} MiB to a slow reader"


def test_editor_stops_reading(tmp_path, env):
    # The editor closes its end of the proxy's stdout: the agent's stdin is closed so it can
    # finish, and the proxy still exits with the agent's status.
    agent = script(
        tmp_path,
        "chatty",
        """
        try:
            for i in range(200000):
                out(b'{"jsonrpc":"2.0","method":"x"}\\n')
        except BrokenPipeError:
            sys.exit(5)
        sys.exit(0)
    """,
    )
    p = subprocess.Popen(
        [*PROXY, "--", *agent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    p.stdout.read(1000)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=30) in (0, 5)
    assert b"the editor stopped reading" in err


def test_watch_reports_tool_call_changes(env):
    data = B.tool_call("s1", "c1", "Read file", kind="read") + B.tool_call_update("s1", "c1", status="completed")
    done = proxy(env, "--watch", agent=["cat"], stdin=data)
    assert done.returncode == 0 and done.stdout == data
    assert b"[s1] tool_call c1 created" in done.stderr
    assert b"[s1] tool_call c1 updated" in done.stderr


def test_watch_reports_a_closed_session(env):
    # `cat` sends the editor's lines back as the agent's: the close request, then its answer
    close = b'{"jsonrpc":"2.0","id":7,"method":"session/close","params":{"sessionId":"s1"}}\n'
    data = B.tool_call("s1", "c1", "Read file", kind="read") + close + b'{"jsonrpc":"2.0","id":7,"result":{}}\n'
    done = proxy(env, "--watch", agent=["cat"], stdin=data)
    assert done.returncode == 0 and done.stdout == data
    assert b"[s1] session closed" in done.stderr


def test_max_sessions_and_max_content_bytes(tmp_path, env):
    # the agent speaks in three sessions; --max-sessions 2 keeps the two most recently active
    lines = [B.tool_call(sid, "c1", "Read file", kind="read") for sid in ("s1", "s2", "s1", "s3")]
    item = {"type": "content", "content": {"type": "text", "text": "x" * 100}}
    lines += [B.tool_call_content_chunk("s3", "c1", item)] * 3
    agent = script(tmp_path, "sessions", f"out({b''.join(lines)!r})")
    state, summary = tmp_path / "state.json", tmp_path / "summary.json"
    options = ["--max-sessions", "2", "--max-content-bytes", "350", "--watch"]
    done = proxy(env, *options, "--state-json", str(state), "--summary-json", str(summary), agent=agent)
    assert done.returncode == 0 and done.stdout == b"".join(lines)
    assert b"1 least recently active session evicted (--max-sessions)" in done.stderr
    doc = json.loads(state.read_bytes())
    assert list(doc["sessions"]) == ["s1", "s3"] and doc["evictedSessions"] == 1
    assert (doc["maxSessions"], doc["maxContentBytes"]) == (2, 350)
    tc = doc["sessions"]["s3"]["toolCalls"]["c1"]
    assert len(tc["content"]) == 2 and tc["_truncated"] == {"droppedItems": 1}
    assert json.loads(summary.read_bytes())["evicted_sessions"] == 1
    defaults = subprocess.run([*PROXY, "--help"], capture_output=True, env=env, timeout=60).stdout
    assert b"--max-sessions N" in defaults and b"default 1000" in defaults


@pytest.mark.parametrize("limit", [None, 3])
def test_agent_invalid_fail_stops_the_session(tmp_path, env, limit):
    good = frames(6)
    agent = script(
        tmp_path,
        "junk",
        f"""
        good = {good!r}
        for i, g in enumerate(good):
            out(g)
            out(b"junk %d\\n" % i)
            time.sleep(0.01)
        time.sleep(30)  # never reached: the proxy stops the agent
    """,
    )
    policy = "fail" if limit is None else f"fail={limit}"
    n = limit or 1
    files = ["--record", str(tmp_path / "r.ndjson"), "--summary-json", str(tmp_path / "s.json")]
    started = time.monotonic()
    done = proxy(env, "--agent-invalid", policy, *files, "--state-json", str(tmp_path / "st.json"), agent=agent)
    assert time.monotonic() - started < 20
    assert done.returncode == 76, done.stderr
    assert done.stdout == b"".join(good[:n])  # what came before the Nth line that is not JSON-RPC
    for i in range(n):
        assert b"junk %d\n" % i in done.stderr  # diverted, like divert
    assert b"junk %d" % n not in done.stderr
    plural = "lines from the agent were" if n > 1 else "line from the agent was"
    message = done.stderr.decode().splitlines()[-1]
    assert message.startswith(f"acp-fast proxy: agent line {2 * n} column 1: expected a JSON value, found 'j'")
    assert message.endswith(
        f"; {n} {plural} not JSON-RPC (--agent-invalid fail={n}); stopping the session (exit status 76)"
    )
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["status"] == 76 and summary["agent_to_editor"]["invalid"] == n
    rec = list(recording.read((tmp_path / "r.ndjson").read_bytes()))
    assert rec[-1]["event"] == "exit" and rec[-1]["status"] == 76
    assert [r.action for r in rec if isinstance(r, recording.Record)][-1] == "diverted"
    assert acp_fast.ToolCallStore.from_json((tmp_path / "st.json").read_bytes()) is not None


def test_the_native_relay_runs_when_nothing_per_frame_needs_python(backend_id):
    # The core's relay (rust/relay.rs) on the native backend, unless a per-frame Python feature is on.
    code = (
        "import acp_fast\n"
        "from acp_fast.proxy import Proxy\n"
        "def native(**options):\n"
        "    p = Proxy(['true'], **options)\n"
        "    return p.directions[1].native_relay() is not None\n"
        "print([native(), native(strict=True, agent_invalid='fail'), native(watch=True), native(strict_schema=True),"
        " native(bridge=(1, 2)), (lambda p: p.directions[1].native_relay() is not None)("
        "Proxy(['true'], middleware=[lambda m, s, c: m]))])\n"
    )
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = [True, True, False, False, False, False] if backend_id == "rust" else [False] * 6
    assert done.stdout.strip() == str(expected)


def test_a_relay_that_cannot_start_ends_the_proxy_instead_of_hanging(backend_id):
    # The direction closes its output when its relay cannot be made (it once left the agent's
    # stdin open: the proxy waited for ever).
    code = (
        "import sys\n"
        "from acp_fast.proxy import _relay\n"
        "def broken(self):\n"
        "    raise RuntimeError('no relay here')\n"
        "_relay.Direction.native_relay = broken\n"
        "from acp_fast.proxy import Proxy\n"
        "sys.exit(Proxy(['cat']).run())\n"
    )
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    done = subprocess.run([PY, "-c", code], input=b"", capture_output=True, env=env, timeout=30)
    assert done.stderr.count(b"relay stopped: RuntimeError: no relay here") == 2  # both directions
