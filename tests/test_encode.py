"""`dumps` (DESIGN.md §4) and `encode` (§4, last paragraph)."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import math
import random
import struct
import uuid

import orjson
import pytest

import vectors
from acp_fast import Batch, DecodeError, EncodeError
from vectors import strict_equal

UNSUPPORTED = "expected dict, list, tuple, str, int, float, bool or None, found "


def _encode_error(fn, *args) -> EncodeError:
    with pytest.raises(EncodeError) as info:
        fn(*args)
    err = info.value
    assert type(err) is EncodeError
    assert isinstance(err, TypeError) and isinstance(err, ValueError)
    return err


def _check(err: EncodeError, kind: str, description: str, path: str) -> None:
    assert err.kind == kind
    assert err.path == path
    assert err.msg == description
    assert err.message == f"{description} at {path}"
    assert str(err) == err.message


# ------------------------------------------------------------------------------------------
# dumps: output bytes
# ------------------------------------------------------------------------------------------


def test_compact_insertion_order_raw_unicode(backend):
    obj = {"z": [1, 2.5, None, True, False], "a": {"é": "ü😀", "": []}, "m": {}}
    assert backend.dumps(obj) == '{"z":[1,2.5,null,true,false],"a":{"é":"ü😀","":[]},"m":{}}'.encode()


def test_string_escaping(backend):
    s = '"\\/\b\f\n\r\t\x00\x01\x1f\x7f\u2028é'
    expected = b'"\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\x7f\xe2\x80\xa8\xc3\xa9"'
    assert backend.dumps(s) == expected
    assert backend.dumps(s) == orjson.dumps(s)
    assert backend.dumps("\x0b\x1a") == b'"\\u000b\\u001a"'


def test_all_control_characters_match_orjson(backend):
    s = "".join(chr(i) for i in range(0x80))
    assert backend.dumps(s) == orjson.dumps(s)
    assert backend.dumps({s: s}) == orjson.dumps({s: s})


@pytest.mark.parametrize(
    "value,expected",
    [
        (1.0, b"1.0"),
        (100.0, b"100.0"),
        (0.1, b"0.1"),
        (1.5, b"1.5"),
        (-2.25, b"-2.25"),
        (1e-5, b"0.00001"),
        (1e-6, b"1e-6"),
        (1.5e-7, b"1.5e-7"),
        (1e15, b"1000000000000000.0"),
        (9999999999999998.0, b"9999999999999998.0"),
        (1e16, b"1e+16"),
        (1.5e16, b"1.5e+16"),
        (5e-324, b"5e-324"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (0.0, b"0.0"),
        (-0.0, b"-0.0"),
        (0.30000000000000004, b"0.30000000000000004"),
        (123456789.123, b"123456789.123"),
        (2.5e-5, b"0.000025"),
        (-1e100, b"-1e+100"),
    ],
)
def test_float_format(backend, value, expected):
    assert backend.dumps(value) == expected
    assert backend.dumps(value) == orjson.dumps(value)


def test_random_floats_match_orjson(backend):
    rng = random.Random(1234)
    values = []
    for _ in range(3000):
        bits = rng.getrandbits(64)
        f = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(f):
            values.append(f)
    for _ in range(3000):
        values.append(rng.uniform(-1e6, 1e6))
        values.append(rng.random() * 10 ** rng.randint(-30, 30))
    assert backend.dumps(values) == orjson.dumps(values)


def test_ints_any_size(backend):
    cases = [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**64) - 1, 3**500, 10**4300 - 1, -(10**4300 - 1)]
    assert backend.dumps(cases[:5]) == orjson.dumps(cases[:5])
    for n in cases:
        assert backend.dumps(n) == str(n).encode()
    assert backend.dumps(10**4300 - 1) == b"9" * 4300
    assert backend.dumps(-(10**4300 - 1)) == b"-" + b"9" * 4300


def test_int_too_large(backend):
    err = _encode_error(backend.dumps, {"n": [10**4300]})
    _check(err, "int_too_large", "expected an int of at most 4300 digits, found a larger one", "$.n[0]")
    err = _encode_error(backend.dumps, -(10**4300))
    _check(err, "int_too_large", "expected an int of at most 4300 digits, found a larger one", "$")


def test_subclasses_and_tuples(backend):
    class S(str):
        pass

    class Int(int):
        pass

    class F(float):
        pass

    class L(list):
        pass

    class D(dict):
        pass

    od = collections.OrderedDict([("b", 1), ("a", 2)])
    obj = D(x=L([S("s"), Int(5), F(2.5), (1, (2,)), od]))
    assert backend.dumps(obj) == b'{"x":["s",5,2.5,[1,[2]],{"b":1,"a":2}]}'
    plain = D(x=L([S("s"), Int(5), 2.5, (1, (2,)), od]))  # orjson refuses float subclasses
    assert backend.dumps(plain) == orjson.dumps(plain)
    assert backend.dumps(()) == b"[]"


def test_enum_and_uuid(backend):
    class Color(enum.Enum):
        RED = "red"
        NESTED = {"a": [1.5]}  # noqa: RUF012 - an enum member: its value is the dict

    class Num(enum.IntEnum):
        ONE = 1

    class Flt(float, enum.Enum):
        HALF = 0.5

    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    obj = [Color.RED, Color.NESTED, Num.ONE, Flt.HALF, u, uuid.UUID(int=5)]
    assert (
        backend.dumps(obj)
        == b'["red",{"a":[1.5]},1,0.5,"12345678-1234-5678-1234-567812345678","00000000-0000-0000-0000-000000000005"]'
    )
    assert backend.dumps(obj) == orjson.dumps(obj)


def test_message_inside_dumps_is_raw(backend):
    raw = b'{ "jsonrpc" : "2.0" , "method" : "x" , "params" : [1.50, 1e2] }'
    m = backend.decode(raw)
    assert backend.dumps({"wrapped": m, "list": [m, 1]}) == b'{"wrapped":' + raw + b',"list":[' + raw + b",1]}"
    assert backend.dumps(m) == raw


def test_depth_1024_written_1025_rejected(backend):
    # The limit is the decoder's (docs/DESIGN.md section 4): orjson's own stops at 254 levels.
    deep = []
    for _ in range(253):
        deep = [deep]
    assert _depth_of(deep) == 254
    assert backend.dumps(deep) == b"[" * 254 + b"]" * 254 == orjson.dumps(deep)
    for _ in range(1023 - 253):
        deep = [deep]
    assert _depth_of(deep) == 1024
    assert backend.dumps(deep) == b"[" * 1024 + b"]" * 1024
    assert backend.dumps(backend.loads(backend.dumps(deep))) == b"[" * 1024 + b"]" * 1024
    err = _encode_error(backend.dumps, [deep])
    _check(err, "depth_limit", "nesting deeper than 1024 levels", "$" + "[0]" * 1024)

    d = {}
    for _ in range(253):
        d = {"k": d}
    assert backend.dumps(d) == orjson.dumps(d)
    for _ in range(1023 - 253):
        d = {"k": d}
    assert backend.dumps(d) == b'{"k":' * 1023 + b"{}" + b"}" * 1023
    err = _encode_error(backend.dumps, {"k": d})
    _check(err, "depth_limit", "nesting deeper than 1024 levels", "$" + ".k" * 1024)


def _depth_of(x) -> int:
    n = 0
    while isinstance(x, list):
        n += 1
        x = x[0] if x else None
    return n


def test_cycles_are_depth_errors(backend):
    loop: list = []
    loop.append(loop)
    err = _encode_error(backend.dumps, loop)
    assert err.kind == "depth_limit" and err.path == "$" + "[0]" * 1024
    d: dict = {}
    d["self"] = d
    err = _encode_error(backend.dumps, d)
    assert err.kind == "depth_limit" and err.path == "$" + ".self" * 1024


# ------------------------------------------------------------------------------------------
# dumps: errors and paths
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,repr_",
    [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf")],
)
def test_non_finite_floats(backend, value, repr_):
    err = _encode_error(backend.dumps, value)
    _check(err, "non_finite_float", f"expected a finite float, found {repr_}", "$")
    err = _encode_error(backend.dumps, {"params": {"items": [0, 1, 2, value]}})
    _check(err, "non_finite_float", f"expected a finite float, found {repr_}", "$.params.items[3]")


@dataclasses.dataclass
class _DC:
    x: int = 1


@pytest.mark.parametrize(
    "value,type_name",
    [
        (datetime.datetime(2024, 1, 1), "datetime"),
        (datetime.date(2024, 1, 1), "date"),
        (_DC(), "_DC"),
        (b"bytes", "bytes"),
        (bytearray(b"x"), "bytearray"),
        ({1, 2}, "set"),
        (frozenset(), "frozenset"),
        (decimal.Decimal("1.5"), "Decimal"),
        (object(), "object"),
        (1j, "complex"),
        (range(3), "range"),
        (iter([]), "list_iterator"),
    ],
)
def test_unsupported_types(backend, value, type_name):
    err = _encode_error(backend.dumps, value)
    _check(err, "unsupported_type", UNSUPPORTED + type_name, "$")


@pytest.mark.parametrize(
    "obj,path",
    [
        ({"a": object()}, "$.a"),
        ({"_ok1": [object()]}, "$._ok1[0]"),
        ({"A_b9": {"c": object()}}, "$.A_b9.c"),
        ({"a b": object()}, '$["a b"]'),
        ({"1a": object()}, '$["1a"]'),
        ({"": object()}, '$[""]'),
        ({"é": object()}, '$["é"]'),
        ({'x"y\\': object()}, '$["x\\"y\\\\"]'),
        ({"a-b": [0, {"n\n": object()}]}, '$["a-b"][1]["n\\n"]'),
        ([0, 1, (2, object())], "$[2][1]"),
        ({"session/update": object()}, '$["session/update"]'),
    ],
)
def test_paths(backend, obj, path):
    err = _encode_error(backend.dumps, obj)
    _check(err, "unsupported_type", UNSUPPORTED + "object", path)


def test_non_str_keys(backend):
    class K(str):
        pass

    for key, name in [(1, "int"), (None, "NoneType"), ((1, 2), "tuple"), (1.5, "float"), (True, "bool"), (K("a"), "K")]:
        err = _encode_error(backend.dumps, {"outer": [{key: 1}]})
        _check(err, "non_str_key", f"expected str dict keys, found {name}", "$.outer[0]")
    err = _encode_error(backend.dumps, {1: 2})
    _check(err, "non_str_key", "expected str dict keys, found int", "$")


def test_str_subclass_key_rejected_like_orjson(backend):
    class K(str):
        pass

    with pytest.raises(TypeError):
        orjson.dumps({K("a"): 1})
    err = _encode_error(backend.dumps, {K("a"): 1})
    assert err.kind == "non_str_key"


def test_unpaired_surrogates(backend):
    err = _encode_error(backend.dumps, "ok\ud800")
    _check(err, "invalid_str", "expected a str encodable as UTF-8, found unpaired surrogate U+D800", "$")
    err = _encode_error(backend.dumps, ["x", "a\udfffb\ud800"])
    _check(err, "invalid_str", "expected a str encodable as UTF-8, found unpaired surrogate U+DFFF", "$[1]")
    err = _encode_error(backend.dumps, {"a": {"k\udc00": 1}})
    _check(err, "invalid_str", "expected a str encodable as UTF-8, found unpaired surrogate U+DC00", "$.a")


ODD_CHARS = ['"', "\\", "\n", "\x01", "\x1f", "\x7f", "é", "\xff", "→", "\uffff", "😀", "\U0010ffff"]


@pytest.mark.parametrize("width_char", ["a", "é", "→", "😀"], ids=["ascii", "latin1", "ucs2", "ucs4"])
def test_strings_of_every_width_match_orjson(backend, width_char):
    # Strings long enough for the block paths (8 and 16 units), odd characters at every
    # position: each storage width of a Python str (PEP 393) written like orjson writes it.
    rng = random.Random(width_char)
    for n in range(70):
        for at in range(n):
            chars = [chr(rng.randrange(0x20, 0x7F)).replace('"', "q").replace("\\", "s") for _ in range(n)]
            chars[rng.randrange(n)] = width_char
            chars[at] = rng.choice(ODD_CHARS)
            text = "".join(chars)
            assert backend.dumps(text) == orjson.dumps(text), (n, at, text)
            assert backend.dumps({text: [text]}) == orjson.dumps({text: [text]})


RUN_CHARS = ["a", " ", '"', "\\", "\n", "\x01", "é", "\xff", "ā", "→", "中", "\uffff", "😀", "\U0010ffff"]


@pytest.mark.parametrize("widest", ["\xff", "\uffff", "\U0010ffff"], ids=["latin1", "ucs2", "ucs4"])
def test_text_changing_script_every_few_characters_matches_orjson(backend, widest):
    # Runs of 1 to 40 of one character, the kind of each run drawn at random (ASCII, escapes,
    # 2-, 3- and 4-byte UTF-8, up to the storage width): the writer switches between its ASCII
    # blocks, its escapes and its non-ASCII loop at every place a run can end.
    rng = random.Random(widest)
    pool = [c for c in RUN_CHARS if c <= widest]
    for _ in range(1500):
        parts = []
        while sum(map(len, parts)) < rng.randrange(1, 200):
            parts.append(rng.choice(pool) * rng.choice([1, 1, 2, 3, rng.randrange(1, 41)]))
        text = "".join(parts) + widest
        assert backend.dumps(text) == orjson.dumps(text), text
        assert backend.dumps({"k": text, text: 1}) == orjson.dumps({"k": text, text: 1})


def test_results_of_every_size_in_turn(backend):
    # Results of sizes from 2 bytes to megabytes in an order that goes up and down (the native
    # writer guesses the size of a result from the one before and grows or shrinks its bytes),
    # with encode's newline at each size, and a failure after a long write in between.
    rng = random.Random(5)
    sizes = [0, 1, 200, 253, 254, 255, 256, 1000, 100_000, 10, 3_000_000, 5, 70_000, 300, 1_100_000, 0]
    for n in sizes + sizes[::-1]:
        value = {"t": "".join(rng.choice('ab"é中😀\n') for _ in range(n // 4)), "n": n}
        assert backend.dumps(value) == orjson.dumps(value)
        assert backend.encode(value) == orjson.dumps(value) + b"\n"
        assert backend.dumps("x" * n) == orjson.dumps("x" * n)
        err = _encode_error(backend.dumps, ["y" * n, object()])
        assert err.kind == "unsupported_type" and err.path == "$[1]"


def test_unpaired_surrogate_past_the_block_paths(backend):
    for prefix in ("a" * 40, "é" * 40, "→" * 40, "😀" * 40):
        for n in (0, 7, 8, 9, 15, 16, 17):
            text = prefix[:n] + "\udc01" + prefix
            err = _encode_error(backend.dumps, [text])
            _check(err, "invalid_str", "expected a str encodable as UTF-8, found unpaired surrogate U+DC01", "$[0]")


def test_str_with_a_cached_utf8_copy(backend):
    # CPython keeps a UTF-8 copy of a non-ASCII str once asked for it; the result is the same.
    for text in ("é" * 33 + "\n", "→x" * 20, '😀"' * 9):
        fresh = backend.dumps(text)
        text.encode("utf-8")  # may or may not fill the cache; PyUnicode_AsUTF8 below does
        orjson.dumps(text)
        assert backend.dumps(text) == fresh == orjson.dumps(text)


def test_errors_in_document_order(backend):
    err = _encode_error(backend.dumps, {"a": [1, float("nan")], "b": object()})
    assert (err.kind, err.path) == ("non_finite_float", "$.a[1]")
    err = _encode_error(backend.dumps, {"a": object(), 1: 2})
    assert (err.kind, err.path) == ("unsupported_type", "$.a")
    err = _encode_error(backend.dumps, {1: object()})  # key before its value
    assert (err.kind, err.path) == ("non_str_key", "$")
    err = _encode_error(backend.dumps, [[object()], float("inf")])
    assert (err.kind, err.path) == ("unsupported_type", "$[0][0]")


def test_decode_error_is_unsupported_in_dumps(backend):
    err = _encode_error(backend.dumps, [DecodeError("x")])
    _check(err, "unsupported_type", UNSUPPORTED + "DecodeError", "$[0]")


# ------------------------------------------------------------------------------------------
# encode
# ------------------------------------------------------------------------------------------

VALID = vectors.load("frames_valid")


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in VALID])
def test_encode_decode_round_trip_byte_exact(backend, case):
    raw = case["bytes"]
    for ending in (b"", b"\n", b"\r\n", b"\r"):
        m = backend.decode(raw + ending)
        out = backend.encode(m)
        assert out == raw + b"\n"
        assert out.count(b"\n") == 1


def test_encode_keeps_whitespace_and_number_lexemes(backend):
    raw = b'  {"jsonrpc" :"2.0","id":1, "result":{"n":1.50e+01,"big":123456789012345678901234567890,"s":"\\u00e9"}}\t'
    assert backend.encode(backend.decode(raw + b"\r\n")) == raw + b"\n"


def test_encode_dict_and_list(backend):
    msg = {"jsonrpc": "2.0", "id": 1, "method": "é", "params": {"f": 1.0}}
    assert backend.encode(msg) == backend.dumps(msg) + b"\n" == orjson.dumps(msg) + b"\n"
    assert backend.encode([msg, msg]) == orjson.dumps([msg, msg]) + b"\n"
    # encode does not validate JSON-RPC rules
    assert backend.encode({"anything": [1]}) == b'{"anything":[1]}\n'
    assert backend.encode([]) == b"[]\n"


def test_encode_list_with_messages(backend):
    raw = b'{"jsonrpc":"2.0", "method":"a"}'
    m = backend.decode(raw)
    assert backend.encode([m, {"x": 1}]) == b"[" + raw + b',{"x":1}]\n'


def test_encode_errors(backend):
    err = _encode_error(backend.encode, {"a": float("nan")})
    assert (err.kind, err.path) == ("non_finite_float", "$.a")
    for bad in ["{}", b"{}", bytearray(b"{}"), 1, None, (1,), object()]:
        with pytest.raises(TypeError):
            backend.encode(bad)


BATCH = b'[ {"jsonrpc":"2.0","method":"a"} , 1 ,{"jsonrpc":"2.0","id":2,"result":null}]'


def test_encode_unchanged_batch_is_raw(backend):
    batch = backend.decode(BATCH + b"\r\n")
    assert isinstance(batch, Batch) and isinstance(batch, list)
    assert batch.raw == BATCH
    assert backend.encode(batch) == BATCH + b"\n"
    # same objects placed back is still "unchanged"
    batch[0] = batch[0]
    assert backend.encode(batch) == BATCH + b"\n"


def test_encode_changed_batch_is_reserialized(backend):
    batch = backend.decode(BATCH)
    a, c = batch[0], batch[2]
    batch.pop(1)  # drop the DecodeError entry
    assert backend.encode(batch) == b"[" + a.raw + b"," + c.raw + b"]\n"
    batch.append({"jsonrpc": "2.0", "method": "z"})
    assert backend.encode(batch) == b"[" + a.raw + b"," + c.raw + b',{"jsonrpc":"2.0","method":"z"}]\n'


def test_encode_changed_batch_with_decode_error_entry(backend):
    batch = backend.decode(BATCH)
    batch.append(batch[0])
    err = _encode_error(backend.encode, batch)
    assert err.kind == "unsupported_type"
    assert err.path == "$[1]"
    assert err.msg == UNSUPPORTED + "DecodeError"


def test_encode_swapped_batch_entries(backend):
    batch = backend.decode(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]')
    batch.reverse()
    assert backend.encode(batch) == b'[{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","method":"a"}]\n'


def test_encode_replaced_with_equal_message_is_changed(backend):
    # "same objects in the same places": an equal but distinct Message counts as a change
    raw = b'[ {"jsonrpc":"2.0","method":"a"} ]'
    batch = backend.decode(raw)
    batch[0] = backend.decode(b'{"jsonrpc":"2.0","method":"a"}')
    assert backend.encode(batch) == b'[{"jsonrpc":"2.0","method":"a"}]\n'


def test_loads_dumps_round_trip_of_vectors(backend):
    for case in vectors.load("json_accept"):
        value = case["value"]
        out = backend.dumps(value)
        assert strict_equal(backend.loads(out), value), case["name"]
        try:
            expected = orjson.dumps(value)
        except TypeError:  # ints beyond 64 bits
            continue
        assert out == expected, case["name"]


# orjson.Fragment: pre-encoded JSON written as-is by dumps and encode, on both backends (a
# Fragment has no Python attribute for its contents; the native writer once read `.contents`).
FRAGMENT_CASES = [
    (b'{"a": 1 }', b'{"a": 1 }'),
    ('["\u00e9"]', '["\u00e9"]'.encode()),
    (b"2.50", b"2.50"),
]


@pytest.mark.parametrize(("contents", "written"), FRAGMENT_CASES)
def test_fragment_is_written_as_is(backend, contents, written):
    fragment = orjson.Fragment(contents)
    assert backend.dumps(fragment) == written
    assert backend.dumps({"x": fragment, "y": [fragment, 1]}) == b'{"x":' + written + b',"y":[' + written + b",1]}"
    frame = backend.encode({"jsonrpc": "2.0", "id": 1, "result": fragment})
    assert frame == b'{"jsonrpc":"2.0","id":1,"result":' + written + b"}\n"
