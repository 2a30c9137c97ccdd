"""``.ci/run`` and ``.ci/sdk-versions`` never install into an interpreter they did not create (issue 32).

Both scripts run for real with a stand-in ``python3`` first on PATH: it logs every call and, for
``-m venv DIR``, makes a stand-in virtual environment whose ``python`` logs its calls too (``-m pip``
marks it installed; ``-c`` checks succeed once it is). Every other call of the stand-in goes to this
interpreter. The tests check who was asked to install what: the ``python3`` that started the script
only ever makes virtual environments (without ``--system-site-packages``, which in a venv would
inherit the base interpreter's packages), and each environment gets its packages from its own pip.
No network, Rust or real install is involved; nothing of the acp_fast backends either.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent

VENV_PYTHON = """#!/bin/sh
echo "venv $0 $*" >> "$FAKE_LOG"
here=$(dirname "$0")
case "$1" in
  -m) if [ "$2" = pip ]; then : > "$here/installed"; fi; exit 0 ;;
  -c) [ -f "$here/installed" ]; exit $? ;;
esac
exit 0
"""

BASE_PYTHON = """#!/bin/sh
# the python3 that starts the script: logs, makes stand-in venvs, refuses pip, else is the real interpreter
echo "base $*" >> "$FAKE_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  for dir; do :; done
  mkdir -p "$dir/bin" && cp "$FAKE_VENV_PYTHON" "$dir/bin/python" && chmod +x "$dir/bin/python"
  exit 0
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "the stand-in python3 refuses pip" >&2; exit 97; fi
exec "$REAL_PYTHON" "$@"
"""


def _tool(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def fake(tmp_path: Path) -> Tuple[dict, Path]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _tool(bindir / "python3", BASE_PYTHON)
    _tool(tmp_path / "venv-python", VENV_PYTHON)
    log = tmp_path / "log"
    log.touch()
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_LOG": str(log),
        "FAKE_VENV_PYTHON": str(tmp_path / "venv-python"),
        "REAL_PYTHON": sys.executable,
    }
    for name in ("PYTHON", "CI_PYTHON", "CI_VENV", "SDK_VENVS", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env, log


def _calls(log: Path) -> List[Tuple[str, List[str]]]:
    calls = []
    for line in log.read_text(encoding="utf-8").splitlines():
        who, _, args = line.partition(" ")
        calls.append((who, shlex.split(args) if who == "base" else args.split()))
    return calls


def test_ci_run_installs_only_into_a_venv_of_its_own(fake, tmp_path):
    env, log = fake
    ci_venv = tmp_path / "ci-venv"
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run"), "--setup-only"],
        env={**env, "CI_VENV": str(ci_venv)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--setup-only: nothing run" in done.stdout
    calls = _calls(log)
    base = [args for who, args in calls if who == "base"]
    # the python3 on PATH made the environment, plainly, and did nothing else
    assert base == [["-m", "venv", str(ci_venv)]]
    venv = [args for who, args in calls if who == "venv"]
    installs = [args for args in venv if args[2:4] == ["pip", "install"]]
    assert [args[0] for args in installs] == [f"{ci_venv}/bin/python"]
    assert installs[0][4:] == ["-e", ".[test,lint]"]
    # the native module is checked with the environment's Python, after the install
    assert any(args[1] == "-c" and "build_profile" in " ".join(args) for args in venv[venv.index(installs[0]) :])


def test_ci_run_reuses_its_venv_and_refuses_unknown_options(fake, tmp_path):
    env, log = fake
    ci_venv = tmp_path / "ci-venv"
    run = ["bash", str(ROOT / ".ci" / "run"), "--setup-only"]
    for _ in range(2):
        done = subprocess.run(run, env={**env, "CI_VENV": str(ci_venv)}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
    assert [args for who, args in _calls(log) if who == "base"] == [["-m", "venv", str(ci_venv)]]
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run"), "--bogus"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "usage: .ci/run [--setup-only]" in done.stderr


def test_sdk_versions_venvs_install_what_they_need_themselves(fake, tmp_path):
    from acp_fast.integrations import SDK_TESTED_VERSIONS

    pytest.importorskip("acp")  # the script reads the SDK release of PYTHON (the test extra has it)
    from importlib.metadata import version

    env, log = fake
    venvs = tmp_path / "sdk-venvs"
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "sdk-versions")],
        env={**env, "PYTHON": "python3", "SDK_VENVS": str(venvs)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    others = [v for v in SDK_TESTED_VERSIONS if v != version("agent-client-protocol")]
    assert others
    calls = _calls(log)
    made = [args for who, args in calls if who == "base" and args[:2] == ["-m", "venv"]]
    assert made == [["-m", "venv", f"{venvs}/agent-client-protocol-{v}"] for v in others]
    assert not [args for who, args in calls if who == "base" and "pip" in args]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for v in others:
        python = f"{venvs}/agent-client-protocol-{v}/bin/python"
        installs = [args[4:] for who, args in calls if who == "venv" and args[:4] == [python, "-m", "pip", "install"]]
        assert len(installs) == 1, installs
        wanted = installs[0]
        # the SDK with its http extra (its network transports), uvicorn (an ASGI server) and the
        # net extra (aiohttp: acp-fast serve, the bench's load client)
        assert wanted[0] == f"agent-client-protocol[http]=={v}"
        names = {re.split(r"[<>=]", r)[0] for r in wanted[1:]}
        tools = {"orjson", "pytest", "pytest-benchmark", "hypothesis", "jsonschema", "jsonschema-rs"}
        assert names == tools | {"uvicorn", "aiohttp"}
        for requirement in wanted[1:]:
            assert f'"{requirement}"' in pyproject  # the bounds pyproject.toml gives
        assert any(who == "venv" and args[:3] == [python, "-m", "pytest"] for who, args in calls)
