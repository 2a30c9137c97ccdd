"""The machine, software and commit an ``acp-fast bench`` run reports."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Optional

# The source checkout this module runs from, if any (for the commit id in the report).
ROOT = Path(__file__).resolve().parents[3]


def _git(*argv: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info() -> Optional[str]:
    """The commit of the acp-fast source checkout this runs from (``+dirty`` with uncommitted
    changes to tracked files), or None for an installed package."""
    if not ((ROOT / "Cargo.toml").is_file() and (ROOT / "python" / "acp_fast").is_dir()):
        return None
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(distribution: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(distribution)
    except Exception:  # noqa: BLE001 - any failure means "not installed" here
        return None


def environment(backends: Dict[str, Any]) -> Dict[str, Any]:
    import acp_fast

    native = backends.get("rust")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "acp_fast": acp_fast.__version__,
        "commit": commit_info(),
        "native_build": getattr(native, "build_profile", None) if not isinstance(native, str) else None,
        "native": native if isinstance(native, str) else None,
        "python": f"{platform.python_version()} ({platform.python_implementation()}, {platform.python_compiler()})",
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "libraries": {
            name: _version(name) for name in ("orjson", "msgspec", "agent-client-protocol", "pydantic", "matplotlib")
        },
    }


def load_average() -> Optional[float]:
    """The 1-minute load average (runnable processes), or None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return None


def cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process and the children it waited for."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return time.process_time()
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
