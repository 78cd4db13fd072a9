"""The import contract (docs/architecture.md, "Module map"): which part of pitlog may import
which, read from the source with `ast` (every import statement, at any depth, counts).

- `events` never imports `projections` or `cli`; `projections` never imports `cli`.
- Inside `events`, each concern imports only the ones below it (LAYERS).
- The log contract (events/log/base.py, alerts.py, registry.py) imports no backend, and nothing
  outside a backend's own folder imports it: events/log/registry.py opens backends by name.
- `events.simulation` is a leaf: nothing in events/ or projections/ imports it; in cli/ only
  the commands that simulate.
- No import cycles among pitlog's modules, and no pitlog import inside a function, cli/ included:
  `pitlog --help` lists the commands without importing their modules (cli/app.py, COMMANDS), so
  each command module imports what it needs at its top (tests/cli/test_cli_imports.py checks
  what the help and a lookup import).

Each test names every offending import as file:line, so a failure says what to move.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO

from events.log.base import EventLog
from events.log.registry import BACKENDS, backend

PACKAGES = ("events", "projections", "cli")

# What each part of events/ may import of pitlog besides itself: each concern sits on the ones
# below it. errors and text are the shared leaves.
LAYERS: dict[str, set[str]] = {
    "events.errors": set(),
    "events.text": set(),
    "events.files": set(),  # files written whole: the log's cache, snapshots, exports
    "events.reddog": {"events.errors"},
    "events.wire": {"events.errors", "events.reddog"},
    "events.log": {"events.errors", "events.wire", "events.files"},
    "events.recording": {"events.errors", "events.text", "events.reddog", "events.wire",
                         "events.log"},
    "events.integrity": {"events.errors", "events.reddog", "events.wire", "events.log"},
    "events.simulation": {"events.errors", "events.reddog", "events.wire", "events.log",
                          "events.recording"},
}
LOG_CONTRACT = ("events.log", "events.log.base", "events.log.alerts", "events.log.registry")
BACKEND_PACKAGES = ("events.log.embedded", "events.log.kafka")
SIMULATING_COMMANDS = {"cli.commands.simulate", "cli.commands.demo"}


@dataclass(frozen=True)
class Import:
    importer: str  # module name
    target: str  # the pitlog module (or package) imported
    where: str  # file:line
    in_function: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            # `from events.wire import codec` imports the module events.wire.codec
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in PACKAGES:
                yield Import(name, target, f"{path.relative_to(REPO)}:{node.lineno}",
                             id(node) in in_function)


def all_imports() -> list[Import]:
    mods = modules()
    known = set(mods)
    return [i for name, path in mods.items() for i in imports_of(name, path, known)]


IMPORTS = all_imports()


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def part_of(name: str) -> str | None:
    """The LAYERS entry a module of events/ belongs to."""
    return next((p for p in LAYERS if within(name, p)), None)


def report(bad: list[Import]) -> str:
    return "\n".join(f"{i.where}: {i.importer} imports {i.target}" for i in bad)


def test_events_never_imports_the_read_side_or_the_cli() -> None:
    bad = [i for i in IMPORTS if within(i.importer, "events")
           and (within(i.target, "projections") or within(i.target, "cli"))]
    assert not bad, report(bad)


def test_projections_never_imports_the_cli() -> None:
    bad = [i for i in IMPORTS if within(i.importer, "projections") and within(i.target, "cli")]
    assert not bad, report(bad)


def test_each_concern_of_events_imports_only_the_ones_below_it() -> None:
    bad = []
    for i in IMPORTS:
        if not within(i.importer, "events") or i.target == "events":
            continue
        mine, theirs = part_of(i.importer), part_of(i.target)
        if mine is None and i.importer != "events":
            bad.append(i)  # a module outside every concern: give it a place in LAYERS
        elif mine is not None and theirs != mine and theirs not in LAYERS[mine]:
            bad.append(i)
    assert not bad, report(bad)


def test_the_log_contract_imports_no_backend() -> None:
    bad = [i for i in IMPORTS if i.importer in LOG_CONTRACT
           and any(within(i.target, b) for b in BACKEND_PACKAGES)]
    assert not bad, report(bad)


def test_only_a_backend_imports_its_own_modules_outside_cli_and_tests() -> None:
    """events/ and projections/ reach a backend only through the registry (by name)."""
    bad = [i for i in IMPORTS if not within(i.importer, "cli")
           for b in BACKEND_PACKAGES if within(i.target, b) and not within(i.importer, b)]
    assert not bad, report(bad)


def test_the_simulation_is_a_leaf() -> None:
    bad = [i for i in IMPORTS if within(i.target, "events.simulation")
           and not within(i.importer, "events.simulation")
           and i.importer not in SIMULATING_COMMANDS]
    assert not bad, report(bad)


def test_no_pitlog_import_inside_a_function() -> None:
    bad = [i for i in IMPORTS if i.in_function]
    assert not bad, report(bad)


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles_among_pitlog_modules() -> None:
    known = set(modules())
    edges: dict[str, set[str]] = {}
    for i in IMPORTS:
        # A package's __init__ runs before its modules: an import of a package is an edge to
        # its __init__ only, which is that package's entry in `known`.
        if i.target in known and i.target != i.importer:
            edges.setdefault(i.importer, set()).add(i.target)
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_find_cycle_finds_a_cycle_and_only_a_cycle() -> None:
    """The checker itself: it must see a cycle through three modules, and none in a chain."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("scheme", sorted(BACKENDS))
def test_every_registered_backend_loads_and_is_an_event_log(scheme: str) -> None:
    cls = backend(scheme)
    assert issubclass(cls, EventLog) and cls.__module__ == BACKENDS[scheme][0]


def test_opening_an_embedded_log_loads_no_kafka_client(tmp_path: Path) -> None:
    """Backends are imported by name when used: kafka-python stays unloaded for file://."""
    code = ("import sys; from events.log.registry import open_log; "
            f"open_log('file://{tmp_path / 'log'}').close(); "
            "print(sorted(m for m in sys.modules if m == 'kafka' or m.startswith('kafka.') "
            "or m.startswith('events.log.kafka')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "[]"
