"""``make wheels`` (docs/RELEASING.md) checks each wheel against the manylinux tag chosen with
``MANYLINUX`` (issue 28): the tag flows from the variable to maturin and to the auditwheel check.

The recipe runs for real with stand-ins for the build tools in a fake ``BUILD_VENV``: ``maturin``
writes an empty wheel, ``auditwheel show`` prints its report with the tag of ``FAKE_TAG``. No Rust,
zig or network is needed; nothing of the acp_fast backends is involved.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"

MATURIN = """#!/bin/sh
# maturin build ... --out DIR ... / maturin sdist --out DIR: an empty wheel or sdist in DIR
command="$1"
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--out" ]; then out="$2"; fi
  shift
done
mkdir -p "$out"
if [ "$command" = "sdist" ]; then : > "$out/acp_fast-0.0.0.tar.gz"; exit 0; fi
: > "$out/acp_fast-0.0.0-cp311-cp311-linux_x86_64.whl"
"""

AUDITWHEEL = """#!/bin/sh
# auditwheel show WHEEL, in auditwheel's words, with the tag of $FAKE_TAG
echo
echo "$2 is consistent with the following platform tag:"
echo "\\"$FAKE_TAG\\"."
echo
echo "The wheel references external versioned symbols in these"
echo "system-provided shared libraries: libc.so.6 with versions"
echo "{'GLIBC_2.2.5', 'GLIBC_2.3'}"
echo
echo "This constrains the platform tag to \\"$FAKE_TAG\\". In order"
echo "to achieve a more compatible tag, you would need to recompile a new"
echo "wheel from source on a system with earlier versions of these"
echo "libraries, such as a recent manylinux image."
"""


def _tool(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A BUILD_VENV whose python has "maturin, ziglang, auditwheel" (build-tools does nothing)."""
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    _tool(bindir / "python", "#!/bin/sh\nexit 0\n")
    _tool(bindir / "maturin", MATURIN)
    _tool(bindir / "auditwheel", AUDITWHEEL)
    # the CPython `make wheels` looks for (python3.X on PATH)
    (bindir / f"python{PYTHON}").symlink_to(sys.executable)
    return tmp_path / "venv"


def make_wheels(
    tmp_path: Path, venv: Path, tag: str, manylinux: Optional[str], dry: bool = False
) -> subprocess.CompletedProcess:
    variables = [f"BUILD_VENV={venv}", f"DIST={tmp_path / 'dist'}", f"WHEEL_PYTHONS={PYTHON}"]
    if manylinux is not None:
        variables.append(f"MANYLINUX={manylinux}")
    env: Dict[str, str] = {
        **os.environ,
        "FAKE_TAG": tag,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "MAKEFLAGS": "",
    }
    env.pop("MANYLINUX", None)
    command = ["make", *(["-n"] if dry else []), "wheels", *variables]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_make_n_shows_the_chosen_tag_in_the_build_and_the_check(tmp_path, venv):
    done = make_wheels(tmp_path, venv, "manylinux_2_28_x86_64", "manylinux_2_28", dry=True)
    assert done.returncode == 0, done.stderr
    assert "--compatibility manylinux_2_28" in done.stdout
    assert "set -- 2 28;" in done.stdout and "is not manylinux_2_28_x86_64" in done.stdout
    assert "2_17" not in done.stdout
    default = make_wheels(tmp_path, venv, "manylinux_2_17_x86_64", None, dry=True)
    assert default.returncode == 0, default.stderr
    assert "--compatibility manylinux2014" in default.stdout
    assert "set -- 2 17;" in default.stdout and "is not manylinux_2_17_x86_64" in default.stdout


@pytest.mark.parametrize(
    "manylinux, tag, ok",
    [
        ("manylinux_2_28", "manylinux_2_28_x86_64", True),
        ("manylinux_2_28", "manylinux_2_17_x86_64", True),  # needs less than it may: still installs
        ("manylinux_2_28", "manylinux_2_31_x86_64", False),
        ("manylinux_2_28", "linux_x86_64", False),  # not manylinux at all
        (None, "manylinux_2_17_x86_64", True),  # manylinux2014 is manylinux_2_17
        (None, "manylinux_2_28_x86_64", False),
        ("manylinux2014", "manylinux_2_5_x86_64", True),
        ("manylinux_2_17", "manylinux_3_1_x86_64", False),
    ],
)
def test_the_auditwheel_check_uses_the_chosen_tag(tmp_path, venv, manylinux, tag, ok):
    done = make_wheels(tmp_path, venv, tag, manylinux)
    chosen = "manylinux_2_17" if manylinux in (None, "manylinux2014") else manylinux
    if ok:
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"is consistent with {tag} (at most {chosen}_x86_64)" in done.stdout
    else:
        assert done.returncode != 0
        assert f"is not {chosen}_x86_64" in done.stdout
