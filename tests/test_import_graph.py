"""The import graph of the package has no circle and no upward arrow.

Every import of ``src/labelguard`` counts, wherever it stands: at the top of a module, inside a
function (imported late) or under ``TYPE_CHECKING`` (for the types only), since each is a
dependency a reader must follow. Two graphs are checked:

* modules: no module reaches itself through imports;
* parts: the top-level parts of the package (``core``, ``readers``, ``rules``, ``layouts``,
  ``torch``, ``explain``, ``fix``, ``output``, and the top-level modules ``cli``, ``config``...)
  form no circle either, so they stand on floors with every import pointing down: a layer
  never imports a layer that imports it back; and the floors CONTRIBUTING.md names, in its
  order, are the real ones.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import labelguard

PACKAGE = Path(labelguard.__file__).parent


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name imported from a package counts as
    that package's module when it is one, else as the package)."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "labelguard":
                    resolved = resolve(target)
                    if resolved and resolved != name:
                        found.add(resolved)
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def part_of(module: str) -> str:
    """``labelguard.rules.lg201`` -> ``rules``; ``labelguard.cli`` -> ``cli``; the package
    itself -> ``labelguard``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module == "labelguard":  # the package's face re-exports from every part
            continue
        source = part_of(module)
        parts.setdefault(source, set()).update(
            part_of(target) for target in targets if target != "labelguard" and part_of(target) != source)
    return parts


def why(graph: dict[str, set[str]], circle: list[str]) -> list[str]:
    members = set(circle)
    return [f"{module} -> {target}" for module in sorted(graph) for target in sorted(graph[module])
            if part_of(module) in members and part_of(target) in members and part_of(module) != part_of(target)]


def test_no_module_imports_itself_through_others():
    assert circles(import_graph()) == []


def test_the_parts_of_the_package_stand_on_floors_with_every_import_pointing_down():
    graph = import_graph()
    found = circles(part_graph(graph))
    assert found == [], [why(graph, circle) for circle in found]


def stated_floors(text: str) -> list[str]:
    """The parts CONTRIBUTING.md names as floors, lowest first: its first chain of
    ```part` < `part` < ... < `part```, where ``...`` stands for parts it leaves unnamed."""
    found = re.search(r"`[\w.]+`(?: < (?:\.\.\. < )?`[\w.]+`)+", " ".join(text.split()))
    assert found, "CONTRIBUTING.md names no floors (`core` < `readers` < ...)"
    return re.findall(r"`([\w.]+)`", found.group())


def upward(parts: dict[str, set[str]], floors: list[str]) -> list[str]:
    """The imports among ``floors`` (lowest first) that point to a floor above their own."""
    level = {part: i for i, part in enumerate(floors)}
    return [f"{part} -> {target}" for part in floors for target in sorted(parts.get(part, ()))
            if level.get(target, -1) > level[part]]


def test_the_floors_contributing_states_hold_every_import_pointing_down():
    floors = stated_floors((Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    parts = part_graph(import_graph())
    assert len(floors) >= 4 and set(floors) <= set(parts), (floors, sorted(parts))
    assert upward(parts, floors) == []


def test_an_import_up_the_stated_floors_is_seen():
    floors = stated_floors("parts (`core` < `readers` < ... < `cli`)")
    assert floors == ["core", "readers", "cli"]
    assert upward({"core": {"readers"}, "readers": {"core"}, "cli": {"core", "readers"}}, floors) == ["core -> readers"]


def test_the_graph_sees_imports_wherever_they_stand(tmp_path):
    """The checks above can fail: a late import and one for types only are arrows too."""
    package = tmp_path / "labelguard"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from labelguard.high.b import B\n")
    (package / "high").mkdir()
    (package / "high" / "__init__.py").write_text("def f():\n    from labelguard.low import a\n")
    (package / "high" / "b.py").write_text("from ..low.a import A\n")
    graph = import_graph(package)
    assert graph["labelguard.low.a"] == {"labelguard.high.b"}
    assert graph["labelguard.high.b"] == {"labelguard.low.a"}
    assert graph["labelguard.high"] == {"labelguard.low.a"}
    assert circles(graph) == [["labelguard.high.b", "labelguard.low.a"]]
    assert circles(part_graph(graph)) == [["high", "low"]]
