"""The middleware protocol of [`acp_fast.proxy.Proxy`][acp_fast.proxy.Proxy] and the chain that runs it.

A middleware is any callable ``middleware(message, sender, ctx) -> result`` (the
[`Middleware`][acp_fast.proxy.Middleware] protocol). The proxy calls it once for every message of a direction that
reaches its place in the chain; ``sender`` says who sent the frame (``"editor"``: it is going to
the agent; ``"agent"``: it is going to the editor) and ``ctx`` is the middleware's
[`Context`][acp_fast.proxy.Context]. What it returns decides what happens to the message:

* the message itself (``return message``): forwarded, byte-exact;
* another frame (a [`acp_fast.Message`][acp_fast.Message], bytes or a dict): the message is replaced by it;
* a list of frames: the message is replaced by all of them, in order (the message itself may be
  one of them, and is then forwarded byte-exact at its place): extra frames in the same direction;
* ``None`` or [`Drop`][acp_fast.proxy.Drop] (``Drop("reason")``): the message is dropped.

``ctx.inject(frame, to="editor" | "agent")`` sends a frame in either direction, at any time (also
from another thread, e.g. a timer). A frame a middleware returns or injects goes through the
middleware between that middleware and the side it goes to; the ones before it do not see it.
A frame dropped or replaced is recorded (``--record``) as it came, with ``ctx.reason(text)``;
after ``ctx.withhold()``, by its length only.

The middleware list is ordered from the editor to the agent: a frame from the editor meets
``middleware[0]`` first, a frame from the agent meets the last one first. Calls are serialised
(one frame at a time, whichever direction), so a middleware needs no lock of its own.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from dataclasses import dataclass, field
from threading import get_ident
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union, cast

import acp_fast

__all__ = ["SIDES", "Context", "Drop", "Frame", "Middleware", "Result", "load_factory", "make", "other_side"]

SIDES = ("editor", "agent")

#: A frame a middleware gives back or injects: a Message, the bytes of one JSON-RPC message
#: (line ending optional) or a dict (written with [`acp_fast.dumps`][acp_fast.dumps]).
Frame = Union[acp_fast.Message, bytes, Dict[str, Any]]


@dataclass(frozen=True)
class Drop:
    """What a middleware returns to drop the message; ``reason`` goes to the recording."""

    reason: str = ""


#: What a middleware returns (see the module's docstring).
Result = Union[None, Drop, Frame, Sequence[Frame]]


class Middleware(Protocol):
    """One step of the proxy's chain: called with every message of both directions that reaches
    it; returns the message (forwarded unchanged), a replacement, a list of frames, or
    ``None`` / [`Drop`][acp_fast.proxy.Drop] (dropped)."""

    def __call__(self, message: acp_fast.Message, sender: str, ctx: Context) -> Result: ...


class Host(Protocol):
    """What the middleware's contexts and chain need of the proxy (``acp_fast.proxy.Proxy``)."""

    @property
    def store(self) -> acp_fast.ToolCallStore:
        """The proxy's ``ToolCallStore``."""

    @property
    def lock(self) -> threading.RLock:
        """Held while the state is read or changed and while the middleware run."""

    @property
    def chain(self) -> Chain: ...

    def note(self, text: str) -> None:
        """A diagnostic on stderr (unless quiet)."""

    def send(self, ctx: Optional[Context], message: acp_fast.Message, to: str) -> None:
        """A frame injected outside a middleware call, delivered through the rest of the chain."""


def load_factory(spec: str) -> Callable[[], Any]:
    """The factory `spec` names, ``MODULE:FACTORY`` (``--middleware``): ``FACTORY`` (a dotted
    name in ``MODULE``) called with no arguments gives one middleware. ``MODULE`` is imported
    (the current directory first on the path); ValueError saying what is wrong otherwise."""
    module, _, name = spec.partition(":")
    if not module or not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"expected MODULE:FACTORY, e.g. mypackage.checks:make_middleware, found {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")  # as `python -m` does: a module next to the user is found
    try:
        found: Any = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - any failure of the import is the user's to see, in one line
        raise ValueError(f"cannot import {module!r}: {type(e).__name__}: {e}") from None
    for part in name.split("."):
        if not hasattr(found, part):
            raise ValueError(f"{module!r} has no {name!r}")
        found = getattr(found, part)
    if not callable(found):
        raise ValueError(f"{spec}: expected a callable that makes a middleware, found {type(found).__name__}")
    return cast(Callable[[], Any], found)


def make(spec: str, factory: Callable[[], Any]) -> Middleware:
    """One middleware from ``factory`` (``spec`` names it, for the errors): ValueError when the
    factory raises or gives something that is not callable."""
    try:
        middleware = factory()
    except Exception as e:  # noqa: BLE001 - reported in one line
        raise ValueError(f"{spec}: the factory raised {type(e).__name__}: {e}") from None
    if not callable(middleware):
        raise ValueError(f"{spec}: the factory gave {type(middleware).__name__}, expected a middleware (a callable)")
    return cast(Middleware, middleware)


def other_side(side: str) -> str:
    return "agent" if side == "editor" else "editor"


def _name(middleware: Any) -> str:
    name = getattr(middleware, "name", None)
    if isinstance(name, str):
        return name
    return getattr(middleware, "__qualname__", None) or type(middleware).__name__


class Context:
    """What a middleware reaches, besides the message: the proxy's state, injection of frames in
    either direction, diagnostics, and the reason recorded for a frame it drops or replaces. One
    context per middleware for the proxy's life."""

    def __init__(self, proxy: Host, index: int, name: str) -> None:
        self._proxy = proxy
        self.index = index  #: the middleware's place in the list (0: next to the editor)
        self.name = name  #: the middleware's name, in diagnostics and recorded reasons
        self._reason: Optional[str] = None
        self._withhold = False

    @property
    def store(self) -> acp_fast.ToolCallStore:
        """The proxy's [`acp_fast.ToolCallStore`][acp_fast.ToolCallStore]: every session's tool calls, permission
        requests, terminals and plans, as far as the frames delivered so far tell (the editor's
        view, in the editor's protocol version)."""
        return self._proxy.store

    @property
    def lock(self) -> threading.RLock:
        """The proxy's lock, held while the relay changes the state and runs the middleware: held
        (from another thread, e.g. a timer), the state does not change until it is released."""
        return self._proxy.lock

    @property
    def protocol_version(self) -> int:
        """The protocol version in force (the store's)."""
        return int(self._proxy.store.protocol_version)

    def inject(self, frame: Frame, *, to: str) -> None:
        """Send ``frame`` to ``to`` (``"editor"`` or ``"agent"``), through the middleware between
        this one and that side. During a call it is sent after the call's own frames have been
        handled; from elsewhere (another thread, a timer) at once."""
        if to not in SIDES:
            raise ValueError(f"expected to='editor' or to='agent', found {to!r}")
        self._proxy.chain.inject(self, frame, to)

    def reason(self, text: str) -> None:
        """The reason recorded for the frame this call drops or replaces."""
        self._reason = text

    def withhold(self) -> None:
        """The frame this call drops or replaces is recorded without its bytes (``--record``
        keeps ``"withheld":<its length>``, the action and the reason): for a frame whose content
        must not reach the recording file (docs/PROXY.md, "Middleware"). No effect when the call
        gives the message back."""
        self._withhold = True

    def note(self, text: str) -> None:
        """A diagnostic on the proxy's stderr (``acp-fast proxy: NAME: text``; not with --quiet)."""
        self._proxy.note(f"{self.name}: {text}")


@dataclass
class Outcome:
    """What the chain made of one message read from a side: ``action`` for the message itself
    (None: forwarded, ``"dropped"``, ``"replaced"``), its ``reason``, the frames ``delivered``
    (``(wire, injected)``: bytes with their line ending, or None for the message's own line as
    read) and the frames injected ``back`` to the side it came from; ``withheld``: the message
    is recorded without its bytes ([`Context.withhold`][acp_fast.proxy.Context.withhold])."""

    action: Optional[str] = None
    reason: Optional[str] = None
    withheld: bool = False
    delivered: List[Tuple[Optional[bytes], bool]] = field(default_factory=list)
    back: List[bytes] = field(default_factory=list)


class _Run:
    """The frames injected during one chain run (by the thread ``owner``), sent when it ends."""

    __slots__ = ("injected", "owner")

    def __init__(self, owner: int) -> None:
        self.injected: List[Tuple[Context, acp_fast.Message, str]] = []
        self.owner = owner


def _message(frame: Any, name: str) -> acp_fast.Message:
    """A middleware's frame as a Message (bytes and dicts are read / written and read)."""
    if isinstance(frame, acp_fast.Message):
        return frame
    if isinstance(frame, dict):
        data = acp_fast.dumps(frame)
    elif isinstance(frame, (bytes, bytearray, memoryview, str)):
        data = frame.encode() if isinstance(frame, str) else bytes(frame)
        data = data.rstrip(b"\r\n")
    else:
        raise TypeError(
            f"middleware {name} returned {type(frame).__name__}; expected a Message, bytes, a dict, a list or None"
        )
    decoded = acp_fast.decode(data)
    if not isinstance(decoded, acp_fast.Message):
        raise ValueError(f"middleware {name} returned a batch; expected single messages")
    return decoded


class _Raised:
    """What a middleware raised (in ``Chain.run``'s quick pass)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Chain:
    """The middleware of a proxy, in order from the editor to the agent, and the runs of messages
    through them. The caller holds the proxy's lock during ``run`` and ``deliveries``."""

    def __init__(self, proxy: Host, middleware: Sequence[Middleware]) -> None:
        self.proxy = proxy
        self.middleware = list(middleware)
        self.contexts = [Context(proxy, i, _name(m)) for i, m in enumerate(self.middleware)]
        steps = list(zip(self.middleware, self.contexts))
        #: The steps a frame from each side meets, in order.
        self.order: Dict[str, List[Tuple[Middleware, Context]]] = {"editor": steps, "agent": steps[::-1]}
        self._run: Optional[_Run] = None  # the run in progress (under the proxy's lock)
        self._idle: Optional[_Run] = _Run(0)  # a _Run to reuse

    def __bool__(self) -> bool:
        return bool(self.middleware)

    def _start(self, sender: str, ctx: Optional[Context]) -> int:
        """Where a frame from ``sender`` starts after ``ctx``'s middleware (0 without one)."""
        if ctx is None:
            return 0
        return ctx.index + 1 if sender == "editor" else len(self.middleware) - ctx.index

    # -- one message ---------------------------------------------------------------------------

    def run(self, message: acp_fast.Message, sender: str) -> Optional[Outcome]:
        """Run a message read from ``sender`` through the chain: None when every middleware gave
        it back and nothing was injected (the common case, kept cheap), else the Outcome."""
        run = self._idle if self._idle is not None else _Run(0)
        self._idle = None
        run.owner = get_ident()
        self._run = run
        try:
            result: Any = message
            for step, (middleware, ctx) in enumerate(self.order[sender]):  # noqa: B007 - used after the loop
                try:
                    result = middleware(message, sender, ctx)
                except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - reported, and the frame dropped, by _through
                    result = _Raised(e)
                    break
                if result is not message:
                    break
                if ctx._reason is not None or ctx._withhold:
                    ctx._reason, ctx._withhold = None, False
            else:
                if not run.injected:
                    return None
                outcome = Outcome(delivered=[(None, False)])
                self._route(run, sender, outcome)
                return outcome
            # Changed: on step by step from the middleware that changed it.
            outcome = Outcome()
            self._through(message, sender, step, True, outcome, result)
            self._route(run, sender, outcome)
            return outcome
        finally:
            self._run = None
            run.injected.clear()
            self._idle = run

    def run_batch(self, frame: Any, sender: str) -> Optional[Outcome]:
        """A batch line's entries through the chain: None (the line as it came) when no entry
        was changed, else the entries' frames one per line (its invalid entries are not
        forwarded)."""
        entries = [m for m in frame if isinstance(m, acp_fast.Message)]
        runs = [self.run(m, sender) for m in entries]
        if all(r is None for r in runs):
            return None
        outcome = Outcome()
        outcome.action = "replaced"
        outcome.reason = "; ".join(r.reason for r in runs if r is not None and r.reason) or "a batch entry changed"
        outcome.withheld = any(r is not None and r.withheld for r in runs)
        for m, r in zip(entries, runs):
            if r is None:
                outcome.delivered.append((m.raw + b"\n", True))
                continue
            outcome.back += r.back
            outcome.delivered += [(m.raw + b"\n" if w is None else w, True) for w, _ in r.delivered]
        return outcome

    def _route(self, run: _Run, sender: str, outcome: Outcome) -> None:
        """Send what was injected during a run: to the side the run's frames go to
        (``outcome.delivered``) or back (``outcome.back``), through the middleware on the way."""
        while run.injected:
            queue, run.injected = run.injected, []
            for ctx, message, to in queue:
                from_side = other_side(to)
                found = Outcome()
                self._through(message, from_side, self._start(from_side, ctx), False, found)
                wires = [w for w, _ in found.delivered if w is not None]
                if to == other_side(sender):
                    outcome.delivered += [(w, True) for w in wires]
                else:
                    outcome.back += wires

    _NOT_CALLED = object()

    def _through(
        self,
        message: acp_fast.Message,
        sender: str,
        start: int,
        original: bool,
        outcome: Outcome,
        result: Any = _NOT_CALLED,
    ) -> None:
        """From step ``start`` on (``result``: what that step already returned); ``original``: the
        message is the line as read (else a frame a middleware gave)."""
        steps = self.order[sender]
        for i in range(start, len(steps)):
            middleware, ctx = steps[i]
            if result is Chain._NOT_CALLED:
                ctx._reason, ctx._withhold = None, False
                try:
                    result = middleware(message, sender, ctx)
                except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - the frame dropped (fails closed)
                    result = Drop(f"{ctx.name} raised {type(e).__name__}: {e}")
                    self.proxy.note(f"middleware {ctx.name} raised {type(e).__name__}: {e}; the frame is dropped")
            elif isinstance(result, _Raised):
                error = result.error
                self.proxy.note(f"middleware {ctx.name} raised {type(error).__name__}: {error}; the frame is dropped")
                result = Drop(f"{ctx.name} raised {type(error).__name__}: {error}")
            if result is message:
                result = Chain._NOT_CALLED
                continue
            # What the call said of the frame it drops or replaces (consumed here: not seen again).
            said, withhold = ctx._reason, ctx._withhold
            ctx._reason, ctx._withhold = None, False
            if result is None or isinstance(result, Drop):
                reason = result.reason if isinstance(result, Drop) and result.reason else said
                if original:
                    outcome.action, outcome.reason = "dropped", reason or f"dropped by {ctx.name}"
                    outcome.withheld = withhold
                return
            frames = list(result) if isinstance(result, (list, tuple)) else [result]
            if original and not any(f is message for f in frames):
                outcome.action, outcome.reason = "replaced", said or f"replaced by {ctx.name}"
                outcome.withheld = withhold
            for f in frames:
                if f is message:
                    self._through(message, sender, i + 1, original, outcome)
                else:
                    try:
                        new = _message(f, ctx.name)
                    except (TypeError, ValueError) as e:  # DecodeError is a ValueError
                        self.proxy.note(f"middleware {ctx.name}: {e}; not sent")
                        continue
                    self._through(new, sender, i + 1, False, outcome)
            return
        outcome.delivered.append((None, False) if original else (message.raw + b"\n", True))

    # -- injection -------------------------------------------------------------------------------

    def inject(self, ctx: Context, frame: Frame, to: str) -> None:
        message = _message(frame, ctx.name)
        run = self._run
        if run is not None and run.owner == get_ident():
            run.injected.append((ctx, message, to))
        else:
            self.proxy.send(ctx, message, to)  # outside a run: at once

    def deliveries(self, ctx: Optional[Context], message: acp_fast.Message, to: str) -> Outcome:
        """What to write for a message injected after ``ctx``'s middleware outside a run:
        ``delivered`` to ``to``, ``back`` the other way."""
        sender = other_side(to)
        outcome = Outcome()
        run = self._run = _Run(get_ident())
        try:
            self._through(message, sender, self._start(sender, ctx), False, outcome)
            self._route(run, sender, outcome)
        finally:
            self._run = None
        return outcome
