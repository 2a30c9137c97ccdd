"""Fail when modules of a package import each other in a cycle (`make lint`).

    python3 .ci/import_cycles.py acp_fast

The import graph comes from grimp (`pip install grimp`, in the `lint` extra). Every import
statement counts, including one inside a function: a lazy import only postpones a cycle to the
first call. Imports under ``if TYPE_CHECKING:`` do not count (they never run), nor does a module
importing itself (``from . import _native`` in a package whose native module grimp cannot see).
Each cycle is printed with the file and line of every import in it.
"""

from __future__ import annotations

import itertools
import sys
from typing import Dict, List, Set

import grimp


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


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    package = argv[1]
    built = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=True)
    graph = {m: {i for i in built.find_modules_directly_imported_by(m) if i != m} for m in built.modules}
    cycles = strongly_connected(graph)
    for members in cycles:
        cycle = shortest_cycle(graph, members[0], set(members))
        print(f"import cycle among {', '.join(members)}:\n  {' -> '.join(cycle)}")
        for importer, imported in itertools.pairwise(cycle):
            for detail in built.get_import_details(importer=importer, imported=imported):
                print(f"    {importer}:{detail['line_number']}: {detail['line_contents']}")
    if cycles:
        print(f"{len(cycles)} import cycle(s) in {package}", file=sys.stderr)
        return 1
    print(f"no import cycle in {package} ({len(graph)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
