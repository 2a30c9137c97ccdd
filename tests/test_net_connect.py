"""`acp-fast connect URL`: a stdio endpoint for an editor, talking to a remote agent over
Streamable HTTP or WebSocket (docs/NETWORK.md). A scripted editor drives a whole prompt turn
through `acp-fast connect` against `acp-fast serve -- acp-fast demo-agent`; the lines it reads are
the agent's, byte for byte, and the recordings at both ends agree."""

from __future__ import annotations

import subprocess

import pytest

from net_helpers import INITIALIZE, PY, TIMEOUT, Editor, Serve, check_turn, env, normalised


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_a_prompt_turn_through_connect(backend_id, scheme, tmp_path):
    (tmp_path / "serve").mkdir()
    with Serve("--record", str(tmp_path / "serve"), backend_id=backend_id) as gw:
        url = gw.url if scheme == "http" else gw.ws_url
        editor = Editor(url, "--record", str(tmp_path / "connect.jsonl"), backend_id=backend_id)
        check_turn(editor.turn())
        assert editor.close() == 0
        gw.wait_for("ended (")
        assert gw.stop() == 0
    (served,) = (tmp_path / "serve").glob("*.jsonl")
    at_gateway = normalised(served)
    at_editor = normalised(tmp_path / "connect.jsonl")
    # byte-exact: the editor read the agent's lines as the agent wrote them
    agent_lines = [
        line for line in served.read_bytes().splitlines()[1:] if line.startswith(b'{"t":') and b'"from":"agent"' in line
    ]
    frames = [line[line.index(b'"frame":') + 8 : -1] for line in agent_lines]
    assert [line.rstrip(b"\n") for line in editor.lines] == frames
    # the two recordings agree (their headers name different commands)
    assert at_editor[1:] == at_gateway[1:]
    assert at_editor[0]["argv"] == [url]


def test_connect_strict_answers_editor_lines_that_are_not_json_rpc(backend_id, tmp_path):
    with Serve("--record", str(tmp_path), backend_id=backend_id) as gw:
        editor = Editor(gw.ws_url, "--strict", backend_id=backend_id)
        editor.send(INITIALIZE)
        editor.recv()
        editor.send(b'{"id":5,"method":"session/new"}')  # no "jsonrpc": answered here, not sent
        answer = editor.recv()
        assert answer["id"] == 5 and answer["error"]["code"] == -32600
        assert editor.close() == 0
        gw.wait_for("ended (")
        assert gw.stop() == 0
    (path,) = tmp_path.glob("*.jsonl")
    assert [r["from"] for r in normalised(path)[1:-1]] == ["editor", "agent"]  # the gateway saw initialize only


def test_connect_sends_the_token(backend_id):
    with Serve("--token", "t0k", backend_id=backend_id) as gw:
        editor = Editor(gw.url, "--token", "t0k", backend_id=backend_id)
        check_turn(editor.turn())
        assert editor.close() == 0
        refused = Editor(gw.url, "--token", "wrong", backend_id=backend_id)
        refused.send(INITIALIZE)
        assert refused.close() == 1
        assert refused.proc.stderr is not None
        err = refused.proc.stderr.read().decode()
        assert "initialize: the gateway answered HTTP 401" in err and "Authorization: Bearer" in err
        ws = Editor(gw.ws_url, "--token", "wrong", backend_id=backend_id)
        assert ws.close() == 1
        assert ws.proc.stderr is not None
        assert "the gateway refused the WebSocket: HTTP 401" in ws.proc.stderr.read().decode()
        assert gw.stop() == 0


def test_connect_to_nothing_is_a_clear_error(backend_id):
    p = subprocess.run(
        [PY, "-m", "acp_fast.cli", "connect", "http://127.0.0.1:9/acp"],
        input=INITIALIZE + b"\n",
        capture_output=True,
        env=env(backend_id),
        timeout=TIMEOUT,
    )
    assert p.returncode == 1
    err = p.stderr.decode()
    assert "acp-fast connect: error: cannot reach http://127.0.0.1:9/acp" in err and "Traceback" not in err


def test_the_gateway_ending_the_connection_ends_connect(backend_id):
    with Serve("--idle-timeout", "0.5", backend_id=backend_id) as gw:
        editor = Editor(gw.url, backend_id=backend_id)
        editor.send(INITIALIZE)
        editor.recv()
        assert editor.proc.wait(TIMEOUT) == 1
        assert editor.proc.stderr is not None
        assert "the gateway ended the connection" in editor.proc.stderr.read().decode()
        assert gw.stop() == 0


@pytest.mark.parametrize(
    "args, expected",
    [
        (["ftp://x/acp"], "expected an http://, https://, ws:// or wss:// URL"),
        ([], "URL"),
    ],
)
def test_usage_errors(args, expected):
    p = subprocess.run([PY, "-m", "acp_fast.cli", "connect", *args], capture_output=True, text=True, env=env("python"))
    assert p.returncode == 2
    assert expected in p.stderr and "Traceback" not in p.stderr
