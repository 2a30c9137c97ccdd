"""What ``acp-fast bench`` times: corpora, contenders and the correctness checks.

Shared by the command (report.py) and the pytest-benchmark suite (benches/).

A *contender* is one way of handling ACP traffic (``CONTENDERS``: the acp-fast Rust backend,
the acp-fast pure-Python fallback, stdlib ``json``, orjson, msgspec, and the official ACP Python
SDK's path: ``json`` + its pydantic models). For a *task* it turns a corpus into a zero-argument
callable doing one full pass over the corpus; the callable returns its result so that the result
can be checked (once, outside the timing) against a reference computed with stdlib ``json``.

Tasks (every contender of a task does the same work on the same corpus):

* ``decode``: split the stream into frames and read kind, method, session id, update kind and
  tool-call id of every frame (acp-fast: ``FrameDecoder.feed``; the others:
  ``buffer.split(b"\\n")`` and a parse of each line; the SDK also validates each
  message through its pydantic model, as its connection does before a handler runs).
* ``materialize``: build the full Python object of every frame (``Message.to_dict()`` after
  ``FrameDecoder.feed``, ``loads`` per line; the SDK: ``json.loads`` + the model).
* ``encode``: serialize every frame from its Python object (``dumps`` of the dict; the SDK:
  ``model_dump`` of its model + ``json.dumps``, as its sender does). Every pass
  gets freshly built objects (untimed), as an agent encodes new objects.
* ``passthrough``: decode every frame and encode it again unchanged (a proxy's work).
* ``state``: keep the state of every tool call from the raw stream (``ToolCallStore.feed``;
  the others: a parse per line and a plain-dict accumulator with the same rules,
  ``acp_fast.bench.state.dict_accumulator``; the SDK: its models and one
  ``acp.contrib.session_state.SessionAccumulator`` per session).
* ``scaling``: the ``state`` task on growing prefixes of one stream (runner.py / state.py).
"""

from __future__ import annotations

import functools
import importlib
import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

from acp_fast import traffic

from .sdk_models import _sdk, sdk_path  # _sdk: the cached helpers (a test clears the cache)

# The optional libraries, None when missing (the report reads them here, and a test sets them
# to None to play a fresh install).
orjson: Optional[ModuleType]
msgspec: Optional[ModuleType]
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency of acp-fast
    orjson = None
try:
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    msgspec = None

#: Every task, in report order.
TASKS: Tuple[str, ...] = ("decode", "materialize", "encode", "passthrough", "state", "scaling")
#: The tasks timed on whole corpora, one table per (task, profile).
CORPUS_TASKS: Tuple[str, ...] = ("decode", "materialize", "encode", "passthrough", "state")
#: What each task does, one line (report headings).
TASK_TITLES: Dict[str, str] = {
    "decode": "frame decode + field access (kind, method, sessionId, update kind, toolCallId)",
    "materialize": "full materialization (every frame as Python objects)",
    "encode": "encode (Python objects -> frames)",
    "passthrough": "passthrough (decode + encode every frame unchanged, a proxy's work)",
    "state": "tool-call state accumulation from the raw stream",
    "scaling": "state accumulation vs stream length (time per frame, growth exponent)",
}
#: Contender ids, in report order, and how the report names them.
CONTENDERS: Tuple[str, ...] = ("rust", "python", "json", "orjson", "msgspec", "sdk")
CONTENDER_LABELS: Dict[str, str] = {
    "rust": "acp-fast (Rust)",
    "python": "acp-fast (fallback)",
    "json": "stdlib json",
    "orjson": "orjson",
    "msgspec": "msgspec",
    "sdk": "ACP SDK (json + pydantic)",
}
#: The ratio baselines: "vs json" and "vs orjson" columns divide their medians by a contender's.
BASELINES: Tuple[str, ...] = ("json", "orjson")
BACKENDS: Tuple[Tuple[str, str], ...] = (("rust", "acp_fast._native"), ("python", "acp_fast._fallback"))

#: Default corpus size in MB per profile (frames = MB / the profile's average frame size).
DEFAULT_MB = 4.0


class DebugBuildError(RuntimeError):
    """The native module is not a release build: timing it would measure the wrong thing."""


# ---------------------------------------------------------------------------------------------
# Corpora


class Corpus:
    """One NDJSON stream of [`acp_fast.traffic`][acp_fast.traffic] with its frames, lines and (lazily) dicts."""

    def __init__(self, profile: str, frames: List[bytes], seed: int) -> None:
        self.name = profile
        self.profile = profile
        self.seed = seed
        self.version = traffic.PROTOCOL_VERSIONS[profile]
        self.frames = frames
        self.lines = [frame[:-1] for frame in frames]
        self.buffer = b"".join(frames)
        self.cache: Dict[str, Any] = {}

    @property
    def n_frames(self) -> int:
        return len(self.frames)

    @property
    def n_bytes(self) -> int:
        return len(self.buffer)

    @property
    def average_frame_bytes(self) -> float:
        return self.n_bytes / max(1, self.n_frames)

    @functools.cached_property
    def dicts(self) -> List[Any]:
        return [json.loads(line) for line in self.lines]

    def prefix(self, n_frames: int) -> Corpus:
        """The first ``n_frames`` frames as a corpus of their own (the generator is prefix-stable)."""
        return Corpus(self.profile, self.frames[:n_frames], self.seed)

    def __repr__(self) -> str:
        return f"Corpus({self.profile!r}, {self.n_frames} frames, {self.n_bytes} bytes)"


def frames_for_mb(profile: str, mb: float) -> int:
    """How many frames of ``profile`` make about ``mb`` megabytes (at least 10)."""
    return max(10, int(mb * 1e6 / traffic.TARGET_FRAME_BYTES[profile]))


def build_corpus(profile: str, n_frames: int, seed: int = 0) -> Corpus:
    return Corpus(profile, traffic.frames(profile, n_frames, seed), seed)


# ---------------------------------------------------------------------------------------------
# Backends and optional libraries


def load_backends() -> Dict[str, Any]:
    """``{"rust": module or reason (str), "python": module}``.

    A native module that reports a ``build_profile`` other than ``"release"`` raises
    ``DebugBuildError`` (timing it would mislead); a missing one is reported, not raised.
    """
    found: Dict[str, Any] = {}
    for label, name in BACKENDS:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            found[label] = f"{name} is not importable ({exc})"
            continue
        profile = getattr(module, "build_profile", None)
        if profile is not None and profile != "release":
            raise DebugBuildError(
                f"refusing to time {name}: it is a {profile!r} build, and a debug build runs many times slower "
                f"than a release one. Rebuild it in release mode (`pip install -e .` or `maturin develop --release`), "
                f"or leave the Rust backend out (--contenders without rust)."
            )
        found[label] = module
    return found


def backend_description(label: str, module: Any) -> str:
    if isinstance(module, str):
        return f"{label}: unavailable — {module}"
    profile = getattr(module, "build_profile", None)
    extra = f", build_profile={profile}" if profile is not None else ""
    return f"{label}: {module.__name__} (BACKEND={getattr(module, 'BACKEND', '?')}{extra})"


def sdk_unavailable() -> Optional[str]:
    """None when the ACP Python SDK (``import acp``) can be used here, else why not."""
    return _sdk().unavailable


def availability(contender: str, backends: Dict[str, Any]) -> Optional[str]:
    """None when ``contender`` can run here, else the reason it cannot."""
    if contender in ("rust", "python"):
        module = backends.get(contender)
        return module if isinstance(module, str) else (None if module is not None else "not loaded")
    if contender == "orjson" and orjson is None:
        return "orjson is not installed"  # pragma: no cover - a dependency of acp-fast
    if contender == "msgspec" and msgspec is None:
        return "msgspec is not installed (pip install msgspec)"
    if contender == "sdk":
        return sdk_unavailable()
    return None


# ---------------------------------------------------------------------------------------------
# Contenders


Maker = Callable[[Corpus], Callable[[], Any]]


@dataclass
class Contender:
    """One contender's way of doing one task. ``primary`` marks the variant the summary uses."""

    id: str
    task: str
    name: str
    make: Optional[Maker]
    primary: bool = True
    skip: Optional[str] = None

    @property
    def label(self) -> str:
        return CONTENDER_LABELS[self.id]

    @property
    def is_acp_fast(self) -> bool:
        return self.id in ("rust", "python")

    @property
    def key(self) -> str:
        """Unique within a task: the contender id, plus the variant for secondary variants."""
        return self.id if self.primary else f"{self.id}:{self.name}"


def _fields(d: Any) -> Tuple[Any, ...]:
    method = d.get("method")
    if method is not None:
        kind = "request" if "id" in d else "notification"
    elif "result" in d:
        kind = "response"
    else:
        kind = "error"
    session_id = update_kind = tool_call_id = None
    params = d.get("params")
    if type(params) is dict:
        value = params.get("sessionId")
        session_id = value if type(value) is str else None
        update = params.get("update")
        if type(update) is dict:
            value = update.get("sessionUpdate")
            update_kind = value if type(value) is str else None
            value = update.get("toolCallId")
            tool_call_id = value if type(value) is str else None
    return (kind, method, session_id, update_kind, tool_call_id)


def _dict_fields(loads: Callable[[bytes], Any]) -> Maker:
    """split + loads per line, then the same five fields read from the dict."""

    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer

        def run() -> List[Tuple[Any, ...]]:
            out: List[Tuple[Any, ...]] = []
            append = out.append
            for line in buffer.split(b"\n"):
                if not line:
                    continue
                d = loads(line)
                method = d.get("method")
                if method is not None:
                    kind = "request" if "id" in d else "notification"
                elif "result" in d:
                    kind = "response"
                else:
                    kind = "error"
                session_id = update_kind = tool_call_id = None
                params = d.get("params")
                if type(params) is dict:
                    value = params.get("sessionId")
                    session_id = value if type(value) is str else None
                    update = params.get("update")
                    if type(update) is dict:
                        value = update.get("sessionUpdate")
                        update_kind = value if type(value) is str else None
                        value = update.get("toolCallId")
                        tool_call_id = value if type(value) is str else None
                append((kind, method, session_id, update_kind, tool_call_id))
            return out

        return run

    return make


def _sdk_fields(corpus: Corpus) -> Callable[[], Any]:
    """json.loads per line, the SDK's model of each message, the five fields from the model."""
    sdk = sdk_path()
    buffer = corpus.buffer
    validate = sdk.validate
    loads = json.loads

    def run() -> List[Tuple[Any, ...]]:
        out: List[Tuple[Any, ...]] = []
        append = out.append
        pending: Dict[Any, str] = {}
        for line in buffer.split(b"\n"):
            if not line:
                continue
            d = loads(line)
            model = validate(d, pending)
            method = d.get("method")
            if method is not None:
                kind = "request" if "id" in d else "notification"
            elif "result" in d:
                kind = "response"
            else:
                kind = "error"
            if method is not None:
                session_id = getattr(model, "session_id", None)
                update = getattr(model, "update", None)
            else:
                session_id = update = None
            update_kind = getattr(update, "session_update", None)
            tool_call_id = getattr(update, "tool_call_id", None)
            append((kind, method, session_id, update_kind, tool_call_id))
        return out

    return run


def _backend_fields(module: Any) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        FrameDecoder = module.FrameDecoder

        def run() -> List[Tuple[Any, ...]]:
            out: List[Tuple[Any, ...]] = []
            append = out.append
            for m in FrameDecoder().feed(buffer):
                append((m.kind, m.method, m.session_id, m.update_kind, m.tool_call_id))
            return out

        return run

    return make


def _backend_to_dict(module: Any) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        FrameDecoder = module.FrameDecoder
        return lambda: [m.to_dict() for m in FrameDecoder().feed(buffer)]

    return make


def _loads_per_line(loads: Callable[[bytes], Any]) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        return lambda: [loads(line) for line in buffer.split(b"\n") if line]

    return make


def _sdk_materialize(corpus: Corpus) -> Callable[[], Any]:
    sdk = sdk_path()
    buffer = corpus.buffer
    validate = sdk.validate
    loads = json.loads

    def run() -> List[Any]:
        pending: Dict[Any, str] = {}
        return [validate(loads(line), pending) for line in buffer.split(b"\n") if line]

    return run


def _fresh(load: Callable[[], Any], run: Callable[[Any], Any]) -> Callable[[], Any]:
    """A pass ``run(objects)`` whose ``prepare`` (called untimed before every pass) builds fresh
    ``objects = load()``: an encoder meets new objects, as in an agent. (CPython caches the UTF-8
    form of a non-ASCII ``str`` inside it once an encoder asks for it — acp-fast and msgspec do,
    orjson transcodes each time — so encoding the same objects again would flatter the former.)"""
    box: List[Any] = [None]

    def prepare() -> None:
        box[0] = None
        box[0] = load()

    def one_pass() -> Any:
        if box[0] is None:
            prepare()
        objects, box[0] = box[0], None
        return run(objects)

    one_pass.prepare = prepare  # type: ignore[attr-defined]  # the hook prepare() below looks up
    return one_pass


def prepare(run: Callable[[], Any]) -> None:
    """Get ``run`` ready for its next pass (untimed): fresh input where it needs it."""
    hook = getattr(run, "prepare", None)
    if hook is not None:
        hook()


def _dumps_each(dumps: Callable[[Any], bytes]) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        lines = corpus.lines
        loads = orjson.loads if orjson is not None else json.loads
        return _fresh(lambda: [loads(line) for line in lines], lambda dicts: [dumps(d) for d in dicts])

    return make


def _json_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _sdk_encode(corpus: Corpus) -> Callable[[], Any]:
    sdk = sdk_path()
    write = sdk.write
    return _fresh(
        lambda: sdk.models(corpus.lines),
        lambda models: [write(envelope, member, model) for envelope, member, model in models],
    )


def _backend_passthrough(module: Any) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        FrameDecoder = module.FrameDecoder
        encode = module.encode
        return lambda: [encode(m) for m in FrameDecoder().feed(buffer)]

    return make


def _roundtrip(loads: Callable[[bytes], Any], dumps: Callable[[Any], bytes]) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        return lambda: [dumps(loads(line)) + b"\n" for line in buffer.split(b"\n") if line]

    return make


def _sdk_passthrough(corpus: Corpus) -> Callable[[], Any]:
    sdk = sdk_path()
    buffer = corpus.buffer
    validate = sdk.validate
    write = sdk.write
    loads = json.loads

    def run() -> List[bytes]:
        pending: Dict[Any, str] = {}
        out = []
        for line in buffer.split(b"\n"):
            if not line:
                continue
            message = loads(line)
            member = "params" if "params" in message else "result" if "result" in message else None
            model = validate(message, pending) if member is not None else None
            envelope = {k: v for k, v in message.items() if k != member}
            out.append(write(envelope, member, model))
        return out

    return run


def _backend_state(module: Any, changes: bool = True) -> Maker:
    def make(corpus: Corpus) -> Callable[[], Any]:
        buffer = corpus.buffer
        version = corpus.version
        ToolCallStore = module.ToolCallStore

        def run() -> Any:
            store = ToolCallStore(version)
            store.feed(buffer, changes=changes)
            return store

        return run

    return make


def _dict_state(loads: Callable[[bytes], Any]) -> Maker:
    from .state import dict_accumulator

    def make(corpus: Corpus) -> Callable[[], Any]:
        lines = corpus.lines
        version = corpus.version
        return lambda: dict_accumulator(lines, version, loads)

    return make


def _sdk_state(corpus: Corpus) -> Callable[[], Any]:
    from .state import sdk_accumulate

    lines = corpus.lines
    return lambda: sdk_accumulate(lines)


def contenders(task: str, backends: Dict[str, Any], selected: Optional[Any] = None) -> List[Contender]:
    """The contenders of ``task`` in report order (acp-fast first), restricted to ``selected`` ids.

    ``backends`` is ``load_backends``'s result. A contender that cannot run here has ``skip``
    set to the reason (and no ``make``). ``scaling`` uses the ``state`` contenders' primaries.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, found {task!r}")
    wanted = CONTENDERS if selected is None else tuple(selected)
    base = "state" if task == "scaling" else task
    msgspec_decode = msgspec.json.Decoder().decode if msgspec is not None else None
    msgspec_encode = msgspec.json.Encoder().encode if msgspec is not None else None
    table: List[Tuple[str, str, Callable[[], Maker], bool]] = []  # (id, name, factory, primary)

    def backend(cid: str, name: str, factory: Callable[[Any], Maker], primary: bool = True) -> None:
        table.append((cid, name, lambda: factory(backends[cid]), primary))

    for cid in ("rust", "python"):
        if base == "decode":
            backend(cid, "FrameDecoder.feed + fields", _backend_fields)
        elif base == "materialize":
            backend(cid, "FrameDecoder.feed + Message.to_dict", _backend_to_dict)
            backend(cid, "loads per line", lambda m: _loads_per_line(m.loads), primary=False)
        elif base == "encode":
            backend(cid, "dumps", lambda m: _dumps_each(m.dumps))
        elif base == "passthrough":
            backend(cid, "FrameDecoder.feed + encode", _backend_passthrough)
        else:
            backend(cid, "ToolCallStore.feed", _backend_state)
            if cid == "rust" and task == "state":
                backend(cid, "ToolCallStore.feed(changes=False)", lambda m: _backend_state(m, False), primary=False)
    # (id, loads, dumps, names): loads/dumps are None for a missing library, whose factory
    # availability() keeps from running.
    libraries: Tuple[Tuple[str, Any, Any, str, str], ...] = (
        ("json", json.loads, _json_dumps, "json.loads", "json.dumps"),
        ("orjson", getattr(orjson, "loads", None), getattr(orjson, "dumps", None), "orjson.loads", "orjson.dumps"),
        ("msgspec", msgspec_decode, msgspec_encode, "msgspec.json.decode", "msgspec.json.encode"),
    )
    for cid, loads, dumps, loads_name, dumps_name in libraries:
        if base == "decode":
            table.append((cid, f"split + {loads_name} + fields", functools.partial(_dict_fields, loads), True))
        elif base == "materialize":
            table.append((cid, f"{loads_name} per line", functools.partial(_loads_per_line, loads), True))
        elif base == "encode":
            table.append((cid, dumps_name, functools.partial(_dumps_each, dumps), True))
        elif base == "passthrough":
            table.append((cid, f"{loads_name} + {dumps_name}", functools.partial(_roundtrip, loads, dumps), True))
        else:
            table.append((cid, f"{loads_name} + dict accumulator", functools.partial(_dict_state, loads), True))
    sdk_names = {
        "decode": "json.loads + pydantic model per message + fields",
        "materialize": "json.loads + pydantic model per message",
        "encode": "model_dump + json.dumps",
        "passthrough": "json.loads + model + model_dump + json.dumps",
        "state": "json.loads + SessionNotification + SessionAccumulator per session",
    }
    sdk_makers = {
        "decode": _sdk_fields,
        "materialize": _sdk_materialize,
        "encode": _sdk_encode,
        "passthrough": _sdk_passthrough,
        "state": _sdk_state,
    }
    table.append(("sdk", sdk_names[base], lambda: sdk_makers[base], True))

    out: List[Contender] = []
    for cid, name, factory, primary in table:
        if cid not in wanted:
            continue
        reason = availability(cid, backends)
        out.append(Contender(cid, task, name, None if reason else factory(), primary, reason))
    return out


def skip_for_corpus(contender: Contender, corpus: Corpus) -> Optional[str]:
    """Why ``contender`` cannot run on ``corpus`` (beyond being unavailable), or None."""
    if contender.skip is not None:
        return contender.skip
    if contender.id == "sdk":
        return _sdk().skip_reason(corpus)
    return None


# ---------------------------------------------------------------------------------------------
# Correctness


def reference(task: str, corpus: Corpus) -> Any:
    """The expected result of ``task`` on ``corpus`` (computed with stdlib ``json``), cached."""
    key = f"reference-{task}"
    if key in corpus.cache:
        return corpus.cache[key]
    if task == "decode":
        value: Any = [_fields(d) for d in corpus.dicts]
    elif task == "materialize":
        value = corpus.dicts
    elif task == "encode":
        value = [orjson.dumps(d) if orjson is not None else _json_dumps(d) for d in corpus.dicts]
    elif task == "passthrough":
        value = [line + b"\n" for line in corpus.lines]
    elif task == "state":
        from .state import dict_accumulator

        value = dict_accumulator(corpus.lines, corpus.version, json.loads)
    else:
        raise ValueError(f"no reference for task {task!r}")
    corpus.cache[key] = value
    return value


def _first_difference(result: List[Any], expected: List[Any], same: Callable[[Any, Any], bool]) -> Optional[str]:
    if len(result) != len(expected):
        return f"{len(result)} results for {len(expected)} frames"
    bad = [i for i, (got, want) in enumerate(zip(result, expected)) if not same(got, want)]
    if not bad:
        return None
    i = bad[0]
    return f"{len(bad)} of {len(expected)} frames differ; frame {i}: {str(result[i])[:100]!r} != {str(expected[i])[:100]!r}"


def _sdk_same_message(got: bytes, want: Any) -> bool:
    """The SDK's frame ``got`` means ``want``: equal as JSON, or equal once both sides' params
    (result) go through the SDK's model (its writer drops default-valued members, such as an
    empty ``authMethods``, which a reader fills in again)."""
    message = json.loads(got)
    if message == want:
        return True
    sdk = sdk_path()
    if set(message) - {"params", "result"} != set(want) - {"params", "result"}:
        return False
    if any(message[k] != want[k] for k in message if k not in ("params", "result")):
        return False
    method = want.get("method")
    if method is not None:
        model = sdk.params.get(method)
        member = "params"
    else:
        model = next((m for m in sdk.results.values() if _validates(m, want.get("result"))), None)
        member = "result"
    if model is None or member not in message or member not in want:
        return False
    return _validates(model, message[member]) and model.model_validate(message[member]) == model.model_validate(
        want[member]
    )


def _validates(model: Any, payload: Any) -> bool:
    try:
        model.model_validate(payload)
    except Exception:  # noqa: BLE001 - pydantic's ValidationError, or anything the model raises
        return False
    return True


def check(task: str, corpus: Corpus, result: Any, contender: Optional[Contender] = None) -> Optional[str]:
    """None when ``result`` (of ``contender``) is right, else a short description of what differs.

    acp-fast and the JSON libraries must give exactly the reference (the same objects, the same
    bytes, the same state). The SDK writes JSON its own way (ASCII escapes, default-valued members
    dropped) and keeps its own state shape, so its frames must mean the same message (equal as
    JSON, or equal through its models: ``_sdk_same_message``), its models must dump back to
    the frame's params or result (``model_dump(by_alias=True, exclude_unset=True)``), and its state
    must give every tool call of every session the reference's status.
    """
    cid = contender.id if contender is not None else None
    expected = reference(task, corpus)
    if task == "state":
        if cid == "sdk":
            want = {sid: {tcid: rec.get("status") for tcid, rec in calls.items()} for sid, calls in expected.items()}
            got = {
                sid: {tcid: view.status for tcid, view in acc.snapshot().tool_calls.items()}
                for sid, acc in result.items()
            }
            want = {sid: calls for sid, calls in want.items() if calls}
            got = {sid: calls for sid, calls in got.items() if calls}
        else:
            got = result.snapshot() if hasattr(result, "snapshot") else result
            want = expected
        if got == want:
            return None
        n_got, n_want = sum(map(len, got.values())), sum(map(len, want.values()))
        diff = [(s, t) for s, calls in want.items() for t, rec in calls.items() if got.get(s, {}).get(t) != rec]
        return f"state differs: {n_got} tool calls for {n_want}; {len(diff)} differ (first: {diff[:1]})"
    result = list(result)
    if cid == "sdk":
        if task in ("encode", "passthrough"):
            return _first_difference(result, corpus.dicts, _sdk_same_message)
        if task == "materialize":
            dumped = [
                m.model_dump(mode="json", by_alias=True, exclude_unset=True) if hasattr(m, "model_dump") else m
                for m in result
            ]
            members = [d.get("params", d.get("result", d.get("error"))) for d in corpus.dicts]
            return _first_difference(dumped, members, lambda a, b: a == b)
    if result == expected:
        return None
    return _first_difference(result, expected, lambda a, b: a == b) or "results differ"
