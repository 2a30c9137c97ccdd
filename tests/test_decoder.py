"""`FrameDecoder` (DESIGN.md §6): newline framing of a stream fed in arbitrary pieces."""

from __future__ import annotations

import pytest

import vectors
from acp_fast import Batch, DecodeError

VALID = vectors.load("frames_valid")
INVALID = [c for c in vectors.load("frames_invalid") if c["kind"] != "embedded_newline"]

A = b'{"jsonrpc":"2.0","method":"a"}'
B = '{"jsonrpc":"2.0","id":1,"result":{"é":"😀"}}'.encode()
BAD = b'{"jsonrpc":"2.0","method":1}'
TOO_LARGE = "expected a frame of at most {n} bytes, found a longer line; skipped to the next newline"


def summary(results):
    """A comparable description of feed()/finish() results."""
    out = []
    for r in results:
        if isinstance(r, DecodeError):
            out.append(("error", r.code, r.kind, r.message, r.position, r.line, r.raw, r.lineno, r.colno))
        elif isinstance(r, Batch):
            out.append(("batch", r.raw, r.line, len(r)))
        else:
            out.append(("message", r.raw, r.line, r.kind))
    return out


def feed_all(decoder, pieces):
    results = []
    for piece in pieces:
        results.extend(decoder.feed(piece))
    results.extend(decoder.finish())
    return results


def _stream():
    lines = [c["bytes"] for c in VALID[:40]] + [BAD, b"", b"[" + A + b",1]", b"  \t", b"[]", b"not json"]
    return b"\n".join(lines) + b"\n", lines


def test_whole_stream(backend):
    data, lines = _stream()
    dec = backend.FrameDecoder()
    results = dec.feed(data)
    assert dec.finish() == []
    expected_lines = [i for i, line in enumerate(lines, 1) if line.strip(b" \t\r")]
    assert [r.line for r in results] == expected_lines
    for r, lineno in zip(results, expected_lines):
        raw = lines[lineno - 1]
        try:
            expected = backend.decode(raw)
        except DecodeError as exc:
            assert type(r) is DecodeError
            assert (r.code, r.kind, r.msg, r.position, r.raw) == (exc.code, exc.kind, exc.msg, exc.position, raw)
            assert (r.line, r.lineno, r.colno) == (lineno, lineno, exc.position + 1)
            assert r.message == f"{exc.msg} at line {lineno} column {exc.position + 1}"
        else:
            assert r.raw == raw
            if isinstance(expected, Batch):
                assert type(r) is Batch and r.line == lineno and len(r) == len(expected)
                for got, exp in zip(r, expected):
                    if isinstance(exp, DecodeError):
                        assert (got.code, got.kind, got.msg, got.position, got.raw) == (
                            exp.code,
                            exp.kind,
                            exp.msg,
                            exp.position,
                            exp.raw,
                        )
                    else:
                        assert got == exp and got.raw == exp.raw
            else:
                assert type(r) is backend.Message and r == expected
                assert (r.kind, r.method, r.session_id, r.update_kind) == (
                    expected.kind,
                    expected.method,
                    expected.session_id,
                    expected.update_kind,
                )
    assert dec.line == len(lines)
    assert dec.buffered == 0


def test_one_byte_at_a_time(backend):
    data, _ = _stream()
    whole = summary(backend.FrameDecoder().feed(data))
    dec = backend.FrameDecoder()
    pieces = [data[i : i + 1] for i in range(len(data))]
    assert summary(feed_all(dec, pieces)) == whole
    assert len(whole) > 40


def test_every_split_point(backend):
    data = b"\r\n".join([A, b"", BAD, b"[" + B + b"]", b" ", B, b"\xff"]) + b"\n" + A
    whole_dec = backend.FrameDecoder()
    whole = summary(feed_all(whole_dec, [data]))
    assert len(whole) == 6
    for i in range(len(data) + 1):
        dec = backend.FrameDecoder()
        assert summary(feed_all(dec, [data[:i], data[i:]])) == whole, i
    for i in range(0, len(data) + 1, 7):
        for j in range(i, len(data) + 1, 5):
            dec = backend.FrameDecoder()
            assert summary(feed_all(dec, [data[:i], b"", data[i:j], data[j:]])) == whole, (i, j)


def test_lf_and_crlf(backend):
    dec = backend.FrameDecoder()
    results = dec.feed(A + b"\n" + B + b"\r\n" + A + b"\r\n\n")
    assert [(r.raw, r.line) for r in results] == [(A, 1), (B, 2), (A, 3)]
    assert dec.line == 4


def test_only_one_cr_dropped(backend):
    dec = backend.FrameDecoder()
    (m,) = dec.feed(A + b"\r\r\n")
    assert m.raw == A + b"\r"


def test_blank_lines_skipped_but_counted(backend):
    dec = backend.FrameDecoder()
    results = dec.feed(b"\n\r\n  \t \n" + A + b"\n\n \r\n" + B + b"\n")
    assert [(r.raw, r.line) for r in results] == [(A, 4), (B, 7)]
    assert dec.line == 7


def test_non_blank_whitespace_is_an_error(backend):
    dec = backend.FrameDecoder()
    (err,) = dec.feed(b"\x0c\n")
    assert (err.kind, err.position, err.line, err.raw) == ("unexpected_character", 0, 1, b"\x0c")


def test_errors_do_not_stop_the_stream(backend):
    stream = b"\n".join([A, BAD, b"{", A, b"\xef\xbb\xbf" + A, B, b"[]", b"[1]"]) + b"\n"
    results = backend.FrameDecoder().feed(stream)
    kinds = [r.kind if isinstance(r, DecodeError) else ("batch" if isinstance(r, Batch) else r.kind) for r in results]
    assert kinds == ["notification", "invalid_method", "eof", "notification", "bom", "response", "empty_batch", "batch"]
    assert [r.line for r in results] == [1, 2, 3, 4, 5, 6, 7, 8]
    bad = results[1]
    assert bad.raw == BAD and bad.code == -32600 and bad.position == 26
    assert bad.message == 'expected "method" to be a string, found number 1 at line 2 column 27'
    eof = results[2]
    assert (eof.raw, eof.position, eof.lineno, eof.colno) == (b"{", 1, 3, 2)
    batch = results[7]
    assert batch.line == 8 and type(batch[0]) is DecodeError and batch[0].kind == "not_an_object"


def test_bad_utf8_in_a_long_stream(backend):
    # Several hundred KB in one feed (the native framer checks UTF-8 window by window): bad lines
    # in different windows, one long line, and good lines all around are each reported on their
    # own, with the line number and the position of the bad byte.
    def text(n):
        return b'{"jsonrpc":"2.0","method":"m","params":{"t":"' + b"x" * n + b'"}}'

    bad_at = {50: 47, 700: 1000, 701: 47, 1500: 47 + 90_000}
    lines = []
    for i in range(1, 2001):
        size = 90_000 if i == 1500 else (1500 if i % 7 == 0 else 200)
        line = bytearray(text(size))
        if i in bad_at:
            line[bad_at[i]] = 0xFF
        lines.append(bytes(line))
    results = backend.FrameDecoder().feed(b"\n".join(lines) + b"\n")
    assert [r.line for r in results] == list(range(1, 2001))
    errors = {r.line: r for r in results if isinstance(r, DecodeError)}
    assert sorted(errors) == sorted(bad_at)
    for line, err in errors.items():
        assert (err.kind, err.position, err.raw) == ("invalid_utf8", bad_at[line], lines[line - 1])
    assert all(r.raw == lines[r.line - 1] for r in results)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in INVALID])
def test_invalid_vectors_in_a_stream(backend, case):
    raw = case["bytes"]
    results = backend.FrameDecoder().feed(A + b"\n\n" + raw + b"\r\n" + B + b"\n")
    if not raw.strip(b" \t\r"):
        assert [r.line for r in results] == [1, 4]
        return
    assert len(results) == 3
    first, err, last = results
    assert (first.raw, first.line, last.raw, last.line) == (A, 1, B, 4)
    assert type(err) is DecodeError
    assert (err.code, err.kind, err.position, err.msg) == (
        case["code"],
        case["kind"],
        case["position"],
        case["message"],
    )
    assert (err.line, err.lineno, err.colno, err.raw) == (3, 3, case["position"] + 1, raw)
    assert err.message == f"{case['message']} at line 3 column {case['position'] + 1}"


def test_str_and_buffer_input(backend):
    dec = backend.FrameDecoder()
    text = (A + b"\n" + B + b"\n").decode("utf-8")
    assert [r.raw for r in dec.feed(text)] == [A, B]
    assert [r.raw for r in dec.feed(bytearray(A + b"\n"))] == [A]
    assert [r.raw for r in dec.feed(memoryview(b"xx" + B + b"\nyy")[2:-2])] == [B]
    assert dec.line == 4
    with pytest.raises(TypeError):
        dec.feed(123)
    with pytest.raises(TypeError):
        dec.feed(None)


def test_messages_carry_line_numbers(backend):
    dec = backend.FrameDecoder()
    out = dec.feed(b"\n" + A + b"\n")
    assert out[0].line == 2
    # equal to a decode() of the same bytes: equality is by raw
    assert out[0] == backend.decode(A)


# ------------------------------------------------------------------------------------------
# finish()
# ------------------------------------------------------------------------------------------


def test_finish(backend):
    dec = backend.FrameDecoder()
    (first,) = dec.feed(A + b"\n" + B)
    assert first.line == 1
    assert dec.buffered == len(B)
    (last,) = dec.finish()
    assert (last.raw, last.line) == (B, 2)
    assert dec.buffered == 0
    assert dec.finish() == []
    # the decoder can be fed again; line numbers continue
    (again,) = dec.feed(A + b"\n")
    assert again.line == 3
    assert dec.line == 3


def test_finish_variants(backend):
    dec = backend.FrameDecoder()
    assert dec.finish() == []
    dec.feed(b"  \t\r")
    assert dec.finish() == []
    dec = backend.FrameDecoder()
    dec.feed(A + b"\r")
    (m,) = dec.finish()
    assert m.raw == A
    dec = backend.FrameDecoder()
    dec.feed(b'{"jsonrpc":')
    (err,) = dec.finish()
    assert (err.kind, err.line, err.raw, err.position) == ("eof", 1, b'{"jsonrpc":', 11)
    assert dec.feed(A + b"\n")[0].line == 2


# ------------------------------------------------------------------------------------------
# limits
# ------------------------------------------------------------------------------------------


def test_default_limit_and_attributes(backend):
    dec = backend.FrameDecoder()
    assert dec.max_frame_bytes == 67108864
    assert (dec.line, dec.buffered) == (0, 0)
    dec.feed(A[:10])
    assert (dec.line, dec.buffered) == (0, 10)
    dec.feed(A[10:] + b"\n")
    assert (dec.line, dec.buffered) == (1, 0)
    assert backend.FrameDecoder(max_frame_bytes=1).max_frame_bytes == 1


@pytest.mark.parametrize("bad", [0, -1])
def test_limit_must_be_positive(backend, bad):
    with pytest.raises(ValueError):
        backend.FrameDecoder(max_frame_bytes=bad)


def test_limit_is_keyword_only(backend):
    with pytest.raises(TypeError):
        backend.FrameDecoder(100)


def _too_large(err, n, line):
    assert type(err) is DecodeError
    assert (err.code, err.kind, err.position, err.raw, err.line) == (-32700, "frame_too_large", n, None, line)
    assert err.msg == TOO_LARGE.format(n=n)
    assert (err.lineno, err.colno) == (line, n + 1)
    assert err.message == f"{TOO_LARGE.format(n=n)} at line {line} column {n + 1}"


def test_oversized_line_reported_as_soon_as_limit_exceeded(backend):
    n = len(A)
    dec = backend.FrameDecoder(max_frame_bytes=n)
    assert [r.raw for r in dec.feed(A + b"\n")] == [A]  # exactly n bytes is fine
    assert dec.feed(b"x" * n) == []
    assert dec.buffered == n
    (err,) = dec.feed(b"x")
    _too_large(err, n, 2)
    assert dec.buffered <= n
    # the rest of the long line is discarded, memory stays bounded
    for _ in range(50):
        assert dec.feed(b"y" * (3 * n)) == []
        assert dec.buffered <= n
    results = dec.feed(b"tail\n" + A + b"\n")
    assert [(r.raw, r.line) for r in results] == [(A, 3)]
    assert dec.buffered == 0


def test_oversized_line_in_one_chunk(backend):
    dec = backend.FrameDecoder(max_frame_bytes=50)
    results = dec.feed(A + b"\n" + b"z" * 1000 + b"\n" + B + b"\n" + b"w" * 51 + b"\n\n" + A + b"\n")
    assert len(results) == 5
    assert (results[0].raw, results[0].line) == (A, 1)
    _too_large(results[1], 50, 2)
    assert (results[2].raw, results[2].line) == (B, 3)
    _too_large(results[3], 50, 4)
    assert (results[4].raw, results[4].line) == (A, 6)


def test_oversized_counts_the_cr(backend):
    # the length limit applies to the line before its "\n", so a CR counts
    n = len(A)
    dec = backend.FrameDecoder(max_frame_bytes=n)
    (err,) = dec.feed(A + b"\r\n")
    _too_large(err, n, 1)
    assert dec.feed(A + b"\n")[0].line == 2


def test_oversized_then_finish(backend):
    dec = backend.FrameDecoder(max_frame_bytes=8)
    (err,) = dec.feed(b"0123456789")
    _too_large(err, 8, 1)
    assert dec.finish() == []  # already reported
    (m,) = dec.feed(b"[1]\n")
    assert type(m) is Batch and m.line == 2 and m[0].kind == "not_an_object"


def test_split_points_with_limit(backend):
    data = A + b"\n" + b"q" * 100 + b"\r\n" + B + b"\n" + b"r" * 51
    whole = summary(feed_all(backend.FrameDecoder(max_frame_bytes=50), [data]))
    assert [s[0] for s in whole] == ["message", "error", "message", "error"]
    for i in range(len(data) + 1):
        assert summary(feed_all(backend.FrameDecoder(max_frame_bytes=50), [data[:i], data[i:]])) == whole, i
    dec = backend.FrameDecoder(max_frame_bytes=50)
    assert summary(feed_all(dec, [data[i : i + 1] for i in range(len(data))])) == whole


@pytest.mark.parametrize("enabled", [True, False])
def test_feed_leaves_the_garbage_collector_as_it_found_it(backend, enabled):
    # The Rust backend holds the collector off while a feed builds its results; whatever the
    # outcome (messages, decode errors, a partial line, finish), the caller's setting comes back.
    import gc

    stream = b'{"jsonrpc":"2.0","method":"a"}\nnot json\n{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc"'
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        dec = backend.FrameDecoder()
        items = dec.feed(stream)
        assert gc.isenabled() is enabled
        assert [type(i) is DecodeError for i in items] == [False, True, False]
        assert len(dec.finish()) == 1
        assert gc.isenabled() is enabled
        store = backend.ToolCallStore()
        store.feed(stream)
        store.finish()
        assert gc.isenabled() is enabled
        with pytest.raises(TypeError):
            dec.feed(12345)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
