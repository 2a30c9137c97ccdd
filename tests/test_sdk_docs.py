"""docs/SDK.md: every example runs as written, on both backends. Shared helpers:
``sdk_helpers.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from typing import Any, List

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning, module="acp")


from sdk_helpers import (  # noqa: E402
    TESTS,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------------
# docs/SDK.md: every example runs as written


def _doc_examples() -> List[str]:
    text = (TESTS.parent / "docs" / "SDK.md").read_text(encoding="utf-8")
    blocks, current = [], None
    for line in text.splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return blocks


@pytest.mark.parametrize("index", range(len(_doc_examples())))
def test_docs_sdk_examples_run(index: int, backend: Any) -> None:
    code = _doc_examples()[index]
    env = dict(os.environ, ACP_FAST_BACKEND=backend.BACKEND, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    if "connect_to_agent(object()" in code:  # the one-connection example says what it did (issue 32)
        assert out.stdout == (
            "initialize answered over acp-fast: protocol version 1\ninstalled for the whole SDK: False\n"
        )
        assert "._conn" not in code  # public API only
