"""The compiler's modules import one another without a circle (issue 24): options, framework,
registry, kinds and plugins each sit below what uses them, so any of them loads on its own."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v) & modules:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return found


def test_no_import_cycle_among_the_compiler_modules() -> None:
    graph = grimp.build_graph("trainjob", cache_dir=None)
    runtime = {m for m in graph.modules if m.startswith("trainjob.runtime.")}
    assert "trainjob.runtime.compiler" in runtime
    assert _cycles(graph, runtime) == []
