"""`acp-fast proxy --record` / `--trace` from the core's relay (rust/relay.rs, rust/record.rs):
the relay in use, and the files it writes equal to those of the proxy's Python loop for the same
traffic (timestamps aside) on lines of every kind (docs/PROXY.md, "Performance")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from acp_fast import recording

PY = sys.executable
PROXY = [PY, "-m", "acp_fast.cli", "proxy"]


def test_the_native_relay_records_and_traces(backend_id, tmp_path):
    # --record and --trace alone keep the core's relay; --coalesce with them, middleware and
    # the other per-frame features bring the Python loop back.
    code = textwrap.dedent(
        """
        import sys
        from acp_fast.proxy import Proxy
        d = sys.argv[1]
        def native(name, **options):
            p = Proxy(['true'], force=True, **options)
            try:
                return all(x.native_relay() is not None for x in p.directions)
            finally:
                p._close_outputs()
        print([
            native('a', record=d + '/a.rec'),
            native('b', trace=d + '/b.jsons'),
            native('c', record=d + '/c.rec', trace=d + '/c.jsons'),
            native('d', record=d + '/d.rec', coalesce=50),
            native('e', record=d + '/e.rec', watch=True),
            native('f', record=d + '/f.rec', middleware=[lambda m, s, c: m]),
        ])
        """
    )
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    done = subprocess.run([PY, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = [True, True, True, False, False, False] if backend_id == "rust" else [False] * 6
    assert done.stdout.strip() == str(expected)


BIG = b'{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"x":"' + b"a" * 1200 + b'"}}'
# What the agent writes once the editor's input has ended (so that the records of each side come
# in one order): lines of every kind.
AGENT_OUT = b"".join(
    [
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n',
        (
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\\u0031","update":'
            b'{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t \\"q\\" \xc3\xa9"}}}\r\n'
        ),
        b"  \n",
        b"\r\n",
        b'hello "x"\t\n',  # not JSON: diverted (text)
        b"\xff\xfe abc\n",  # not UTF-8: diverted (base64)
        (  # a bad state update: forwarded, reported
            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
            b'{"sessionUpdate":"tool_call"}}}\n'
        ),
        b'[{"jsonrpc":"2.0","method":"m"},1]\n',  # a batch with a valid message: a frame
        b"[1,2]\n",  # a batch without one: diverted
        BIG + b"\n",  # over the limit: skipped, the request answered (injected to the agent)
        b'{"jsonrpc":"2.0","method":"spaced","params": {"a":1} }\n',
        b'{"jsonrpc":"2.0","id":"r","error":{"code":-1,"message":"m"}}\n',
        b'{"jsonrpc":"2.0","method":"last"}',  # the last line, without a newline
    ]
)
EDITOR_IN = b"".join(
    [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\r\n',
        b'{"jsonrpc":"2.0","id":2,"method"\n',  # not JSON: answered (--strict)
        BIG + b"\n",
        b"\n",
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}',
    ]
)


def _agent(tmp_path: Path) -> List[str]:
    path = tmp_path / "agent.py"
    path.write_text(
        "import os, sys\n"
        "while os.read(0, 1 << 16):\n"
        "    pass\n"
        f"data = {AGENT_OUT!r}\n"
        "v = memoryview(data)\n"
        "while v:\n"
        "    v = v[os.write(1, v):]\n"
    )
    return [PY, str(path)]


def _run(tmp_path: Path, backend_id: str, name: str, relay: str) -> Dict[str, bytes]:
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    if relay == "python":
        env["ACP_FAST_PROXY_RELAY"] = "python"
    rec, trace = tmp_path / f"{name}.rec", tmp_path / f"{name}.jsons"
    options = ["--strict", "--max-frame-bytes", "1000", "--record", str(rec), "--trace", str(trace)]
    done = subprocess.run(
        [*PROXY, *options, "--", *_agent(tmp_path)], input=EDITOR_IN, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return {"stdout": done.stdout, "record": rec.read_bytes(), "trace": trace.read_bytes()}


def _untimed(data: bytes) -> List[bytes]:
    """The lines of a recording or trace, their times made 0."""
    time = re.compile(rb'^\{"(t|ts|type":"[a-z]+","ts|acp-fast-recording":1,"t)":[0-9.e+-]+')
    return [time.sub(rb'{"\1":0', line) for line in data.splitlines()]


def test_native_recording_and_trace_equal_the_python_loops(backend_id, tmp_path):
    native = _run(tmp_path, backend_id, "native", "native")
    loop = _run(tmp_path, backend_id, "loop", "python")
    assert native["stdout"] == loop["stdout"]
    assert _untimed(native["record"]) == _untimed(loop["record"])
    assert _untimed(native["trace"]) == _untimed(loop["trace"])
    # The traffic went through every kind of record line.
    records = [r for r in recording.read(native["record"]) if isinstance(r, recording.Record)]
    assert recording.extract(native["record"], "agent") == AGENT_OUT.replace(BIG + b"\n", b"")
    assert recording.extract(native["record"], "editor") == EDITOR_IN.replace(BIG + b"\n", b"")
    kinds = {(r.side, r.action, r.too_large is not None, r.crlf, r.eol, r.is_json) for r in records}
    assert ("agent", "diverted", False, False, True, False) in kinds
    assert ("editor", "answered", False, False, True, False) in kinds
    assert ("editor", "injected", False, False, True, True) in kinds  # the answer to the agent's request
    assert ("agent", None, True, False, True, False) in kinds  # too large
    assert ("agent", None, False, True, True, True) in kinds  # CRLF
    assert ("agent", None, False, False, False, True) in kinds  # the last line
    assert b'"base64":"//4gYWJj"' in native["record"]
    assert b'"text":"hello \\"x\\"\\t"' in native["record"]
    events = native["trace"].splitlines()
    assert any(b'"session":"s1","params":{"sessionId":"s\\u0031"' in e for e in events)
    assert any(b'"method":"spaced","params":{"a":1}}' in e for e in events)


@pytest.mark.parametrize("relay", ["native", "python"])
def test_native_recording_reaches_the_file_while_the_proxy_runs(tmp_path, relay, backend_id):
    # Within FLUSH_SECONDS of a line, while the agent goes on: the records of the native relay
    # are flushed by the writer's thread as the Python loop's are.
    env = {**os.environ, "ACP_FAST_BACKEND": backend_id}
    if relay == "python":
        env["ACP_FAST_PROXY_RELAY"] = "python"
    agent = tmp_path / "agent.py"
    rec = tmp_path / "r.rec"
    agent.write_text(
        "import os, time, sys\n"
        'os.write(1, b\'{"jsonrpc":"2.0","method":"a"}\\n\')\n'
        f"path = {str(rec)!r}\n"
        "for _ in range(200):\n"
        "    time.sleep(0.05)\n"
        "    if os.path.exists(path) and b'\"method\":\"a\"' in open(path, 'rb').read():\n"
        "        os.write(2, b'seen\\n')\n"
        "        break\n"
    )
    done = subprocess.run(
        [*PROXY, "--record", str(rec), "--", PY, str(agent)], input=b"", capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0
    assert b"seen" in done.stderr
