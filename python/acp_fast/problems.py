"""The problem type of strict schema validation, shared by the Rust core and the fallback.

Both backends return these very objects from [`acp_fast.validate_schema`][acp_fast.validate_schema] and
[`acp_fast.SchemaValidator.validate`][acp_fast.SchemaValidator.validate] (the native module imports the class), so results
compare equal whichever backend made them.
"""

from __future__ import annotations

from typing import NamedTuple, Tuple, Union

__all__ = ["SchemaProblem"]


class SchemaProblem(NamedTuple):
    """One problem of a message: where, what was expected, how bad, and which rule.

    ``path`` is a JSON path from the message root (``params.update.status``, ``[0].id`` in a
    batch, ``""`` for the message itself), ``location`` the same path as a tuple of keys and
    indices; ``severity`` is ``"error"`` or ``"warning"``; ``rule`` is ``"schema"`` for the
    official schema, else the protocol rule (``custom-value-prefix``, ``tool-call-title``,
    ``unexpected-response``).
    """

    path: str
    """A JSON path from the message root: ``params.update.status``, ``[0].id`` in a batch, ``""``
    for the message itself."""
    message: str
    """What was expected, in words."""
    severity: str = "error"
    """``"error"``, or ``"warning"`` for a rule the protocol says SHOULD be kept."""
    rule: str = "schema"
    """``"schema"`` for the official schema, else the protocol rule (``custom-value-prefix``,
    ``tool-call-title``, ``unexpected-response``)."""
    location: Tuple[Union[str, int], ...] = ()
    """The path as a tuple of keys and indices."""
