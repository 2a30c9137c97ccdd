"""`FrameDecoder.feed` agrees with `decode` line by line on the envelope edge cases (DESIGN.md §5,
§6): the Python fallback validates the common message shapes inline in `feed` (its hot path), and
this pins that copy of the rules to `decode`'s. Also valid JSON lines over the length limit, whole
in one chunk or completing a held partial line."""

from __future__ import annotations

import itertools

import pytest

from acp_fast import Batch, DecodeError

IDS = [None, 0, -1, 7, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 1.0, 1e3, True, False, '"x"', "[]", "{}"]
PARAMS = [
    None,
    "null",
    "[]",
    "[1]",
    "{}",
    '"p"',
    "1",
    "true",
    '{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}',
    '{"sessionId":1,"update":{"sessionUpdate":null,"toolCallId":[]}}',
    '{"sessionId":"s","update":"u"}',
    '{"update":{"toolCallId":"t"}}',
]
METHODS = [None, '"m"', '"session/update"', "1", "null", "{}"]


def _lines():
    for method, ident, params in itertools.product(METHODS, IDS, PARAMS):
        members = ['"jsonrpc":"2.0"']
        if method is not None:
            members.append(f'"method":{method}')
        if ident is not None:
            members.append(
                f'"id":{ident if isinstance(ident, str) else repr(ident).lower() if isinstance(ident, bool) else ident}'
            )
        if params is not None:
            members.append(f'"params":{params}')
        if method is None:
            members.append('"result":1')
        yield ("{" + ",".join(members) + "}").encode()
    yield b'{"jsonrpc":"2.0","method":"m","id":null}'
    yield b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}'
    yield b'{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}'
    yield b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}'
    yield b'{"jsonrpc":"2.1","method":"m"}'
    yield b'{"jsonrpc":2.0,"method":"m"}'
    yield b'{"method":"m"}'
    yield b'{"jsonrpc":"2.0"}'
    yield b' {"jsonrpc":"2.0","method":"m"} '
    yield b'{"jsonrpc":"2.0","method":"m"}\r'
    yield b'{"jsonrpc":"2.0","method":"m"} \r\r'
    yield b'[{"jsonrpc":"2.0","method":"m"},1]'
    yield b"[]"
    yield b'"s"'


def _describe(result):
    if isinstance(result, DecodeError):
        return ("error", result.code, result.kind, result.msg, result.position, result.raw)
    if isinstance(result, Batch):
        return ("batch", result.raw, [_describe(e) for e in result])
    return (
        "message",
        result.raw,
        result.kind,
        result.id,
        type(result.id),
        result.method,
        result.session_id,
        result.update_kind,
        result.tool_call_id,
    )


def _decoded(backend, line):
    try:
        return _describe(backend.decode(line))
    except DecodeError as err:
        return _describe(err)


def test_feed_agrees_with_decode(backend):
    lines = list(_lines())
    results = backend.FrameDecoder().feed(b"\n".join(lines) + b"\n")
    assert len(results) == len(lines)
    for number, (line, result) in enumerate(zip(lines, results), 1):
        assert result.line == number
        expected = _decoded(backend, line)
        got = _describe(result)
        if got[0] == "error":
            # decode() reports no line; the raw of a stream error is the frame without its \r
            assert got[:5] == expected[:5], line
        else:
            assert got == expected, line


@pytest.mark.parametrize("cr", [b"", b"\r"])
def test_valid_json_over_the_limit(backend, cr):
    a = b'{"jsonrpc":"2.0","method":"a"}'
    n = len(a)
    long = b" " + a  # valid JSON, one byte over the limit
    dec = backend.FrameDecoder(max_frame_bytes=n)
    results = (
        dec.feed(a + cr + b"\n" + long + cr + b"\n" + a + b"\n")
        if not cr
        else dec.feed(a + b"\n" + long + cr + b"\n" + a + b"\n")
    )
    assert [type(r) for r in results] == [backend.Message, DecodeError, backend.Message]
    assert results[1].kind == "frame_too_large" and results[1].line == 2
    assert (results[2].raw, results[2].line) == (a, 3)
    # the same long line completed from a held partial line
    assert dec.feed(long[:5]) == []
    (err, m) = dec.feed(long[5:] + cr + b"\n" + a + b"\n")
    assert err.kind == "frame_too_large" and err.line == 4
    assert (m.raw, m.line) == (a, 5)
