"""Strict checking of a stream of frames: the ``strict_schema`` option of ``FrameDecoder`` and
``ToolCallStore`` (and so of ``acp-fast proxy --strict-schema`` and
``acp_sdk.install(strict=True)``). Every frame goes through one conversation (``rules.py``); a
frame with problems of severity ``error`` is refused, as a whole or, for a batch, entry by entry.

The schema a frame is checked against is the one of the protocol version in force when it was
sent: the fixed version, else the version the ``initialize`` answer negotiated, else the one its
sender asked for in an ``initialize`` not answered yet (``session/new`` may follow it at once),
else 1. The
answer itself is checked against the version of its request (the conversation learns the new
version while checking it, after the schema was chosen).

Mirror of ``rust/schema/stream.rs``. Differences on purpose: the verdicts are the ``DecodeError``
objects themselves (Rust's core gives the problems, its binding builds the errors); ``apply``
(the check of a ``FrameDecoder``'s results) is Rust's binding's ``check_results``.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Union, cast

from ...errors import DecodeError
from ...problems import SchemaProblem
from ..scanner import array_items, loads, skip_ws
from . import MAX_PROBLEMS, PROBLEM_LIMIT, Schema, _parse, draft_index, engine_name, rules, schema

#: ``loads`` of the fallback (its signature is a comment, for the native one): typed here.
_loads: Callable[[bytes], Any] = loads

#: The two sides of a connection whose decoder is told what was sent (``FrameDecoder.sent``).
RECEIVED = "received"
SENT = "sent"


class Strict:
    """The stream check: the conversation and the version setting. A frame with errors is
    reported as a ``DecodeError`` of kind ``schema`` (code -32602, the first problem as its
    message, all of them in ``problems``)."""

    def __init__(self, fixed: Optional[int], schemas: Tuple[Schema, Schema]) -> None:
        engine_name()  # the package that gives the verdicts, or the error saying what to install
        # The fixed protocol version, or None to follow the `initialize` answer (1 until then).
        self.fixed = fixed
        # The compiled schemas of protocol v1 and v2.
        self.schemas = schemas
        self.conversation = rules.Conversation()
        # `sent` was called: the frames checked are the sender RECEIVED (else they name no sender
        # unless the caller does).
        self.directed = False

    def version(self) -> int:
        """The version in force: the fixed one, else the negotiated one, else 1."""
        return self.fixed or self.conversation.negotiated or 1

    def version_for(self, value: Any, sender: Optional[str]) -> int:
        """The version the frame ``value`` of ``sender`` is checked by: the fixed one, else the
        negotiated one, else for a request or notification the one ``sender`` asked for in an
        ``initialize`` not answered yet, else 1 (so the answer is checked by the version in force)."""
        version = self.fixed or self.conversation.negotiated
        if version:
            return version
        if self.conversation.asked is None or not (isinstance(value, dict) and "method" in value):
            return 1
        return self.conversation.version_of(sender) or 1

    def default_sender(self) -> Optional[str]:
        """The sender of the frames checked when the caller names none."""
        return RECEIVED if self.directed else None

    def sent(self, message: Any) -> None:
        """A frame sent the other way (``FrameDecoder.sent``), into the conversation (a request is
        then pending, a response answers one received); its problems are not reported."""
        self.directed = True
        try:
            value = _parse(message)
        except DecodeError:  # not JSON: nothing to learn from it
            return
        self.conversation.check(self.schemas[self.version_for(value, SENT) - 1], value, SENT)

    def check(self, raw: bytes, entries: bool, sender: Optional[str], line: Optional[int]) -> Any:
        """Check the frame ``raw`` (no line ending), sent by ``sender`` (None: not said).
        ``entries``: judge the entries of a batch each on its own (problems at the frame itself,
        such as a batch in protocol v1, still fail the whole frame). Returns None (no problem of
        severity ``error``), the frame's ``DecodeError``, or for a batch judged by entry a list
        with each entry's ``DecodeError`` (None: valid)."""
        if sender is None:
            sender = self.default_sender()
        try:
            value = _loads(raw)
        except DecodeError:  # a frame the scanner refuses is the caller's to report
            return None
        version = self.version_for(value, sender)
        found = self.conversation.check_at_most(self.schemas[version - 1], value, sender, MAX_PROBLEMS)
        errors = [p for p in found if p.severity == "error"]
        if not errors:
            return None
        count = len(value) if entries and isinstance(value, list) else 0

        def entry_of(p: SchemaProblem) -> Optional[int]:
            first = p.location[0] if p.location else None
            return first if type(first) is int and first < count else None

        if not entries or any(entry_of(p) is None for p in errors):
            return schema_error(errors, line, raw)
        by_entry: List[List[SchemaProblem]] = [[] for _ in range(count)]
        for p in errors:
            by_entry[cast(int, entry_of(p))].append(p)
        spans = array_items(raw, skip_ws(raw, 0))
        return [
            schema_error(problems, line, raw[start:end]) if problems else None
            for problems, (_, start, end) in zip(by_entry, spans)
        ]


def strict_arg(arg: Any, unstable: bool = False, draft: Optional[str] = None) -> Optional[Strict]:
    """The stream check for a ``strict_schema`` argument: False / None (none), True (follow the
    negotiation) or 1 / 2 (fixed), against the stable or unstable schemas, v2 as ``draft``
    (None: the newest)."""
    index = draft_index(draft)
    if arg is None or arg is False:
        return None
    if arg is True:
        fixed = None
    elif isinstance(arg, int) and not isinstance(arg, bool) and arg in (1, 2):
        fixed = int(arg)
    else:
        raise ValueError(f"expected strict_schema to be a bool, 1 or 2, found {arg!r}")
    return strict_of(True, fixed, bool(unstable), index)


def strict_of(on: bool, fixed: Optional[int], unstable: bool, index: int) -> Optional[Strict]:
    """The strict check of checked settings (``on``: the check is on; ``fixed``: None to follow
    the negotiation, else the version; ``index``: the draft's in ``DRAFTS``)."""
    if not on:
        return None
    return Strict(fixed, (schema(1, unstable, index), schema(2, unstable, index)))


def strict_setting(strict: Optional[Strict]) -> Union[bool, int]:
    """The option as given: ``False`` (off), ``True`` (follow the negotiation) or the fixed
    version."""
    if strict is None:
        return False
    return True if strict.fixed is None else strict.fixed


def check_results(strict: Strict, results: List[Any]) -> None:
    """Check the results of a ``FrameDecoder``'s ``feed`` / ``finish``, replacing the frames that
    fail (a batch as a whole)."""
    for index, item in enumerate(results):
        if isinstance(item, DecodeError):
            continue
        verdict = strict.check(item.raw, False, None, item.line)
        if isinstance(verdict, DecodeError):
            results[index] = verdict


def schema_error(errors: List[SchemaProblem], line: Optional[int], raw: bytes) -> DecodeError:
    """The ``DecodeError`` of kind ``schema`` for ``errors`` (not empty), of the frame or entry
    ``raw``: the first problem's message and ``(and N more)``, or ``(and at least N more)`` when
    the check of a message stopped at ``MAX_PROBLEMS`` (a ``problem-limit`` marker, standing for
    the one or more it did not list). Rust: ``stream::message``."""
    stopped = any(p.rule == PROBLEM_LIMIT for p in errors)
    more = f" (and {'at least ' if stopped else ''}{len(errors) - 1} more)" if len(errors) > 1 else ""
    error = DecodeError(errors[0].message + more, code=-32602, kind="schema", line=line, raw=raw)
    error.problems = errors  # type: ignore[attr-defined]  # the list, for whoever wants it
    return error
