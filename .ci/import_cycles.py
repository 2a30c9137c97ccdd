"""The package's import contract (`make lint`): no import cycle, and layers that do not point up.

    python3 .ci/import_cycles.py acp_fast

The import graph comes from grimp (`pip install grimp`, in the `lint` extra). Every import
statement counts, including one inside a function (a lazy import only postpones a cycle to the
first call) and one under ``if TYPE_CHECKING:`` (it never runs, but the two modules still depend
on each other: a cycle closed only by typing is a cycle all the same). A module importing itself
does not count.

The layers of ``acp_fast``, lowest first (``LAYERS``): a module imports only from its own layer
or lower ones, and every module is in a layer (a new one is placed here). The backends are
closed (``CLOSED``): above them, only the facade imports them (and the benchmark, which measures
each backend; ``CLOSED_EXCEPT``); everything else reaches the backend through the facade.

Each violation is printed as ``file:line: the import`` with what it breaks; the exit status is 1
when there is one.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

import grimp


@dataclass(frozen=True)
class Contract:
    """Layers, lowest first: (name, the modules and packages in it). A module is in the layer of
    the longest name that is itself or one of its packages (the top package holds only itself). ``closed``: layers that only their own
    layer and the layer just above import, except the modules in ``closed_except``. ``native``:
    extension modules that grimp cannot see (an import of one resolves to its package; the line
    that names it is credited to it)."""

    layers: Sequence[Tuple[str, Sequence[str]]]
    closed: Sequence[str] = ()
    closed_except: Sequence[str] = ()
    native: Sequence[str] = ()


#: The contract of acp_fast.
ACP_FAST = Contract(
    layers=(
        # What every layer shares: errors, schema problems, Batch, and the input and output files
        # and argument types of the command line, the proxy, the analytics and the benchmark, and the
        # tool-calls table's columns (acp_fast.arrow and the fallback).
        (
            "shared types",
            (
                "acp_fast.errors",
                "acp_fast.problems",
                "acp_fast.batch",
                "acp_fast._inputs",
                "acp_fast._outputs",
                "acp_fast._terminal",
                "acp_fast._tables",
            ),
        ),
        ("backends", ("acp_fast._native", "acp_fast._fallback")),
        ("facade", ("acp_fast",)),
        (
            "libraries",
            tuple(
                f"acp_fast.{name}"
                for name in (
                    "arrow",
                    "dask",
                    "ray",
                    "recording",
                    "trace",
                    "otel",
                    "traffic",
                    "bridge",
                    "builders",
                    "integrations",
                )
            ),
        ),
        ("proxy", ("acp_fast.proxy",)),
        # `acp-fast serve` / `connect`: the proxy's pieces per network connection
        ("network", ("acp_fast.net",)),
        ("faces", ("acp_fast.cli", "acp_fast.bench")),
    ),
    closed=("backends",),
    closed_except=("acp_fast.bench",),
    native=("acp_fast._native",),
)

CONTRACTS = {"acp_fast": ACP_FAST}


def strongly_connected(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Tarjan's algorithm, iterative: the components of more than one module, each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    components: List[List[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def shortest_cycle(graph: Dict[str, Set[str]], start: str, members: Set[str]) -> List[str]:
    """A shortest path start -> ... -> start inside one component (breadth first)."""
    previous: Dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & members):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if succ not in previous:
                    previous[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no cycle")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    text: str
    typing_only: bool  # under `if TYPE_CHECKING:`


class Graph:
    """The package's imports (TYPE_CHECKING ones included, marked), with the files they are in."""

    def __init__(self, package: str, native: Sequence[str] = ()) -> None:
        built = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=False)
        running = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
        self.modules: Set[str] = set(built.modules) | set(native)
        self.imports: Dict[Tuple[str, str], List[Import]] = {}
        for importer in sorted(built.modules):
            for imported in built.find_modules_directly_imported_by(importer):
                at_run = {d["line_number"] for d in running.get_import_details(importer=importer, imported=imported)}
                for detail in built.get_import_details(importer=importer, imported=imported):
                    target = imported
                    for ext in native:  # grimp resolves `from . import _native` to the package
                        parent, _, last = ext.rpartition(".")
                        if imported == parent and re.search(rf"\b{re.escape(last)}\b", detail["line_contents"]):
                            target = ext
                    if target == importer:
                        continue
                    found = Import(
                        importer,
                        target,
                        detail["line_number"],
                        detail["line_contents"],
                        detail["line_number"] not in at_run,
                    )
                    self.imports.setdefault((importer, target), []).append(found)
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, f"{package} is not a package"
        self.root = Path(next(iter(spec.submodule_search_locations)))

    def edges(self) -> Dict[str, Set[str]]:
        graph: Dict[str, Set[str]] = {m: set() for m in self.modules}
        for importer, imported in self.imports:
            graph[importer].add(imported)
        return graph

    def where(self, found: Import) -> str:
        """``file:line: the import`` (the file relative to the working directory when inside it)."""
        parts = found.importer.split(".")[1:]
        path = self.root.joinpath(*parts)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        try:
            shown = str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            shown = str(path)
        typing = "  [TYPE_CHECKING]" if found.typing_only else ""
        return f"{shown}:{found.line}: {found.text}{typing}"


def layer_of(contract: Contract, module: str) -> Optional[int]:
    """The index of the layer of ``module`` (None when it is in none)."""
    best: Optional[Tuple[int, int]] = None
    for i, (_name, members) in enumerate(contract.layers):
        for name in members:
            inside = module.startswith(name + ".") and "." in name  # the top package: itself only
            if (module == name or inside) and (best is None or len(name) > best[1]):
                best = (i, len(name))
    return None if best is None else best[0]


def check(package: str, contract: Contract) -> List[str]:
    """Every violation of ``contract`` by ``package``, as lines to print (none: it holds)."""
    graph = Graph(package, contract.native)
    out: List[str] = []
    edges = graph.edges()
    for members in strongly_connected(edges):
        cycle = shortest_cycle(edges, members[0], set(members))
        out.append(f"import cycle among {', '.join(members)}:\n  {' -> '.join(cycle)}")
        shown = set(itertools.pairwise(cycle))
        for importer, imported in itertools.pairwise(cycle):
            out += [f"    {graph.where(found)}" for found in graph.imports[importer, imported]]
        typing = [  # the other imports inside the component that only typing needs
            found
            for (importer, imported), imports in sorted(graph.imports.items())
            if importer in members and imported in members and (importer, imported) not in shown
            for found in imports
            if found.typing_only
        ]
        if typing:
            out.append("  and, in the same cycles, under TYPE_CHECKING:")
            out += [f"    {graph.where(found)}" for found in typing]
    names = [name for name, _ in contract.layers]
    unplaced = sorted(m for m in graph.modules if layer_of(contract, m) is None)
    out += [f"module {m} is in no layer (place it in .ci/import_cycles.py)" for m in unplaced]
    for (importer, imported), found in sorted(graph.imports.items()):
        low, high = layer_of(contract, importer), layer_of(contract, imported)
        if low is None or high is None:
            continue
        if high > low:
            why = f"{names[low]} ({importer}) imports from {names[high]} ({imported}), a higher layer"
        elif (
            names[high] in contract.closed
            and low > high + 1
            and not any(importer == e or importer.startswith(e + ".") for e in contract.closed_except)
        ):
            why = f"{names[low]} ({importer}) imports {imported}: the {names[high]} are reached through the {names[high + 1]}"
        else:
            continue
        out.append(f"layers: {why}:")
        out += [f"    {graph.where(f)}" for f in found]
    return out


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[1] not in CONTRACTS:
        print(__doc__, file=sys.stderr)
        return 2
    package = argv[1]
    violations = check(package, CONTRACTS[package])
    for line in violations:
        print(line)
    if violations:
        count = sum(not line.startswith(" ") for line in violations)
        print(f"{count} violation(s) of the import contract of {package}", file=sys.stderr)
        return 1
    print(f"the import contract of {package} holds: no cycle, {len(CONTRACTS[package].layers)} layers kept")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
