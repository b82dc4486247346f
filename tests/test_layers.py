"""The layers stay put: arrows point down (cli -> _run -> _eval -> features -> providers -> _core).

Every import counts, also those inside functions and under `TYPE_CHECKING`: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "niceeval"

UPPER = ("niceeval._eval", "niceeval._run", "niceeval.report", "niceeval.cli", "niceeval.pytest_plugin")
"""What no feature may import."""

FEATURES = [
    "niceeval.agents",
    "niceeval.judge",
    "niceeval.sandbox",
    "niceeval.testing",
    "niceeval.providers",
    "niceeval.providers._pricing",
    "niceeval._core.settings",
    "niceeval.expect",
    "niceeval._core.values",
    "niceeval._core.threads",
    "niceeval._core.loopback",
    "niceeval.stats",
    "niceeval.tracing",
    "niceeval.simulation",
    "niceeval.attacks",
]

RULES: list[tuple[str, tuple[str, ...]]] = [
    *((feature, UPPER + ("niceeval.store", "niceeval.web")) for feature in FEATURES),
    ("niceeval.render", UPPER + ("niceeval.store", "niceeval.web", *(f for f in FEATURES if f != "niceeval.stats"))),
    ("niceeval.report", ("niceeval._eval", "niceeval._run", "niceeval.cli", "niceeval.pytest_plugin", "niceeval.web")),
    ("niceeval._eval", ("niceeval._run", "niceeval.report", "niceeval.cli", "niceeval.pytest_plugin")),
    ("niceeval.store", UPPER + ("niceeval.web",)),
    ("niceeval.web", ("niceeval._eval", "niceeval._run", "niceeval.cli", "niceeval.pytest_plugin", "niceeval.report")),
    ("niceeval._run", ("niceeval.cli", "niceeval.pytest_plugin")),
    ("niceeval.online", ("niceeval.cli", "niceeval.pytest_plugin", "niceeval.web")),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, module_level_only: bool = False) -> Iterator[str]:
    """Every module `path` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    nodes = tree.body if module_level_only else ast.walk(tree)
    for node in nodes:
        if module_level_only and isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks
            yield from (name for inner in node.body for name in _names(inner, package))
        yield from _names(node, package)


def _names(node: ast.AST, package: str) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def modules(prefix: str) -> list[Path]:
    folder = PACKAGE.parent.joinpath(*prefix.split("."))
    if folder.is_dir():
        return sorted(folder.rglob("*.py"))
    file = folder.with_suffix(".py")
    return [file] if file.exists() else []


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize(("layer", "forbidden"), RULES, ids=[layer for layer, _ in RULES])
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    wrong = [
        f"{module_name(path)} imports {name}"
        for path in modules(layer)
        for name in imports(path)
        if any(within(name, upper) for upper in forbidden)
    ]
    assert wrong == []


def test_core_imports_only_core() -> None:
    wrong = [
        f"{module_name(path)} imports {name}"
        for path in modules("niceeval._core")
        for name in imports(path)
        if within(name, "niceeval") and not within(name, "niceeval._core")
    ]
    assert wrong == []


ROOT_MODULES = {"__init__", "__main__", "pytest_plugin"}
"""The only modules at the package root: the package, `python -m niceeval`, and pytest's entry point. Everything
else lives in a folder named for what it serves (a newcomer finds a feature's room from the folder names alone)."""

COMMAND_LINE = {"cli", "pytest_plugin", "__main__"}
"""The top: may use every layer."""


def test_the_package_root_holds_only_folders_and_entry_points() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")} - ROOT_MODULES
    assert loose == set(), "move each loose module into the package it serves"


def test_every_package_is_placed_in_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    placed = {name.split(".")[1] for name in FEATURES} | {layer.split(".")[1] for layer, _ in RULES} | {"_core"}
    assert packages - placed - COMMAND_LINE == set(), "place each new package in a layer here"


def _module_graph(package: str) -> dict[str, set[str]]:
    """Which modules of `package` each of its modules imports. The package's own `__init__` is left out: it
    re-exports its modules, and they may import a sibling through it (`from niceeval.store import _read`)."""
    names = {module_name(path) for path in modules(package)} - {package}
    graph: dict[str, set[str]] = {}
    for path in modules(package):
        own = module_name(path)
        if own == package:
            continue
        found = {n if n in names else n.rpartition(".")[0] for n in imports(path)}
        graph[own] = (found & names) - {own}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            if group:
                groups.append(sorted([*group, node]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


PACKAGES = sorted(f"niceeval.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists())


@pytest.mark.parametrize("package", PACKAGES)
def test_no_modules_of_a_package_import_each_other_in_a_circle(package: str) -> None:
    assert _cycles(_module_graph(package)) == []


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def test_no_module_imports_another_modules_private_names() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = module_name(path)
        package = own if path.name == "__init__.py" else own.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and base != own and not _is_module(f"{base}.{alias.name}"):
                    wrong.append(f"{own} imports {alias.name} from {base}")
    assert wrong == [], "a name another module needs is not private: drop its leading underscore"


CHAIN = {"gate", "at_least", "optional"}


def test_assertion_chaining_is_implemented_once() -> None:
    """`gate`/`at_least`/`optional` live in `Chainable`; each kind of assertion only says how it changes."""
    defined = [
        f"{module_name(path)}.{node.name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(item, ast.FunctionDef) and item.name in CHAIN for item in node.body)
    ]
    assert defined == ["niceeval._core.assertion.Chainable"]


def test_reports_and_shared_rendering_never_import_the_viewers_server() -> None:
    """The HTML report renders with `niceeval.render`; neither pulls in Starlette, uvicorn or the viewer."""
    wrong = [
        f"{module_name(path)} imports {name}"
        for layer in ("niceeval.report", "niceeval.render")
        for path in modules(layer)
        for name in imports(path)
        if any(within(name, server) for server in ("starlette", "uvicorn", "niceeval.web"))
    ]
    assert wrong == []


DOORS = {
    "niceeval.judge._runtime": "the runner wires a run's judge: clients, cache, runtime and session, select-best, cost",
    "niceeval.store._recorder": "the runner writes a suite's runs through one Recorder, opened once",
    "niceeval.agents._runtime": "the runner sets the workspace, builds each variant's agent, replays for rescore",
    "niceeval.tracing._session": "agent adapters open a session's trace on the suite-wide receiver and collector",
    "niceeval.expect._runtime": "the eval layer resolves tool/event patterns and levenshtein for declared asserts",
    "niceeval.web._serve": "`niceeval view` serves the viewer with uvicorn",
    "niceeval.online._watch": "`niceeval watch` builds the watcher, its bounds and the record of its results",
}
"""The one private module a package offers other packages, each with why (docs/design/layout.md, "Doors")."""


def _private_module(name: str) -> str | None:
    """`niceeval.store._recorder` for any import that reaches into it (a module or a name in it), else None."""
    parts = name.split(".")
    for end in range(3, len(parts) + 1):
        if parts[end - 1].startswith("_") and not parts[end - 1].startswith("__"):
            module = ".".join(parts[:end])
            return module if _is_module(module) else None
    return None


def test_packages_reach_each_other_only_through_public_names_or_their_one_door() -> None:
    wrong = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        own = module_name(path).split(".")
        for name in imports(path):
            private = _private_module(name) if within(name, "niceeval") else None
            if private is None or private.split(".")[1] == own[1] or private.split(".")[1] == "_core":
                continue
            if private not in DOORS:
                wrong.add(f"{'.'.join(own)} imports {private}")
    assert sorted(wrong) == [], "import the package's public names, or its door module listed in DOORS"


def test_the_door_finder_sees_a_private_module_of_another_package() -> None:
    assert _private_module("niceeval.judge._runtime.JudgeRuntime") == "niceeval.judge._runtime"
    assert _private_module("niceeval.store.Store") is None
