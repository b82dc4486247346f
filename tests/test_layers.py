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
    "niceeval._pricing",
    "niceeval._settings",
    "niceeval._matchers",
    "niceeval._diff",
    "niceeval._threads",
    "niceeval._loopback",
]

RULES: list[tuple[str, tuple[str, ...]]] = [
    *((feature, UPPER + ("niceeval.store", "niceeval.web")) for feature in FEATURES),
    ("niceeval.report", ("niceeval._eval", "niceeval._run", "niceeval.cli", "niceeval.pytest_plugin")),
    ("niceeval._eval", ("niceeval._run", "niceeval.report", "niceeval.cli", "niceeval.pytest_plugin")),
    ("niceeval.store", UPPER + ("niceeval.web",)),
    ("niceeval.web", ("niceeval._eval", "niceeval._run", "niceeval.cli", "niceeval.pytest_plugin")),
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


def test_the_feature_list_covers_every_module_below_the_eval_layer() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    placed = {name.split(".")[1] for name in FEATURES} | {layer.split(".")[1] for layer, _ in RULES} | {"_core"}
    command_line = {"cli", "_store_views", "_init_template", "pytest_plugin"}  # the top: may use all
    unplaced = {name for name in top - placed - command_line if not name.startswith("_cli")}  # `_cli_*`: the top too
    unplaced -= {"__init__", "expect", "_run"}
    assert unplaced == set(), "place each new top-level module in a layer here"


def test_no_two_modules_of_the_eval_layer_import_each_other() -> None:
    graph = {
        module_name(path): {n for n in imports(path, module_level_only=True) if within(n, "niceeval._eval")}
        for path in modules("niceeval._eval")
    }
    cycles = sorted({tuple(sorted((a, b))) for a, deps in graph.items() for b in deps if a in graph.get(b, set())})
    assert cycles == []


SERVERLESS_WEB = ("niceeval.web._templates", "niceeval.web._rounds", "niceeval.web._charts")
"""The viewer's parts the HTML report renders with: templates, filters and rounds, without the web server."""


def _server_side(name: str) -> bool:
    if within(name, "starlette") or within(name, "uvicorn"):
        return True
    web_part = within(name, "niceeval.web") and name != "niceeval.web"  # the package itself loads lazily
    return web_part and not any(within(name, serverless) for serverless in SERVERLESS_WEB)


def test_reports_use_the_viewers_templates_never_its_server() -> None:
    wrong = [
        f"{module_name(path)} imports {name}"
        for layer in ("niceeval.report", *SERVERLESS_WEB)
        for path in modules(layer)
        for name in imports(path)
        if _server_side(name)
    ]
    assert wrong == []
