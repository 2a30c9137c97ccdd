"""The verdict: is a value valid against a node? One walk that stops at the first failure.

Mirror of ``rust/schema/check.rs``, over the dicts and lists of a parsed message (Rust: the
tape). The fallback asks ``jsonschema-rs`` or ``jsonschema`` for the verdict of a whole message
(``__init__.py``); this walk serves ``explain.py`` and ``rules.py``, which need the verdict of
each part.
"""

from __future__ import annotations

import math
from typing import Any, List

from .compile import ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING, Compiled, Lit, Node, UnionNode

__all__ = ["type_bit", "lit_eq", "char_len", "listed", "needs_prefix", "Check"]


def type_bit(value: Any) -> int:
    """The type bit of a value (numbers: ``INTEGER`` when they have no fraction, else ``NUMBER``)."""
    if value is None:
        return NULL
    if value is True or value is False:
        return BOOLEAN
    if isinstance(value, str):
        return STRING
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return INTEGER if math.isfinite(value) and value == int(value) else NUMBER
    if isinstance(value, list):
        return ARRAY
    return OBJECT


def lit_eq(value: Any, lit: Lit) -> bool:
    """Does the value equal the literal (numbers by value: ``1.0`` equals ``1``)?"""
    if isinstance(lit, str) or lit is None:
        return value == lit if isinstance(value, str) or value is None else False
    if isinstance(lit, bool):
        return value is lit
    if value is True or value is False or not isinstance(value, (int, float)):
        return False
    return bool(value == lit)


def char_len(value: str) -> int:
    """The length of a string in characters (code points), as JSON Schema counts it."""
    return len(value)


class Check:
    """A walk over one message."""

    def __init__(self, schema: Compiled) -> None:
        self.schema = schema
        #: A value was met that a protocol rule may object to (``rules.py``).
        self.rule_hit = False

    def node(self, index: int) -> Node:
        return self.schema.nodes[index]

    def valid(self, index: int, value: Any) -> bool:
        """Is ``value`` valid against node ``index``?"""
        n = self.schema.nodes[index]
        if n.trivial:
            return True
        if n.never:
            return False
        bit = type_bit(value)
        if not n.types & bit:
            return False
        for lits in n.lits:
            if not any(lit_eq(value, lit) for lit in lits):
                return False
        if bit == OBJECT:
            if not self._object(n, value):
                return False
        elif bit == ARRAY:
            if n.min_items is not None and len(value) < n.min_items:
                return False
            if n.items is not None:
                for item in value:
                    if not self.valid(n.items, item):
                        return False
        elif bit == STRING:
            if not self._string(n, value):
                return False
        elif bit & (INTEGER | NUMBER) and (
            (n.minimum is not None and value < n.minimum) or (n.maximum is not None and value > n.maximum)
        ):
            return False
        if n.reference is not None and not self.valid(n.reference, value):
            return False
        for a in n.all_of:
            if not self.valid(a, value):
                return False
        if n.any_of is not None and not self._any_of(n.any_of, value):
            return False
        if n.one_of is not None and self.count_valid(n.one_of, value, 2) != 1:
            return False
        if n.not_ is not None and self.valid(n.not_, value):
            return False
        if n.open_prefix and bit == STRING:
            self.rule_hit = self.rule_hit or needs_prefix(self.schema, n, value)
        return True

    def _string(self, n: Node, value: str) -> bool:
        if n.min_length is not None or n.max_length is not None:
            length = char_len(value)
            if (n.min_length is not None and length < n.min_length) or (
                n.max_length is not None and length > n.max_length
            ):
                return False
        return n.pattern is None or self.schema.patterns[n.pattern][1].search(value) is not None

    def _object(self, n: Node, value: Any) -> bool:
        for name in n.required:
            if name not in value:
                return False
        if n.excluded_keys and any(key in value for key in n.excluded_keys):
            return False
        if not n.properties and n.additional is None:
            return True
        for key, member in value.items():
            target = n.properties.get(key, n.additional)
            if target is not None and not self.valid(target, member):
                return False
        return True

    def candidates(self, u: UnionNode, value: Any) -> List[int]:
        """The branches worth trying, in order: with a tag and an object, the branches its tag
        value names, then the untagged ones; else every branch."""
        tag = u.tag
        if tag is not None and type(value) is dict:
            found = value.get(tag.key)
            hit = [i for t, i in tag.tagged if isinstance(found, str) and found == t]
            return hit + tag.untagged
        return list(range(len(u.branches)))

    def _any_of(self, u: UnionNode, value: Any) -> bool:
        return any(self.valid(u.branches[i], value) for i in self.candidates(u, value))

    def count_valid(self, u: UnionNode, value: Any, limit: int) -> int:
        """How many branches are valid, counting up to ``limit``."""
        count = 0
        for i in self.candidates(u, value):
            if self.valid(u.branches[i], value):
                count += 1
                if count >= limit:
                    break
        return count


def listed(c: Compiled, n: Node) -> List[Lit]:
    """(``rules.py``) The constants an extensible enumeration lists."""
    out: List[Lit] = []
    for u in (n.any_of, n.one_of):
        if u is not None:
            for b in u.branches:
                lits = c.nodes[b].lits
                if len(lits) == 1:
                    out.extend(lits[0])
    return out


def needs_prefix(c: Compiled, n: Node, value: str) -> bool:
    """(``rules.py``) Is the string a custom value (not listed) that does not begin with ``_``?"""
    if value.startswith("_"):
        return False
    return not any(isinstance(lit, str) and lit == value for lit in listed(c, n))
