"""What the integration finds in the installed SDK: its fast paths on, the experimental v2
connections on acp-fast (SDK 1.0), and the once-only warning when a fast path cannot be used.
Shared helpers: ``sdk_helpers.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
import warnings
from importlib.metadata import version
from typing import Any, Iterator, List, Tuple

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")

import acp.client.connection  # noqa: E402
import acp.connection  # noqa: E402
import acp.telemetry  # noqa: E402
from acp.exceptions import RequestError  # noqa: E402

from acp_fast.integrations import _sdk_support, _sdk_validation, acp_sdk  # noqa: E402
from sdk_helpers import (  # noqa: E402
    HAS_V2,
    RecordingClient,
    client_side,
    run,
    texts,
    until,
    update_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def fresh_warnings(monkeypatch: Any) -> Iterator[None]:
    """The integration's once-only warnings as if none had been given yet in this process."""
    monkeypatch.setattr(_sdk_support, "_warned", set())
    yield


def _runtime_warnings(caught: List[warnings.WarningMessage]) -> List[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


# ---------------------------------------------------------------------------------------------
# The installed SDK: every fast path on, silently


def test_the_fast_paths_are_on_with_the_installed_sdk(fresh_warnings: None, monkeypatch: Any) -> None:
    """On the SDK installed (CI: 0.12.1 and the newest 1.0 pre-release), the update validators are
    the stripped ones for every tag, the client's update fast path is on, and nothing warns: with
    the SDK's telemetry off, as without opentelemetry and logfire (the `otel` extra installs
    opentelemetry, which turns the SDK's spans on: the next test has that case)."""
    monkeypatch.setattr(acp.telemetry, "TRACER", None, raising=False)
    monkeypatch.setattr(acp.telemetry, "logfire_span", None, raising=False)
    monkeypatch.setattr(_sdk_validation, "_strict_update_validators", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strict = _sdk_validation._update_validators()

        async def main() -> Any:
            async with client_side(RecordingClient(), fast=True) as (conn, peer):
                return conn._conn._tracker, conn._conn._strict_update

        tracker, validators = run(main())
    assert _runtime_warnings(caught) == []
    assert tracker is not None and validators is strict
    field = acp.schema.SessionNotification.model_fields["update"]
    assert len(strict) == len(field.annotation.__args__)
    if hasattr(acp.connection.Connection, "_cancel_incoming"):
        assert _sdk_support.MIRROR_REQUESTS


# ---------------------------------------------------------------------------------------------
# Once-only warnings when a fast path cannot be used


def test_the_update_fast_path_off_is_said_once_with_its_reason(fresh_warnings: None, monkeypatch: Any) -> None:
    monkeypatch.setattr(acp.telemetry, "logfire_span", lambda name, attributes=None: contextlib.nullcontext())

    async def main() -> Tuple[List[Any], List[str]]:
        trackers, delivered = [], []
        for _ in range(2):
            client = RecordingClient()
            async with client_side(client, fast=True) as (conn, peer):
                trackers.append(conn._conn._tracker)
                peer.send(update_frame(0))
                await until(lambda client=client: len(client.calls) == 1)
                delivered += texts(client)
        return trackers, delivered

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trackers, delivered = run(main())
    assert trackers == [None, None] and delivered == ["0", "0"]  # the SDK's router, spans and all
    assert _runtime_warnings(caught) == [
        (
            "acp-fast: the client's session/update fast path is off: the SDK's telemetry spans are on "
            "(logfire or opentelemetry is installed)"
        )
    ]


def test_a_legacy_update_handler_is_said_once(fresh_warnings: None) -> None:
    class LegacyClient:
        def __init__(self) -> None:
            self.seen: List[Any] = []

        async def sessionUpdate(self, params: Any) -> None:  # the legacy form
            self.seen.append(params)

    async def main() -> Any:
        client = LegacyClient()
        async with client_side(client, fast=True) as (conn, peer):
            peer.send(update_frame(0))
            await until(lambda: len(client.seen) == 1)
            return conn._conn._tracker, client.seen[0].update.content.text

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(main()) == (None, "0")
        run(main())
    assert _runtime_warnings(caught) == [
        (
            "acp-fast: the client's session/update fast path is off: the client's session_update handler has "
            "the legacy (deprecated) form"
        )
    ]


def test_unrecognized_sdk_validators_are_said_once(fresh_warnings: None, monkeypatch: Any) -> None:
    """An SDK whose lenient wrappers are not recognized (as 1.0's were before acp-fast knew them):
    the fast path keeps them, and says so, once, naming them."""
    monkeypatch.setattr(_sdk_validation, "_LENIENT_HELPERS", set())
    monkeypatch.setattr(_sdk_validation, "_strict_update_validators", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strict = _sdk_validation._update_validators()
        monkeypatch.setattr(_sdk_validation, "_strict_update_validators", None)
        _sdk_validation._update_validators()
    messages = _runtime_warnings(caught)
    assert len(messages) == 1
    assert messages[0].startswith("acp-fast: the session/update fast path keeps ")
    assert "_on_error" in messages[0] and "(slower)" in messages[0]
    update = update_frame(0)["params"]["update"]
    expected = acp.schema.SessionNotification.model_validate({"sessionId": "s", "update": update}).update
    assert strict["agent_message_chunk"](update) == expected


def test_a_cancellation_acp_fast_cannot_mirror_is_said_once(fresh_warnings: None, monkeypatch: Any) -> None:
    monkeypatch.setattr(_sdk_support, "_MIRROR_PROBLEM", "its Connection has _cancel_incoming but not _track_incoming")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with acp_sdk.installed():
            pass
        with acp_sdk.installed():
            pass
    assert _runtime_warnings(caught) == [
        (
            "acp-fast: $/cancel_request cannot be honoured as this SDK does (its Connection has _cancel_incoming "
            "but not _track_incoming); incoming requests are dispatched eagerly and cannot be cancelled"
        )
    ]


# ---------------------------------------------------------------------------------------------
# Experimental v2 connections (SDK 1.0)


def test_v2_connections_are_patched_when_imported_after_install() -> None:
    """``acp.experimental`` costs as much to import as ``acp``: install() does not import it, and
    patches its connection module when the application imports it."""
    code = textwrap.dedent(
        """
        import importlib.util, inspect, sys
        import acp, acp.connection
        from acp_fast.integrations import acp_sdk
        has_v2 = importlib.util.find_spec("acp.experimental") is not None
        acp_sdk.install()
        assert "acp.experimental" not in sys.modules
        if has_v2:
            from acp.experimental.v2 import _connection
            assert _connection.Connection is acp_sdk.FastConnection
            assert "def open_connection" in inspect.getsource(_connection)
            acp_sdk.uninstall()
            assert _connection.Connection is acp.connection.Connection
            with acp_sdk.installed():
                assert _connection.Connection is acp_sdk.FastConnection
            assert _connection.Connection is acp.connection.Connection
        print("v2" if has_v2 else "no v2")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("v2" if HAS_V2 else "no v2")


async def _v2_session(fast: bool, backend: Any) -> Tuple[List[str], List[Any], Any]:
    import socket

    from acp.experimental import v2

    schema = v2.schema
    events: List[str] = []

    class Agent:
        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, info: Any, **kwargs: Any) -> Any:
            events.append(f"initialize {info.name}")
            return schema.InitializeResponse(
                protocol_version=protocol_version, info=schema.Implementation(name="a", version="1")
            )

        async def new_session(self, cwd: str, **kwargs: Any) -> Any:
            return schema.NewSessionResponse(session_id="s1")

        async def prompt(self, session_id: str, prompt: Any, **kwargs: Any) -> Any:
            for i in range(3):
                chunk = schema.TextContentBlock(text=f"{prompt[0].text} {i}")
                await self.conn.session_update(session_id, schema.AgentMessageChunk(message_id="m", content=chunk))
            return schema.PromptResponse(message_id="m1", stop_reason="end_turn")

    class Client:
        def __init__(self) -> None:
            self.updates: List[Any] = []

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            self.updates.append((session_id, update))

    a, b = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=a)
    client_reader, client_writer = await asyncio.open_connection(sock=b)
    client = Client()
    with acp_sdk.installed(backend=backend) if fast else contextlib.nullcontext():
        agent_conn = v2.AgentSideConnection(Agent(), agent_writer, agent_reader)
        conn = v2.ClientSideConnection(client, client_writer, client_reader)
    expected = acp_sdk.FastConnection if fast else acp.connection.Connection
    assert type(agent_conn._conn) is expected and type(conn._conn) is expected
    try:
        await conn.initialize(protocol_version=v2.PROTOCOL_VERSION, info=schema.Implementation(name="c", version="1"))
        session = await conn.new_session(cwd="/tmp")
        response = await conn.prompt(session_id=session.session_id, prompt=[schema.TextContentBlock(text="hi")])
        await until(lambda: len(client.updates) == 3)
    finally:
        await conn.close()
        await agent_conn.close()
        client_writer.close()
        agent_writer.close()
    return events, client.updates, response


def test_v2_client_and_agent_run_on_acp_fast(backend: Any, fresh_warnings: None) -> None:
    """An experimental v2 client and agent, both on acp-fast: the same handler calls and models as
    without it. The v2 client's updates take the SDK's router, which a warning says once."""
    if not HAS_V2:
        assert not any(name.startswith("acp.experimental") for name in sys.modules)
        return
    plain = run(_v2_session(False, backend))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast = run(_v2_session(True, backend))
        run(_v2_session(True, backend))
    assert fast == plain
    assert [update.content.text for _, update in plain[1]] == ["hi 0", "hi 1", "hi 2"]
    assert _runtime_warnings(caught) == [
        (
            "acp-fast: the session/update fast path is for v1 clients; an experimental v2 client's updates go "
            "through the SDK's router (acp-fast still frames, parses and dispatches them)"
        )
    ]


async def _v2_unstable_session(backend: Any, unstable: bool) -> List[Any]:
    """A strict experimental v2 session that calls two unstable methods (``providers/list``,
    ``session/fork``): what each call gave (the response, or the error's code)."""
    import socket

    from acp.experimental import v2

    schema = v2.schema

    class Agent:
        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, info: Any, **kwargs: Any) -> Any:
            return schema.InitializeResponse(
                protocol_version=protocol_version, info=schema.Implementation(name="a", version="1")
            )

        async def new_session(self, cwd: str, **kwargs: Any) -> Any:
            return schema.NewSessionResponse(session_id="s1")

        async def list_providers(self, **kwargs: Any) -> Any:
            return schema.ListProvidersResponse(providers=[])

        async def fork_session(self, session_id: str, cwd: str, **kwargs: Any) -> Any:
            return schema.ForkSessionResponse(session_id=session_id + "-fork")

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            pass

    a, b = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=a)
    client_reader, client_writer = await asyncio.open_connection(sock=b)
    with acp_sdk.installed(backend=backend, strict=True, unstable=unstable):
        agent_conn = v2.AgentSideConnection(Agent(), agent_writer, agent_reader)
        conn = v2.ClientSideConnection(Client(), client_writer, client_reader)
    out: List[Any] = []
    try:
        await conn.initialize(protocol_version=v2.PROTOCOL_VERSION, info=schema.Implementation(name="c", version="1"))
        session = await conn.new_session(cwd="/tmp")
        out.append(session.session_id)
        for call in (lambda: conn.list_providers(), lambda: conn.fork_session(session_id="s1", cwd="/tmp")):
            try:
                out.append(await call())
            except RequestError as exc:
                out.append(exc.code)
    finally:
        await conn.close()
        await agent_conn.close()
        client_writer.close()
        agent_writer.close()
    return out


def test_v2_unstable_methods_under_strict(backend: Any, fresh_warnings: None) -> None:
    """``install(strict=True)`` checks an experimental v2 connection against the draft of the
    installed SDK (1.0.0rc3: alpha.5); its unstable methods pass with ``unstable=True`` and are
    refused, as methods the stable schema does not have, without it."""
    if not HAS_V2:
        return
    assert acp_sdk.sdk_draft() == acp_sdk.SDK_DRAFTS.get(version("agent-client-protocol"), "latest")
    sid, providers, fork = run(_v2_unstable_session(backend, True))
    assert (sid, providers.providers, fork.session_id) == ("s1", [], "s1-fork")
    assert run(_v2_unstable_session(backend, False)) == ["s1", -32602, -32602]
