"""Reading the objects of a frame, the -32602 errors of DESIGN 7.7, and base64 (7.4).

Mirror of ``rust/state/read.rs``. Differences on purpose: here a frame is parsed once with orjson
and the rules read the parsed dicts; a broken rule raises ``Bad`` with the member's path, and the
value is located in the frame with the scanner on that error path only (``state_error``). Rust
walks the members in the frame's bytes and builds the error where the rule breaks (``bad``).

Stored values keep each number's text (DESIGN 7.8), as Rust's JSON text does: ``exactly`` re-parses
a frame when orjson's values would not give back the text of one of its numbers (``2.50``, ``1E2``,
``-0``, an integer beyond 64 bits), and ``exact`` keeps such a number as an ``orjson.Fragment`` of
its text, which ``dumps`` writes as it is; ``number`` gives its Python value (for the queries).
Strings alike: a frame with an escape ``dumps`` does not write (``\\u00e9``, ``\\/``) is re-parsed
by ``exact``, which keeps such a string value as an ``Exact`` (a ``str`` with its JSON text,
written by checkpoints as received); a rule that reads a string as an id or a tag takes ``text``
of it, the plain ``str`` (Rust: ``text_of``).
"""

from __future__ import annotations

import binascii
import json
import json.decoder
import json.scanner
import re
from typing import Any, Callable, Optional, Tuple

import orjson

from ..error import DecodeError, describe_value
from ..scanner import find_member
from ..scanner.build import build

__all__ = [
    "BAD_SID",
    "P_UPDATE_CONTENT",
    "P_UPDATE_LOCATIONS",
    "P_UPDATE_TCID",
    "U",
    "Bad",
    "base64_decode",
    "Exact",
    "exact",
    "exactly",
    "number",
    "plain",
    "recheck",
    "state_error",
    "text",
]

_Fragment = orjson.Fragment
_orjson_dumps = orjson.dumps
_orjson_loads = orjson.loads
_scanstring: Callable[..., Tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1
# `recheck`'s view of `dumps(value)`: digits deleted, ',' and '[' made ':' (so that a number's
# text follows a ':'), '-' and '+' made '.'; as dumps writes a float (`1.5`, `-2.0`, `1e+16`,
# `1.5e-07`), it is then ':.' or ':e.'.
_FLOATS = bytes.maketrans(b",[-+", b"::..")
_DIGITS = b"0123456789"
# `-0` as a number (not followed by a digit: `-01` is in a date, never a number).
_MINUS_ZERO = re.compile(rb"-0(?![0-9])").search


def exactly(frame: bytes, value: Any) -> Any:
    """``value`` (the parse of ``frame`` by orjson, which rounds integers beyond 64 bits and keeps
    no number's text), re-parsed by ``exact`` when it would not give back the text of one of the
    frame's numbers. The common case costs one ``dumps``: a frame that is ``dumps(value)`` itself."""
    try:
        dumped: Optional[bytes] = _orjson_dumps(value)
    except TypeError:  # orjson.JSONEncodeError: nested deeper than dumps writes
        dumped = None
    if dumped == frame:
        return value
    return recheck(frame, value, dumped)


def recheck(frame: bytes, value: Any, dumped: Optional[bytes]) -> Any:
    """``exactly`` for a frame that is not ``dumped`` (``dumps(value)``, None when it failed):
    re-parsed when ``value`` holds a float (a fraction or an exponent, or an integer orjson took
    beyond 64 bits: ``dumps`` writes each with a '.' or an 'e') or the frame may hold ``-0``; any
    other number is an integer whose text ``dumps`` gives back."""
    if dumped is None or (b"\\" in frame and _ODD_ESCAPE(frame) is not None):
        return exact(frame)
    t = dumped.translate(_FLOATS, _DIGITS)
    if b":." in t or b":e." in t or (b"-0" in frame and _MINUS_ZERO(frame) is not None):
        return exact(frame)
    return value


def _float(text: str) -> Any:
    """A fraction or exponent: the float, or a Fragment of its text when dumps writes the float
    otherwise (``2.50``, ``1E2``, ``1e-400``)."""
    value = float(text)
    raw = text.encode("ascii")
    return value if _orjson_dumps(value) == raw else _Fragment(raw)


def _int(text: str) -> Any:
    """An integer: the int, or a Fragment of its text for ``-0`` and beyond 64 bits (which orjson
    does not write)."""
    value = int(text)
    if text == "-0" or not _I64_MIN <= value <= _U64_MAX:
        return _Fragment(text.encode("ascii"))
    return value


class Exact(str):
    """A string value whose JSON text as received is not the one ``dumps`` writes (an escape
    such as ``\\u00e9`` or ``\\/``): equal to its text and hashed as it, with ``raw`` its JSON
    text (quotes included), which ``to_json`` writes (``checkpoint.py``). Rust keeps every value's
    text anyway. A rule that reads a string as an id or a tag takes its plain text (``text``)."""

    raw: bytes


def text(value: Any) -> Any:
    """``value``, an ``Exact`` string as a plain ``str`` (ids, tags: what Rust reads with
    ``text_of``)."""
    return str.__str__(value) if type(value) is Exact else value


def _string(token: bytes) -> Any:
    """A string value of a frame, from its JSON text: its ``str``, or an ``Exact`` when ``dumps``
    would write it otherwise."""
    value = _orjson_loads(token)
    if _orjson_dumps(value) == token:
        return value
    kept = Exact(value)
    kept.raw = token
    return kept


def _scan_string(doc: str, end: int, strict: bool = True) -> Tuple[Any, int]:
    """``json``'s ``parse_string`` for string values (member names are scanned apart, kept plain)."""
    value, after = _scanstring(doc, end, strict)
    if "\\" not in doc[end:after]:
        return value, after
    return _string(doc[end - 1 : after].encode("utf-8")), after


class _ExactDecoder(json.JSONDecoder):
    """``json.loads`` with numbers as ``_float`` / ``_int`` and string values as ``_string``
    (the pure-Python scanner: the C one takes no string hook)."""

    def __init__(self) -> None:
        super().__init__(parse_float=_float, parse_int=_int)
        self.parse_string = _scan_string
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]


_exact_decoder = _ExactDecoder()
# An escape `dumps` does not write (`\/`, `\u` but for a control character without a short form,
# in lower case): a frame may then hold a string whose text differs from dumps' (a false hit costs a slower parse).
_ODD_ESCAPE = re.compile(rb"\\(?:/|u(?!00(?:0[0-7bef]|1[0-9a-f])))").search


def exact(frame: bytes) -> Any:
    """The value of the (valid) document ``frame`` with each number whose text its Python value
    would not give back kept as a Fragment of that text, and each string value whose text
    ``dumps`` would not give back as an ``Exact``."""
    odd = _ODD_ESCAPE(frame) is not None
    try:
        if odd:
            return _exact_decoder.decode(frame.decode("utf-8"))
        return json.loads(frame, parse_float=_float, parse_int=_int)
    except (RecursionError, ValueError):
        return build(frame, (_float, _int), _string if odd else None)


def number(fragment: Any) -> Any:
    """The Python value of a number kept as a Fragment (what ``loads`` gives for its text)."""
    text = _orjson_dumps(fragment)
    if b"." in text or b"e" in text or b"E" in text:
        return float(text)
    return int(text)


def plain(value: Any) -> Any:
    """``value``, or the Python value of a number kept as a Fragment, or the plain text of an
    ``Exact`` string."""
    t = type(value)
    if t is _Fragment:
        return number(value)
    return str.__str__(value) if t is Exact else value


class Bad(Exception):
    """A broken state rule (DESIGN 7.7): its kind, the member's path from the message object and
    {what}. The caller, who knows the frame, turns it into the -32602 DecodeError."""

    def __init__(self, kind: str, keys: Tuple[str, ...], what: str) -> None:
        self.kind = kind
        self.keys = keys
        self.what = what


def state_error(bad: Bad, doc: bytes, obj_start: int) -> DecodeError:
    """The -32602 error value for the member at ``bad.keys`` under the message object whose ``{``
    is at ``obj_start`` in ``doc`` (the members on the way are objects): its {value} and offset,
    or ``none`` and the ``{`` of the object that lacks it."""
    container = obj_start
    found = None
    keys = bad.keys
    last = len(keys) - 1
    for i, key in enumerate(keys):
        # a member on the way that is not an object (`"result": null`) lacks the next one
        found = find_member(doc, container, key) if doc[container] == 0x7B else None
        if found is None or i == last:
            break
        container = found[1]
    if found is None:
        value, position = "none", container
    else:
        ty, start, end = found
        value, position = describe_value(doc, ty, start, end), start
    path = ".".join(keys)
    return DecodeError.params(bad.kind, f'expected "{path}" to be {bad.what}, found {value}', position)


# Paths of DESIGN 7.7 (from the message object).
U = ("params", "update")
P_UPDATE_TCID = U + ("toolCallId",)
P_UPDATE_CONTENT = U + ("content",)
P_UPDATE_LOCATIONS = U + ("locations",)
#: ``params.sessionId`` is not a string (Rust: ``require_session``).
BAD_SID = Bad("invalid_session_id", ("params", "sessionId"), "a string")

# ---------------------------------------------------------------------------------------------
# Base64 (RFC 4648, standard alphabet, padded; DESIGN 7.4)

_b64_fullmatch = re.compile(r"[A-Za-z0-9+/]*={0,2}").fullmatch
_a2b = binascii.a2b_base64


def base64_decode(text: Any) -> Optional[bytes]:
    """The bytes of padded standard base64 text, or None if ``text`` is not such base64."""
    if type(text) is not str or len(text) & 3 or _b64_fullmatch(text) is None:
        return None
    return _a2b(text)
