"""`loads`: the strict JSON grammar of DESIGN.md §2, its errors (§2.1) and line/column (§2.2)."""

from __future__ import annotations

import json

import pytest

import vectors
from acp_fast import DecodeError
from vectors import line_col, strict_equal

ACCEPT = vectors.params("json_accept")
REJECT = vectors.params("json_reject")


def _input_forms(data: bytes):
    """bytes, bytearray, memoryview, and str when the bytes are valid UTF-8."""
    forms = [("bytes", data), ("bytearray", bytearray(data)), ("memoryview", memoryview(data))]
    try:
        forms.append(("str", data.decode("utf-8")))
    except UnicodeDecodeError:
        pass
    return forms


# ------------------------------------------------------------------------------------------
# accepted documents
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ACCEPT)
def test_accept_vector(backend, case):
    for form, data in _input_forms(case["bytes"]):
        value = backend.loads(data)
        assert strict_equal(value, case["value"]), (form, repr(value)[:200])


def test_builds_exact_builtin_types(backend):
    value = backend.loads(b'{"d":{},"l":[],"s":"","i":1,"f":1.0,"t":true,"n":null}')
    assert type(value) is dict
    assert [type(v) for v in value.values()] == [dict, list, str, int, float, bool, type(None)]


def test_fresh_objects_each_call(backend):
    data = b'{"a":[1,{"b":2}]}'
    first, second = backend.loads(data), backend.loads(data)
    assert first == second
    assert first is not second and first["a"] is not second["a"]
    first["a"].append(3)
    assert backend.loads(data) == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize("wide", ["é", "\xff", "Ā", "→", "\uffff", "😀", "\U0010ffff"])
def test_strings_of_every_width_decode_like_json(backend, wide):
    # Short and long non-ASCII strings (both ways of building a str), the wide character at
    # every position among ASCII, Latin-1 and BMP neighbours: equal to json.loads, which also
    # proves the str is in CPython's canonical (narrowest) form, since == compares kinds first.
    neighbours = ["a", "\xe9", "\u0101", "\u2192"]
    for n in list(range(1, 40)) + [255, 256, 257, 300]:
        for at in sorted({0, n // 3, n // 2, n - 1}):
            for other in neighbours:
                chars = [other if k % 3 == 1 else chr(0x61 + k % 26) for k in range(n)]
                chars[at] = wide
                text = "".join(chars)
                doc = json.dumps({"k": text, "l": [text]}, ensure_ascii=False).encode()
                got = backend.loads(doc)
                assert got == json.loads(doc), (n, at, other)
                assert got["k"] == text and hash(got["k"]) == hash(text)


def test_cached_strings_that_differ_only_inside(backend):
    # Keys and short values are cached by length and first/last 8 bytes; strings that agree on
    # those and differ in one byte anywhere between must still come back as themselves (as keys
    # and as values, and as the routing fields of a frame).
    for n in list(range(17, 70)):
        texts = []
        for at in range(8, n - 8):
            chars = ["a"] * n
            chars[at] = "b"
            texts.append("".join(chars))
        doc = json.dumps({t: t for t in ["a" * n] + texts}).encode()
        for _ in range(2):  # the second time, from the cache
            assert list(backend.loads(doc).items()) == [(t, t) for t in ["a" * n] + texts]
        for t in ["a" * n] + texts:
            frame = json.dumps({"jsonrpc": "2.0", "method": t, "params": {"sessionId": t}}).encode()
            m = backend.decode(frame)
            assert (m.method, m.session_id) == (t, t)


def test_duplicate_keys_last_value_first_position(backend):
    value = backend.loads(b'{"x":1,"y":2,"x":{"z":[3]}}')
    assert list(value.items()) == [("x", {"z": [3]}), ("y", 2)]


def _depth(value) -> int:
    depth = 0
    while isinstance(value, (list, dict)):
        depth += 1
        if not value:
            break
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
    return depth


@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"k":', "}")])
def test_depth_1024_accepted(backend, opener, closer):
    value = backend.loads((opener * 1024 + ("1" if opener != "[" else "") + closer * 1024).encode())
    assert _depth(value) == 1024


def test_depth_1024_mixed_with_scalars(backend):
    doc = ("[1," * 1024 + "2" + "]" * 1024).encode()
    value = backend.loads(doc)
    inner = value
    for _ in range(1023):
        assert inner[0] == 1 and len(inner) == 2
        inner = inner[1]
    assert inner == [1, 2]


def test_big_int_exact_both_signs(backend):
    n = 3**2000
    assert backend.loads(str(n).encode()) == n
    assert backend.loads(("-" + str(n)).encode()) == -n
    assert type(backend.loads(b"1" + b"0" * 30)) is int


def test_float_correct_rounding_matches_python(backend):
    # halfway and hard cases; Python's float() is correctly rounded
    for lexeme in [
        "9007199254740993",
        "9007199254740993.0",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "8.988465674311579e307",
        "4.9406564584124654e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1.7976931348623158e308",
        "0.1e1",
        "123456789e-10",
        "7e22",
        "-1.5E-3",
    ]:
        expected = float(lexeme) if ("." in lexeme or "e" in lexeme.lower()) else int(lexeme)
        got = backend.loads(lexeme.encode())
        assert strict_equal(got, expected), lexeme


def test_str_input_positions_are_byte_offsets(backend):
    # 'é' is 2 bytes in UTF-8: the ']' after the trailing comma is at byte 6, not character 5
    with pytest.raises(DecodeError) as info:
        backend.loads('["é",]')
    assert info.value.position == 6
    assert info.value.colno == 7
    assert info.value.msg == "expected a JSON value, found ']'"


def test_str_with_lone_surrogate_is_a_decode_error(backend):
    # DESIGN §5 fixes this for decode(); for loads() we only require a DecodeError, never a
    # UnicodeEncodeError escaping from the codec.
    with pytest.raises(DecodeError):
        backend.loads('"\ud800"')


@pytest.mark.parametrize("bad", [1, 1.5, None, ["[]"], {"a": 1}, object(), True])
def test_other_input_types_raise_type_error(backend, bad):
    with pytest.raises(TypeError):
        backend.loads(bad)
    try:
        backend.loads(bad)
    except TypeError as exc:
        assert not isinstance(exc, DecodeError)


def test_memoryview_slice(backend):
    buf = b'xx{"a":[1,2]}yy'
    assert backend.loads(memoryview(buf)[2:-2]) == {"a": [1, 2]}


# ------------------------------------------------------------------------------------------
# rejected documents
# ------------------------------------------------------------------------------------------


def _check_reject(err: DecodeError, case, data: bytes):
    assert type(err) is DecodeError
    assert err.code == -32700
    assert err.kind == case["kind"]
    assert err.position == case["position"]
    assert err.pos == case["position"]
    assert err.msg == case["message"]
    lineno, colno = line_col(data, case["position"])
    assert (err.lineno, err.colno) == (lineno, colno)
    assert err.message == f"{case['message']} at line {lineno} column {colno}"
    assert str(err) == err.message
    assert err.line is None
    assert err.raw is None


@pytest.mark.parametrize("case", REJECT)
def test_reject_vector(backend, case):
    for _form, data in _input_forms(case["bytes"]):
        with pytest.raises(DecodeError) as info:
            backend.loads(data)
        _check_reject(info.value, case, case["bytes"])


def test_reject_is_catchable_as_stdlib_errors(backend):
    with pytest.raises(json.JSONDecodeError):
        backend.loads(b"[1,]")
    with pytest.raises(ValueError):
        backend.loads(b"{")


def test_first_error_wins_left_to_right(backend):
    with pytest.raises(DecodeError) as info:
        backend.loads(b'["\\x", 1e999, "\x01"]')
    assert info.value.kind == "invalid_escape" and info.value.position == 3


def test_depth_limit_reports_1025th_bracket_even_if_later_errors(backend):
    with pytest.raises(DecodeError) as info:
        backend.loads(b"[" * 1025 + b"x")
    assert (info.value.kind, info.value.position) == ("depth_limit", 1024)
    with pytest.raises(DecodeError) as info:
        backend.loads(b"[" * 1024 + b"x")
    assert (info.value.kind, info.value.position) == ("unexpected_character", 1024)
