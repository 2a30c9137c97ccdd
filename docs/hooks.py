"""mkdocs hooks (mkdocs.yml ``hooks:``): the README and the changelog, which live at the top of
the repository, become the site's ``index.md`` and ``changelog.md``, with their links made
relative to ``docs/``; a link to another file of the repository becomes its path in code."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, List, Set

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"index.md": "README.md", "changelog.md": "CHANGELOG.md"}
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
REFERENCE = re.compile(r"^::: (\S+)", re.M)


def _relink(markdown: str) -> str:
    def fix(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        if "://" in target or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        if path.startswith("docs/"):
            return f"{bang}[{text}]({path[len('docs/') :]}{'#' + anchor if anchor else ''})"
        if path == "README.md":
            return f"[{text}](index.md)"
        if path == "CHANGELOG.md":
            return f"[{text}](changelog.md)"
        return text if text.strip("`") == path else f"{text} (`{path}`)"

    return LINK.sub(fix, markdown)


def on_files(files: Files, config: Any) -> Files:
    for page, source in PAGES.items():
        files.append(File.generated(config, page, content=_relink((ROOT / source).read_text(encoding="utf-8"))))
    return files


# ---------------------------------------------------------------------------------------------
# Every public name has a docstring: the modules of the reference pages (their `::: module`
# lines), their public functions, classes and constants (`__all__` where a module has one), and
# the public methods and properties of those classes. A missing one is a warning, which
# `mkdocs build --strict` (make docs) turns into an error.

log = logging.getLogger("mkdocs.hooks.docstrings")


def undocumented(modules: List[str], search_path: Path) -> List[str]:
    """The public objects of ``modules`` (and of their classes) that have no docstring."""
    import griffe

    extensions = griffe.load_extensions(str(Path(__file__).with_name("griffe_doc_comments.py")))
    loader = griffe.GriffeLoader(search_paths=[str(search_path)], extensions=extensions)
    for name in modules:
        loader.load(name.split(".")[0])
    loader.resolve_aliases(implicit=False, external=False)
    missing: List[str] = []
    seen: Set[str] = set()

    def walk(obj: Any, in_class: bool) -> None:
        for name, member in obj.members.items():
            if name.startswith("_") or not (in_class or member.is_public):
                continue
            if member.is_alias and not member.target_path.startswith("acp_fast."):
                continue  # re-exported from another package: documented there
            target = member.final_target if member.is_alias else member
            if target.path in seen or target.is_module or (in_class and target.is_attribute):
                continue
            seen.add(target.path)
            if target.docstring is None or not target.docstring.value.strip():
                missing.append(
                    f"{obj.path}.{name}"
                    + (f" (defined as {target.path})" if target.path != f"{obj.path}.{name}" else "")
                )
            if target.is_class:
                walk(target, True)

    for name in modules:
        module = loader.modules_collection[name]
        if module.docstring is None:
            missing.append(f"{name} (the module)")
        walk(module, False)
    return missing


def on_pre_build(config: Any) -> None:
    docs = Path(config["docs_dir"])
    modules = [
        m for page in sorted((docs / "reference").glob("*.md")) for m in REFERENCE.findall(page.read_text("utf-8"))
    ]
    for name in undocumented(modules, ROOT / "python"):
        log.warning(f"no docstring: {name}")
