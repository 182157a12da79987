"""The shape of the Python package (issue 25, "Shape"): no import circles
between its modules, and the command line tool at the top.

The import graph is read from the sources with ``ast``: every ``import`` and
``from ... import`` statement counts, at the top of a module or inside a
function (an import run late is still a dependency), relative or absolute.
"""
import ast
import pathlib

PACKAGE = "vmafdnn"
SOURCE = pathlib.Path(__file__).resolve().parents[2] / "python" / PACKAGE

# The command line tool imports the rest; only its entry points import it.
CLI = "cli"
CLI_IMPORTERS = {"_console"}
# Modules the command line tool, batch and the reports share: they import no
# front end (their users do).
FRONT_ENDS = {"cli", "batch", "bdrate", "plot", "jobs", "results", "runners", "_console",
              "__main__"}
SHARED = {"cliargs", "frames"}


def _modules():
    """{module name: path}: the package's own modules ("__init__" is the
    package itself, "models" its subpackage)."""
    found = {p.stem: p for p in SOURCE.glob("*.py")}
    for init in SOURCE.glob("*/__init__.py"):
        found[init.parent.name] = init
    return found


def _imports(name: str, path: pathlib.Path, modules):
    """(imported module, line, private names taken from it) for every import
    statement of the module, anywhere in it, and for every private attribute
    read from a module it imported by name (``cli._seconds``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bound = {}
    package = [PACKAGE] + ([name] if path.name == "__init__.py" and name != "__init__" else [])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    yield (parts[1] if len(parts) > 1 and parts[1] in modules else "__init__",
                           node.lineno, ())
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, or its parent
                base = package[:len(package) - (node.level - 1)]
            else:
                base = []
            full = base + (node.module.split(".") if node.module else [])
            if not full or full[0] != PACKAGE:
                continue
            parts = full[1:]
            private = tuple(a.name for a in node.names if a.name.startswith("_"))
            if parts and parts[0] in modules:
                yield parts[0], node.lineno, private
            elif not parts:  # from . import a, b: modules, or names of the package
                for alias in node.names:
                    if alias.name in modules:
                        bound[alias.asname or alias.name] = alias.name
                    yield (alias.name if alias.name in modules else "__init__"), node.lineno, ()
    # module._name, for a module bound by "from . import module [as alias]"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in bound and node.attr.startswith("_"):
            yield bound[node.value.id], node.lineno, (node.attr,)


def import_graph():
    """{module: {imported module: first line}} and the private names each
    module imports from another, as (importer, line, module, name)."""
    modules = _modules()
    graph, private = {}, []
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for target, line, names in _imports(name, path, modules):
            if target != name:
                edges.setdefault(target, line)
                private.extend((name, line, target, n) for n in names)
    return graph, private


def cycles(graph):
    """(one cycle: a list of modules, first == last; the modules of its
    component) per strongly connected component of more than one module
    (Tarjan, iteratively)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    found = []
    for component in components:
        start = min(component)
        # The shortest way back to start inside the component.
        paths, frontier = {start: [start]}, [start]
        while frontier and start not in [c for n in frontier for c in graph[n]]:
            nxt = []
            for n in frontier:
                for c in sorted(graph[n]):
                    if c in component and c not in paths:
                        paths[c] = paths[n] + [c]
                        nxt.append(c)
            frontier = nxt
        last = next(n for n in frontier if start in graph[n])
        found.append((paths[last] + [start], sorted(component)))
    return found


def _shown(cycle, component, graph):
    shown = " -> ".join(f"{a}.py:{graph[a][b]}" for a, b in zip(cycle, cycle[1:]))
    others = sorted(set(component) - set(cycle))
    return f"{shown} -> {cycle[-1]}" + (f" (with {', '.join(others)} in the same circle)"
                                         if others else "")


def test_the_graph_sees_imports_inside_functions():
    graph, _ = import_graph()
    assert "scoring" in graph["cli"] and "video" in graph["scoring"]
    assert "media" in graph["video"]  # imported inside _open_media


def test_no_import_cycles():
    graph, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (module.py:line of the import):\n" + "\n".join(
        _shown(c, members, graph) for c, members in found)


def test_only_the_entry_points_import_the_command_line_tool():
    graph, _ = import_graph()
    importers = sorted(f"{m}.py:{edges[CLI]}" for m, edges in graph.items()
                       if CLI in edges and m not in CLI_IMPORTERS)
    assert not importers, f"modules importing {CLI}: {', '.join(importers)}"


def test_shared_modules_import_no_front_end():
    graph, _ = import_graph()
    for name in SHARED:
        assert name in graph, f"{name}.py is missing"
        wrong = sorted(f"{t} ({name}.py:{line})" for t, line in graph[name].items()
                       if t in FRONT_ENDS)
        assert not wrong, f"{name} imports front ends: {', '.join(wrong)}"


def test_no_private_names_of_the_cli_or_the_shared_modules_are_borrowed():
    _, private = import_graph()
    borrowed = sorted(f"{m}.py:{line} imports {t}.{n}" for m, line, t, n in private
                      if t in SHARED | {CLI} | {"video"})
    assert not borrowed, "\n".join(borrowed)


def test_every_public_module_is_an_attribute_of_the_package():
    import vmafdnn
    public = {m for m in _modules() if not m.startswith("_")}
    assert public == set(vmafdnn._SUBMODULES)
