"""The pure-Python backend of acp-fast, built on orjson.

It mirrors the Rust core file for file and function for function (docs/DESIGN.md section 1):
``X.py`` is ``rust/X.rs`` plus the part of ``rust/python/`` that its classes do. The behaviour is
the same byte for byte; only the speed differs. tests/test_mirror.py keeps the mirror: the
functions of both sides in the same order, but for the differences on purpose that its
``ALLOWED`` names, each with its reason (the top of each file says them too).
"""

from __future__ import annotations

from .coalesce import Coalescer
from .columns import FrameColumns
from .decoder import FrameDecoder
from .encoder import dumps
from .framing import DEFAULT_MAX_FRAME_BYTES, MAX_FRAME_BYTES, Framer
from .message import Message, decode, encode
from .scanner import loads
from .schema import DRAFTS, SchemaValidator, validate_schema
from .state import Change, ToolCallStore
from .state import rules as _rules
from .toolcalls import ToolCallColumns

BACKEND = "python"
#: The v2 drafts the schema checks know (``draft=``), newest first.
SCHEMA_DRAFTS = tuple(name for name, _ in DRAFTS)
#: The entity targets of the update table (DESIGN 7.3), each with its id member (None: one per
#: session), in table order.
ENTITY_TARGETS = {t.name: t.id for t in _rules.targets()}
#: Pure Python has no debug/release builds; "release" says it is fit to benchmark (the native
#: module reports its cargo profile here).
build_profile = "release"

try:
    from importlib.metadata import version as _version

    __version__: str = _version("acp-fast")
except Exception:  # noqa: BLE001  # pragma: no cover - running from a source tree without metadata
    __version__ = "0.0.0"

__all__ = [
    "BACKEND",
    "__version__",
    "build_profile",
    "loads",
    "dumps",
    "decode",
    "encode",
    "Message",
    "FrameDecoder",
    "Framer",
    "DEFAULT_MAX_FRAME_BYTES",
    "MAX_FRAME_BYTES",
    "SCHEMA_DRAFTS",
    "ENTITY_TARGETS",
    "ToolCallStore",
    "Change",
    "validate_schema",
    "SchemaValidator",
    "FrameColumns",
    "ToolCallColumns",
    "Coalescer",
]
