"""`acp-fast serve`: a stdio agent over Streamable HTTP and WebSocket (docs/NETWORK.md).

A gateway runs `acp-fast demo-agent` per connection; test clients written from the transport's
description drive whole prompt turns (tool calls, a permission request) over HTTP/SSE and over
WebSocket; the limits (413, 503, 401, idle timeout), the non-loopback guard, the clean shutdown
and the recordings (one per connection, equal to the stdio proxy's for the same turn)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess

import aiohttp
import pytest

from net_helpers import (
    INITIALIZE,
    NEW_SESSION,
    PY,
    HttpPeer,
    Serve,
    allow,
    check_turn,
    env,
    http_turn,
    normalised,
    prompt,
    stdio_recording,
    ws_turn,
)


def test_a_prompt_turn_over_streamable_http(backend_id, tmp_path):
    with Serve("--record", str(tmp_path), backend_id=backend_id) as gw:
        out = asyncio.run(http_turn(gw.url))
        check_turn([m for _, m in out["seen"]])
        sid = out["sid"]
        # the session's messages came on the session's stream, the permission request too
        assert all(stream == sid for stream, _ in out["seen"])
        assert out["deleted"] == 202
        assert out["after"] == 404  # the connection is gone
        gw.wait_for("ended (the client ended the connection (DELETE); agent exit status 0)")
        assert gw.stop() == 0
    recordings = list(tmp_path.glob("*.jsonl"))
    assert [p.stem for p in recordings] == [out["cid"]]


def test_a_prompt_turn_over_websocket(backend_id, tmp_path):
    with Serve("--trace", str(tmp_path), backend_id=backend_id) as gw:
        out = asyncio.run(ws_turn(gw.ws_url))
        check_turn(out["seen"])
        assert out["cid"] and len(out["cid"]) == 32
        gw.wait_for("ended (the client closed the WebSocket")
        assert gw.stop() == 0
    # a trace per connection, named by the connection id
    (trace,) = tmp_path.glob("*.jsons")
    assert trace.stem == out["cid"]
    events = [json.loads(line) for line in trace.read_bytes().splitlines()]
    assert len(events) >= 20
    assert any("session/request_permission" in json.dumps(e) for e in events)


def test_the_recording_of_a_network_turn_equals_the_stdio_one(backend_id, tmp_path):
    """The same client lines over HTTP, over WebSocket and over stdio (`acp-fast proxy
    --record`): the three recordings are equal but for their times."""
    (tmp_path / "http").mkdir()
    (tmp_path / "ws").mkdir()
    with Serve("--record", str(tmp_path / "http" / "{n}.jsonl"), backend_id=backend_id) as gw:
        out = asyncio.run(http_turn(gw.url))
        gw.wait_for("ended")
        assert gw.stop() == 0
    with Serve("--record", str(tmp_path / "ws"), backend_id=backend_id) as gw:
        asyncio.run(ws_turn(gw.ws_url))
        gw.wait_for("ended")
        assert gw.stop() == 0
    permission = next(m for _, m in out["seen"] if m.get("method") == "session/request_permission")
    lines = [INITIALIZE, NEW_SESSION, prompt(out["sid"]), allow(permission["id"])]
    stdio = normalised(stdio_recording(tmp_path, backend_id, lines))
    http = normalised(tmp_path / "http" / "1.jsonl")
    (ws_path,) = (tmp_path / "ws").glob("*.jsonl")
    assert http == stdio
    assert normalised(ws_path) == stdio
    assert stdio[-1] == {"event": "exit", "status": 0}
    assert sum(1 for r in stdio if r.get("from") == "editor") == 4


async def _post(url, body, **headers):
    headers = {"Content-Type": "application/json", **headers}
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as r:
        return r.status, await r.text(), dict(r.headers)


def test_errors_are_clear_http_statuses(backend_id):
    with Serve("--max-body-bytes", "1000", backend_id=backend_id) as gw:
        status, text, _ = asyncio.run(_post(gw.url, b"{" + b" " * 2000 + b"}"))
        assert status == 413 and "at most 1000 bytes (--max-body-bytes)" in text
        status, text, _ = asyncio.run(_post(gw.url, b'{"jsonrpc":'))
        assert status == 400 and "invalid JSON" in text
        status, text, _ = asyncio.run(_post(gw.url, NEW_SESSION))
        assert status == 400 and "Acp-Connection-Id" in text
        status, text, _ = asyncio.run(_post(gw.url, NEW_SESSION, **{"Acp-Connection-Id": "nope"}))
        assert status == 404 and "unknown connection" in text
        status, text, _ = asyncio.run(_post(gw.url, b"[]"))
        assert status == 501

        async def get_without_accept():
            headers = {"Accept": "application/json"}
            async with aiohttp.ClientSession() as http, http.get(gw.url, headers=headers) as r:
                return r.status

        assert asyncio.run(get_without_accept()) == 406

        async def ws_too_large():
            async with aiohttp.ClientSession() as http, http.ws_connect(gw.ws_url) as ws:
                await ws.send_str("x" * 2000)
                await ws.receive()
                return ws.close_code

        assert asyncio.run(ws_too_large()) == 1009  # message too big
        gw.wait_for("exceeds limit 1000")
        assert gw.stop() == 0
        assert "Traceback" not in gw.stderr


def test_a_session_post_needs_its_session_header(backend_id):
    async def go(url):
        async with aiohttp.ClientSession() as http:
            peer = HttpPeer(http, url)
            await peer.initialize()
            sid = await peer.new_session()
            missing = await peer.post(prompt(sid))
            unknown = await peer.post(prompt(sid), "sess_other")
            await peer.close()
            return missing.status, unknown.status

    with Serve(backend_id=backend_id) as gw:
        assert asyncio.run(go(gw.url)) == (400, 404)
        assert gw.stop() == 0


def test_over_max_connections_is_503(backend_id):
    async def go(url, ws_url):
        async with aiohttp.ClientSession() as http:
            first = HttpPeer(http, url)
            await first.initialize()
            status, text, headers = await _post(url, INITIALIZE)
            try:
                await http.ws_connect(ws_url)
                ws_status = None
            except aiohttp.WSServerHandshakeError as e:
                ws_status = e.status
            await first.close()
            return status, text, headers, ws_status

    with Serve("--max-connections", "1", backend_id=backend_id) as gw:
        status, text, headers, ws_status = asyncio.run(go(gw.url, gw.ws_url))
        assert status == 503 and "maximum of 1 connections (--max-connections)" in text
        assert "Retry-After" in headers
        assert ws_status == 503
        assert gw.stop() == 0


def test_a_token_is_required_when_given(backend_id):
    with Serve("--token", "s3cret", backend_id=backend_id) as gw:
        status, text, headers = asyncio.run(_post(gw.url, INITIALIZE))
        assert status == 401 and "Authorization: Bearer" in text
        assert headers.get("WWW-Authenticate", "").startswith("Bearer")
        status, _, _ = asyncio.run(_post(gw.url, INITIALIZE, Authorization="Bearer wrong"))
        assert status == 401
        out = asyncio.run(http_turn(gw.url, {"Authorization": "Bearer s3cret"}))
        check_turn([m for _, m in out["seen"]])
        out = asyncio.run(ws_turn(gw.ws_url, {"Authorization": "Bearer s3cret"}))
        check_turn(out["seen"])
        assert gw.stop() == 0


def test_the_token_from_the_environment(backend_id):
    with Serve(backend_id=backend_id, ACP_FAST_TOKEN="envtoken") as gw:
        assert asyncio.run(_post(gw.url, INITIALIZE))[0] == 401
        assert asyncio.run(_post(gw.url, INITIALIZE, Authorization="Bearer envtoken"))[0] == 200
        assert gw.stop() == 0


def test_an_idle_connection_is_ended(backend_id, tmp_path):
    async def go(url):
        async with aiohttp.ClientSession() as http:
            peer = HttpPeer(http, url)
            await peer.initialize()
            stream, message = await peer.recv()  # the stream ends when the gateway ends the connection
            await peer.close()
            return stream, message

    with Serve("--idle-timeout", "0.5", "--record", str(tmp_path), backend_id=backend_id) as gw:
        assert asyncio.run(go(gw.url)) == (None, None)
        gw.wait_for("idle for more than 0.5 s (--idle-timeout)")
        assert gw.stop() == 0
    (path,) = tmp_path.glob("*.jsonl")
    assert normalised(path)[-1] == {"event": "exit", "status": 0}


def test_strict_answers_client_lines_that_are_not_json_rpc(backend_id):
    async def go(url):
        async with aiohttp.ClientSession() as http:
            peer = HttpPeer(http, url)
            await peer.initialize()
            async with http.post(
                url,
                data=b'{"id":7,"method":"session/new"}',
                headers={"Content-Type": "application/json", "Acp-Connection-Id": peer.cid},
            ) as r:
                body = await r.json()
                status = r.status
            async with http.ws_connect(url.replace("http", "ws")) as ws:
                await ws.send_str('{"id":8,"method":"x"}')
                frame = json.loads((await ws.receive()).data)
            await peer.close()
            return status, body, frame

    with Serve("--strict", backend_id=backend_id) as gw:
        status, body, frame = asyncio.run(go(gw.url))
        assert status == 400 and body["id"] == 7 and body["error"]["code"] == -32600
        assert frame["id"] == 8 and frame["error"]["code"] == -32600
        assert "answered with an error, not forwarded" in gw.stderr
        assert gw.stop() == 0


def test_clean_shutdown_ends_agents_and_completes_recordings(backend_id, tmp_path):
    async def open_two(url, ws_url):
        http = aiohttp.ClientSession()
        peer = HttpPeer(http, url)
        await peer.initialize()
        ws = await http.ws_connect(ws_url)
        await ws.send_str(INITIALIZE.decode())
        await ws.receive()
        return http, peer, ws

    with Serve("--record", str(tmp_path), backend_id=backend_id) as gw:
        loop = asyncio.new_event_loop()
        try:
            http, peer, ws = loop.run_until_complete(open_two(gw.url, gw.ws_url))
            gw.wait_for("listening")
            assert gw.stop(signal.SIGTERM) == 0
            # the clients see their streams end
            stream, message = loop.run_until_complete(peer.recv())
            assert (stream, message) == (None, None)
            closed = loop.run_until_complete(ws.receive())
            assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            loop.run_until_complete(peer.close())
            loop.run_until_complete(http.close())
        finally:
            loop.close()
        assert "shutting down: 2 connections to end" in gw.stderr
        assert gw.stderr.count("ended (the gateway is shutting down; agent exit status 0)") == 2
    recordings = sorted(tmp_path.glob("*.jsonl"))
    assert len(recordings) == 2
    for path in recordings:
        records = normalised(path)
        assert records[-1] == {"event": "exit", "status": 0}
        assert records[1]["from"] == "editor" and records[2]["from"] == "agent"


def test_a_slow_sse_client_pauses_the_agent_instead_of_buffering(backend_id, tmp_path):
    """--queue 2: the session's stream is not read while the agent writes a long turn; the
    gateway holds 2 messages and stops reading the agent (the recording, which has every line
    the gateway read, stays far short of the turn); once the client reads, the whole turn
    arrives, in order."""

    def agent_lines():
        (path,) = tmp_path.glob("*.jsonl")
        return path.read_bytes().count(b'"from":"agent"')

    async def go(url):
        async with aiohttp.ClientSession() as http:
            peer = HttpPeer(http, url)
            await peer.initialize()
            sid = await peer.new_session()
            assert (await peer.post(prompt(sid), sid)).status == 202
            await asyncio.sleep(1.0)  # the agent writes; nobody reads the session's stream yet
            paused = agent_lines()
            peer.open(sid)
            seen = []
            while True:
                _, message = await peer.recv()
                seen.append(message)
                if message.get("method") == "session/request_permission":
                    await peer.post(allow(message["id"]))
                if message.get("id") == 2 and "method" not in message:
                    break
            await peer.close()
            return paused, seen

    agent = [PY, "-m", "acp_fast.cli", "demo-agent", "--chunks", "5000"]
    with Serve("--queue", "2", "--record", str(tmp_path), backend_id=backend_id, agent=agent) as gw:
        paused, seen = asyncio.run(go(gw.url))
        check_turn(seen)
        assert len([m for m in seen if m.get("method") == "session/update"]) > 5000
        assert paused < 2000, paused
        assert gw.stop() == 0
    assert agent_lines() > 5000


def test_non_loopback_needs_allow_remote_and_warns(backend_id):
    p = subprocess.run(
        [PY, "-m", "acp_fast.cli", "serve", "--listen", "0.0.0.0:0", "--", PY, "-m", "acp_fast.cli", "demo-agent"],
        capture_output=True,
        text=True,
        env=env(backend_id),
        timeout=60,
    )
    assert p.returncode == 2
    assert "reachable from other machines" in p.stderr and "--allow-remote" in p.stderr
    assert "Traceback" not in p.stderr
    with Serve("--listen", "0.0.0.0:0", "--allow-remote", backend_id=backend_id) as gw:
        assert "warning: listening on 0.0.0.0:0, reachable from other machines" in gw.stderr
        assert "--token" in gw.stderr
        assert gw.stop() == 0


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], "expected the agent command after --"),
        (["--listen", "nowhere", "--", "x"], "expected HOST:PORT"),
        (["--record", "one-file.jsonl", "--", "x"], "expected a directory or a file name with {id} or {n}"),
        (["--max-connections", "0", "--", "x"], "--max-connections"),
    ],
)
def test_usage_errors(args, expected, tmp_path):
    p = subprocess.run(
        [PY, "-m", "acp_fast.cli", "serve", *args], capture_output=True, text=True, env=env("python"), cwd=tmp_path
    )
    assert p.returncode == 2
    assert expected in p.stderr and "Traceback" not in p.stderr


def test_an_agent_that_cannot_start_is_a_502(backend_id):
    with Serve(backend_id=backend_id, agent=["/nonexistent/agent"]) as gw:
        status, text, _ = asyncio.run(_post(gw.url, INITIALIZE))
        assert status == 502 and "cannot start the agent /nonexistent/agent" in text
        assert gw.stop() == 0


def test_a_port_in_use_is_a_clear_error(backend_id):
    with Serve(backend_id=backend_id) as gw:
        port = gw.url.rsplit(":", 1)[1].split("/")[0]
        p = subprocess.run(
            [PY, "-m", "acp_fast.cli", "serve", "--listen", f"127.0.0.1:{port}", "--", "true"],
            capture_output=True,
            text=True,
            env=env(backend_id),
            timeout=60,
        )
        assert p.returncode == 1
        assert f"acp-fast serve: error: cannot listen on 127.0.0.1:{port}" in p.stderr
        assert "Traceback" not in p.stderr
        assert gw.stop() == 0


def test_a_recording_that_cannot_be_written_refuses_the_connection(backend_id, tmp_path):
    (tmp_path / "1.jsonl").write_text("kept\n")  # never overwritten
    with Serve("--record", str(tmp_path / "{n}.jsonl"), backend_id=backend_id) as gw:
        status, text, _ = asyncio.run(_post(gw.url, INITIALIZE))
        assert status == 500 and "cannot write this connection's --record file" in text
        gw.wait_for("already exists")
        assert asyncio.run(_post(gw.url, INITIALIZE))[0] == 200  # the next one: 2.jsonl
        assert gw.stop() == 0
        assert "Traceback" not in gw.stderr
    assert (tmp_path / "1.jsonl").read_text() == "kept\n"
    assert normalised(tmp_path / "2.jsonl")[-1] == {"event": "exit", "status": 0}


def test_an_agent_that_exits_before_answering_initialize_is_a_502(backend_id):
    with Serve(backend_id=backend_id, agent=[PY, "-c", "import sys; sys.exit(3)"]) as gw:
        status, text, _ = asyncio.run(_post(gw.url, INITIALIZE))
        assert status == 502 and "the agent exited before it answered initialize" in text
        gw.wait_for("agent exit status 3")
        assert gw.stop() == 0
        assert "Traceback" not in gw.stderr and "never retrieved" not in gw.stderr


def test_import_acp_fast_does_not_need_aiohttp():
    code = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "import acp_fast, acp_fast.net\n"
        "from acp_fast.cli import main\n"
        "sys.exit(main(['serve', '--', 'x']))\n"
    )
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env("python"))
    assert p.returncode == 2
    assert "pip install 'acp-fast[net]'" in p.stderr and "Traceback" not in p.stderr


def test_connect_without_aiohttp_says_which_extra():
    code = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "from acp_fast.cli import main\n"
        "sys.exit(main(['connect', 'http://127.0.0.1:9/acp']))\n"
    )
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env("python"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert (
        p.stderr == "acp-fast connect: error: ACP over the network needs aiohttp, which is not installed: "
        "pip install 'acp-fast[net]'\n"
    )


@pytest.mark.parametrize("queue", ["256", "2"])
def test_a_stream_opened_after_a_quick_agent_exited_gets_every_line(backend_id, queue, tmp_path):
    """The agent answers `initialize`, writes 50 notifications and exits before the client opens
    its stream (with `--queue 2` the gateway is still waiting to read the agent then): the
    connection drains instead of ending at once, the late GET gets every line in order, then its
    stream ends; a GET after that is a 404 that says the connection ended."""
    answer = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
    sent = [
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%d \xc3\xa9"}}}}' % i
        for i in range(50)
    ]
    data = b"".join(x + b"\n" for x in [answer, *sent])
    script = tmp_path / "quick.py"
    script.write_text(f"import sys\nsys.stdin.buffer.readline()\nsys.stdout.buffer.write({data!r})\n")

    async def go(url):
        async with aiohttp.ClientSession() as http:
            peer = HttpPeer(http, url)
            await peer.initialize(open_stream=False)
            await asyncio.sleep(1.5)  # the agent has exited by now
            peer.open(None)
            seen = []
            while True:
                stream, message = await peer.recv()
                if message is None:
                    break
                seen.append(message)
            await peer.close()
            async with http.get(url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": peer.cid or ""}) as r:
                assert r.status == 404
                assert "ended" in await r.text()
            return seen

    with Serve("--queue", queue, backend_id=backend_id, agent=[PY, str(script)]) as gw:
        seen = asyncio.run(go(gw.url))
        assert [json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode() for m in seen] == sent
        gw.wait_for("ended (the agent's output ended; agent exit status 0)")
        assert gw.stop() == 0


def _pidfd() -> bool:
    import os

    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


@pytest.mark.skipif(not _pidfd(), reason="needs Linux process descriptors (pidfd_open)")
def test_agents_are_watched_without_a_thread_each(backend_id):
    """30 connections, 30 agent processes: the gateway does not hold a thread per agent."""

    def threads(pid):
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("Threads:")).split()[1])

    async def go(url, pid):
        async with aiohttp.ClientSession() as http:
            sockets = []
            for _ in range(30):
                ws = await http.ws_connect(url)
                await ws.send_str(INITIALIZE.decode())
                await ws.receive()
                sockets.append(ws)
            held = threads(pid)
            for ws in sockets:
                await ws.close()
            return held

    with Serve(backend_id=backend_id) as gw:
        held = asyncio.run(go(gw.ws_url, gw.proc.pid))
        assert held < 15, held
        assert gw.stop() == 0
