"""The documentation site reads well (issue 32): ``mkdocs build --strict`` passing is not enough.

The site is built (mkdocs.yml, as ``make docs`` builds it) into a temporary folder with the
``mkdocs`` of the running Python (the ``test`` extra installs the ``docs`` one's tools, so CI runs
this), and its pages are read as HTML:

* no docstring shows a raw reST role (``:class:`Framer```) or a reST literal-block ``::``: the
  docstrings are Markdown with mkdocstrings cross-references (the package's sources hold no reST
  role, definition list or bare doctest either), and every cross-reference resolved (an unresolved one is a warning, which
  ``--strict`` makes an error, or text left as ``[Name][path]``);
* no entry shows the docstring of a builtin type (``str(object='') -> str``, ``int([x]) ->
  integer``), as griffe gives a constant of the compiled core that it imports; the constants show
  their value and a line of meaning;
* no entry of the API reference is empty (a heading with neither docstring nor members), and no
  attribute reads ``code = code`` (an instance attribute's value is the name it was assigned from);
* signatures are formatted (ruff is found) and say nothing of a missing formatter;
* every link between pages opens from disk: it names a file of the site, never a folder (which a
  browser shows as a directory listing when ``site/index.html`` is opened as a file);
* the pages use the theme's wider column and wrap table cells and long code lines
  (docs/css/extra.css).
"""

from __future__ import annotations

import ast
import html
import importlib.util
import inspect
import itertools
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

import pytest

import acp_fast

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = [
    "reference/index.html",
    "reference/core.html",
    "reference/traffic.html",
    "reference/integrations.html",
    "reference/cli.html",
]

#: A reST role as Sphinx writes it (``:class:`X```, ``:py:meth:`X```), as it shows once rendered.
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|attr|mod|exc|obj|const|ref|doc):`?[\w~.]")
#: A Markdown cross-reference that mkdocstrings did not turn into a link.
UNRESOLVED = re.compile(r"\]\[acp_fast[\w.]*\]")


def _builtin_docstrings() -> List[str]:
    """The first line of the docstring of each builtin type and slot a constant or a class of the
    compiled core could borrow from when it has none of its own."""
    docs = [t.__doc__ for t in (str, int, float, bool, bytes, dict, list, tuple, set, frozenset, object, type)]
    docs += [object.__init__.__doc__, object.__new__.__doc__, object.__repr__.__doc__, object.__eq__.__doc__]
    docs += [object.__hash__.__doc__, object.__reduce__.__doc__, object.__str__.__doc__]
    return sorted({d.strip().splitlines()[0] for d in docs if d})


# -- the HTML, as a tree --------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: Dict[str, str], parent: Optional[Node]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: List[object] = []  # Node or str

    @property
    def classes(self) -> List[str]:
        return self.attrs.get("class", "").split()

    def text(self, skip: Tuple[str, ...] = (), skip_tags: Tuple[str, ...] = ()) -> str:
        """The text inside, leaving out the subtrees that have one of the classes ``skip`` or
        one of the tags ``skip_tags``."""
        parts = []
        for child in self.children:
            if isinstance(child, Node):
                if not set(child.classes) & set(skip) and child.tag not in skip_tags:
                    parts.append(child.text(skip, skip_tags))
            else:
                parts.append(str(child))
        return "".join(parts)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find(self, cls: str) -> List[Node]:
        return [n for n in self.walk() if cls in n.classes]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Optional[Node] = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(path: Path) -> Node:
    builder = _TreeBuilder()
    builder.feed(path.read_text(encoding="utf-8"))
    builder.close()
    return builder.root


def main_text(page: Node, skip_tags: Tuple[str, ...] = ()) -> str:
    """The text of the page's article (not the navigation), without the elements ``skip_tags``."""
    mains = [n for n in page.walk() if n.attrs.get("role") == "main"]
    assert len(mains) == 1
    return html.unescape(mains[0].text(skip_tags=skip_tags))


# -- the build --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [name for name in ("mkdocs", "mkdocstrings", "griffe", "ruff") if importlib.util.find_spec(name) is None]
    if missing:  # a failure, not a skip: CI installs them with the test extra
        pytest.fail(f"{', '.join(missing)} missing from {sys.executable}: the test extra installs the docs extra")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    # mkdocstrings formats signatures with ruff (the docs extra); without it they stay on one line.
    assert "requires either Black or Ruff" not in log, log
    assert "WARNING" not in log, log
    return out


def entries(page: Node) -> Iterator[Tuple[str, Node]]:
    """``(id, entry)`` of every object of the API reference on the page."""
    for node in page.find("doc-object"):
        heading = next((n for n in node.children if isinstance(n, Node) and "doc-heading" in n.classes), None)
        if heading is not None:
            yield heading.attrs.get("id", "?"), node


def test_the_reference_pages_are_built(site: Path) -> None:
    for name in REFERENCE:
        assert (site / name).is_file(), name
    ids = {i for name in REFERENCE for i, _ in entries(parse(site / name))}
    for name in ("acp_fast.Framer", "acp_fast.FrameDecoder", "acp_fast.BACKEND", "acp_fast.MAX_FRAME_BYTES"):
        assert name in ids


def test_no_raw_rest_role_and_every_cross_reference_resolved(site: Path) -> None:
    found = []
    for page in sorted(site.rglob("*.html")):
        tree = parse(page)
        text = main_text(tree)
        found += [f"{page.relative_to(site)}: {m.group(0)!r}" for m in ROLE.finditer(text)]
        prose = main_text(tree, skip_tags=("code", "pre"))  # a page may show the syntax itself
        found += [f"{page.relative_to(site)}: unresolved {m.group(0)!r}" for m in UNRESOLVED.finditer(prose)]
    assert found == []


def test_no_rest_role_in_the_package_sources() -> None:
    # Private modules are not on the site, but their docstrings are read in editors: one style.
    found = []
    for path in sorted((ROOT / "python" / "acp_fast").rglob("*.py*")):
        if path.suffix in (".py", ".pyi"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{number}: {m.group(0)!r}" for m in ROLE.finditer(line)]
    assert found == []


def _docstrings(tree: ast.Module) -> Iterator[Tuple[int, str]]:
    """``(line, cleaned text)`` of every docstring of a module: its own, its classes' and
    functions', and the string right below an assignment (an attribute's)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield getattr(node, "lineno", 1), doc
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for first, second in itertools.pairwise(body):
                if (
                    isinstance(first, (ast.Assign, ast.AnnAssign))
                    and isinstance(second, ast.Expr)
                    and isinstance(second.value, ast.Constant)
                    and isinstance(second.value.value, str)
                ):
                    yield second.lineno, inspect.cleandoc(second.value.value)


def _rest_layout(doc: str) -> List[str]:
    """What Markdown would garble in a docstring written for reST: a definition list (a term line,
    its definition indented below it, which Markdown runs into one paragraph) and a doctest at
    the margin (``>>>`` is a Markdown quote); fenced and indented code blocks are left alone."""
    found = []
    lines = doc.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or i == 0:
            continue
        prev = lines[i - 1]
        if line.startswith(">>>") and not prev.startswith(">>>"):
            found.append(f"a doctest outside a code block: {line[:60]!r}")
        indent = len(line) - len(line.lstrip())
        term = line.strip() and prev.strip() and not prev.startswith(" ") and not prev.rstrip().endswith(":")
        if term and indent >= 4 and not re.match(r"([*+-]|\d+\.)\s", prev):
            found.append(f"a definition list: {prev[:60]!r}")
    return found


def test_no_rest_layout_in_the_package_docstrings() -> None:
    found = []
    for path in sorted((ROOT / "python" / "acp_fast").rglob("*.py*")):
        if path.suffix in (".py", ".pyi"):
            for line, doc in _docstrings(ast.parse(path.read_text(encoding="utf-8"))):
                found += [f"{path.relative_to(ROOT)}:{line}: {what}" for what in _rest_layout(doc)]
    assert found == []


def test_no_rest_literal_block_marker(site: Path) -> None:
    # reST's "text::" before an indented block: Markdown shows the two colons.
    found = []
    for name in REFERENCE:
        for node in parse(site / name).walk():
            if node.tag == "p" and html.unescape(node.text()).rstrip().endswith("::"):
                found.append(f"{name}: {' '.join(node.text().split())[-80:]!r}")
    assert found == []


def test_no_builtin_docstring(site: Path) -> None:
    builtin = _builtin_docstrings()
    assert "str(object='') -> str" in builtin and "int([x]) -> integer" in builtin
    found = []
    for name in REFERENCE:
        text = main_text(parse(site / name))
        found += [f"{name}: {doc!r}" for doc in builtin if doc in text]
    assert found == []


def _entry(site: Path, page: str, ident: str) -> Node:
    for i, node in entries(parse(site / page)):
        if i == ident:
            return node
    raise AssertionError(f"{ident} not on {page}")


def _docstring(entry: Node) -> str:
    contents = [n for n in entry.children if isinstance(n, Node) and "doc-contents" in n.classes]
    assert len(contents) == 1
    return " ".join(contents[0].text(skip=("doc-children", "doc-class-bases")).split())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BACKEND", None),
        ("DEFAULT_MAX_FRAME_BYTES", acp_fast.DEFAULT_MAX_FRAME_BYTES),
        ("MAX_FRAME_BYTES", acp_fast.MAX_FRAME_BYTES),
    ],
)
def test_constants_show_their_value_and_meaning(site: Path, name: str, value: Optional[int]) -> None:
    entry = _entry(site, "reference/core.html", f"acp_fast.{name}")
    doc = _docstring(entry)
    assert len(doc.split()) >= 4, doc  # a line of meaning, not just the value
    if value is None:
        assert '"rust"' in doc and '"python"' in doc, doc  # the two values BACKEND takes
    else:
        assert str(value) in doc, doc


def test_no_empty_entry_and_no_self_named_attribute(site: Path) -> None:
    empty, self_named = [], []
    for name in REFERENCE:
        for ident, entry in entries(parse(site / name)):
            if "doc-module" in entry.classes:
                continue  # a module's page section: its members follow
            if not _docstring(entry):
                empty.append(f"{name}: {ident}")
            if "doc-attribute" in entry.classes:
                signature = " ".join(html.unescape(entry.find("doc-signature")[0].text()).split())
                attr = ident.rsplit(".", 1)[-1]
                if re.fullmatch(rf"{re.escape(attr)}(: .+)? = {re.escape(attr)}", signature):
                    self_named.append(f"{name}: {signature}")
    assert empty == []
    assert self_named == []


def test_signatures_are_formatted(site: Path) -> None:
    # ToolCallStore's constructor has 15 parameters: one line each once formatted.
    entry = _entry(site, "reference/core.html", "acp_fast.ToolCallStore")
    signature = html.unescape(entry.find("doc-signature")[0].text())
    assert signature.startswith("ToolCallStore(\n"), signature
    assert "\n    max_tool_calls: " in signature, signature


def test_links_open_from_disk(site: Path) -> None:
    broken = []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":
            continue  # served at any path by a web server: its links are absolute, by design
        for node in parse(page).walk():
            target = node.attrs.get("href") if node.tag in ("a", "link") else None
            if not target or urlsplit(target).scheme or target.startswith(("#", "//")):
                continue
            path = unquote(urlsplit(target).path)
            resolved = (page.parent / path).resolve()
            if path.endswith("/") or not resolved.is_file():
                broken.append(f"{page.relative_to(site)} -> {target}")
    assert broken == []


def test_the_theme_fits_code_and_tables(site: Path) -> None:
    page = parse(site / "reference/core.html")
    sheets = [n.attrs["href"] for n in page.walk() if n.tag == "link" and n.attrs.get("rel") == "stylesheet"]
    assert "../css/extra.css" in sheets, sheets
    css = (site / "css/extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.wy-nav-content\s*\{[^}]*max-width:\s*(none|1[2-9]\d\dpx)", css), css
    assert re.search(r"table td[^{]*\{[^}]*white-space:\s*normal", css, re.S), css
    assert re.search(r"pre code\s*\{[^}]*white-space:\s*pre-wrap", css), css
