"""Issue 23: imports point down the layers of DESIGN.md, with no circles, and an algorithm loads no backend.

``test_import_graph_has_no_cycles`` and ``test_no_import_points_up`` read every module of ``src/privdist`` with
``ast`` and count every import, module level or inside a function (a function-local import that dodges a circle is
still a circle), plus the package ``__init__`` that importing a module of another package runs. A layer may import
its own layer and those below it; the order is DESIGN.md's "Layers" list. The one module outside the layers is the
package root (see ``ENTRY_MODULES``). Imports by a computed name (``importlib.import_module``) are not read: the
CLI's command modules (``cli.main``), the lazy names of ``privdist.experiments`` and a served party actor's warm-up
(``runtime.ray_actors``), each of which imports its own layer or a lower one.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import privdist
import privdist.algorithms

SRC = Path(privdist.__file__).resolve().parent.parent

#: Lowest first. ``base`` is the package-wide helpers every layer uses (named errors, input checks, lazy imports,
#: file helpers, the version); ``contract`` is the module ``privdist.contract`` (algorithm and backend interfaces).
LAYERS = ["base", "data", "network", "problems", "privacy", "contract", "algorithms", "runtime", "audit", "learn",
          "experiments", "cli", "entry"]
BASE_MODULES = {"privdist.errors", "privdist._checks", "privdist._lazy", "privdist._io", "privdist._version"}
#: The package root is the public facade: ``privdist.run`` imports :func:`privdist.runtime.run` on first use. It is
#: the one module outside the layers (``entry`` with ``python -m privdist``); no module of the package imports it.
ENTRY_MODULES = {"privdist", "privdist.__main__"}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in (SRC / "privdist").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _owner(name: str, modules) -> str:
    while name not in modules:
        name = name.rpartition(".")[0]
    return name


@functools.lru_cache(maxsize=1)
def _graph() -> dict[str, frozenset[str]]:
    """``module -> modules of privdist it imports`` (every import statement anywhere in the module, plus the
    ``__init__`` of each other package a target lives in, which Python runs first)."""
    modules = _modules()
    graph: dict[str, frozenset[str]] = {}
    for name, (path, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {_owner(a.name, modules) for a in node.names if a.name.split(".")[0] == "privdist"}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    where = ".".join(base + ([node.module] if node.module else []))
                else:
                    where = node.module or ""
                if where.split(".")[0] != "privdist":
                    continue
                for alias in node.names:  # ``from pkg import submodule`` imports the submodule
                    full = f"{where}.{alias.name}"
                    targets.add(full if full in modules else _owner(where, modules))
        for target in list(targets):  # packages on the way to the target (not the importer's own ancestors)
            parent = target.rpartition(".")[0]
            while parent and not (name == parent or name.startswith(parent + ".")):
                targets.add(parent)
                parent = parent.rpartition(".")[0]
        targets.discard(name)
        graph[name] = frozenset(targets)
    return graph


def import_graph() -> dict[str, frozenset[str]]:
    """A copy of the graph (read once per session)."""
    return dict(_graph())


def layer(module: str) -> str:
    if module in ENTRY_MODULES:
        return "entry"
    if module in BASE_MODULES:
        return "base"
    if module == "privdist.contract":
        return "contract"
    return module.split(".")[1]


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_module_has_a_layer():
    assert {layer(m) for m in import_graph()} <= set(LAYERS)


def test_import_graph_has_no_cycles():
    assert _cycles(import_graph()) == []


def test_the_cycle_check_sees_function_local_imports():
    graph = import_graph()
    graph["privdist.runtime.rng"] = graph["privdist.runtime.rng"] | {"privdist.runtime.run"}  # a planted circle
    assert any("privdist.runtime.rng" in c for c in _cycles(graph))
    assert "privdist.experiments.kinds" in graph["privdist.experiments.build"]  # loaded inside a function


def test_no_import_points_up():
    up = sorted(f"{m} ({layer(m)}) -> {t} ({layer(t)})" for m, targets in import_graph().items() for t in targets
                if LAYERS.index(layer(t)) > LAYERS.index(layer(m)))
    assert up == []


def test_nothing_imports_the_package_root():
    assert sorted(m for m, targets in import_graph().items() if "privdist" in targets and m != "privdist.__main__") \
        == []


def test_every_shipped_problem_kind_module_is_loaded_by_build():
    """``experiments.build`` names the kind modules it loads (so the graph above sees them): none is left out."""
    kinds = {f"privdist.experiments.{m.name}" for m in pkgutil.iter_modules([str(SRC / "privdist" / "experiments")])
             if m.name == "kinds" or m.name.startswith("kinds_")}
    assert kinds <= import_graph()["privdist.experiments.build"]


_PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(n for n in sys.modules if n == "ray" or n.startswith(("ray.", "privdist.runtime",
      "privdist.audit", "privdist.learn", "privdist.experiments", "privdist.cli")))))
"""


def _loaded_by(module: str) -> tuple[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return module, json.loads(out.stdout)


def test_importing_any_algorithm_loads_no_runtime_and_no_ray():
    """Each module of ``privdist.algorithms`` in a fresh interpreter: no ``privdist.runtime`` module (no backend:
    ``ray_*``, ``serve``), no higher layer and no ``ray`` is loaded."""
    modules = ["privdist.algorithms"] + [f"privdist.algorithms.{m.name}"
                                         for m in pkgutil.iter_modules(privdist.algorithms.__path__)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        loaded = dict(pool.map(_loaded_by, modules))
    assert len(loaded) > 15
    assert {m: extra for m, extra in loaded.items() if extra} == {}
