"""Loader for the conformance vectors in ``tests/vectors/*.jsonl``.

One case per line, a JSON object. The same files are meant to be read by the Rust test-suite, so
they only use plain JSON. Frames/documents are given either as ``frame``/``doc`` (a JSON string,
encoded as UTF-8 to get the bytes) or ``frame_b64``/``doc_b64`` (base64 of the exact bytes, for
input that is not valid UTF-8).

Files:

* ``frames_valid.jsonl``: ``name``, ``frame``, expected ``kind``, ``id``, ``method``,
  ``session_id``, ``update_kind``, ``tool_call_id``, and ``schema`` (null or
  ``{"version": 1|2, "def": <$defs name>, "part": "params"|"result"}``: the message part must
  validate against that definition of ``python/acp_fast/schema/v{version}/schema.json``).
* ``frames_invalid.jsonl``: ``name``, ``frame``/``frame_b64``, ``code``, ``kind``, ``position``
  (byte offset in the frame, or null) and ``message`` (the description, DESIGN.md §2.1/§5).
* ``json_accept.jsonl``: ``name``, ``doc``/``doc_b64``, ``value`` (the expected Python value;
  compared with type-strict equality, ``-0.0`` vs ``0.0`` included).
* ``json_reject.jsonl``: ``name``, ``doc``/``doc_b64``, ``kind``, ``position``, ``message``
  (the description). The code is always -32700.
* ``batches.jsonl``: ``name``, ``frame``, ``entries``: a list of ``{"type": "message", "raw",
  "kind", "id", "method"}`` or ``{"type": "error", "raw", "code", "kind", "position",
  "message"}``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Dict, List

VECTORS_DIR = Path(__file__).resolve().parent / "vectors"


def load(name: str) -> List[Dict[str, Any]]:
    """All cases of ``vectors/<name>.jsonl`` (blank lines ignored), each with ``bytes`` added."""
    path = VECTORS_DIR / f"{name}.jsonl"
    cases = []
    with path.open("r", encoding="utf-8") as f:
        for lineno, text in enumerate(f, 1):
            if not text.strip():
                continue
            case = json.loads(text)
            case["_lineno"] = lineno
            case["bytes"] = case_bytes(case)
            cases.append(case)
    names = [c["name"] for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate vector names in {path.name}: {sorted(dupes)}")
    return cases


def case_bytes(case: Dict[str, Any]) -> bytes:
    for key in ("frame", "doc"):
        if key in case:
            return case[key].encode("utf-8")
    for key in ("frame_b64", "doc_b64"):
        if key in case:
            return base64.b64decode(case[key])
    raise KeyError(f"vector {case.get('name')!r} has no frame/doc")


def params(name: str):
    """``pytest.param`` list for ``@pytest.mark.parametrize``, one per case, id = case name."""
    import pytest

    return [pytest.param(case, id=case["name"]) for case in load(name)]


# ------------------------------------------------------------------------------------------
# helpers shared by the test modules
# ------------------------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also compares types (``1 != 1.0 != True``) and the sign of zero floats."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if a != a:
            return b != b
        return a == b and (str(a) == str(b) if a == 0.0 else True)
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def line_col(doc: bytes, position: int):
    """DESIGN.md §2.2: 1-based line, 1-based byte column of ``position`` in ``doc``."""
    lineno = doc.count(b"\n", 0, position) + 1
    line_start = doc.rfind(b"\n", 0, position) + 1
    return lineno, position - line_start + 1


def error_key(err: Any):
    """What two backends must agree on for an error: (type, code, kind, message, position, line)."""
    return (
        type(err),
        getattr(err, "code", None),
        getattr(err, "kind", None),
        getattr(err, "message", None),
        getattr(err, "position", None),
        getattr(err, "line", None),
    )
