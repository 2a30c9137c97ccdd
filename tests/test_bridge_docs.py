"""docs/BRIDGE.md: every complete example runs as written, on both backends, and the module's
doctest passes."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "BRIDGE.md"


def _examples() -> List[str]:
    """The ``python`` blocks of the page that run on their own (the first one only shows calls)."""
    blocks: List[str] = []
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return [block for block in blocks if "import acp_fast\n" in block]


def test_the_page_has_an_example() -> None:
    assert len(_examples()) == 1


@pytest.mark.parametrize("index", range(len(_examples())))
def test_docs_bridge_examples_run(index: int, backend: Any) -> None:
    env = dict(os.environ, ACP_FAST_BACKEND=backend.BACKEND, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", _examples()[index]], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr


def test_module_doctest() -> None:
    import acp_fast.bridge

    result = doctest.testmod(acp_fast.bridge)
    assert result.attempted > 0 and result.failed == 0
