"""The problems: for a value found invalid, where and why, worded like the codec's own errors.

Mirror of ``rust/schema/explain.rs``: the same walk, the same choice of union branch and the same
words. Values are described from their JSON text as ``acp_fast.dumps`` writes them (Rust: the
frame's own text, the same for frames that ``dumps`` wrote).
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

from ...problems import SchemaProblem
from ..encoder import dumps, render_path
from ..error import ARRAY as T_ARRAY
from ..error import NULL as T_NULL
from ..error import NUMBER as T_NUMBER
from ..error import OBJECT as T_OBJECT
from ..error import STRING as T_STRING
from ..error import describe_value
from .check import Check, char_len, lit_eq, type_bit
from .compile import INTEGER, NUMBER, TYPE_NAMES, Compiled, Lit, UnionNode

__all__ = [
    "PROBLEM_LIMIT",
    "Found",
    "render",
    "problem",
    "quote",
    "describe",
    "type_names",
    "lit_text",
    "number_text",
    "Explain",
    "types_of",
]

PathList = List[Union[str, int]]

#: The rule of the marker that ends a message's problems when the check stopped at the limit.
PROBLEM_LIMIT = "problem-limit"


def render(path: PathList) -> str:
    """A path as text: ``params.update.content[0]`` (empty for the root)."""
    text = render_path(path)[1:]
    return text[1:] if text.startswith(".") else text


def problem(path: PathList, message: str, severity: str = "error", rule: str = "schema") -> SchemaProblem:
    return SchemaProblem(render(path), message, severity, rule, tuple(path))


def quote(path: PathList) -> str:
    """A path as problems quote it: ``"params.update"``, or ``the message`` for the root."""
    return f'"{render(path)}"' if path else "the message"


def describe(value: Any) -> str:
    """``{value}`` of a problem: short literal text for strings and numbers, names otherwise."""
    if value is None:
        return describe_value(b"", T_NULL, 0, 0)
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, dict):
        return describe_value(b"", T_OBJECT, 0, 0)
    if isinstance(value, list):
        return describe_value(b"", T_ARRAY, 0, 0)
    text = dumps(value)
    return describe_value(text, T_STRING if isinstance(value, str) else T_NUMBER, 0, len(text))


def type_names(types: int) -> str:
    """The names of a set of type bits: ``string or null``."""
    return " or ".join(name for bit, name in TYPE_NAMES if types & bit and not (bit == INTEGER and types & NUMBER))


def lit_text(lit: Lit) -> str:
    """A literal as JSON text."""
    if isinstance(lit, float) and not isinstance(lit, bool):
        return number_text(lit)
    return dumps(lit).decode("utf-8")


def number_text(f: float) -> str:
    """A bound as problems print it: ``0``, ``65535``, ``0.5``."""
    if float(f).is_integer() and abs(f) < 1e15:
        return str(int(f))
    return repr(float(f))


class Explain:
    """Collects the problems of one message."""

    def __init__(self, check: Check, out: Found) -> None:
        self.check = check
        self.out = out

    def push(self, path: PathList, message: str) -> None:
        self.out.push(problem(path, message))

    def node(self, index: int, value: Any, path: PathList, ctx: str) -> None:
        """Report why ``value`` is not valid against node ``index`` (call only when it is not);
        nothing once ``out`` stopped."""
        if self.out.stopped():
            return
        before = len(self.out.list)
        self._keywords(index, value, path, ctx)
        if len(self.out.list) == before:
            self.push(path, f"expected {quote(path)} to match {ctx}, found {describe(value)}")

    def _keywords(self, index: int, value: Any, path: PathList, ctx: str) -> None:
        schema = self.check.schema
        n = schema.nodes[index]
        if n.def_ is not None:
            ctx = schema.def_names[n.def_]
        if n.never:
            self.push(path, f"expected no {quote(path)}, found {describe(value)}")
            return
        bit = type_bit(value)
        if not n.types & bit:
            self.push(path, f"expected {quote(path)} to be {type_names(n.types)}, found {describe(value)}")
            return
        for lits in n.lits:
            if not any(lit_eq(value, lit) for lit in lits):
                self._one_of_lits(path, lits, value)
                return
        if isinstance(value, dict):
            self._object(index, value, path, ctx)
        elif isinstance(value, list):
            if n.min_items is not None and len(value) < n.min_items:
                noun = "item" if n.min_items == 1 else "items"
                self.push(path, f"expected {quote(path)} to hold at least {n.min_items} {noun}, found {len(value)}")
            if n.items is not None:
                for i, item in enumerate(value):
                    if self.out.stopped():
                        return
                    if not self.check.valid(n.items, item):
                        self.node(n.items, item, path + [i], ctx)
        elif isinstance(value, str):
            if n.min_length is not None and char_len(value) < n.min_length:
                noun = "character" if n.min_length == 1 else "characters"
                self.push(
                    path, f"expected {quote(path)} to hold at least {n.min_length} {noun}, found {describe(value)}"
                )
            if n.max_length is not None and char_len(value) > n.max_length:
                noun = "character" if n.max_length == 1 else "characters"
                self.push(
                    path, f"expected {quote(path)} to hold at most {n.max_length} {noun}, found {describe(value)}"
                )
            if n.pattern is not None:
                text, pattern = schema.patterns[n.pattern]
                if not pattern.search(value):
                    self.push(path, f"expected {quote(path)} to match the pattern {text}, found {describe(value)}")
        elif bit & (INTEGER | NUMBER):
            if n.minimum is not None and value < n.minimum:
                self.push(path, f"expected {quote(path)} to be >= {number_text(n.minimum)}, found {describe(value)}")
            if n.maximum is not None and value > n.maximum:
                self.push(path, f"expected {quote(path)} to be <= {number_text(n.maximum)}, found {describe(value)}")
        if self.out.stopped():
            return
        if n.reference is not None and not self.check.valid(n.reference, value):
            self.node(n.reference, value, path, ctx)
        for a in n.all_of:
            if not self.out.stopped() and not self.check.valid(a, value):
                self.node(a, value, path, ctx)
        if self.out.stopped():
            return
        if n.any_of is not None and self.check.count_valid(n.any_of, value, 1) == 0:
            self._union(n.any_of, value, path, ctx)
        if self.out.stopped():
            return
        if n.one_of is not None:
            count = self.check.count_valid(n.one_of, value, 2)
            if count == 0:
                self._union(n.one_of, value, path, ctx)
            elif count > 1:
                self.push(
                    path,
                    f"expected {quote(path)} to match exactly one alternative of {ctx}, "
                    f"found {describe(value)} matching several",
                )
        if n.not_ is not None and not self.out.stopped() and self.check.valid(n.not_, value):
            self.push(path, f"expected {quote(path)} not to match {ctx}'s excluded values, found {describe(value)}")

    def _object(self, index: int, value: Any, path: PathList, ctx: str) -> None:
        n = self.check.schema.nodes[index]
        for name in n.required:
            if name not in value:
                self.push(path + [name], f"expected {quote(path + [name])} (required by {ctx}), found none")
        for key, member in value.items():
            if self.out.stopped():
                return
            if key in n.excluded_keys:
                self.push(path + [key], f"expected no {quote(path + [key])} in {ctx}, found {describe(member)}")
        for key, member in value.items():
            if self.out.stopped():
                return
            target = n.properties.get(key, n.additional)
            if target is not None and not self.check.valid(target, member):
                self.node(target, member, path + [key], ctx)

    def _one_of_lits(self, path: PathList, lits: List[Lit], value: Any) -> None:
        names = [lit_text(lit) for lit in lits]
        what = names[0] if len(names) == 1 else "one of " + ", ".join(names)
        self.push(path, f"expected {quote(path)} to be {what}, found {describe(value)}")

    def _union(self, u: UnionNode, value: Any, path: PathList, ctx: str) -> None:
        """A union no branch of which matched."""
        schema = self.check.schema
        tag = u.tag
        if tag is not None and isinstance(value, dict):
            candidates = self.check.candidates(u, value)
            if candidates:
                self.node(u.branches[candidates[0]], value, path, ctx)
                return
            found = describe(value[tag.key]) if tag.key in value else "none"
            names = ", ".join(lit_text(t) for t, _ in tag.tagged)
            self.push(path + [tag.key], f"expected {quote(path + [tag.key])} to be one of {names}, found {found}")
            return
        lits = [_single_lit(schema, b) for b in u.branches]
        if all(lit is not _NONE for lit in lits):
            self._one_of_lits(path, lits, value)
            return
        bit = type_bit(value)
        typed = [b for b in u.branches if types_of(schema, b, 0) & bit]
        if not typed:
            every = 0
            for b in u.branches:
                every |= types_of(schema, b, 0)
            self.push(path, f"expected {quote(path)} to be {type_names(every)}, found {describe(value)}")
        elif len(typed) == 1:
            self.node(typed[0], value, path, ctx)
        else:
            lits = [_single_lit(schema, b) for b in typed]
            if isinstance(value, str) and all(lit is not _NONE for lit in lits):
                self._one_of_lits(path, lits, value)
            else:
                self.push(path, f"expected {quote(path)} to match {ctx}, found {describe(value)}")


_NONE: Any = object()


def _single_lit(schema: Compiled, index: int) -> Optional[Lit]:
    """The one value a branch allows (through ``$ref`` and ``allOf``), else ``_NONE``."""
    n = schema.nodes[index]
    if len(n.lits) == 1 and len(n.lits[0]) == 1:
        return n.lits[0][0]
    if n.reference is not None and not n.all_of:
        return _single_lit(schema, n.reference)
    if n.reference is None and len(n.all_of) == 1:
        return _single_lit(schema, n.all_of[0])
    return _NONE  # type: ignore[no-any-return]  # a sentinel: not a literal


def types_of(schema: Compiled, index: int, depth: int) -> int:
    """The types a node may accept (through ``$ref`` and ``allOf``; unions: any branch's)."""
    n = schema.nodes[index]
    if n.never:
        return 0
    t = n.types
    if depth > 16:
        return t
    if n.reference is not None:
        t &= types_of(schema, n.reference, depth + 1)
    for a in n.all_of:
        t &= types_of(schema, a, depth + 1)
    for u in (n.any_of, n.one_of):
        if u is not None:
            every = 0
            for b in u.branches:
                every |= types_of(schema, b, depth + 1)
            t &= every
    return t


class Found:
    """The problems of one message as they are found, at most ``limit`` errors (warnings are not
    counted): the next error is not kept, a ``PROBLEM_LIMIT`` marker is, and the walks stop
    (``stopped``)."""

    def __init__(self, limit: Optional[int], path: PathList) -> None:
        """At most ``limit`` errors (None: all) of the message at ``path``."""
        self.list: List[SchemaProblem] = []
        self._path = list(path)  # where the message is in its frame (the marker's path)
        self._errors = 0
        self._limit = limit
        self._stopped = False

    def push(self, p: SchemaProblem) -> None:
        """Keep a problem, or stop at the error past the limit."""
        if self._stopped:
            return
        if p.severity == "error":
            if self._limit is not None and self._errors >= self._limit:
                self._stopped = True
                where = quote(self._path)
                self.list.append(
                    problem(self._path, f"stopped checking {where} after {self._limit} problems", rule=PROBLEM_LIMIT)
                )
                return
            self._errors += 1
        self.list.append(p)

    def stopped(self) -> bool:
        """The message had more errors than the limit: nothing more is looked for."""
        return self._stopped
