"""A frame over ``--max-frame-bytes`` never leaves a peer waiting (docs/PROXY.md "Lines over the
limit"), on both backends and both relays (the core's, and the Python loop that ``--record``
selects): an oversized request is answered to its sender with the JSON-RPC error the SDK
integration gives an oversized frame (-32700, ``Parse error``), with the request's id; an
oversized response reaches the side that asked as that error; an oversized notification is only
reported. Every other frame goes on. The id comes from the line's first bytes
(``Framer(heads=True)``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

import orjson
import pytest

from acp_fast.proxy._relay import frame_head

CLI = [sys.executable, "-m", "acp_fast.cli"]

AGENT = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" in msg and "method" in msg:
            size = 5000 if msg["method"] == "big" else 1
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": {"x": "y" * size}}
            sys.stdout.buffer.write(json.dumps(out).encode() + b"\\n")
            sys.stdout.buffer.flush()
    """
)


def _request(rid: Any, method: str, size: int = 0) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {"pad": "p" * size}}) + b"\n"


@pytest.mark.parametrize("relay", ["native", "python"])
@pytest.mark.parametrize("backend_id", ["rust", "python"])
def test_oversized_requests_and_responses_are_answered(backend_id: str, relay: str, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    env = dict(os.environ, ACP_FAST_BACKEND=backend_id, PYTHONPATH=os.pathsep.join(sys.path))
    options = ["--max-frame-bytes", "1000"]
    if relay == "python":
        options += ["--record", str(tmp_path / "rec.ndjson")]
    notify = orjson.dumps({"jsonrpc": "2.0", "method": "note", "params": {"pad": "n" * 3000}}) + b"\n"
    editor = (
        _request(1, "small") + _request("big-one", "small", 3000) + notify + _request(3, "big") + _request(4, "small")
    )
    done = subprocess.run(
        [*CLI, "proxy", *options, "--", sys.executable, str(tmp_path / "agent.py")],
        input=editor,
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr.decode()
    got: Dict[Any, Dict[str, Any]] = {m["id"]: m for m in map(orjson.loads, done.stdout.splitlines())}
    assert set(got) == {1, "big-one", 3, 4}
    assert got[1]["result"] == got[4]["result"] == {"x": "y"}
    for rid, side, line in (("big-one", "editor", 2), (3, "agent", 2)):
        error = got[rid]["error"]
        assert error["code"] == -32700 and error["message"] == "Parse error"
        assert error["data"]["details"].startswith(f"{side} line {line}: expected a frame of at most 1000 bytes")
    err = done.stderr.decode()
    assert "editor line 3: expected a frame of at most 1000 bytes" in err  # the notification: reported only
    assert "the request 'big-one' answered with an error to the editor" in err
    assert "the response 3 answered with an error to the editor" in err


@pytest.mark.parametrize(
    "head, expected",
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"bbbb', ("request", 7)),
        (b'{"jsonrpc":"2.0","id":"s","params":{"a":', ("request", "s")),  # method after the cut
        (b' {"id" : 8 , "result":{"content":"xx', ("response", 8)),
        (b'{"jsonrpc":"2.0","error":{"code":1},"id":9}', ("response", 9)),
        (b'{"jsonrpc":"2.0","method":"x","params":{"a":"b', (None, None)),  # a notification
        (b'{"jsonrpc":"2.0","id":12', (None, None)),  # the id itself cut
        (b'{"jsonrpc":"2.0","id":true,"method":"x"', (None, None)),
        (b'{"jsonrpc":"2.0","id":[1],"method":"x"', (None, None)),
        (b'[{"jsonrpc":"2.0","id":1,"method":"x"}', (None, None)),  # a batch: no single id
        (b"\xff\xfe garbage", (None, None)),
        (b'{"id":1,"method":"\xe4\xbd', ("request", 1)),  # cut inside a UTF-8 sequence
    ],
)
def test_frame_head(head: bytes, expected: Any) -> None:
    assert frame_head(head) == expected


def test_frame_head_never_raises_on_deep_or_odd_heads() -> None:
    odd: List[bytes] = [b"", b"{", b'{"', b'{"id"', b'{"id":', b"[" * 4096, b'{"id":1,"params":' + b"[" * 4000]
    for head in odd:
        frame_head(head)
    assert frame_head(b'{"id":1,"params":' + b"[" * 4000) == ("request", 1)


def test_framer_heads_are_the_first_bytes_whatever_the_split(backend: Any) -> None:
    long = bytes(range(32, 127)) * 50  # 4,750 bytes
    stream = b"ok\n" + long + b"\r\n" + b"x" * 20 + b"\nend"
    expected = [(1, b"ok\n"), (2, len(long) + 2, long[:4096]), (3, 21, b"x" * 20), (4, b"end")]
    for cut in (0, 1, 3, 10, 1000, 4099, 4100, len(long) + 3, len(long) + 4, len(stream)):
        framer = backend.Framer(max_frame_bytes=10, heads=True)
        events = framer.feed(stream[:cut]) + framer.feed(stream[cut:]) + framer.finish()
        assert events == expected, cut
    byte_by_byte = backend.Framer(max_frame_bytes=10, heads=True)
    events = [e for i in range(len(stream)) for e in byte_by_byte.feed(stream[i : i + 1])] + byte_by_byte.finish()
    assert events == expected
    plain = backend.Framer(max_frame_bytes=10, keepends=True)  # without heads: (line, n) as before
    assert plain.feed(stream) + plain.finish() == [(1, b"ok\n"), (2, len(long) + 2), (3, 21), (4, b"end")]
