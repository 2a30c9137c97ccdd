"""The README's Python examples run, as doctests, against each backend.

README.md (project root) holds ```python blocks written with >>> prompts. Each backend runs them
in a subprocess with ACP_FAST_BACKEND set, so `import acp_fast` picks that backend.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import acp_fast

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)

RUNNER = r"""
import doctest, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```python[ \t]*\n(.*?)^```", text, re.S | re.M)
source = "\n".join(b for b in blocks if ">>>" in b)
parser = doctest.DocTestParser()
test = parser.get_doctest(source, {"__name__": "README"}, "README.md", "README.md", 0)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
runner.run(test)
import acp_fast
print("BACKEND=" + acp_fast.BACKEND)
print("RESULT=%d/%d" % (runner.failures, runner.tries))
"""


def _doctest_blocks():
    if not README.exists():
        return None, []
    text = README.read_text(encoding="utf-8")
    return text, [b for b in BLOCK.findall(text) if ">>>" in b]


def test_readme_has_doctest_examples():
    text, blocks = _doctest_blocks()
    assert text is not None, f"{README} does not exist yet: the README must show the API in ```python doctest blocks"
    assert blocks, "README.md has no ```python block with >>> examples; add doctest-style examples"
    joined = "\n".join(blocks)
    for name in ["decode", "encode", "FrameDecoder", "loads", "dumps"]:
        assert name in joined, f"README examples never use acp_fast.{name}"


def test_readme_examples_pass(backend_id):
    text, blocks = _doctest_blocks()
    if not blocks:
        pytest.fail(
            "README.md has no ```python >>> examples to run (see test_readme_has_doctest_examples)", pytrace=False
        )
    env = dict(os.environ)
    env["ACP_FAST_BACKEND"] = backend_id
    pkg_root = str(Path(acp_fast.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(README)], env=env, capture_output=True, text=True, timeout=300, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr
    assert f"BACKEND={backend_id}" in proc.stdout, proc.stdout
    result = re.search(r"RESULT=(\d+)/(\d+)", proc.stdout)
    assert result, proc.stdout + proc.stderr
    failures, tries = int(result.group(1)), int(result.group(2))
    assert tries > 0
    assert failures == 0, proc.stdout
