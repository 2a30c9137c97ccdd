"""`Batch`: the list that `decode` returns for a batch frame, remembering its exact bytes."""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["Batch"]


class Batch(list[Any]):
    """A decoded batch frame: a ``list`` of ``Message`` / ``DecodeError`` entries.

    ``raw`` is the frame's bytes without the line ending, and ``line`` its stream line number
    (or None). As long as the list holds the same objects it was decoded with, ``encode`` gives
    back ``raw`` unchanged; after any change it serializes the entries again.
    """

    __slots__ = ("raw", "line", "_decoded")

    def __init__(self, entries: Iterable[Any] = (), raw: bytes = b"", line: int | None = None) -> None:
        super().__init__(entries)
        self.raw: bytes = raw
        """The frame's bytes without the line ending."""
        self.line: int | None = line
        """The frame's 1-based stream line number, or None."""
        # Only a batch that came from bytes can hand those bytes back.
        self._decoded = tuple(self) if raw else ()

    def is_unchanged(self) -> bool:
        """True while the batch still holds exactly the entries it was decoded with."""
        decoded = self._decoded
        if len(self) != len(decoded) or not decoded:
            return False
        return all(a is b for a, b in zip(self, decoded))

    def __reduce__(self) -> Any:
        return (Batch, (list(self), self.raw, self.line))

    def __repr__(self) -> str:
        return f"Batch({list.__repr__(self)})"
