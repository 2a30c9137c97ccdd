"""Reading the objects of a frame, the -32602 errors of DESIGN 7.7, and base64 (7.4).

Mirror of ``rust/state/read.rs``. Differences on purpose: here a frame is parsed once with orjson
(re-parsed exactly only when it holds a digit run long enough for orjson to round an integer:
``exactly``) and the rules read the parsed dicts; a broken rule raises ``Bad`` with the member's
path, and the value is located in the frame with the scanner on that error path only
(``state_error``). Rust walks the members in the frame's bytes and builds the error where the rule
breaks (``bad``).
"""

from __future__ import annotations

import binascii
import re
from typing import Any, Optional, Tuple

from ..error import DecodeError, describe_value
from ..scanner import _DIGITS_TO_ZERO, _LONG_DIGIT_RUN, _exact, find_member

__all__ = [
    "BAD_SID",
    "P_UPDATE_CONTENT",
    "P_UPDATE_LOCATIONS",
    "P_UPDATE_TCID",
    "U",
    "Bad",
    "b64decode",
    "exactly",
    "state_error",
]


def exactly(frame: bytes, value: Any) -> Any:
    """``value`` (orjson's parse of ``frame``), re-parsed exactly when orjson may have rounded an
    integer (a run of 19+ digits somewhere in the frame)."""
    if _LONG_DIGIT_RUN in frame.translate(_DIGITS_TO_ZERO):
        return _exact(frame)
    return value


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
        found = find_member(doc, container, key)
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


def b64decode(text: Any) -> Optional[bytes]:
    """The bytes of padded standard base64 text, or None if ``text`` is not such base64."""
    if type(text) is not str or len(text) & 3 or _b64_fullmatch(text) is None:
        return None
    return _a2b(text)
