"""The hostile run (``make hostile``; issue 28): a generated hostile corpus through the library, the
bridge, ``acp-fast proxy`` with each option set, ``validate``, ``inspect`` and ``export``, on both
backends.

    python tests/hostile.py                    # make hostile: 3 rounds of 2,000 frames per profile
    python tests/hostile.py --short            # what tests/test_hostile.py (CI) runs
    python tests/hostile.py --rounds 10 --frames 5000 --seed 7 --backends python

**The corpus** (:func:`corpus`): valid traffic of :func:`acp_fast.traffic.frames` (profiles ``v2``
and ``mixed``, each frame with its sender), interleaved with

* *bad lines*, which every consumer must refuse (:func:`bad_lines`): not JSON, invalid UTF-8, terminal
  escape sequences (``ESC[2J``, an OSC title), JSON that is not JSON-RPC, a v2 batch (v2 profile
  only: v1 has batches), a frame nested past the codec's 1,024 levels, numbers out of range, and
  one line longer than the small ``--max-frame-bytes`` of one proxy run (a valid frame otherwise:
  refused only there). The two that are JSON arrays (``[1,2,3]``, the v2 batch) the decoder
  gives as a ``Batch`` and the ``Bridge`` class passes as they are (docs/BRIDGE.md): the proxy
  must refuse them (docs/PROXY.md), the library need not;
* *the bridge's triggers* (issue 28, item 1): an option ``kind`` that is an array or an object, a
  permission with both ``toolCall`` and ``subject.toolCall``, a ``rawInput`` nested 1,010 levels
  followed by another update of the same tool call, a frame nested 1,020 levels (within the
  codec's limit, past the bridge's ``BRIDGE_MAX_DEPTH``). The last one the bridge must refuse;
  the others it converts (docs/BRIDGE.md "Frames the bridge refuses");
* *mutants*: valid frames with one value somewhere replaced by ``[]``, ``{}``, ``null``, ``-1``,
  ``2**70``, ``1.5``, ``true``, ``""`` or a deep list, and the fixed ones of :func:`deep_values`;
  accepted or refused, never a crash.

**The runs**, each under a timeout, each failing on a ``Traceback`` on stderr:

* ``library`` (in a child process, for the timeout): ``FrameDecoder.feed`` over the corpus in
  random pieces (one result per line, every good line decoded to itself, every bad line a
  ``DecodeError``; again with a small ``max_frame_bytes``); ``dumps(frame.to_dict())`` of every decoded frame; ``ToolCallStore.feed``,
  then ``to_json`` / ``from_json`` / ``to_json`` (the same bytes), and the checkpoint of the good
  frames plus the bad lines equal to that of the good frames alone; ``Bridge`` both ways
  (editor 1 / agent 2 and editor 2 / agent 1) frame by frame, where only ``DecodeError`` and
  ``BridgeError`` may escape, and a bad line must be refused.
* ``proxy``: ``python -m acp_fast.cli proxy`` with each option set of :data:`OPTION_SETS` (the
  ``--bridge`` ones on the profile whose version is the agent's). We are the editor: we send the
  editor's requests of the corpus (``initialize`` first, in the editor's version) with the bad
  lines of :func:`editor_bad_lines` and :data:`LONG_REQUEST` among them, and close. The agent
  (:data:`AGENT`) reads its stdin to the end, keeping it, then writes the agent's side of the
  corpus and exits (so every run sees the same order). Checks: exit status 0; without
  ``--bridge``, every request of the editor reaches the agent byte for byte and in order, and
  its bad lines are forwarded too, or with ``--strict`` answered with an error and not
  forwarded; under ``--max-frame-bytes 4096``, the long request and the agent's long answer to
  :data:`ASK` are answered to the editor with an error of their id (docs/PROXY.md);
  without ``--bridge`` / ``--coalesce``, every good frame of the agent reaches the editor byte for
  byte and in order (a subsequence of the editor's lines; under ``--max-frame-bytes 4096`` those
  not longer), and no bad line does; text the proxy prints itself carries no terminal control
  character (diverted lines are the agent's own bytes, by design); the proxy's peak RSS
  (``VmHWM``) under ``--rss-limit`` MiB (default 400). With ``--state-json``: the checkpoint of
  the good frames plus the bad lines equals that of the good frames alone (two more runs). With
  ``--bridge`` also: the editor's output for the good frames plus the bad lines and the refused
  trigger equals its output for the good frames alone (a refused line leaves no trace).
* ``validate``, ``inspect``, ``export`` (both tables) on the corpus file and on the ``--record``
  recording: exit status 0, or 1 for ``validate`` (problems found: docs/CLI.md); no terminal
  control character in ``validate`` / ``inspect`` output. ``export`` is skipped, with a message,
  when pyarrow (the optional ``arrow`` extra) is missing.

Progress goes to stderr, a summary to stdout. Exit status 0 when every check passed, 1 when one
failed (each failure names the run, the option set, the backend and the check), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # bridge_checks, when run as a script
    sys.path.insert(0, str(HERE))

import orjson  # noqa: E402

import acp_fast  # noqa: E402
from acp_fast import traffic  # noqa: E402
from acp_fast.bridge import BRIDGE_MAX_DEPTH, Bridge, BridgeError  # noqa: E402

BACKENDS = ("rust", "python")
PROFILES = ("v2", "mixed")
#: The small ``--max-frame-bytes`` of one proxy run and of the library's second decoder.
SMALL_FRAME = 4096
#: The proxy's peak RSS allowed by default, MiB (the corpus is a few MB; the fallback proxy with
#: the bridge peaks well under 200 MiB on the default sizes).
RSS_LIMIT_MIB = 400
#: Seconds one subprocess may run; seconds the library run of one corpus may take.
TIMEOUT = 120.0
TRACEBACK = re.compile(rb"^Traceback \(most recent call last\):\r?$", re.M)
CONTROL = (b"\x1b", b"\x07", b"\x9b", "\x9b".encode(), "\u202e".encode())

#: The proxy's option sets: a name and the options. ``{record}``, ``{summary}`` and ``{state}``
#: are replaced by paths of the run.
OPTION_SETS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("none", ()),
    ("record", ("--record", "{record}")),
    ("strict", ("--strict",)),
    ("strict-schema", ("--strict-schema",)),
    ("coalesce", ("--coalesce",)),
    ("bridge 1:2", ("--bridge", "1:2")),
    ("bridge 2:1", ("--bridge", "2:1")),
    ("watch", ("--watch",)),
    ("answer-cancelled-permissions", ("--answer-cancelled-permissions",)),
    ("agent-invalid drop", ("--agent-invalid", "drop")),
    ("max-frame-bytes", ("--max-frame-bytes", str(SMALL_FRAME))),
    ("summary-json state-json", ("--summary-json", "{summary}", "--state-json", "{state}")),
)

#: The agent: reads its stdin to the end (or for 20 s) into the file ``sys.argv[2]``, then writes
#: the lines of the file ``sys.argv[1]`` and exits.
AGENT = """\
import os, select, sys, time
end = time.monotonic() + 20
fd = sys.stdin.fileno()
with open(sys.argv[2], "wb") as seen:
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            data = os.read(fd, 65536)
            if not data:
                break
            seen.write(data)
out = sys.stdout.buffer
for line in open(sys.argv[1], "rb"):
    out.write(line)
out.flush()
"""


# ---------------------------------------------------------------------------------------------
# The corpus


def _frame(obj: Any) -> bytes:
    return acp_fast.dumps(obj) + b"\n"


def _deep(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _update(update: Dict[str, Any], sid: str = "sess_hostile") -> bytes:
    return _frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def _nested(levels: int) -> bytes:
    """A notification whose params nest ``levels`` levels in all (the frame object counts one)."""
    inner = b"[" * (levels - 2) + b"]" * (levels - 2)
    return b'{"jsonrpc":"2.0","method":"_hostile/deep","params":{"v":' + inner + b"}}\n"


def bad_lines(profile: str) -> List[Tuple[str, bytes]]:
    """(label, line) of the lines every consumer must refuse, for a corpus of ``profile``."""
    big = "9" * 5000
    lines = [
        ("not JSON", b"garbage: an agent's stray print\n"),
        ("truncated", b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":\n'),
        ("invalid UTF-8", b'{"jsonrpc":"2.0","method":"x","params":{"t":"\xff\xfe\x80"}}\n'),
        ("binary", b"\xff\xfe\x00 binary junk \x80\x81\n"),
        ("ESC[2J", b"\x1b[2J\x1b[H\n"),
        ("OSC title", b"\x1b]0;pwned\x07\n"),
        ("ESC in a string", b'{"jsonrpc":"2.0","method":"x","params":{"t":"\x1b[2J"}}\n'),
        ("JSON object, not JSON-RPC", b'{"hello":"world"}\n'),
        ("JSON array of numbers", b"[1,2,3]\n"),
        ("JSON null", b"null\n"),
        ("JSON string", b'"a JSON string"\n'),
        ("wrong jsonrpc", b'{"jsonrpc":"1.0","method":"x"}\n'),
        ("nested past 1024", _nested(1100)),
        ("huge integer", f'{{"jsonrpc":"2.0","method":"x","params":{{"n":{big}}}}}\n'.encode()),
        ("huge exponent", b'{"jsonrpc":"2.0","method":"x","params":{"n":1e999999}}\n'),
        ("huge id", f'{{"jsonrpc":"2.0","id":{big[:400]},"method":"x"}}\n'.encode()),
        ("non-finite id", b'{"jsonrpc":"2.0","id":1e400,"method":"x"}\n'),
    ]
    if profile == "v2":
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "batched"}}
        update = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "sess_hostile", "update": chunk},
        }
        lines.append(("v2 batch", _frame([update, update])))
    return lines


def editor_bad_lines() -> List[bytes]:
    """The bad lines an editor sends (among its requests): each one of :func:`bad_lines` that is
    not a batch."""
    return [data for label, data in bad_lines("mixed") if label not in BATCH_LINES]


#: An editor request longer than :data:`SMALL_FRAME`: under that bound the proxy answers it with
#: an error of its id (docs/PROXY.md), elsewhere it is forwarded.
LONG_REQUEST = (
    acp_fast.dumps(
        {"jsonrpc": "2.0", "id": "hostile-long", "method": "_hostile/long", "params": {"text": "long " * SMALL_FRAME}}
    )
    + b"\n"
)


#: An editor request the agent answers with :func:`long_response`.
ASK = b'{"jsonrpc":"2.0","id":"hostile-ask","method":"_hostile/ask"}\n'


def long_response() -> bytes:
    """The agent's answer to :data:`ASK`, longer than :data:`SMALL_FRAME`: under that bound the
    proxy answers the editor with an error of its id instead (docs/PROXY.md)."""
    return acp_fast.dumps({"jsonrpc": "2.0", "id": "hostile-ask", "result": {"text": "long " * SMALL_FRAME}}) + b"\n"


def long_line() -> bytes:
    """A valid frame longer than :data:`SMALL_FRAME`: refused only under that bound."""
    text = "long " * (SMALL_FRAME // 4)
    return _frame({"jsonrpc": "2.0", "method": "_hostile/long", "params": {"text": text}})


def triggers(version: int) -> List[Tuple[str, bytes, bool]]:
    """(label, line, refused by the bridge) of the bridge's triggers, in the agent's ``version``."""
    perm = {"jsonrpc": "2.0", "method": "session/request_permission"}
    out: List[Tuple[str, bytes, bool]] = []
    for i, kind in enumerate((["allow_once"], {"k": 1})):
        option = {"optionId": "o", "name": "n", "kind": kind}
        params: Dict[str, Any] = {"sessionId": "sess_hostile", "options": [option]}
        if version == 2:
            params["subject"] = {"type": "command", "command": "ls"}
        else:
            params["toolCall"] = {"toolCallId": "hc0", "title": "t"}
        out.append((f"option kind {type(kind).__name__}", _frame({**perm, "id": 900001 + i, "params": params}), False))
    call = {"toolCallId": "hc9", "title": "t"}
    params = {
        "sessionId": "sess_hostile",
        "options": [],
        "toolCall": call,
        "subject": {"type": "tool_call", "toolCall": call},
    }
    out.append(("toolCall and subject.toolCall", _frame({**perm, "id": 900003, "params": params}), False))
    upsert = "tool_call_update" if version == 2 else "tool_call"
    first = {"sessionUpdate": upsert, "toolCallId": "hc1", "title": "t", "rawInput": _deep(1010)}
    out.append(("rawInput nested 1010", _update(first), False))
    out.append(
        (
            "update after it",
            _update({"sessionUpdate": "tool_call_update", "toolCallId": "hc1", "status": "completed"}),
            False,
        )
    )
    deep = {"sessionUpdate": upsert, "toolCallId": "hc2", "title": "t", "rawInput": _deep(1017)}  # 1,020 levels in all
    line = _update(deep)
    out.append(("nested 1020", line, True))
    return out


def deep_values(version: int) -> List[Tuple[str, bytes]]:
    """(label, line) of fixed mutants: a tool call with a list nested :data:`BRIDGE_MAX_DEPTH`
    levels where the faces print a string (title, kind, status, a content item's type, a
    location's path), one place per line, so that the random mutants need not find them."""
    upsert = "tool_call_update" if version == 2 else "tool_call"
    deep = _deep(BRIDGE_MAX_DEPTH - 8)  # the update sits 6 levels down; the content item 2 more
    out = []
    for i, (key, value) in enumerate(
        (
            ("title", deep),
            ("kind", deep),
            ("status", deep),
            ("content", [{"type": deep}]),
            ("locations", [{"path": deep}]),
        )
    ):
        update = {"sessionUpdate": upsert, "toolCallId": f"hd{i}", "title": "t", key: value}
        out.append((f"deep {key}", _update(update)))
    return out


#: What a mutation puts in place of a value.
HOSTILE_VALUES: Tuple[Any, ...] = ([], {}, None, -1, 2**70, 1.5, True, "")


def mutate(frame: bytes, rng: random.Random, values: Sequence[Any] = HOSTILE_VALUES) -> bytes:
    """``frame`` with one value somewhere replaced by a hostile one (one of ``values`` or a list
    nested :data:`BRIDGE_MAX_DEPTH` levels)."""
    obj = orjson.loads(frame)
    paths: List[Tuple[Any, Any]] = []
    stack: List[Any] = [obj]
    while stack:
        node = stack.pop()
        for key in list(node) if isinstance(node, dict) else range(len(node)):
            paths.append((node, key))
            if isinstance(node[key], (dict, list)):
                stack.append(node[key])
    if paths:
        node, key = rng.choice(paths)
        node[key] = rng.choice(values) if rng.random() < 0.9 else _deep(BRIDGE_MAX_DEPTH)
    # orjson refuses 2**70 and deep lists: acp_fast.dumps writes both
    return acp_fast.dumps(obj) + b"\n"


@dataclass
class Line:
    """One line of the corpus: its bytes, its sender and what it is."""

    data: bytes
    side: str  # "agent" or "editor"
    kind: str  # "good", "bad" (refused by everything), "trigger", "long", "mutant"
    label: str = ""
    refused_by_bridge: bool = False
    #: The codec's FrameDecoder refuses it (not a v2 batch: batches are the version's business).
    refused_by_decoder: bool = False


@dataclass
class Corpus:
    profile: str
    seed: int
    version: int
    lines: List[Line]

    def select(self, *kinds: str) -> List[Line]:
        return [line for line in self.lines if line.kind in kinds]


#: Bad lines that are JSON arrays: the decoder gives a ``Batch`` (of errors, or of calls), and the
#: bridge passes a batch it cannot split as it is (docs/BRIDGE.md); the proxy refuses both (a batch
#: with no valid message; a batch once v2 is negotiated: docs/PROXY.md).
BATCH_LINES = ("JSON array of numbers", "v2 batch")


def _bad(label: str, data: bytes) -> Line:
    codec = label not in BATCH_LINES
    return Line(data, "agent", "bad", label, refused_by_bridge=codec, refused_by_decoder=codec)


def corpus(profile: str, n_frames: int, seed: int, bad_rate: float = 0.05, mutant_rate: float = 0.05) -> Corpus:
    """The hostile corpus of ``profile``: ``n_frames`` frames of valid traffic with their senders,
    every bad line and trigger once (more bad lines at ``bad_rate`` after good lines), and
    mutants of ``mutant_rate`` of the good frames (after their original)."""
    from bridge_checks import senders

    version = traffic.PROTOCOL_VERSIONS[profile]
    rng = random.Random(seed)
    good = senders(traffic.frames(profile, n_frames, seed), version)
    bad = bad_lines(profile)
    extra: List[Line] = [_bad(label, data) for label, data in bad]
    extra.append(Line(long_line(), "agent", "long", "longer than --max-frame-bytes"))
    extra.append(Line(ASK, "editor", "ask", "a request answered by a long response"))
    extra.append(Line(long_response(), "agent", "long", "a response longer than --max-frame-bytes"))
    extra.extend(Line(d, "agent", "trigger", label, refused) for label, d, refused in triggers(version))
    extra.extend(Line(d, "agent", "mutant", label) for label, d in deep_values(version))
    # the fixed lines go after the initialize exchange, spread over the rest, in their order
    first = next((i for i, (s, f) in enumerate(good) if s == "agent"), 0) + 1
    spots = sorted(rng.randrange(first, len(good) + 1) for _ in extra)
    lines: List[Line] = []
    at = 0
    for i, (sender, frame) in enumerate(good):
        while at < len(extra) and spots[at] == i:
            lines.append(extra[at])
            at += 1
        lines.append(Line(frame, sender, "good"))
        if i >= first:
            if rng.random() < mutant_rate:
                lines.append(Line(mutate(frame, rng), sender, "mutant", "mutant"))
            if rng.random() < bad_rate:
                label, data = rng.choice(bad)
                lines.append(_bad(label, data))
    lines.extend(extra[at:])
    return Corpus(profile, seed, version, lines)


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class Result:
    run: str  # e.g. "proxy", "library", "validate corpus"
    options: str
    backend: str
    profile: str
    seed: int
    failures: List[str] = field(default_factory=list)
    skipped: str = ""
    seconds: float = 0.0
    #: The peak RSS of the proxy runs, MiB (0: no proxy run).
    rss_mib: float = 0.0

    def fail(self, check: str) -> None:
        self.failures.append(check)

    def name(self) -> str:
        return f"{self.run} [{self.options}] backend={self.backend} profile={self.profile} seed={self.seed}"


def _module(backend: str) -> Any:
    if backend == "rust":
        from acp_fast import _native

        return _native
    from acp_fast import _fallback

    return _fallback


# ---------------------------------------------------------------------------------------------
# The library


def run_library(c: Corpus, backend: str, result: Result) -> None:
    """FrameDecoder, dumps(to_dict()), ToolCallStore with its checkpoint, Bridge both ways."""
    mod = _module(backend)
    data = b"".join(line.data for line in c.lines)
    rng = random.Random(c.seed)

    def pieces() -> List[bytes]:
        out, at = [], 0
        while at < len(data):
            step = rng.choice((1, 7, 300, 4096, 65536))
            out.append(data[at : at + step])
            at += step
        return out

    # FrameDecoder: one result per line, good lines decoded to themselves, bad lines refused
    for bound in (None, SMALL_FRAME):
        where = f"FrameDecoder(max_frame_bytes={bound or 'default'})"
        decoder = mod.FrameDecoder() if bound is None else mod.FrameDecoder(max_frame_bytes=bound)
        results: List[Any] = []
        try:
            for piece in pieces():
                results.extend(decoder.feed(piece))
            results.extend(decoder.finish())
        except Exception as exc:  # noqa: BLE001
            result.fail(f"{where}.feed raised {_exc(exc)}")
            continue
        if len(results) != len(c.lines):
            result.fail(f"{where}: {len(results)} results for {len(c.lines)} lines")
            continue
        for i, (line, got) in enumerate(zip(c.lines, results)):
            refused = isinstance(got, acp_fast.DecodeError)
            too_long = bound is not None and len(line.data) - 1 > bound
            if line.kind in ("good", "trigger", "long") and not too_long:
                if refused:
                    result.fail(f"{where}: good line {i + 1} ({line.label or line.kind}) refused: {got}")
                elif bytes(got.raw) != line.data.rstrip(b"\n"):
                    result.fail(f"{where}: line {i + 1} decoded to other bytes")
            elif ((line.kind == "bad" and line.refused_by_decoder) or too_long) and not refused:
                result.fail(f"{where}: bad line {i + 1} ({line.label}) accepted")
            if bound is None and not refused:
                try:
                    if hasattr(got, "to_dict"):
                        value = got.to_dict()
                    else:  # a Batch: its messages (its errors are DecodeErrors)
                        value = [m.to_dict() for m in got if not isinstance(m, acp_fast.DecodeError)]
                    mod.dumps(value)
                except Exception as exc:  # noqa: BLE001
                    result.fail(f"dumps(to_dict()) of line {i + 1} ({line.label or line.kind}) raised {_exc(exc)}")

    # ToolCallStore: the whole corpus, then the checkpoint round trip
    store = mod.ToolCallStore(c.version)
    try:
        for piece in pieces():
            store.feed(piece)
        store.finish()
    except Exception as exc:  # noqa: BLE001
        result.fail(f"ToolCallStore.feed raised {_exc(exc)}")
    else:
        try:
            saved = bytes(store.to_json())
            again = bytes(mod.ToolCallStore.from_json(saved).to_json())
            if again != saved:
                result.fail("ToolCallStore: from_json(to_json()).to_json() differs from to_json()")
        except Exception as exc:  # noqa: BLE001
            result.fail(f"ToolCallStore checkpoint round trip raised {_exc(exc)}")

    # the store's state as if the bad lines had not arrived
    states = []
    for kinds in (("good",), ("good", "bad")):
        other = mod.ToolCallStore(c.version)
        other.feed(b"".join(line.data for line in c.lines if line.kind in kinds))
        other.finish()
        states.append(bytes(other.to_json()))
    if states[0] != states[1]:
        result.fail("ToolCallStore: the checkpoint with the bad lines differs from the good frames' alone")

    # Bridge, both ways: the agent speaks the corpus's version, the editor the other
    for editor, agent in ((1, 2), (2, 1)):
        where = f"Bridge(editor={editor}, agent={agent})"
        bridge = Bridge(editor=editor, agent=agent, backend=mod)
        for i, line in enumerate(c.lines):
            convert = bridge.from_agent if line.side == "agent" else bridge.from_editor
            try:
                out = convert(line.data)
            except (acp_fast.DecodeError, BridgeError):
                continue
            except Exception as exc:  # noqa: BLE001
                result.fail(f"{where}.from_{line.side}(line {i + 1}, {line.label or line.kind}) raised {_exc(exc)}")
                break
            if line.kind == "bad" and line.refused_by_decoder:
                result.fail(f"{where}: bad line {i + 1} ({line.label}) converted to {len(out)} frames")
            elif line.refused_by_bridge and agent == c.version:
                result.fail(f"{where}: the bridge's trigger {line.label!r} (line {i + 1}) was not refused")
            if not all(isinstance(f, bytes) and f.endswith(b"\n") for f in out):
                result.fail(f"{where}: line {i + 1} converted to something that is not a frame")
        try:
            bridge.release()
        except Exception as exc:  # noqa: BLE001
            result.fail(f"{where}.release() raised {_exc(exc)}")


def run_library_process(c: Corpus, frames: int, backend: str, result: Result) -> None:
    """:func:`run_library` in a child process (``--library-run``), under the timeout: a hang, a
    crash or a traceback of the library is a failure of the run, not of the harness."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--library-run", c.profile, str(c.seed), str(frames), backend]
    done = run_process(cmd, backend)
    _common_checks(done, result)
    if done.status == 0:
        try:
            result.failures.extend(orjson.loads(done.stdout))
        except orjson.JSONDecodeError:
            result.fail(f"the library run printed no report: {done.stdout[-500:]!r}")


def _exc(exc: BaseException) -> str:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return f"{type(exc).__name__}: {exc}\n" + "".join(tb[-3:])


# ---------------------------------------------------------------------------------------------
# Subprocesses


@dataclass
class Done:
    status: Optional[int]  # None: timed out (killed)
    stdout: bytes
    stderr: bytes
    maxrss_mib: float


def _env(backend: str) -> Dict[str, str]:
    package = str(Path(acp_fast.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "ACP_FAST_BACKEND": backend, "PYTHONPATH": package + (os.pathsep + path if path else "")}


def _peak_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (``VmHWM``), in MiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def run_process(cmd: Sequence[str], backend: str, stdin: bytes = b"", timeout: float = TIMEOUT) -> Done:
    """Run ``cmd`` in a session of its own; kill the session at ``timeout``; the peak RSS of the
    process: its ``VmHWM`` (``/proc/PID/status``), read every 20 ms while it runs. (Not
    ``wait4``'s ``ru_maxrss``: that counts the memory the child had before ``exec``, a copy of
    this process, which inside a long pytest run is hundreds of MiB.)"""
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(backend),
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out: List[bytes] = []
    err: List[bytes] = []

    def writer() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:
            pass

    def reader(stream: Any, into: List[bytes]) -> None:
        into.append(stream.read())

    threads = [
        threading.Thread(target=writer, daemon=True),
        threading.Thread(target=reader, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=reader, args=(proc.stderr, err), daemon=True),
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    status: Optional[int] = None
    rss = 0.0
    while True:
        rss = max(rss, _peak_mib(proc.pid))
        pid, raw, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = os.waitstatus_to_exitcode(raw)
            proc.returncode = status
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            break
        time.sleep(0.02)
    for t in threads[1:]:
        t.join(10)
    try:  # the session (the agent, if the proxy left it behind)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return Done(status, b"".join(out), b"".join(err), rss)


def _common_checks(done: Done, result: Result, allowed: Tuple[int, ...] = (0,), what: str = "") -> None:
    """Exit status in ``allowed``, no timeout, no traceback; ``what`` names the command in the
    failure messages when a run has more than one."""
    fail = (lambda text: result.fail(f"{what}: {text}")) if what else result.fail
    if done.status is None:
        fail(f"timed out after {TIMEOUT:.0f} s (killed)")
    elif done.status not in allowed:
        tail = done.stderr[-2000:].decode(errors="replace")
        fail(f"exit status {done.status}, expected {' or '.join(map(str, allowed))}; stderr ends:\n{tail}")
    # a Python traceback begins a line of its own (the agent's lines diverted to stderr may hold the
    # words: the traffic's tool output does)
    found = TRACEBACK.search(done.stderr)
    if found:
        at = found.start()
        fail("Traceback on stderr:\n" + done.stderr[at : at + 3000].decode(errors="replace"))


def _lines(data: bytes) -> List[bytes]:
    return [line + b"\n" for line in data.split(b"\n")[:-1]] + (
        [data.rsplit(b"\n", 1)[-1]] if not data.endswith(b"\n") and data else []
    )


def _is_subsequence(wanted: List[bytes], got: List[bytes]) -> Optional[int]:
    """None when ``wanted`` is a subsequence of ``got``, else the index of the first one missing."""
    it = iter(got)
    for i, line in enumerate(wanted):
        for other in it:
            if other == line:
                break
        else:
            return i
    return None


class Workdir:
    """The files of one corpus: the agent script, the agent's lines, the editor's lines, the corpus."""

    def __init__(self, root: Path, c: Corpus) -> None:
        from bridge_checks import as_editor

        self.root = root
        self.agent = root / "agent.py"
        self.agent.write_text(AGENT)
        self.corpus_file = root / "corpus.ndjson"
        self.corpus_file.write_bytes(b"".join(line.data for line in c.lines))
        agent_lines = [line for line in c.lines if line.side == "agent"]
        self.agent_files = {
            "hostile": self._write("agent-hostile.ndjson", agent_lines),
            "refused": self._write("agent-refused.ndjson", [ln for ln in agent_lines if _refused_line(ln)]),
            "good": self._write("agent-good.ndjson", [ln for ln in agent_lines if ln.kind == "good"]),
            "bad": self._write("agent-bad.ndjson", [ln for ln in agent_lines if ln.kind in ("good", "bad")]),
        }
        # the editor's requests of the corpus, initialize first, in each editor version
        requests = [(ln.side, ln.data) for ln in c.lines if ln.kind in ("good", "ask") and ln.side == "editor"]
        requests = [(s, f) for s, f in requests if acp_fast.decode(f).kind == "request"]
        self.editor = {v: b"".join(f for _, f in as_editor(requests, v)) for v in (1, 2)}
        #: The hostile editor: its requests with :func:`editor_bad_lines` after the first
        #: (initialize) and spread over the rest, and a request longer than :data:`SMALL_FRAME`.
        self.editor_bad = editor_bad_lines()
        self.requests = {v: [f for _, f in as_editor(requests, v)] for v in (1, 2)}
        self.hostile_editor: Dict[int, List[bytes]] = {}
        for v in (1, 2):
            rng = random.Random(c.seed)
            mixed = list(self.requests[v])
            for line in [*self.editor_bad, LONG_REQUEST]:
                mixed.insert(rng.randrange(1, len(mixed) + 1), line)
            self.hostile_editor[v] = mixed
        self.counter = 0

    def _write(self, name: str, lines: List[Line]) -> Path:
        path = self.root / name
        path.write_bytes(b"".join(line.data for line in lines))
        return path

    def fresh(self, suffix: str) -> Path:
        self.counter += 1
        return self.root / f"out-{self.counter}{suffix}"


def _refused_line(line: Line) -> bool:
    """The good-only corpus plus every line a bridge must refuse."""
    return line.kind == "good" or line.kind == "bad" or line.refused_by_bridge


def proxy_cmd(options: Sequence[str], agent: Path, agent_file: Path, seen: Path) -> List[str]:
    """The proxy between us and :data:`AGENT`, which writes ``agent_file`` and keeps what it
    read in ``seen``."""
    agent_cmd = [sys.executable, str(agent), str(agent_file), str(seen)]
    return [sys.executable, "-m", "acp_fast.cli", "proxy", *options, "--", *agent_cmd]


def run_proxy(
    c: Corpus, w: Workdir, backend: str, name: str, options: Sequence[str], result: Result, rss_limit: float
) -> Optional[Path]:
    """One proxy run (two more with ``--bridge``); returns the recording when there is one."""
    record = w.fresh(".rec")
    summary, state = w.fresh(".json"), w.fresh(".json")
    opts = [o.format(record=record, summary=summary, state=state) for o in options]
    bridge = "--bridge" in opts
    editor_version = int(opts[opts.index("--bridge") + 1].split(":")[0]) if bridge else c.version
    stdin = w.editor[editor_version]
    seen = w.fresh(".seen")
    hostile_stdin = b"".join(w.hostile_editor[editor_version])
    done = run_process(proxy_cmd(opts, w.agent, w.agent_files["hostile"], seen), backend, hostile_stdin)
    _common_checks(done, result)
    result.rss_mib = max(result.rss_mib, done.maxrss_mib)
    if done.maxrss_mib > rss_limit:
        result.fail(f"peak RSS {done.maxrss_mib:.0f} MiB over the limit of {rss_limit:.0f} MiB")
    agent_lines = [line for line in c.lines if line.side == "agent"]
    got = _lines(done.stdout)
    if not bridge and "--coalesce" not in opts:
        small = "--max-frame-bytes" in opts
        wanted = [
            ln.data
            for ln in agent_lines
            if ln.kind in ("good", "long") and not (small and len(ln.data) - 1 > SMALL_FRAME)
        ]
        missing = _is_subsequence(wanted, got)
        if missing is not None:
            result.fail(
                f"good frame {missing + 1} of {len(wanted)} from the agent did not reach the editor in order: "
                f"{wanted[missing][:200]!r}"
            )
    _editor_checks(w, opts, editor_version, got, seen, agent_lines, result)
    refused = {ln.data for ln in agent_lines if ln.kind == "bad"}
    if small_and(opts):
        refused.add(long_line())
    leaked = [line for line in got if line in refused]
    if leaked:
        result.fail(f"{len(leaked)} bad lines reached the editor, the first: {leaked[0][:200]!r}")
    # what the proxy prints itself: every stderr line that is not one of the agent's own lines
    own = {ln.data for ln in agent_lines}
    printed = [line for line in _lines(done.stderr) if line not in own and line + b"\n" not in own]
    unsafe = [line for line in printed if any(ch in line for ch in CONTROL)]
    if unsafe:
        result.fail(f"the proxy printed a terminal control character to stderr: {unsafe[0][:300]!r}")
    for path, what in ((summary, "--summary-json"), (state, "--state-json")):
        if "{summary}" in " ".join(options):
            try:
                orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                result.fail(f"{what} {path}: not a JSON document ({exc})")
    if "--state-json" in opts:  # the state as if the bad lines had not arrived
        states = {}
        for which in ("bad", "good"):
            path = w.fresh(".json")
            again_opts = [path if o == str(state) else o for o in opts]
            again_opts = [str(o) for o in again_opts]
            again_opts[again_opts.index("--summary-json") + 1] = str(w.fresh(".json"))
            again = run_process(proxy_cmd(again_opts, w.agent, w.agent_files[which], w.fresh(".seen")), backend, stdin)
            _common_checks(again, result, what=f"the run with the {which} lines for --state-json")
            states[which] = path.read_bytes() if path.exists() else b""
        if states["bad"] != states["good"]:
            result.fail("--state-json with the bad lines differs from --state-json of the good frames alone")
    if bridge:
        runs = {}
        for which in ("refused", "good"):
            again = run_process(proxy_cmd(opts, w.agent, w.agent_files[which], w.fresh(".seen")), backend, stdin)
            _common_checks(again, result, what=f"the run with the {which} lines for the comparison")
            runs[which] = _lines(again.stdout)
        if runs["refused"] != runs["good"]:
            diff = next(
                (i for i, (a, b) in enumerate(zip(runs["refused"], runs["good"])) if a != b),
                min(len(runs["refused"]), len(runs["good"])),
            )
            a = runs["refused"][diff][:300] if diff < len(runs["refused"]) else b"(none)"
            b = runs["good"][diff][:300] if diff < len(runs["good"]) else b"(none)"
            result.fail(
                f"the editor's output with the bad lines differs from the good frames' alone at line {diff + 1} "
                f"({len(runs['refused'])} lines against {len(runs['good'])}): {a!r} against {b!r}"
            )
    return record if "--record" in options else None


def _editor_checks(
    w: Workdir, opts: Sequence[str], version: int, got: List[bytes], seen: Path, agent_lines: List[Line], result: Result
) -> None:
    """What became of the editor's lines: its requests reach the agent byte for byte and in order
    (without ``--bridge``; under the small ``--max-frame-bytes`` those not longer); its bad lines
    are forwarded, or with ``--strict`` answered and not forwarded (docs/PROXY.md); under the small
    bound the long request and the agent's long response are answered with an error of their id."""
    small = "--max-frame-bytes" in opts
    seen_lines = _lines(seen.read_bytes()) if seen.exists() else []
    if "--bridge" not in opts:
        wanted = [f for f in w.requests[version] if not (small and len(f) - 1 > SMALL_FRAME)]
        if not small:
            wanted = [f for f in w.hostile_editor[version] if f in wanted or f == LONG_REQUEST]
        missing = _is_subsequence(wanted, seen_lines)
        if missing is not None:
            result.fail(
                f"the editor's request {missing + 1} did not reach the agent in order: {wanted[missing][:200]!r}"
            )
        # the bad lines within the bound (the others are refused for their length)
        editor_bad = [line for line in w.editor_bad if not (small and len(line) - 1 > SMALL_FRAME)]
        bad_seen = [line for line in editor_bad if line in seen_lines]
        if "--strict" in opts:
            if bad_seen:
                result.fail(f"--strict forwarded the editor's bad line {bad_seen[0][:200]!r} to the agent")
            own = {ln.data for ln in agent_lines}
            answers = [line for line in got if line not in own and b'"error"' in line]
            if len(answers) < len(editor_bad):
                result.fail(f"--strict answered {len(answers)} of the editor's {len(editor_bad)} bad lines")
        elif "--strict-schema" not in opts and len(bad_seen) != len(editor_bad):
            result.fail(f"{len(bad_seen)} of the editor's {len(editor_bad)} bad lines were forwarded to the agent")
    if small:
        if LONG_REQUEST in seen_lines:
            result.fail("the editor's request longer than --max-frame-bytes reached the agent")
        for id_ in ("hostile-long", "hostile-ask"):
            if not any(_is_error_for(line, id_) for line in got):
                result.fail(f"no error response with id {id_!r} reached the editor (a frame over --max-frame-bytes)")


def _is_error_for(line: bytes, id_: str) -> bool:
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(doc, dict) and doc.get("id") == id_ and isinstance(doc.get("error"), dict)


def small_and(opts: Sequence[str]) -> bool:
    return "--max-frame-bytes" in opts


def run_face(command: str, path: Path, backend: str, w: Workdir, result: Result) -> None:
    """``validate`` / ``inspect`` / ``export`` (two tables) on ``path``."""
    cli = [sys.executable, "-m", "acp_fast.cli"]
    if command == "validate":
        done = run_process([*cli, "validate", str(path), "--max-problems", "20"], backend)
        _common_checks(done, result, allowed=(0, 1))
        if any(ch in done.stdout + done.stderr for ch in CONTROL):
            result.fail("validate printed a terminal control character")
    elif command == "inspect":
        for extra in ((), ("--json",)):
            done = run_process([*cli, "inspect", str(path), *extra], backend)
            _common_checks(done, result, what=" ".join(["inspect", path.name, *extra]))
            if not extra and any(ch in done.stdout + done.stderr for ch in CONTROL):
                result.fail("inspect printed a terminal control character")
    else:
        for table in ("frames", "tool_calls"):
            out = w.fresh(".parquet")
            done = run_process([*cli, "export", str(path), "--to", str(out), "--table", table], backend)
            _common_checks(done, result, what=f"export {path.name} --table {table}")
            if done.status == 0 and not out.exists():
                result.fail(f"export --table {table}: exit status 0 and no {out.name}")


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# The whole run


@dataclass
class Plan:
    backends: Sequence[str] = BACKENDS
    profiles: Sequence[str] = PROFILES
    rounds: int = 1
    frames: int = 2000
    seed: int = 1
    rss_limit: float = RSS_LIMIT_MIB
    jobs: int = 2
    progress: bool = True


def option_sets_for(version: int) -> List[Tuple[str, Tuple[str, ...]]]:
    """The option sets for an agent of ``version``: a ``--bridge`` only where the agent's side is it."""
    out = []
    for name, opts in OPTION_SETS:
        if "--bridge" in opts and int(opts[1].split(":")[1]) != version:
            continue
        out.append((name, opts))
    return out


def run(plan: Plan, log: Callable[[str], None]) -> List[Result]:
    """Every run of ``plan``; the results in order."""
    results: List[Result] = []
    lock = threading.Lock()
    total = [0]
    done_count = [0]

    def record(result: Result) -> None:
        with lock:
            results.append(result)
            done_count[0] += 1
            state = "skipped" if result.skipped else ("FAILED" if result.failures else "ok")
            if plan.progress or result.failures:
                log(f"[{done_count[0]}/{total[0]}] {result.name()}: {state} ({result.seconds:.1f} s)")

    def timed(result: Result, work: Callable[[], None]) -> None:
        start = time.monotonic()
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - a harness error is a failure of its run
            result.fail(f"the harness raised {_exc(exc)}")
        result.seconds = time.monotonic() - start
        record(result)

    with tempfile.TemporaryDirectory(prefix="acp-hostile-") as tmp, ThreadPoolExecutor(plan.jobs) as pool:
        tasks: List[Any] = []
        per_corpus = {p: 1 + len(option_sets_for(traffic.PROTOCOL_VERSIONS[p])) + 6 for p in plan.profiles}
        total[0] = plan.rounds * len(plan.backends) * sum(per_corpus.values())
        for r in range(plan.rounds):
            for profile in plan.profiles:
                seed = plan.seed + r
                c = corpus(profile, plan.frames, seed)
                for backend in plan.backends:
                    root = Path(tmp) / f"{profile}-{seed}-{backend}"
                    root.mkdir()
                    w = Workdir(root, c)
                    tasks.extend(_tasks(plan, c, w, backend, timed, pool))
        for t in tasks:
            t.result()  # the proxy run with --record first: faces on the recording wait for it
    return results


def _tasks(plan: Plan, c: Corpus, w: Workdir, backend: str, timed: Any, pool: Any) -> List[Any]:
    def result(run_name: str, options: str) -> Result:
        return Result(run_name, options, backend, c.profile, c.seed)

    lib = result("library", "-")
    tasks = [pool.submit(timed, lib, lambda: run_library_process(c, plan.frames, backend, lib))]
    recording: List[Path] = []
    recorded = threading.Event()
    for name, opts in option_sets_for(c.version):
        res = result("proxy", name)

        def work(opts: Tuple[str, ...] = opts, res: Result = res) -> None:
            try:
                path = run_proxy(c, w, backend, "", opts, res, plan.rss_limit)
                if path is not None:
                    recording.append(path)
            finally:
                if "--record" in opts:
                    recorded.set()

        tasks.append(pool.submit(timed, res, work))
    faces = ["validate", "inspect", "export"]
    for face in faces:
        for what in ("corpus", "recording"):
            res = result(f"{face} {what}", "-")
            if face == "export" and not have_pyarrow():
                res.skipped = "pyarrow is not installed (the optional arrow extra): export not run"
                tasks.append(pool.submit(timed, res, lambda: None))
                continue

            def work(face: str = face, what: str = what, res: Result = res) -> None:
                if what == "corpus":
                    path = w.corpus_file
                else:
                    recorded.wait(TIMEOUT * 2)
                    if not recording or not recording[0].exists():
                        res.fail("no recording: the --record run wrote none")
                        return
                    path = recording[0]
                run_face(face, path, backend, w, res)

            tasks.append(pool.submit(timed, res, work))
    return tasks


def summary(results: List[Result], seconds: float) -> Tuple[str, bool]:
    failed = [r for r in results if r.failures]
    skipped = sorted({r.skipped for r in results if r.skipped})
    lines = []
    for r in failed:
        for check in r.failures:
            lines.append(f"FAILED: {r.name()}: {check}")
    for reason in skipped:
        lines.append(f"skipped: {reason}")
    checks = sum(1 for r in results if not r.skipped)
    peaks = [r.rss_mib for r in results if r.rss_mib]
    if peaks:
        lines.append(f"proxy peak RSS: {min(peaks):.0f}-{max(peaks):.0f} MiB over {len(peaks)} option sets")
    verdict = "every check passed" if not failed else f"{len(failed)} of {checks} runs failed"
    lines.append(f"hostile: {len(results)} runs in {seconds:.0f} s: {verdict}")
    return "\n".join(lines), not failed


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/hostile.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=3, help="corpora per profile, seeds SEED, SEED+1, ... (default 3)"
    )
    parser.add_argument("--frames", type=int, default=2000, help="valid frames per corpus (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="the first corpus's seed (default 1)")
    parser.add_argument("--short", action="store_true", help="what CI runs: 1 round of 300 frames")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument(
        "--rss-limit", type=float, default=RSS_LIMIT_MIB, help=f"the proxy's peak RSS allowed, MiB ({RSS_LIMIT_MIB})"
    )
    parser.add_argument("--no-progress", action="store_true", help="report failures only on stderr")
    parser.add_argument(
        "--library-run", nargs=4, metavar=("PROFILE", "SEED", "FRAMES", "BACKEND"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.library_run:  # one library run, in the child process of run_library_process
        profile, seed, frames, backend = args.library_run
        c = corpus(profile, int(frames), int(seed))
        result = Result("library", "-", backend, profile, int(seed))
        run_library(c, backend, result)
        sys.stdout.buffer.write(orjson.dumps(result.failures))
        return 0
    if args.rounds < 1 or args.frames < 10 or args.jobs < 1:
        parser.error("--rounds and --jobs must be >= 1, --frames >= 10")
    rounds, frames = (1, 300) if args.short else (args.rounds, args.frames)
    plan = Plan(
        args.backends, args.profiles, rounds, frames, args.seed, args.rss_limit, args.jobs, not args.no_progress
    )
    start = time.monotonic()
    results = run(plan, lambda text: print(text, file=sys.stderr, flush=True))
    text, ok = summary(results, time.monotonic() - start)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
