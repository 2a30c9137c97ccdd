"""What the SDK gets wrong and the integration does per the JSON-RPC / ACP specs: batch arrays, bad
lines, oversized lines, invalid responses, NaN. Runs on both backends (the ``backend`` fixture is
handed to the integration). Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings
from typing import Any, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

from acp import schema as S  # noqa: E402
from acp.exceptions import RequestError  # noqa: E402

from sdk_helpers import (  # noqa: E402
    RecordingClient,
    client_side,
    run,
    scenario,
    texts,
    until,
    update_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------------
# What the SDK gets wrong: batches, bad lines, oversized lines, invalid responses, NaN


def _sdk_transport_skips_non_objects() -> bool:
    """What the installed SDK's own line transport does with a line that is JSON but not an object
    (a batch array): skip it (SDK 1.0) or hand it on (SDK 0.12)."""
    from acp._transport import NdjsonTransport

    async def probe() -> Any:
        reader = asyncio.StreamReader()
        reader.feed_data(b'[{"jsonrpc": "2.0", "method": "x"}]\n{"jsonrpc": "2.0", "method": "y"}\n')
        reader.feed_eof()
        return await NdjsonTransport(reader, None).receive()  # type: ignore[arg-type]  # sender unused

    first = run(probe())
    assert first in ([{"jsonrpc": "2.0", "method": "x"}], {"jsonrpc": "2.0", "method": "y"})
    return isinstance(first, dict)


def test_the_sdk_alone_loses_a_batch_array(caplog: Any) -> None:
    """The reference behaviour the integration fixes: a batch line is never dispatched. SDK 0.12's
    receive loop dies on it (it calls ``.get`` on a list) and nothing after it is delivered; SDK
    1.0's transport logs and skips it, and the stream goes on without the batch's entries."""

    async def main() -> List[str]:
        client = RecordingClient()
        async with client_side(client, fast=False) as (conn, peer):
            peer.send(update_frame(0), [update_frame(1), update_frame(2)], update_frame(3))
            await asyncio.sleep(0.3)
            return texts(client)

    skips = _sdk_transport_skips_non_objects()
    with caplog.at_level(logging.WARNING):
        delivered = run(main())
    assert delivered == (["0", "3"] if skips else ["0"])
    assert ("Ignoring non-object JSON-RPC message" in caplog.messages) is skips


def test_batch_of_notifications_is_dispatched_in_array_order(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send(update_frame(0), [update_frame(1), 17, update_frame(2)], update_frame(3))
            await until(lambda: len(texts(client)) == 4)
            reply = await peer.line()  # the invalid entry's error, alone in an array
            return texts(client), reply, await peer.silent()

    delivered, reply, silent = run(main())
    assert delivered == ["0", "1", "2", "3"]
    column = json.dumps([update_frame(1), 17, update_frame(2)]).index(" 17,") + 2
    details = f"expected a JSON-RPC message object, found number at line 2 column {column}"
    assert reply == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid request", "data": {"details": details}},
        }
    ]
    assert silent


def test_batch_with_requests_gets_one_array_reply_after_all_are_handled(backend: Any) -> None:
    release = None

    class SlowClient(RecordingClient):
        async def read_text_file(self, **kwargs: Any) -> S.ReadTextFileResponse:
            await release.wait()
            return await super().read_text_file(**kwargs)

    async def main() -> Any:
        nonlocal release
        release = asyncio.Event()
        client = SlowClient()
        permission = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "session/request_permission",
            "params": scenario.golden("request_permission_request"),
        }
        read = {
            "jsonrpc": "2.0",
            "id": "r",
            "method": "fs/read_text_file",
            "params": scenario.golden("fs_read_text_file_request"),
        }
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send([permission, update_frame(1), {"jsonrpc": "2.0"}, read])
            nothing_yet = await peer.silent(0.2)  # read_text_file is still running
            release.set()
            reply = await peer.line()
            return client.calls, reply, nothing_yet, await peer.silent()

    calls, reply, nothing_yet, silent = run(main())
    assert nothing_yet and silent
    assert [name for name, _ in calls] == ["request_permission", "session_update", "read_text_file"]
    by_id = {json.dumps(entry["id"]): entry for entry in reply}
    assert len(reply) == 3 and set(by_id) == {"5", '"r"', "null"}
    assert by_id["5"]["result"] == scenario.golden("request_permission_response_selected")
    assert by_id['"r"']["result"] == scenario.golden("fs_read_text_file_response")
    assert by_id["null"]["error"]["code"] == -32600


def test_batch_of_responses_resolves_each_request(backend: Any) -> None:
    async def main() -> Any:
        async with client_side(RecordingClient(), fast=True, backend=backend) as (conn, peer):
            first = asyncio.ensure_future(conn.initialize(protocol_version=1))
            second = asyncio.ensure_future(conn.new_session(cwd="/tmp"))
            requests = [await peer.line(), await peer.line()]
            peer.send(
                [
                    {"jsonrpc": "2.0", "id": requests[1]["id"], "result": scenario.golden("new_session_response")},
                    {"jsonrpc": "2.0", "id": requests[0]["id"], "result": scenario.golden("initialize_response")},
                ]
            )
            return await first, await second

    init, session = run(main())
    assert init == scenario.golden_model("initialize_response")
    assert session == scenario.golden_model("new_session_response")


def test_empty_batch_and_bad_lines_get_error_replies_and_the_stream_goes_on(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            peer.send(b"[]", b"not json", b'{"jsonrpc":"2.0","method":"x","params":NaN}', update_frame(0), b"", b"\r")
            peer.send(b'{"jsonrpc":"1.0","id":3,"method":"session/update"}', update_frame(1))
            replies = [await peer.line() for _ in range(4)]
            await until(lambda: len(texts(client)) == 2)
            return replies, texts(client), await peer.silent()

    replies, delivered, silent = run(main())
    assert delivered == ["0", "1"] and silent
    assert [(r["id"], r["error"]["code"], r["error"]["message"]) for r in replies] == [
        (None, -32600, "Invalid request"),
        (None, -32700, "Parse error"),
        (None, -32700, "Parse error"),
        (None, -32600, "Invalid request"),
    ]
    assert replies[0]["error"]["data"]["details"].startswith("expected at least one message in the batch")
    assert replies[1]["error"]["data"]["details"] == "expected 'null', found 'o' at line 2 column 2"
    assert replies[2]["error"]["data"]["details"] == "expected a JSON value, found 'N' at line 3 column 40"
    assert "line 7" in replies[3]["error"]["data"]["details"]


def test_reply_errors_false_only_logs(backend: Any, caplog: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, reply_errors=False) as (conn, peer):
            peer.send(b"{oops", update_frame(0))
            await until(lambda: texts(client) == ["0"])
            return await peer.silent()

    with caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk"):
        assert run(main())
    assert "bad frame on line 1: expected a string key, found 'o' at line 1 column 2" in caplog.text


def test_logged_bad_frames_cannot_drive_the_terminal(backend: Any, caplog: Any) -> None:
    """A bad frame's text reaches the log (often a terminal) with its control characters escaped."""

    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, reply_errors=False) as (conn, peer):
            peer.send(b'{"jsonrpc":"2\\u001b]0;owned\\u0007","method":"x"}', update_frame(0))
            await until(lambda: texts(client) == ["0"])
            return await peer.silent()

    with caplog.at_level(logging.WARNING, logger="acp_fast.integrations.acp_sdk"):
        assert run(main())
    assert "bad frame on line 1" in caplog.text
    assert "\x1b" not in caplog.text and "\x07" not in caplog.text
    assert 'found string "2\\u001b]0;owned\\u0007"' in caplog.text


def test_oversized_frame_is_refused_and_the_next_one_delivered(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend, max_frame_bytes=4096) as (conn, peer):
            assert conn._conn.max_frame_bytes == 4096
            big = update_frame(0)
            big["params"]["update"]["content"]["text"] = "x" * 100_000
            peer.send(big, update_frame(1))
            reply = await peer.line()
            await until(lambda: texts(client) == ["1"])
            return reply

    reply = run(main())
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert reply["error"]["data"]["details"].startswith("expected a frame of at most 4096 bytes, found a longer line")


def test_large_frames_beyond_64_kib_are_delivered_whole(backend: Any) -> None:
    async def main() -> Any:
        client = RecordingClient()
        async with client_side(client, fast=True, backend=backend) as (conn, peer):
            frames = [update_frame(i) for i in range(3)]
            frames[1]["params"]["update"]["content"]["text"] = "ü" * 3_000_000
            peer.send(*frames)
            await until(lambda: len(texts(client)) == 3)
            return texts(client)

    delivered = run(main())
    assert delivered[0] == "0" and delivered[2] == "2" and delivered[1] == "ü" * 3_000_000


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_invalid_response_to_a_pending_request(backend: Any, fast: bool) -> None:
    """The SDK resolves ``{"jsonrpc": "2.0", "id": 0}`` (neither result nor error) with ``None``;
    the integration fails the request with -32600 instead of inventing a result."""

    async def main() -> Any:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            pending = asyncio.ensure_future(conn._conn.send_request("_x/y", {}))
            request = await peer.line()
            peer.send({"jsonrpc": "2.0", "id": request["id"]})
            try:
                return await pending
            except RequestError as exc:
                return exc.code, str(exc), await peer.silent()

    result = run(main())
    if fast:
        assert result == (-32600, "Invalid request", True)
    else:
        assert result is None


@pytest.mark.parametrize("fast", [False, True], ids=["sdk", "acp-fast"])
def test_outgoing_json(backend: Any, fast: bool) -> None:
    """What goes on the wire: the same JSON values (the SDK escapes non-ASCII, acp-fast writes
    UTF-8); keys that are not str are written as the SDK writes them; NaN is refused by acp-fast
    (the SDK writes ``NaN``, which is not JSON)."""

    async def main() -> Any:
        async with client_side(RecordingClient(), fast=fast, backend=backend) as (conn, peer):
            request = asyncio.ensure_future(
                conn._conn.send_request("_a", {"t": "日本\u2028", "n": 2**70, 1: [1.5, None]})
            )
            raw = await asyncio.wait_for(peer.reader.readline(), 5)
            try:
                await conn._conn.send_notification("_b", {"x": float("nan")})
                nan = await asyncio.wait_for(peer.reader.readline(), 5)
            except ValueError as exc:
                nan = exc
            request.cancel()  # never answered: only its bytes on the wire count
            return raw, nan

    raw, nan = run(main())
    assert json.loads(raw) == {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "_a",
        "params": {"t": "日本\u2028", "n": 2**70, "1": [1.5, None]},
    }
    if fast:
        assert isinstance(nan, ValueError) and "Out of range float values are not JSON compliant" in str(nan)
    else:
        assert b"NaN" in nan
