"""`loads` and `Message.to_dict` build every class of string as orjson does: ASCII, Latin-1, BMP
and astral text, raw or escaped, short and long (the ways of building a `str` differ by class and
length, and escaped text is unescaped in 16-byte blocks), and lone surrogate escapes, which orjson
rejects, are a `lone_surrogate` DecodeError."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_fast import DecodeError
from vectors import strict_equal

# Characters of each class; surrogates (Cs) are not text and cannot be written as UTF-8.
CLASSES = {
    "ascii": st.characters(min_codepoint=0, max_codepoint=0x7F),
    "latin": st.characters(min_codepoint=0x80, max_codepoint=0xFF),
    "bmp": st.characters(min_codepoint=0x100, max_codepoint=0xFFFF, blacklist_categories=("Cs",)),
    "astral": st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    "escaped": st.sampled_from(['"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f"]),
}
CHARS = st.one_of(*CLASSES.values())
TEXT = st.text(CHARS, max_size=300)


def _docs(texts):
    """The same values as JSON written raw (UTF-8) and written with every non-ASCII character
    escaped (`\\uXXXX`, astral ones as surrogate pairs)."""
    value = {"k": texts, "m": {t[:20]: t for t in texts}}
    return value, [json.dumps(value, ensure_ascii=False).encode(), json.dumps(value).encode()]


@given(st.lists(TEXT, min_size=1, max_size=6))
def test_loads_equals_orjson_on_strings_of_every_class(backend, texts):
    value, docs = _docs(texts)
    for doc in docs:
        got = backend.loads(doc)
        assert strict_equal(got, orjson.loads(doc))
        assert strict_equal(got, value)
        assert strict_equal(backend.loads(doc.decode()), got)


@given(st.lists(TEXT, min_size=1, max_size=6))
def test_to_dict_equals_orjson_on_strings_of_every_class(backend, texts):
    params, _ = _docs(texts)
    for ensure_ascii in (False, True):
        frame = json.dumps({"jsonrpc": "2.0", "method": "m", "params": params}, ensure_ascii=ensure_ascii).encode()
        (message,) = backend.FrameDecoder().feed(frame + b"\n")
        assert strict_equal(message.to_dict(), orjson.loads(frame))


@pytest.mark.parametrize(
    "escape", ['\\"', "\\\\", "\\/", "\\n", "\\t", "\\u0001", "\\u00e9", "\\u20ac", "\\ud83d\\ude00"]
)
def test_escapes_at_every_offset_across_blocks(backend, escape):
    # An escape at each offset of a text longer than several 16-byte blocks, between runs of
    # every width, and escapes back to back.
    for filler in ("a", "\xe9", "\u20ac", "\U0001f600"):
        for at in range(40):
            for tail in (0, 1, 16, 31):
                raw = f'"{filler * at}{escape}{"x" * tail}{escape}{escape}"'.encode()
                assert strict_equal(backend.loads(raw), orjson.loads(raw)), raw


@pytest.mark.parametrize(
    "doc",
    [
        b'"\\ud800"',
        b'"\\udc00"',
        b'"abc\\ud83d"',
        b'"\\ud83d\\u0041"',
        b'"\\ud83dx"',
        b'["ok", "' + b"x" * 40 + b'\\udfff"]',
        b'{"\\ud800": 1}',
    ],
)
def test_lone_surrogate_escape_is_a_decode_error(backend, doc):
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(doc)
    with pytest.raises(DecodeError) as info:
        backend.loads(doc)
    assert info.value.kind == "lone_surrogate"
