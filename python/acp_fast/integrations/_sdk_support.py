"""What [`acp_fast.integrations.acp_sdk`][acp_fast.integrations.acp_sdk] needs to know about the installed SDK, found by looking
at it (attributes and signatures, never version strings), and the once-only warnings it gives when
a fast path cannot be used with it.

* ``CONNECTION_MODULES`` and ``Patches``: the SDK modules that construct ``Connection``
  from byte streams, and pointing their ``Connection`` name at another class. A module not imported
  yet (``acp.experimental.v2._connection``, whose package costs as much to import as ``acp``
  itself) is patched when it is imported, by a finder placed on ``sys.meta_path`` at the first
  ``install``;
* ``MIRROR_REQUESTS``: whether the SDK's connection tracks the handler task of each incoming
  request and cancels it on ``$/cancel_request`` (SDK 1.0); then requests go through the SDK's own
  ``_process_message`` (see ``FastConnection._start``);
* ``V2_HANDLER_MODULES``: the modules of the experimental v2 connections' handlers (SDK 1.0),
  whose connections speak protocol v2 from their first frame;
* ``warn_once``: one ``RuntimeWarning`` per reason per process.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import sys
import threading
import types
import warnings
from typing import Any, Dict, Optional, Sequence, Set

from . import require_sdk

require_sdk("acp_fast.integrations.acp_sdk")

import acp.connection as _sdk_connection  # noqa: E402
from acp.exceptions import RequestError  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Warnings

_warned: Set[str] = set()
_warned_lock = threading.Lock()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """``warnings.warn(message, RuntimeWarning)`` the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


# ---------------------------------------------------------------------------------------------
# $/cancel_request


def _mirror_requests() -> Optional[str]:
    """None when requests can go through the SDK's ``_process_message`` as they are (or the SDK has
    no cancellation to honour), else why not."""
    connection = _sdk_connection.Connection
    if not hasattr(connection, "_cancel_incoming"):
        return None  # the SDK does not cancel incoming requests: nothing to mirror
    missing = [
        name
        for name in ("_process_message", "_track_incoming", "_execute_request", "_run_request")
        if not callable(getattr(connection, name, None))
    ]
    if missing:
        return "its Connection has _cancel_incoming but not " + ", ".join(missing)
    if "handler" not in inspect.signature(connection._run_request).parameters:
        return "its Connection._run_request takes no handler task"
    if not callable(getattr(RequestError, "request_cancelled", None)):
        return "its RequestError has no request_cancelled"
    return None


_MIRROR_PROBLEM = _mirror_requests()

#: True when the SDK's connection honours ``$/cancel_request`` in a way acp-fast mirrors: each
#: incoming request's handler runs in a task of its own that the SDK tracks and cancels.
MIRROR_REQUESTS: bool = _MIRROR_PROBLEM is None and hasattr(_sdk_connection.Connection, "_cancel_incoming")

#: The method name of a cancellation notification (the SDK's own constant when it has one).
CANCEL_REQUEST_METHOD: str = getattr(_sdk_connection, "_CANCEL_REQUEST_METHOD", "$/cancel_request")


def check_mirror() -> None:
    """Say once when the SDK cancels requests in a way acp-fast does not recognize (requests are
    then started eagerly, as with an SDK that cannot cancel them)."""
    if _MIRROR_PROBLEM is not None:
        warn_once(
            "mirror",
            "acp-fast: $/cancel_request cannot be honoured as this SDK does "
            f"({_MIRROR_PROBLEM}); incoming requests are dispatched eagerly and cannot be cancelled",
            stacklevel=4,
        )


# ---------------------------------------------------------------------------------------------
# Protocol v2 from the first frame

#: The modules of the handlers that the SDK's experimental v2 ``ClientSideConnection`` and
#: ``AgentSideConnection`` (``acp.experimental.v2``, SDK 1.0) give their ``Connection``: such a
#: connection speaks protocol v2 only, before its ``initialize`` exchange too. (Told by the module
#: name: importing ``acp.experimental`` costs as much as ``acp`` itself.) The negotiating
#: ``AgentProtocolRouter`` is not one of them: its version is the one its ``initialize`` answers.
V2_HANDLER_MODULES = frozenset(("acp.experimental.v2.client", "acp.experimental.v2.agent"))


def speaks_v2_only(handler: Any) -> bool:
    """Whether a connection with this handler is an experimental v2 client's or agent's."""
    return type(handler).__module__ in V2_HANDLER_MODULES


# ---------------------------------------------------------------------------------------------
# The modules patched by install()

#: The SDK modules that construct ``Connection`` objects (those this SDK has); install() points
#: their ``Connection`` name at FastConnection. None of them re-exports that name except
#: ``acp.core``, whose ``Connection`` is the one ``acp.Connection``-style imports from it see.
CONNECTION_MODULES: Sequence[str] = (
    "acp.client.connection",
    "acp.agent.connection",
    "acp.stdio",
    "acp.core",
    "acp.experimental.v2._connection",
)


class Patches:
    """The ``Connection`` name of ``CONNECTION_MODULES``: ``apply`` points it at a class
    (None: the SDK's own) in every such module imported, and in those imported later."""

    def __init__(self) -> None:
        self.target: Optional[type] = None
        self.originals: Dict[str, Any] = {}
        self._finder: Optional[_PatchOnImport] = None

    def apply(self, target: Optional[type]) -> None:
        self.target = target
        for name in CONNECTION_MODULES:
            module = sys.modules.get(name)
            if module is not None and hasattr(module, "Connection"):
                self._patch(name, module)
        if target is not None and self._finder is None:
            self._finder = _PatchOnImport(self, CONNECTION_MODULES)
            sys.meta_path.insert(0, self._finder)

    def _patch(self, name: str, module: types.ModuleType) -> None:
        if not hasattr(module, "Connection"):
            return
        original = self.originals.setdefault(name, module.Connection)
        module.Connection = original if self.target is None else self.target  # type: ignore[attr-defined]

    def loaded(self) -> Dict[str, types.ModuleType]:
        """The patched modules imported so far."""
        return {name: sys.modules[name] for name in CONNECTION_MODULES if name in sys.modules}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches a module of ``modules`` right after it is first imported (``patches._patch``)."""

    def __init__(self, patches: Any, modules: Sequence[str]) -> None:
        self._patches = patches
        self._modules = frozenset(modules)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self._modules or fullname in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(spec.loader, self._patches)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, patches: Patches) -> None:
        self._loader = loader
        self._patches = patches

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename...: the real loader's
        return getattr(self._loader, name)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        self._patches._patch(module.__name__, module)
