"""The README from the top in a clean environment (issue 32): after the Quickstart, its next
commands work as written, in a virtual environment that has nothing but what the README installs.

A fresh ``.venv`` (``python -m venv``, no system site-packages, in an empty directory) stands for
the one ``make bench`` / ``make test`` create. The Rust core is not built again: the environment
gets this checkout's package the way the editable install gives it (a ``.pth`` file naming
``python/``, and the ``acp-fast`` command), and from pip the package's dependencies and the
``arrow`` extra, which the Quickstart's ``pip install -e '.[arrow]'`` line installs (that line's
requirements are read from pyproject.toml; pip needs the network or a wheel cache). Then the
Quickstart's second block runs (``. .venv/bin/activate``, ``acp-fast --help``) and, in the same
shell, every other ``sh`` block of the README, with nothing of the test's own environment on
PATH or PYTHONPATH. About a minute; CI runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import acp_fast
from test_readme_cli import EXAMPLES, QUICKSTART, _check

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _requirements(name: str) -> list:
    line = re.search(r"^" + name + r" = \[(.*)\]$", PYPROJECT, re.M)
    assert line is not None, name
    return re.findall(r'"([^"]+)"', line.group(1))


def test_the_readme_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    home = tmp_path / "project"
    home.mkdir()
    venv = home / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # what `make bench` / `pip install -e` give: the package (its native module built already) ...
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    package_root = Path(acp_fast.__file__).resolve().parent.parent
    Path(purelib, "acp_fast_checkout.pth").write_text(f"{package_root}\n", encoding="utf-8")
    script = venv / "bin" / "acp-fast"
    script.write_text(f"#!{python}\nimport sys\nfrom acp_fast.cli import main\nsys.exit(main())\n", encoding="utf-8")
    script.chmod(0o755)
    # ... and its dependencies, with the arrow extra of the Quickstart's install line
    assert "pip install -e '.[arrow]'" in QUICKSTART[1]
    needed = _requirements("dependencies") + _requirements("arrow")
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", *needed],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # the Quickstart's second block (but the reinstall, done above) and every example, as one script
    quickstart = "".join(
        line + "\n" for line in QUICKSTART[1].splitlines() if "pip install -e" not in line and line.strip()
    )
    run_dir = home / "run"
    run_dir.mkdir()
    body = f"cd {home}\n{quickstart}cd {run_dir}\n" + "".join(EXAMPLES)
    (home / "readme.sh").write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not p.startswith(sysconfig.get_path("scripts"))
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", str(home / "readme.sh")],
        cwd=home,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "usage: acp-fast COMMAND" in output  # acp-fast --help, from the activated .venv
    for example in EXAMPLES:
        _check(example, run_dir, output)
