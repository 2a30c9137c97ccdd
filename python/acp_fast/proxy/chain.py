"""`acp-fast proxy --chain`: acp-fast as a proxy component in a chain run by the official ACP
conductor (`agent-client-protocol-conductor agent "acp-fast proxy --chain" AGENT`), with all of
the proxy's features (state, recording, trace, strict mode, bridge, coalescing, middleware).

A component has one stdio connection, to the conductor, which carries both sides:

* what comes from upstream (the editor, or the proxy before this one) arrives as plain ACP, the
  first request being `proxy/initialize` instead of `initialize` (`_proxy/...` in the
  conductor's newer sources: both are read, and answered in the names the conductor used);
* what the component sends on to its successor (the next proxy, or the agent) goes out wrapped
  in `proxy/successor` (`{"method": M, "params": P}`, a request when the inner message is one:
  the conductor answers it with the inner answer);
* what the successor sends this way arrives wrapped in `proxy/successor` too (a request when
  the successor asks something: the component answers it with what upstream answered).

`Successor` stands in for the agent process: it splits the conductor's lines between the proxy's
editor side and its agent side, unwrapped, and wraps what the proxy writes to its agent, so that
the proxy (and its recording) sees an editor and an agent as without the conductor.
`proxy/initialize` reaches the proxy as `initialize` and is answered upstream with the
successor's answer to it. Ids: the component's own requests to the conductor are strings
`acp-fast-successor-N`, the successor's requests are relayed upstream with ids
`acp-fast-chain-N`; both are mapped back on the answers (what is still unanswered is bounded by
`MAX_PENDING`, the oldest forgotten first).
"""

from __future__ import annotations

import os
import signal
import threading
from collections import OrderedDict
from typing import Any, Dict, Optional, Set

import acp_fast

from ._relay import Output

__all__ = ["INITIALIZE_PROXY", "MAX_PENDING", "NAMES", "SUCCESSOR", "Successor"]

#: The conductor's methods (its proxy extension), as its releases name them (5.x on crates.io);
#: the underscored names of its newer sources are read too, and a component answers in the
#: names its conductor used for `initialize`.
SUCCESSOR = "proxy/successor"
INITIALIZE_PROXY = "proxy/initialize"
NAMES = {INITIALIZE_PROXY: SUCCESSOR, "_proxy/initialize": "_proxy/successor"}
#: Requests waiting for their answer, per direction (the oldest forgotten beyond it).
MAX_PENDING = 10_000


def _line(message: Dict[str, Any]) -> bytes:
    return bytes(acp_fast.dumps(message)) + b"\n"


class _Pending:
    """Ids of requests waiting for their answer: ours -> theirs (bounded)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.count = 0
        self.ids: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def new(self, theirs: Any) -> str:
        with self.lock:
            self.count += 1
            ours = f"{self.prefix}{self.count}"
            self.ids[ours] = theirs
            while len(self.ids) > MAX_PENDING:
                self.ids.popitem(last=False)
            return ours

    def answered(self, ours: Any) -> Any:
        """Their id for our id `ours`, forgotten now; `_Pending` itself when unknown."""
        with self.lock:
            if isinstance(ours, str) and ours in self.ids:
                return self.ids.pop(ours)
            return self


class Successor:
    """The conductor's side of a component's stdio as the agent of an `acp-fast proxy`: the
    proxy reads its editor side from `editor_fd`, writes to its agent at `agent_in` and reads
    its agent at `agent_out`. It has the calls of the agent's process the proxy makes (`wait`,
    `poll`, `send_signal`, `terminate`, `kill`): it "exits" (status 0) when the proxy closes
    its agent's input, as an agent does at the end of its input."""

    def __init__(self, stdout: Output, upstream: int = 0) -> None:
        self.editor_fd, self._editor = os.pipe()  # upstream's plain lines -> the editor side
        self._to_wrap, self.agent_in = os.pipe()  # the proxy's lines for its agent
        self.agent_out, self._agent = os.pipe()  # the successor's lines, unwrapped -> the agent side
        self._stdout = stdout
        self._upstream = upstream
        self._ours = _Pending("acp-fast-successor-")  # our _proxy/successor requests: -> inner id
        self._theirs = _Pending("acp-fast-chain-")  # the successor's requests: -> the outer id
        self._successor = SUCCESSOR  # the name the conductor uses (set by its initialize)
        self._done = threading.Event()
        self._closing = threading.Lock()
        self._closed: Set[int] = set()
        self.returncode: Optional[int] = None
        for target, name in ((self._read_upstream, "chain upstream"), (self._wrap, "chain successor")):
            threading.Thread(target=target, name=name, daemon=True).start()

    # -- the agent process's calls -------------------------------------------------------------

    def wait(self) -> int:
        self._done.wait()
        self.returncode = 0
        return 0

    def poll(self) -> Optional[int]:
        return 0 if self._done.is_set() else None

    def send_signal(self, signum: int) -> None:
        """A signal the proxy forwards to its agent: the conductor owns the successor, so a
        signal that ends a process (the conductor's SIGTERM at its exit, a Ctrl-C) ends the
        session here: the agent side is closed and the proxy finishes (its reports written)."""
        if signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.terminate()

    def terminate(self) -> None:
        self._close(self._agent)
        self._done.set()

    kill = terminate

    # -- the two threads -----------------------------------------------------------------------

    def _read_upstream(self) -> None:
        """The conductor's lines: to the editor side, or (unwrapped) to the agent side."""
        framer = acp_fast.Framer()
        try:
            while True:
                try:
                    chunk = os.read(self._upstream, 1 << 20)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
                except OSError:
                    break
                for event in framer.feed(chunk) if chunk else framer.finish():
                    self._upstream_line(event)
                if not chunk:
                    break
        finally:
            self._close(self._editor)
            self._close(self._agent)

    def _upstream_line(self, event: Any) -> None:
        if not isinstance(event, tuple):  # an oversized line: the proxy reports it on its side
            return
        line = bytes(event[1])
        message = self._load(line)
        method = message.get("method") if message is not None else None
        if message is not None and method in NAMES:
            self._successor = NAMES[method]
            message["method"] = "initialize"
            self._write(self._editor, _line(message))
        elif message is not None and method in NAMES.values() and isinstance(message.get("params"), dict):
            outer = message["params"]
            inner: Dict[str, Any] = {"jsonrpc": "2.0"}
            if "id" in message:
                inner["id"] = self._theirs.new(message["id"])
            inner["method"] = outer.get("method")
            if "params" in outer:
                inner["params"] = outer["params"]
            self._write(self._agent, _line(inner))
        elif message is not None and method is None and ("result" in message or "error" in message):
            theirs = self._ours.answered(message.get("id"))
            if theirs is self._ours:  # not an answer to us: the editor side's
                self._write(self._editor, line if line.endswith(b"\n") else line + b"\n")
                return
            answer = {"jsonrpc": "2.0", "id": theirs}
            answer.update({k: message[k] for k in ("result", "error") if k in message})
            self._write(self._agent, _line(answer))
        else:  # plain ACP (or not JSON-RPC: the proxy's rules for invalid lines apply)
            self._write(self._editor, line if line.endswith(b"\n") else line + b"\n")

    def _wrap(self) -> None:
        """What the proxy writes to its agent, wrapped for the conductor."""
        framer = acp_fast.Framer()
        try:
            while True:
                try:
                    chunk = os.read(self._to_wrap, 1 << 20)
                except InterruptedError:  # pragma: no cover
                    continue
                except OSError:
                    break
                out = [self._wrapped(e) for e in (framer.feed(chunk) if chunk else framer.finish())]
                if out and not self._stdout.write(b"".join(out)):
                    break
                if not chunk:
                    break
        finally:
            self._close(self._to_wrap)
            self._done.set()

    def _wrapped(self, event: Any) -> bytes:
        if not isinstance(event, tuple):
            return b""
        line = bytes(event[1])
        line = line if line.endswith(b"\n") else line + b"\n"
        message = self._load(line)
        if message is None:
            return line  # (not JSON-RPC: as it is)
        if "method" in message:
            inner = {"method": message["method"]}
            if "params" in message:
                inner["params"] = message["params"]
            outer: Dict[str, Any] = {"jsonrpc": "2.0"}
            if "id" in message:
                outer["id"] = self._ours.new(message["id"])
            outer.update(method=self._successor, params=inner)
            return _line(outer)
        theirs = self._theirs.answered(message.get("id"))
        if theirs is self._theirs:
            return line  # an answer to nothing the successor asked: as it is
        answer = {"jsonrpc": "2.0", "id": theirs}
        answer.update({k: message[k] for k in ("result", "error") if k in message})
        return _line(answer)

    # -- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _load(line: bytes) -> Optional[Dict[str, Any]]:
        try:
            value = acp_fast.loads(line)
        except acp_fast.DecodeError:
            return None
        return value if isinstance(value, dict) and value.get("jsonrpc") == "2.0" else None

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:  # the proxy stopped reading (it is stopping): nothing more to deliver
            pass

    def _close(self, fd: int) -> None:
        """Close one of the pipe ends this owns, once (a number closed twice could be another
        file's by then)."""
        with self._closing:
            if fd in self._closed:
                return
            self._closed.add(fd)
        try:
            os.close(fd)
        except OSError:
            pass
