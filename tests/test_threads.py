"""One FrameDecoder / Framer / ToolCallStore shared by threads, on both backends (docs/API.md
"Threads"): each method runs as if alone, so every frame is delivered exactly once, to the feed
that completed it, the counters are exact, reads see the state between two feeds and nothing
raises. A call from inside one of the object's own methods in the same thread (a finalizer, a
signal handler, a trace function) raises RuntimeError instead of waiting for itself.

The threads switch every 10 microseconds (``sys.setswitchinterval``), so that a switch lands
inside a method often; each feed builds Python objects (a ``Batch``, a ``DecodeError``) whose
Python code is where the native backend lets another thread run.
"""

from __future__ import annotations

import json
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Sequence

import pytest

from acp_fast import Batch, DecodeError

WRITERS = 4
READERS = 2
SWITCH_INTERVAL = 1e-5
#: A thread that has not finished by then is taken as a deadlock.
JOIN_TIMEOUT = 60.0

REENTRANT = (
    "re-entrant call: this {name} is already running a method in this thread "
    "(the call came from a finalizer, signal handler or trace function inside it)"
)


@contextmanager
def fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(writers: Sequence[Callable[[], None]], readers: Sequence[Callable[[threading.Event], None]]) -> None:
    """Run the writers and readers together (readers loop until every writer is done); re-raise
    the first exception of any thread; fail on a thread that does not end (a deadlock)."""
    errors: List[BaseException] = []
    done = threading.Event()
    start = threading.Barrier(len(writers) + len(readers))

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                errors.append(exc)
                done.set()

        return run

    threads = [threading.Thread(target=guarded(w), daemon=True) for w in writers]
    threads += [threading.Thread(target=guarded(lambda r=r: r(done)), daemon=True) for r in readers]
    with fast_switching():
        for t in threads:
            t.start()
        for t in threads[: len(writers)]:
            t.join(JOIN_TIMEOUT)
        done.set()
        for t in threads:
            t.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish: deadlock"
    if errors:
        raise errors[0]


def line(obj: Dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def request(ident: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "x/ping", "params": {"n": ident}}


# ---------------------------------------------------------------------------------------------
# FrameDecoder and Framer: feeds of whole lines from several threads

DECODER_FEEDS = 3000
#: Lines of one feed: three requests, a batch of two, a line that is not JSON.
DECODER_LINES = 5


def not_json(ident: str) -> bytes:
    return b'{"jsonrpc": "2.0", "id": "' + ident.encode() + b'", oops}'


def decoder_chunk(t: int, c: int) -> bytes:
    ids = [f"{t}-{c}-{i}" for i in range(6)]
    batch = json.dumps([request(ids[2]), request(ids[3])], separators=(",", ":")).encode() + b"\n"
    return line(request(ids[0])) + line(request(ids[1])) + batch + not_json(ids[4]) + b"\n" + line(request(ids[5]))


def decoder_expected(t: int, c: int) -> List[Any]:
    ids = [f"{t}-{c}-{i}" for i in range(6)]
    return [
        ("message", ids[0]),
        ("message", ids[1]),
        ("batch", (ids[2], ids[3])),
        ("error", not_json(ids[4])),
        ("message", ids[5]),
    ]


def described(item: Any) -> Any:
    if isinstance(item, DecodeError):
        return ("error", item.raw)
    if isinstance(item, Batch):
        return ("batch", tuple(m.id for m in item))
    return ("message", item.id)


def check_lines(numbers: List[List[int]], total: int) -> None:
    """Each feed's line numbers are consecutive, and all of them are 1..total, each once."""
    for got in numbers:
        assert got == list(range(got[0], got[0] + len(got)))
    flat = sorted(n for got in numbers for n in got)
    assert flat == list(range(1, total + 1))


def test_frame_decoder_shared(backend):
    decoder = backend.FrameDecoder()
    numbers: List[List[int]] = []
    seen: List[int] = []

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            for c in range(DECODER_FEEDS):
                out = decoder.feed(decoder_chunk(t, c))
                assert [described(x) for x in out] == decoder_expected(t, c)
                numbers.append([x.line for x in out])

        return run

    def reader(done: threading.Event) -> None:
        while not done.is_set():
            seen.append(decoder.line)
            assert decoder.buffered == 0
            repr(decoder)

    run_threads([writer(t) for t in range(WRITERS)], [reader] * READERS)
    total = WRITERS * DECODER_FEEDS * DECODER_LINES
    check_lines(numbers, total)
    assert decoder.line == total
    assert decoder.finish() == []
    # A read sees the decoder between two feeds: a whole number of feeds' lines.
    assert all(n % DECODER_LINES == 0 for n in seen)


FRAMER_FEEDS = 3000
FRAMER_LIMIT = 64


def framer_chunk(t: int, c: int) -> List[bytes]:
    """The lines of one feed: two short ones, one over the limit, one short one."""
    return [f"{t}-{c}-a".encode(), f"{t}-{c}-b".encode(), b"x" * (FRAMER_LIMIT + 1), f"{t}-{c}-d".encode()]


@pytest.mark.parametrize("mode", ["default", "joined"])
def test_framer_shared(backend, mode):
    framer = backend.Framer(max_frame_bytes=FRAMER_LIMIT, joined=mode == "joined")
    numbers: List[List[int]] = []
    seen: List[int] = []

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            for c in range(FRAMER_FEEDS):
                lines = framer_chunk(t, c)
                out = framer.feed(b"".join(x + b"\n" for x in lines))
                if mode == "joined":
                    # (first line, the lines before the long one), (its line, its size), (line, last)
                    assert [type(x[1]) for x in out] == [bytes, int, bytes]
                    assert out[0][1] == lines[0] + b"\n" + lines[1] + b"\n"
                    assert out[1][1] == FRAMER_LIMIT + 2
                    assert out[2][1] == lines[3] + b"\n"
                    first = out[0][0]
                    assert [x[0] for x in out] == [first, first + 2, first + 3]
                    numbers.append([first, first + 1, first + 2, first + 3])
                else:
                    assert [x[1] for x in out[:2]] == lines[:2]
                    assert isinstance(out[2], DecodeError) and out[2].kind == "frame_too_large"
                    assert out[3][1] == lines[3]
                    numbers.append([out[0][0], out[1][0], out[2].line, out[3][0]])

        return run

    def reader(done: threading.Event) -> None:
        while not done.is_set():
            seen.append(framer.line)
            assert framer.buffered == 0
            repr(framer)

    run_threads([writer(t) for t in range(WRITERS)], [reader] * READERS)
    total = WRITERS * FRAMER_FEEDS * 4
    check_lines(numbers, total)
    assert framer.line == total
    assert all(n % 4 == 0 for n in seen)


PIECES_FEEDS = 10000


def pieces(t: int) -> List[bytes]:
    """A thread's stream (compact JSON: no blank line can come of mixing it with others) cut at
    varying places, never just before a newline."""
    data = b"".join(line(request(f"{t}-{i}")) for i in range(PIECES_FEEDS))
    out = []
    at = 0
    step = 7 + t
    while at < len(data):
        end = min(at + step, len(data))
        while end < len(data) and data[end] == 10:
            end += 1
        out.append(data[at:end])
        at = end
        step = step % 97 + 13
    return out


@pytest.mark.parametrize("cls", ["FrameDecoder", "Framer"])
def test_pieces_shared(backend, cls):
    """Threads feeding pieces of lines mix their lines up, but each line fed is delivered once:
    the line counter counts every newline, and every byte comes out once."""
    obj = getattr(backend, cls)()
    streams = [pieces(t) for t in range(WRITERS)]
    got: List[List[Any]] = []

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            for piece in streams[t]:
                got.append(obj.feed(piece))

        return run

    run_threads([writer(t) for t in range(WRITERS)], [])
    data = b"".join(b"".join(s) for s in streams)
    total = data.count(b"\n")
    assert obj.line == total
    assert obj.buffered == 0
    items = [x for out in got for x in out]
    if cls == "Framer":
        numbers, raws = [n for n, _ in items], [raw for _, raw in items]
    else:
        numbers, raws = [x.line for x in items], [x.raw for x in items]
    assert sorted(numbers) == list(range(1, total + 1))
    assert sum(map(len, raws)) + total == len(data)
    assert sorted(b"".join(raws)) == sorted(data.replace(b"\n", b""))


# ---------------------------------------------------------------------------------------------
# ToolCallStore: writers feed, readers query

STORE_FEEDS = 1000
#: Lines of one feed: two tool calls created and finished, then a line that is not JSON.
STORE_LINES = 5
MAX_TOOL_CALLS = 40


def update(sid: str, fields: Dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": fields}})


def store_chunk(t: int, c: int) -> bytes:
    sid = f"s{t % 2}"  # two threads per session
    a, b = f"{t}-{c}-a", f"{t}-{c}-b"
    return b"".join(
        [
            update(sid, {"sessionUpdate": "tool_call", "toolCallId": a, "title": a, "status": "pending"}),
            update(sid, {"sessionUpdate": "tool_call", "toolCallId": b, "title": b}),
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": a, "status": "completed"}),
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": b, "status": "failed"}),
            b"not json\n",
        ]
    )


def check_calls(calls: Dict[str, Any]) -> None:
    """Between two feeds, every tool call is finished: created and updated by the same feed."""
    for tcid, record in calls.items():
        assert record["toolCallId"] == tcid
        assert record["title"] == tcid
        assert record["status"] == ("completed" if tcid.endswith("-a") else "failed")


def check_state(doc: Dict[str, Any]) -> None:
    held = 0
    for session in doc["sessions"].values():
        check_calls(session["toolCalls"])
        held += len(session["toolCalls"])
    assert held <= MAX_TOOL_CALLS
    assert (held + doc["evicted"]) % 2 == 0


def test_tool_call_store_shared(backend):
    store = backend.ToolCallStore(max_tool_calls=MAX_TOOL_CALLS)
    numbers: List[List[int]] = []
    reads = [0]

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            sid = f"s{t % 2}"
            for c in range(STORE_FEEDS):
                out = store.feed(store_chunk(t, c))
                a, b = f"{t}-{c}-a", f"{t}-{c}-b"
                assert [tuple(x) for x in out[:4]] == [
                    (sid, "tool_call", a, "created", a),
                    (sid, "tool_call", b, "created", b),
                    (sid, "tool_call", a, "updated", a),
                    (sid, "tool_call", b, "updated", b),
                ]
                assert isinstance(out[4], DecodeError) and out[4].raw == b"not json"
                numbers.append([out[4].line - 4 + i for i in range(5)])

        return run

    def reader(done: threading.Event) -> None:
        n = 0
        while not done.is_set():
            snap = store.snapshot()
            for calls in snap.values():
                check_calls(calls)
            check_state(store.state())
            check_state(json.loads(store.to_json()))
            for sid in ("s0", "s1"):
                calls = store.tool_calls(sid)
                check_calls(calls)
                for tcid in list(calls)[:2]:
                    record = store.get(sid, tcid)
                    if record is not None:  # evicted since
                        check_calls({tcid: record})
            assert len(store) <= MAX_TOOL_CALLS
            assert store.line % STORE_LINES == 0
            assert store.evicted % 2 == 0
            repr(store)
            n += 1
        reads[0] += n

    run_threads([writer(t) for t in range(WRITERS)], [reader] * READERS)
    assert reads[0] > 0
    total = WRITERS * STORE_FEEDS * STORE_LINES
    check_lines(numbers, total)
    assert store.line == total
    created = WRITERS * STORE_FEEDS * 2
    assert len(store) == MAX_TOOL_CALLS
    assert store.evicted == created - MAX_TOOL_CALLS
    doc = store.state()
    check_state(doc)
    assert sum(len(s["toolCalls"]) for s in doc["sessions"].values()) == MAX_TOOL_CALLS


APPLY_FEEDS = 1000


def test_tool_call_store_apply_shared(backend):
    """``apply`` from several threads, a message at a time (as the SDK integration does), while
    others read: each read sees whole records, and the counts come out exact."""
    store = backend.ToolCallStore(max_tool_calls=MAX_TOOL_CALLS)

    def writer(t: int) -> Callable[[], None]:
        def run() -> None:
            sid = f"s{t % 2}"
            decoder = backend.FrameDecoder()
            for c in range(APPLY_FEEDS):
                a, b = f"{t}-{c}-a", f"{t}-{c}-b"
                changes = [tuple(store.apply(m)) for m in decoder.feed(store_chunk(t, c))[:4]]
                assert changes == [
                    (sid, "tool_call", a, "created", a),
                    (sid, "tool_call", b, "created", b),
                    (sid, "tool_call", a, "updated", a),
                    (sid, "tool_call", b, "updated", b),
                ]

        return run

    def reader(done: threading.Event) -> None:
        while not done.is_set():
            for doc in (store.state(), json.loads(store.to_json())):
                held = 0
                for session in doc["sessions"].values():
                    held += len(session["toolCalls"])
                    for tcid, record in session["toolCalls"].items():
                        assert record["toolCallId"] == record["title"] == tcid
                assert held <= MAX_TOOL_CALLS
            assert len(store) <= MAX_TOOL_CALLS

    run_threads([writer(t) for t in range(WRITERS)], [reader] * READERS)
    created = WRITERS * APPLY_FEEDS * 2
    assert len(store) == MAX_TOOL_CALLS
    assert store.evicted == created - MAX_TOOL_CALLS
    snap = store.snapshot()
    assert sum(len(calls) for calls in snap.values()) == MAX_TOOL_CALLS
    for calls in snap.values():
        check_calls(calls)


# ---------------------------------------------------------------------------------------------
# Re-entrant calls


def call_inside(outer: Callable[[], Any], inner: Callable[[], Any]) -> List[Any]:
    """Run ``outer`` in a thread whose profiler calls ``inner`` once, from inside the first
    ``DecodeError`` constructor that ``outer`` runs (Python code on both backends); returns
    [what outer returned, what inner raised or returned]."""
    found: List[Any] = []
    init = DecodeError.__init__.__code__

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is init and len(found) == 0:
            try:
                found.append(inner())
            except Exception as exc:  # noqa: BLE001 - the result under test
                found.append(exc)

    result: List[Any] = []

    def run() -> None:
        sys.setprofile(profile)
        try:
            result.append(outer())
        finally:
            sys.setprofile(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive(), "a re-entrant call deadlocked"
    assert len(found) == 1
    return result + found


def assert_reentrant(found: Any, name: str) -> None:
    assert type(found) is RuntimeError
    assert str(found) == REENTRANT.format(name=name)


def test_reentrant_frame_decoder(backend):
    decoder = backend.FrameDecoder()
    for inner in (
        lambda: decoder.line,
        lambda: decoder.feed(line(request("x"))),
        decoder.finish,
        lambda: repr(decoder),
    ):
        out, found = call_inside(lambda: decoder.feed(b"oops\n" + line(request("y"))), inner)
        assert_reentrant(found, "FrameDecoder")
        assert [described(x) for x in out] == [("error", b"oops"), ("message", "y")]
    assert decoder.line == 8
    assert [m.id for m in decoder.feed(line(request("z")))] == ["z"]


def test_reentrant_framer(backend):
    framer = backend.Framer(max_frame_bytes=4)
    for inner in (lambda: framer.buffered, lambda: framer.feed(b"ab\n"), framer.finish, lambda: framer.max_frame_bytes):
        out, found = call_inside(lambda: framer.feed(b"abcdef\nab\n"), inner)
        assert_reentrant(found, "Framer")
        assert isinstance(out[0], DecodeError) and out[1][1] == b"ab"
    assert framer.line == 8


def test_reentrant_tool_call_store(backend):
    store = backend.ToolCallStore()
    chunk = store_chunk(0, 0)
    inners = (
        lambda: len(store),
        lambda: store.line,
        lambda: store.get("s0", "0-0-a"),
        store.snapshot,
        store.state,
        store.to_json,
        lambda: store.apply(chunk.splitlines()[0]),
        lambda: store.feed(chunk),
        store.finish,
    )
    for i, inner in enumerate(inners):
        out, found = call_inside(lambda i=i: store.feed(store_chunk(0, i)), inner)
        assert_reentrant(found, "ToolCallStore")
        assert len(out) == 5 and isinstance(out[4], DecodeError)
    assert len(store) == 2 * len(inners)
    assert store.line == 5 * len(inners)
