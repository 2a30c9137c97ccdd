"""The JSON grammar (RFC 8259, strict): validation, skipping, locating values and unescaping.

The fallback parses with orjson on the happy path. This package is the grammar of DESIGN 2 in
Python: it runs on the error path only (to report the exact first error that orjson refused), to
locate members of a frame that is already known to be valid (positions of -32600 errors, entry
spans of a batch), and to build values that orjson cannot (integers beyond 64 bits).

Everything is iterative (no recursion per nesting level) and skips string bodies, digit runs and
whitespace with compiled regular expressions, so a 10 MB input is scanned in linear time.

Mirror of ``rust/scanner/``, module for module where both have the piece: ``cursor`` (offsets,
whitespace, the first error), ``grammar`` (values), ``strings``, ``numbers``. Differences on purpose:
Rust's ``mod.rs`` holds the tokens and the ``Sink`` trait (here orjson builds the values) and the
document (``check_utf8``, ``validate``, ``parse_document``), which are in ``grammar.py`` here (this
file only re-exports, so that the modules can import one another); ``index.rs``, the SIMD index of
special bytes, is Rust only (here regular expressions skip string bodies). Fallback only:
``members`` (members and items of a value already known to be valid; Rust locates them while it
parses) and ``build`` (values orjson cannot build, ``loads``; Rust builds through a sink,
``rust/python/convert.rs``). The rest of the fallback imports everything from here.
"""

from __future__ import annotations

from .build import _DIGITS_TO_ZERO as _DIGITS_TO_ZERO
from .build import _LONG_DIGIT_RUN as _LONG_DIGIT_RUN
from .build import _exact as _exact
from .build import build, loads, parse_document, parse_exact, to_bytes
from .cursor import MAX_DEPTH, skip_ws
from .grammar import check_utf8, find_error, skip_value, validate
from .members import array_items, find_member
from .numbers import MAX_INT_DIGITS, scan_number
from .strings import scan_string, string_text

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "check_utf8",
    "validate",
    "find_error",
    "skip_ws",
    "scan_string",
    "scan_number",
    "skip_value",
    "find_member",
    "array_items",
    "string_text",
    "build",
    "parse_document",
    "parse_exact",
    "to_bytes",
    "loads",
]
