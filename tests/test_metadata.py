"""The package's metadata: one version (Cargo.toml), the license files the metadata names."""

from __future__ import annotations

import re
from pathlib import Path

import acp_fast

ROOT = Path(__file__).resolve().parent.parent


def cargo_version() -> str:
    match = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text("utf-8"), re.M)
    assert match is not None
    return match.group(1)


def test_version_comes_from_cargo_toml():
    assert acp_fast.__version__ == cargo_version()


def test_license_files_exist_and_are_declared():
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert 'license = "MIT OR Apache-2.0"' in pyproject
    for name in ("LICENSE-MIT", "LICENSE-APACHE", "python/acp_fast/schema/LICENSE"):
        assert (ROOT / name).is_file(), name
        assert f'"{name}"' in pyproject, name
    assert "Apache License" in (ROOT / "LICENSE-APACHE").read_text("utf-8")
    assert "Permission is hereby granted" in (ROOT / "LICENSE-MIT").read_text("utf-8")


def test_changelog_names_the_current_version():
    assert f"## [{cargo_version()}]" in (ROOT / "CHANGELOG.md").read_text("utf-8")
