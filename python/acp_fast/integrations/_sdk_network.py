"""The SDK's network transports (Streamable HTTP in ``acp.http``, WebSocket in ``acp.ws``) on
acp-fast JSON, for [`acp_fast.integrations.acp_sdk.install`][acp_fast.integrations.acp_sdk.install].

Those transports are message-level: each JSON-RPC message is a whole HTTP body, SSE event or
WebSocket text frame, parsed and written by the SDK with the standard ``json`` module, one call per
message. There are no byte streams to frame, so the connection stays the SDK's (its receive loop
and dispatch); what ``install()`` changes is where each message is parsed and written
(``NETWORK_PATHS``; SDK 1.0 / 0.12 where they differ):

* ``acp._sse``: SSE events, written by the HTTP server and parsed by the HTTP client (its ``json``);
* ``acp.http.asgi``: the body of every POST the HTTP server receives (1.0: its ``_post`` handler
  leaves the body parsed where Starlette's ``Request.json()`` finds it; 0.12: its ``json``, which
  also writes the POST answers);
* ``acp.http.server``: the ``initialize`` answer in the POST's response (1.0: its
  ``JSONResponse``; 0.12 has no JSON of its own here);
* ``acp.http.client``: the body of every POST the HTTP client sends (its ``_HttpStreamTransport``'s
  HTTP client posts a body written by acp-fast instead of ``json=``);
* ``acp.ws.client``: the WebSocket client's text frames, both ways (its ``json``);
* ``acp.ws.server``: the WebSocket server's text frames, both ways (its ``json``, and 1.0's
  ``_WebSocketTransport``, which sends with Starlette's ``send_json``).

Each replacement parses with acp-fast's ``loads`` and writes with its ``dumps`` (the same kind of
text as the SDK's: where the SDK escapes non-ASCII characters, such a message is written by the
SDK's ``json``, ``FastJson``); what acp-fast refuses to write (NaN, non-str keys) is written by the
SDK's own code, and a body acp-fast cannot
parse is handed to the SDK's own code, which answers it as without acp-fast. The modules are
patched when they are imported (they need the SDK's ``http`` extra), by a finder on
``sys.meta_path``. Where a module does not have a shape this integration knows (another SDK
release), it is left alone and a ``RuntimeWarning`` naming the transport says so, once.

The HTTP server's POST handler is bound when ``acp.http.asgi.create_asgi_app`` builds the
application: ``install()`` must come before that call for the server's POST bodies.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from acp_fast.errors import EncodeError

from ._sdk_support import _PatchOnImport, warn_once

__all__ = ["NETWORK_PATHS", "NetworkPatches"]

_MISSING: Any = object()


# ---------------------------------------------------------------------------------------------
# The replacements


class FastJson:
    """A stand-in for the ``json`` module inside one SDK module: ``dumps`` and ``loads`` by
    acp-fast (``backend``), everything else the ``json`` module's.

    ``dumps`` writes what ``json.dumps`` writes for the same arguments: acp-fast's compact output is
    used when the call asks for compact separators and the result is what ``json.dumps`` would
    give: ASCII, or ``ensure_ascii=False``. Otherwise (non-ASCII text, which ``json.dumps``
    escapes by default; other options; what acp-fast refuses to write) it is ``json.dumps``. So the
    bytes on the wire stay the SDK's kind: a peer that decodes an SSE stream chunk by chunk as
    ASCII-safe text (SDK 0.12's client does) never sees a character split across chunks.

    ``loads`` raises acp-fast's ``DecodeError``, a ``json.JSONDecodeError``, so the SDK's
    ``except json.JSONDecodeError`` still applies."""

    JSONDecodeError = json.JSONDecodeError

    def __init__(self, backend: Any) -> None:
        self._dumps: Callable[[Any], bytes] = backend.dumps
        self._loads: Callable[[Any], Any] = backend.loads

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if kwargs.get("separators") == (",", ":") and kwargs.keys() <= {"separators", "ensure_ascii"}:
            try:
                data = self._dumps(obj)
            except EncodeError:
                pass
            else:
                if data.isascii() or kwargs.get("ensure_ascii") is False:
                    return data.decode("utf-8")
        return json.dumps(obj, **kwargs)

    def loads(self, s: Any, **kwargs: Any) -> Any:
        if kwargs:
            return json.loads(s, **kwargs)
        return self._loads(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)


def _fast_post(original: Any, backend: Any) -> Any:
    """``acp.http.asgi._post`` with the body parsed by acp-fast: the parsed body is left where
    Starlette's ``Request.json()`` keeps it (``_json``), so the SDK's handler reads it from there;
    a body acp-fast cannot parse is left to the SDK's handler (its 400 answer)."""
    loads = backend.loads

    async def _post(server: Any, request: Any) -> Any:
        try:
            request._json = loads(await request.body())
        except ValueError:
            pass
        return await original(server, request)

    _post.__wrapped__ = original  # type: ignore[attr-defined]
    return _post


def _fast_json_response(original: Any, backend: Any) -> Any:
    """Starlette's ``JSONResponse`` (as ``acp.http.server`` names it) with its body written by
    acp-fast (Starlette writes the same compact, non-ASCII-escaped JSON with ``json.dumps``)."""
    dumps = backend.dumps

    class FastJSONResponse(original):  # type: ignore[misc]
        def render(self, content: Any) -> bytes:
            try:
                return dumps(content)  # type: ignore[no-any-return]
            except EncodeError:
                return super().render(content)  # type: ignore[no-any-return]

    FastJSONResponse.__qualname__ = FastJSONResponse.__name__ = original.__name__
    return FastJSONResponse


class _JsonPostClient:
    """An ``httpx2.AsyncClient`` whose ``post(..., json=...)`` sends a body written by acp-fast
    (``content=``); every other attribute is the client's."""

    def __init__(self, client: Any, dumps: Callable[[Any], bytes]) -> None:
        self._client = client
        self._dumps = dumps

    def post(self, url: Any, *, json: Any = _MISSING, **kwargs: Any) -> Any:
        if json is not _MISSING and "content" not in kwargs:
            try:
                kwargs["content"] = self._dumps(json)
            except EncodeError:
                kwargs["json"] = json
        elif json is not _MISSING:
            kwargs["json"] = json
        return self._client.post(url, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _fast_http_client_transport(original: Any, backend: Any) -> Any:
    """``acp.http.client._HttpStreamTransport`` whose POST bodies are written by acp-fast (its SSE
    events are parsed in ``acp._sse``, patched too)."""
    dumps = backend.dumps

    class FastHttpStreamTransport(original):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._client = _JsonPostClient(self._client, dumps)  # type: ignore[has-type]

    FastHttpStreamTransport.__qualname__ = FastHttpStreamTransport.__name__ = original.__name__
    return FastHttpStreamTransport


class _SendJsonSocket:
    """A Starlette ``WebSocket`` whose ``send_json`` writes a text frame by acp-fast; every other
    attribute is the socket's."""

    def __init__(self, websocket: Any, dumps: Callable[[Any], bytes]) -> None:
        self._websocket = websocket
        self._dumps = dumps

    async def send_json(self, data: Any, mode: str = "text") -> None:
        if mode == "text":
            try:
                text = self._dumps(data).decode("utf-8")
            except EncodeError:
                pass
            else:
                await self._websocket.send_text(text)
                return
        await self._websocket.send_json(data, mode=mode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._websocket, name)


def _fast_ws_server_transport(original: Any, backend: Any) -> Any:
    """``acp.ws.server._WebSocketTransport`` whose frames are written by acp-fast (they are parsed
    through the module's ``json``, patched too)."""
    dumps = backend.dumps

    class FastWebSocketTransport(original):  # type: ignore[misc]
        def __init__(self, websocket: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(websocket, *args, **kwargs)
            self._ws = _SendJsonSocket(self._ws, dumps)  # type: ignore[has-type]

    FastWebSocketTransport.__qualname__ = FastWebSocketTransport.__name__ = original.__name__
    return FastWebSocketTransport


# ---------------------------------------------------------------------------------------------
# What is patched, and the shape it must have


def _is_json_module(value: Any) -> Optional[str]:
    return None if value is json else "it does not parse and write its messages with the json module"


def _has_json(module: types.ModuleType) -> Optional[str]:
    return _is_json_module(getattr(module, "json", _MISSING))


def _post_shape(value: Any) -> Optional[str]:
    if not inspect.iscoroutinefunction(value):
        return "acp.http.asgi has no _post coroutine function"
    if list(inspect.signature(value).parameters) != ["server", "request"]:
        return "acp.http.asgi._post does not take (server, request)"
    return None


def _json_response_shape(value: Any) -> Optional[str]:
    if not isinstance(value, type) or not callable(getattr(value, "render", None)):
        return "acp.http.server has no JSONResponse class with a render method"
    return None


def _transport_shape(attribute: str, client_attribute: str) -> Callable[[Any], Optional[str]]:
    def check(value: Any) -> Optional[str]:
        if not isinstance(value, type) or not callable(getattr(value, "send", None)):
            return f"it has no {attribute} class with a send method"
        try:
            source = inspect.getsource(value)
        except (OSError, TypeError):  # pragma: no cover - installed SDKs ship their sources
            return f"the source of its {attribute} is not available"
        if f"self.{client_attribute}" not in source:
            return f"its {attribute} keeps no self.{client_attribute}"
        return None

    return check


class Hook(NamedTuple):
    """One name of one SDK module that ``install()`` replaces."""

    attribute: str
    #: (the SDK's object, backend) -> the replacement.
    make: Callable[[Any, Any], Any]
    #: The SDK's object -> None when it can be replaced, else why not.
    check: Callable[[Any], Optional[str]]


class Path(NamedTuple):
    """What one SDK module parses or writes per message (``transport``, named in the warning),
    and the ways to reach it: the first alternative whose names all exist with the shape known
    is applied. None existing: the module does no JSON of its own (an SDK release that does it
    elsewhere), nothing to do; else a ``RuntimeWarning`` once."""

    module: str
    transport: str
    alternatives: Tuple[Tuple[Hook, ...], ...]


_JSON = Hook("json", lambda _, backend: FastJson(backend), _is_json_module)

NETWORK_PATHS: Tuple[Path, ...] = (
    Path("acp._sse", "Streamable HTTP SSE events", ((_JSON,),)),
    # SDK 1.0: a Starlette app whose POST handler reads the body with Request.json(); 0.12: a
    # plain ASGI app parsing bodies and writing its JSON answers with the module's json.
    Path(
        "acp.http.asgi", "Streamable HTTP server's POST bodies", ((Hook("_post", _fast_post, _post_shape),), (_JSON,))
    ),
    Path(
        "acp.http.server",
        "Streamable HTTP server's initialize answer",
        ((Hook("JSONResponse", _fast_json_response, _json_response_shape),), (_JSON,)),
    ),
    Path(
        "acp.http.client",
        "Streamable HTTP client's POST bodies",
        (
            (
                Hook(
                    "_HttpStreamTransport",
                    _fast_http_client_transport,
                    _transport_shape("_HttpStreamTransport", "_client"),
                ),
            ),
        ),
    ),
    Path("acp.ws.client", "WebSocket client's frames", ((_JSON,),)),
    # SDK 1.0 sends with Starlette's WebSocket.send_json; 0.12 with the module's json.
    Path(
        "acp.ws.server",
        "WebSocket server's frames",
        (
            (
                Hook("_WebSocketTransport", _fast_ws_server_transport, _transport_shape("_WebSocketTransport", "_ws")),
                _JSON,
            ),
            (_JSON,),
        ),
    ),
)

NETWORK_MODULES: Sequence[str] = tuple(path.module for path in NETWORK_PATHS)


class NetworkPatches:
    """The SDK modules of ``NETWORK_PATHS``: ``apply(backend)`` replaces their names (None: the
    SDK's own again) in every such module imported, and in those imported later."""

    def __init__(self, paths: Sequence[Path] = NETWORK_PATHS) -> None:
        self.paths = tuple(paths)
        self.backend: Any = None
        self.originals: Dict[Tuple[str, str], Any] = {}
        self._finder: Optional[_PatchOnImport] = None

    def apply(self, backend: Any) -> None:
        self.backend = backend
        for path in self.paths:
            module = sys.modules.get(path.module)
            if module is not None:
                self._patch(path.module, module)
        if backend is not None and self._finder is None:
            self._finder = _PatchOnImport(self, [path.module for path in self.paths])
            sys.meta_path.insert(0, self._finder)

    def _original(self, module: types.ModuleType, attribute: str) -> Any:
        return self.originals.setdefault((module.__name__, attribute), getattr(module, attribute, _MISSING))

    def _patch(self, name: str, module: types.ModuleType) -> None:
        for path in self.paths:
            if path.module != name:
                continue
            hooks = {hook.attribute: hook for alternative in path.alternatives for hook in alternative}
            for attribute in hooks:  # the SDK's own first
                original = self._original(module, attribute)
                if original is not _MISSING:
                    setattr(module, attribute, original)
            if self.backend is None:
                continue
            problems: List[str] = []
            for alternative in path.alternatives:
                originals = [self._original(module, hook.attribute) for hook in alternative]
                if all(original is _MISSING for original in originals):
                    continue
                found = [
                    hook.check(original) if original is not _MISSING else f"{name} has no {hook.attribute}"
                    for hook, original in zip(alternative, originals)
                ]
                problems.extend(problem for problem in found if problem is not None)
                if not any(found):
                    for hook, original in zip(alternative, originals):
                        setattr(module, hook.attribute, hook.make(original, self.backend))
                    break
            else:
                if problems:
                    warn_once(
                        f"network:{name}",
                        f"acp-fast: the SDK's {path.transport} ({name}) are not sped up: {problems[0]}; "
                        "they are parsed and written by the SDK's json",
                        stacklevel=4,
                    )

    def replaced(self, name: str, attribute: str) -> bool:
        """Whether ``name.attribute`` is acp-fast's now."""
        module = sys.modules.get(name)
        original = self.originals.get((name, attribute), _MISSING)
        return module is not None and original is not _MISSING and getattr(module, attribute, None) is not original
