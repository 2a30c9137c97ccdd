"""The shared exception classes (DESIGN.md §3) and the errors the backends raise."""

from __future__ import annotations

import json
import pickle

import pytest

import acp_fast
from acp_fast import AcpError, DecodeError, EncodeError
from acp_fast import errors as errors_module


def test_hierarchy():
    assert issubclass(AcpError, ValueError)
    assert issubclass(DecodeError, AcpError)
    assert issubclass(DecodeError, ValueError)
    assert issubclass(DecodeError, json.JSONDecodeError)
    assert issubclass(EncodeError, AcpError)
    assert issubclass(EncodeError, ValueError)
    assert issubclass(EncodeError, TypeError)
    assert not issubclass(DecodeError, TypeError)
    assert not issubclass(EncodeError, json.JSONDecodeError)
    assert acp_fast.DecodeError is errors_module.DecodeError
    assert acp_fast.EncodeError is errors_module.EncodeError


def test_decode_error_attributes_and_message():
    err = DecodeError(
        "expected ':', found '1'",
        code=-32700,
        kind="unexpected_character",
        position=12,
        lineno=2,
        colno=5,
        line=7,
        raw=b"{...}",
    )
    assert err.message == "expected ':', found '1' at line 2 column 5" == str(err)
    assert err.msg == "expected ':', found '1'"
    assert (err.pos, err.position, err.lineno, err.colno) == (12, 12, 2, 5)
    assert err.doc == ""
    assert (err.code, err.kind, err.line, err.raw) == (-32700, "unexpected_character", 7, b"{...}")
    assert err.args == (err.message,)


def test_decode_error_defaults():
    err = DecodeError("boom")
    assert (err.code, err.kind, err.position, err.lineno, err.colno, err.line, err.raw) == (
        -32700,
        "invalid_json",
        None,
        None,
        None,
        None,
        None,
    )
    assert str(err) == err.message == "boom"


def test_decode_error_equality_and_pickle():
    a = DecodeError("d", code=-32600, kind="k", position=3, lineno=1, colno=4, line=9, raw=b"x")
    b = DecodeError("d", code=-32600, kind="k", position=3, lineno=1, colno=4, line=9, raw=b"x")
    assert a == b and hash(a) == hash(b)
    for changed in [dict(code=-32700), dict(kind="z"), dict(position=4, colno=5), dict(line=8), dict(raw=b"y")]:
        kw = dict(code=-32600, kind="k", position=3, lineno=1, colno=4, line=9, raw=b"x")
        kw.update(changed)
        assert a != DecodeError("d", **kw), changed
    assert a != DecodeError("e", code=-32600, kind="k", position=3, lineno=1, colno=4, line=9, raw=b"x")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        c = pickle.loads(pickle.dumps(a, protocol=protocol))
        assert type(c) is DecodeError and c == a
        assert (c.msg, c.lineno, c.colno, c.pos) == (a.msg, a.lineno, a.colno, a.pos)


def test_encode_error_attributes_and_pickle():
    err = EncodeError("expected a finite float, found nan", path="$.a[1]", kind="non_finite_float")
    assert err.message == str(err) == "expected a finite float, found nan at $.a[1]"
    assert (err.msg, err.path, err.kind) == ("expected a finite float, found nan", "$.a[1]", "non_finite_float")
    c = pickle.loads(pickle.dumps(err))
    assert type(c) is EncodeError and (c.message, c.path, c.kind) == (err.message, err.path, err.kind)


def test_backend_errors_are_the_shared_classes(backend):
    with pytest.raises(DecodeError) as info:
        backend.loads(b'{"a":\n  tru}')
    err = info.value
    assert type(err) is errors_module.DecodeError
    assert (err.lineno, err.colno, err.position) == (2, 6, 11)
    assert err.message == "expected 'true', found '}' at line 2 column 6"
    with pytest.raises(EncodeError) as info2:
        backend.dumps({"a": object()})
    assert type(info2.value) is errors_module.EncodeError


def test_backend_errors_pickle(backend):
    errors = []
    for data in [b"[1,]", b"\xff", b'{"jsonrpc":"2.0"}', b"[]"]:
        try:
            backend.decode(data)
        except DecodeError as exc:
            errors.append(exc)
    batch = backend.decode(b'[1,{"jsonrpc":"2.0","method":"m"}]')
    errors.append(batch[0])
    (stream_err,) = backend.FrameDecoder().feed(b"\n{oops\n")
    errors.append(stream_err)
    assert len(errors) == 6
    for err in errors:
        copy = pickle.loads(pickle.dumps(err))
        assert copy == err
        assert (copy.message, copy.lineno, copy.colno, copy.raw, copy.line) == (
            err.message,
            err.lineno,
            err.colno,
            err.raw,
            err.line,
        )
    assert stream_err.line == 2 and stream_err.raw == b"{oops"
    assert stream_err.message == "expected a string key, found 'o' at line 2 column 2"


def test_json_decode_error_compatibility(backend):
    try:
        backend.loads(b"[1,\n2,\n,]")
    except json.JSONDecodeError as exc:
        assert (exc.msg, exc.pos, exc.lineno, exc.colno) == ("expected a JSON value, found ','", 7, 3, 1)
    else:  # pragma: no cover
        pytest.fail("no error raised")
