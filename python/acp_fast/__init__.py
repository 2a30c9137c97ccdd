"""acp-fast: the fastest correct codec for the Agent Client Protocol (ACP).

The public surface is the same whichever backend runs: the compiled Rust core
(``BACKEND == "rust"``) or the pure-Python fallback built on orjson (``BACKEND == "python"``).
Set ``ACP_FAST_BACKEND=python`` to force the fallback, ``ACP_FAST_BACKEND=rust`` to make a missing
native module an ImportError.
"""

from __future__ import annotations

import os as _os
from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING, List, Optional, Tuple

from .batch import Batch
from .errors import AcpError, DecodeError, EncodeError
from .problems import SchemaProblem

_choice = _os.environ.get("ACP_FAST_BACKEND", "").strip().lower()
if _choice not in ("", "rust", "python"):
    raise ImportError(f"ACP_FAST_BACKEND must be 'rust' or 'python', found {_choice!r}")

_backend: _ModuleType
if _choice == "python":
    from . import _fallback as _backend
else:
    try:
        from . import _native as _backend
    except ImportError:
        if _choice == "rust":
            raise
        from . import _fallback as _backend

if TYPE_CHECKING:
    # Type checkers see the typed stub of the compiled core (_native.pyi); the fallback exposes
    # the same names with the same signatures (tests/test_api.py), so the choice does not matter.
    from ._native import (
        BACKEND,
        DEFAULT_MAX_FRAME_BYTES,
        ENTITY_TARGETS,
        MAX_FRAME_BYTES,
        SCHEMA_DRAFTS,
        Change,
        Coalescer,
        FrameDecoder,
        Framer,
        Message,
        SchemaValidator,
        ToolCallStore,
        decode,
        dumps,
        encode,
        loads,
        validate_schema,
    )
else:
    BACKEND = _backend.BACKEND
    loads = _backend.loads
    dumps = _backend.dumps
    decode = _backend.decode
    encode = _backend.encode
    FrameDecoder = _backend.FrameDecoder
    Framer = _backend.Framer
    DEFAULT_MAX_FRAME_BYTES = _backend.DEFAULT_MAX_FRAME_BYTES
    MAX_FRAME_BYTES = _backend.MAX_FRAME_BYTES
    SCHEMA_DRAFTS = _backend.SCHEMA_DRAFTS
    ENTITY_TARGETS = _backend.ENTITY_TARGETS
    Message = _backend.Message
    ToolCallStore = _backend.ToolCallStore
    Change = _backend.Change
    Coalescer = _backend.Coalescer
    validate_schema = _backend.validate_schema
    SchemaValidator = _backend.SchemaValidator


# For the modules above the facade, which reach the backend only through it (the layers of
# .ci/import_cycles.py); not API. Spans in a JSON text already known to be valid, found by the
# backend's scanner: the native module's function of the same name when it has one, else the
# fallback's (the walks ``Message`` uses to place an error on a member or a batch entry).


def _find_member(data: bytes, obj_start: int, key: str) -> Optional[Tuple[str, int, int]]:
    """The JSON type, start and end of the value of the last member ``key`` of the object whose
    ``{`` is at ``obj_start`` in ``data``; None when it has none."""
    if hasattr(_backend, "find_member"):
        found: Optional[Tuple[str, int, int]] = _backend.find_member(data, obj_start, key)
        return found
    from ._fallback.scanner import find_member

    return find_member(data, obj_start, key)


def _array_items(data: bytes, arr_start: int) -> List[Tuple[str, int, int]]:
    """The JSON type, start and end of each element of the array whose ``[`` is at ``arr_start``
    in ``data``."""
    if hasattr(_backend, "array_items"):
        found: List[Tuple[str, int, int]] = _backend.array_items(data, arr_start)
        return found
    from ._fallback.scanner import array_items

    return array_items(data, arr_start)


def _find_version() -> str:
    """The version, single-sourced from ``Cargo.toml``: read there when this package runs from a
    source checkout (an editable install's metadata may be older than the file), else from the
    installed distribution's metadata, which maturin writes from ``Cargo.toml`` at build time."""
    from pathlib import Path

    cargo = Path(__file__).resolve().parents[2] / "Cargo.toml"
    try:
        text = cargo.read_text(encoding="utf-8")
    except OSError:
        text = ""
    if text.startswith("[package]") and 'name = "acp-fast"' in text:
        for line in text.splitlines()[1:]:
            if line.startswith("["):
                break
            if line.startswith("version = "):
                return line.split('"')[1]
    try:
        from importlib.metadata import version

        return version("acp-fast")
    except Exception:  # noqa: BLE001  # pragma: no cover - neither a checkout nor an installed distribution
        return "0.0.0+unknown"


__version__: str = _find_version()

__all__ = [
    "BACKEND",
    "AcpError",
    "Batch",
    "Change",
    "Coalescer",
    "DEFAULT_MAX_FRAME_BYTES",
    "DecodeError",
    "EncodeError",
    "FrameDecoder",
    "Framer",
    "MAX_FRAME_BYTES",
    "Message",
    "SCHEMA_DRAFTS",
    "ENTITY_TARGETS",
    "SchemaProblem",
    "SchemaValidator",
    "ToolCallStore",
    "decode",
    "dumps",
    "encode",
    "loads",
    "validate_schema",
]
