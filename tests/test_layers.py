"""The import contract that `make lint` checks (.ci/import_cycles.py): the checker itself, on a tiny
package made up here, finds a layer pointing up, a backend imported past the facade, a cycle closed
only under TYPE_CHECKING and a module in no layer, each with its file and line."""

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("grimp")  # the `lint` extra

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "import_cycles.py"


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_cycles"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["import_cycles"]


def _package(root, name, files):
    for path, text in files.items():
        target = root / name / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")


def _contract(checker, name):
    return checker.Contract(
        layers=(
            ("shared", (f"{name}.errors",)),
            ("backends", (f"{name}._backend",)),
            ("facade", (name,)),
            ("libraries", (f"{name}.lib", f"{name}.other")),
            ("faces", (f"{name}.cli",)),
        ),
        closed=("backends",),
    )


GOOD = {
    "__init__.py": "from . import _backend\nfrom .errors import Oops\n",
    "errors.py": "class Oops(Exception):\n    pass\n",
    "_backend/__init__.py": "from ..errors import Oops\n",
    "lib.py": "from . import errors\nimport laypkg\n",
    "other.py": "from .lib import errors\n",
    "cli/__init__.py": "from .. import lib, other\n",
}


def test_a_package_that_keeps_the_contract_passes(checker, tmp_path, monkeypatch):
    _package(tmp_path, "laypkg", GOOD)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert checker.check("laypkg", _contract(checker, "laypkg")) == []


def test_each_violation_is_found_with_its_file_and_line(checker, tmp_path, monkeypatch):
    bad = dict(GOOD)
    bad["lib.py"] = """\
        from typing import TYPE_CHECKING

        from . import errors
        from ._backend import Oops

        if TYPE_CHECKING:
            from .other import Thing


        def later():
            from .cli.tool import main
        """
    bad["other.py"] = "from .lib import errors\n\nThing = int\n"
    bad["cli/tool.py"] = "def main():\n    pass\n"
    bad["stray.py"] = "x = 1\n"
    _package(tmp_path, "laybad", bad)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out = "\n".join(checker.check("laybad", _contract(checker, "laybad")))
    assert "import cycle among laybad.lib, laybad.other:" in out
    assert "laybad/lib.py:7: from .other import Thing  [TYPE_CHECKING]" in out
    assert "laybad/other.py:1: from .lib import errors" in out
    assert "libraries (laybad.lib) imports from faces (laybad.cli.tool), a higher layer" in out
    assert "laybad/lib.py:11: from .cli.tool import main" in out  # a lazy import counts
    assert "laybad.lib) imports laybad._backend: the backends are reached through the facade" in out
    assert "laybad/lib.py:4: from ._backend import Oops" in out
    assert "module laybad.stray is in no layer" in out


def test_the_command_fails_on_a_violation(checker, tmp_path, monkeypatch, capsys):
    bad = dict(GOOD, **{"errors.py": "from . import lib\n"})
    _package(tmp_path, "laycmd", bad)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(checker.CONTRACTS, "laycmd", _contract(checker, "laycmd"))
    assert checker.main(["import_cycles.py", "laycmd"]) == 1
    captured = capsys.readouterr()
    assert "shared (laycmd.errors) imports from libraries (laycmd.lib), a higher layer" in captured.out
    assert "laycmd/errors.py:1: from . import lib" in captured.out
    assert "violation(s) of the import contract of laycmd" in captured.err


def test_the_native_module_is_seen_through_the_line_that_names_it(checker, tmp_path, monkeypatch):
    # grimp cannot see an extension module: `from . import _native` resolves to the package.
    files = dict(GOOD, **{"lib.py": "from . import _native\n"})
    _package(tmp_path, "laynat", files)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    contract = _contract(checker, "laynat")
    contract = checker.Contract(
        layers=(*contract.layers[:1], ("backends", ("laynat._backend", "laynat._native")), *contract.layers[2:]),
        closed=("backends",),
        native=("laynat._native",),
    )
    out = "\n".join(checker.check("laynat", contract))
    assert "laynat/lib.py:1: from . import _native" in out
    assert "imports laynat._native: the backends are reached through the facade" in out
