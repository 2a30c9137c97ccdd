"""`Framer`: the line splitter under `FrameDecoder`, on both backends.

Every reading (default, ``keepends``, ``joined``) is checked against a plain model of the stream,
whole and in any pieces, and the two backends against each other.
"""

from __future__ import annotations

import inspect
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_fast import DecodeError

TOO_LARGE = "expected a frame of at most {n} bytes, found a longer line; skipped to the next newline"


def run(backend, pieces, **kw):
    """(events of every feed then finish, line) — and ``buffered`` stays within the limit."""
    framer = backend.Framer(**kw)
    out = []
    for piece in pieces:
        out.extend(framer.feed(piece))
        assert framer.buffered <= framer.max_frame_bytes
    out.extend(framer.finish())
    assert framer.buffered == 0
    return out, framer.line


def model(data, limit, keepends=False):
    """What a framer gives for the whole of ``data``, one line at a time."""
    lines = data.split(b"\n")
    last = lines.pop()
    found = [(part + b"\n", True) for part in lines] + ([(last, False)] if last else [])
    events = []
    for number, (wire, eol) in enumerate(found, 1):
        size = len(wire) - eol  # before the newline
        if keepends:
            events.append((number, len(wire)) if size > limit else (number, wire))
            continue
        if size > limit:
            error = DecodeError(
                TOO_LARGE.format(n=limit),
                kind="frame_too_large",
                position=limit,
                lineno=number,
                colno=limit + 1,
                line=number,
            )
            events.append(error)
            continue
        text = wire[:-1] if eol else wire
        if text.endswith(b"\r"):
            text = text[:-1]
        if text.strip(b" \t\r"):
            events.append((number, text))
    return events, len(found)


def split_at(data, cuts):
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0] + points, points + [len(data)])]


def unjoin(events):
    """``joined`` events as ``keepends`` ones: each line of a joined event on its own."""
    out = []
    for number, data in events:
        if isinstance(data, int):
            out.append((number, data))
            continue
        parts = data.split(b"\n")
        last = parts.pop()
        for i, part in enumerate(parts):
            out.append((number + i, part + b"\n"))
        if last:
            out.append((number + len(parts), last))
    return out


LINES = st.lists(
    st.one_of(
        st.sampled_from([b"", b" ", b"\t\r", b"\r", b'{"id":1}', b"not json", b"\xff\xfe", b"  x  "]),
        st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
        st.integers(0, 90).map(lambda n: b"y" * n),
    ),
    max_size=10,
)
ENDINGS = st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=10, max_size=10)
CUTS = st.lists(st.integers(0, 10_000), max_size=6)


def stream(lines, endings, final_newline):
    data = b"".join(line + endings[i] for i, line in enumerate(lines))
    if lines and not final_newline:
        data = data[: -len(endings[len(lines) - 1])]
    return data


@given(LINES, ENDINGS, st.booleans(), CUTS, st.integers(1, 80))
def test_every_reading_follows_the_model_in_any_pieces(backend, lines, endings, final_newline, cuts, limit):
    data = stream(lines, endings, final_newline)
    pieces = split_at(data, cuts)
    bytewise = [data[i : i + 1] for i in range(len(data))]
    for keepends in (False, True):
        expected = model(data, limit, keepends)
        for split in ([data], pieces, bytewise):
            assert run(backend, split, max_frame_bytes=limit, keepends=keepends) == expected
    # joined: the same lines as keepends, consecutive ones of a feed in one event
    expected = model(data, limit, keepends=True)
    for split in ([data], pieces, bytewise):
        events, line = run(backend, split, max_frame_bytes=limit, joined=True)
        assert (unjoin(events), line) == expected
    # one feed: no two events of whole lines in a row
    fed = backend.Framer(max_frame_bytes=limit, joined=True).feed(data)
    assert not any(isinstance(a, bytes) and isinstance(b, bytes) for (_, a), (_, b) in itertools.pairwise(fed))


@given(LINES, ENDINGS, st.booleans(), CUTS, st.integers(1, 80))
def test_both_backends_give_the_same_events(both_backends, lines, endings, final_newline, cuts, limit):
    native, fallback = both_backends
    data = stream(lines, endings, final_newline)
    pieces = split_at(data, cuts)
    for kw in ({}, {"keepends": True}, {"joined": True}):
        for limit_kw in ({}, {"max_frame_bytes": limit}):
            assert run(native, pieces, **kw, **limit_kw) == run(fallback, pieces, **kw, **limit_kw)


def test_keepends_gives_back_the_stream(backend):
    data = b'{"a":1}\r\n\n  \r\n' + b"z" * 30 + b"\nlast"
    events, line = run(backend, [data], max_frame_bytes=10, keepends=True)
    assert events == [(1, b'{"a":1}\r\n'), (2, b"\n"), (3, b"  \r\n"), (4, 31), (5, b"last")]
    assert line == 5
    assert b"".join(d for _, d in events if isinstance(d, bytes)) == data.replace(b"z" * 30 + b"\n", b"")


def test_oversized_lines(backend):
    framer = backend.Framer(max_frame_bytes=5)
    (error,) = framer.feed(b"123456")  # reported as soon as it passes the limit
    assert (error.code, error.kind, error.line, error.position, error.raw) == (-32700, "frame_too_large", 1, 5, None)
    assert str(error) == TOO_LARGE.format(n=5) + " at line 1 column 6"
    assert framer.feed(b"789") == [] and framer.buffered == 0
    assert framer.feed(b"0\r\nok\n") == [(2, b"ok")]
    exact = backend.Framer(max_frame_bytes=5, keepends=True)
    assert exact.feed(b"123456") == [] and exact.feed(b"789") == []  # reported once it has ended
    assert exact.feed(b"0\r\nok\n") == [(1, 12), (2, b"ok\n")]
    assert exact.feed(b"1234567") == [] and exact.finish() == [(3, 7)]
    # a line of exactly the limit, and the limit plus its \r
    assert run(backend, [b"12345\n12345\r\n"], max_frame_bytes=5)[0][0] == (1, b"12345")
    assert run(backend, [b"12345\n12345\r\n"], max_frame_bytes=5)[0][1].line == 2


def test_joined_events(backend):
    relay = backend.Framer(max_frame_bytes=8, joined=True)
    assert relay.feed(b"a\r\n\nb") == [(1, b"a\r\n\n")]
    assert relay.feed(b"c\nd\n" + b"x" * 20 + b"\ne\nf") == [(3, b"bc\nd\n"), (5, 21), (6, b"e\n")]
    assert relay.finish() == [(7, b"f")]
    data = b"one\ntwo\n"
    (event,) = relay.feed(data)
    assert event == (8, data) and event[1] is data  # the fed bytes themselves when they are whole lines


def test_finish_and_feeding_again(backend):
    framer = backend.Framer()
    assert framer.finish() == []
    assert framer.feed(b"  \t") == [] and framer.finish() == []  # a blank last line
    assert framer.feed(b"a\r") == [] and framer.finish() == [(2, b"a")]
    assert framer.feed(b"b\n") == [(3, b"b")] and framer.line == 3


def test_inputs(backend):
    framer = backend.Framer()
    assert framer.feed("é\n") == [(1, "é".encode())]
    assert framer.feed(bytearray(b"b\n")) == [(2, b"b")]
    assert framer.feed(memoryview(b"xc\ny")[1:-1]) == [(3, b"c")]
    for bad in (1, None):
        with pytest.raises(TypeError):
            framer.feed(bad)
    with pytest.raises(DecodeError) as info:
        framer.feed("\ud800")
    assert info.value.kind == "invalid_utf8"


def test_limits_and_arguments(backend):
    framer = backend.Framer()
    assert framer.max_frame_bytes == backend.DEFAULT_MAX_FRAME_BYTES == 67108864
    assert backend.MAX_FRAME_BYTES == 4294967294
    assert backend.Framer(max_frame_bytes=backend.MAX_FRAME_BYTES).max_frame_bytes == backend.MAX_FRAME_BYTES
    assert (framer.line, framer.buffered) == (0, 0)
    assert repr(framer) == "Framer(max_frame_bytes=67108864, line=0, buffered=0)"
    for cls in (backend.Framer, backend.FrameDecoder, backend.ToolCallStore):
        for bad in (0, -1, backend.MAX_FRAME_BYTES + 1):
            with pytest.raises(ValueError) as info:
                cls(max_frame_bytes=bad)
            assert str(info.value) == f"max_frame_bytes must be between 1 and 4294967294, found {bad}"
    with pytest.raises(TypeError):
        backend.Framer(10)
    with pytest.raises(TypeError):
        backend.Framer(max_frame_bytes="10")
    params = inspect.signature(backend.Framer).parameters
    assert [(p.name, p.kind, p.default) for p in params.values()] == [
        ("max_frame_bytes", inspect.Parameter.KEYWORD_ONLY, 67108864),
        ("keepends", inspect.Parameter.KEYWORD_ONLY, False),
        ("joined", inspect.Parameter.KEYWORD_ONLY, False),
        ("heads", inspect.Parameter.KEYWORD_ONLY, False),
    ]


def test_feed_data_by_keyword(backend):
    """``feed`` takes ``data`` by keyword too, as ``FrameDecoder.feed`` does."""
    framer = backend.Framer()
    assert framer.feed(data=b"a\nb") == [(1, b"a")]
    assert framer.finish() == [(2, b"b")]
