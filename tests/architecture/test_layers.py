"""The layer order, enforced by walking every module's imports with ``ast``.

theory, vocab ← models, data, config ← training ← probes, pipeline ← analyses ← reports ← app
(the command line and the workflows). A module may import its own layer or any lower one, never a
higher one, and the imports between the package's modules form no cycle (lazy imports inside
functions count). Inside ``analyses``, a claim family imports no other family: only the shared
modules (``SHARED``) and the edges named in ``FAMILY_EDGES``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("zerolock_theory", "probes", "analyses", "reports")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("zerolock_theory.theory", "zerolock_theory.vocab", "zerolock_theory.allocator"),
    ("zerolock_theory.models", "zerolock_theory.data", "zerolock_theory.data_config", "zerolock_theory.probe_config", "zerolock_theory.corpus",
     "zerolock_theory.config", "zerolock_theory.config_overrides", "zerolock_theory.config_types", "zerolock_theory.config_fields",
     "zerolock_theory.recipes", "zerolock_theory.records", "zerolock_theory.readout_store",
     "zerolock_theory.embedded", "zerolock_theory.formatting", "zerolock_theory.jsonio"),
    ("zerolock_theory.training",),
    ("probes", "zerolock_theory.pipeline"),
    ("analyses",),
    ("reports",),
    ("zerolock_theory.app", "zerolock_theory.__main__"),
)

FAMILIES = ("lemma2", "assumption5", "theorem1", "proposition1", "versus", "systems", "descriptive")
"""The packages of ``analyses`` that hold one claim family each (``descriptive``: no row)."""
SHARED = ("analyses.stats", "analyses.io", "analyses.results", "analyses.registry", "analyses.runinfo",
          "analyses.verdict", "analyses.groups", "analyses.text")
"""What every family may import: statistics, reading runs, result objects and the row registry."""
FAMILY_EDGES = {
    ("theorem1", "assumption5"),  # Theorem 1 (b) reads the drift's order from the step-scaling analysis
    ("versus", "theorem1"),  # the pilot comparison describes the global Ĝ_t's rate as in Theorem 1 (a)
}
"""The named edges between families: (importer, imported)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Package modules imported anywhere in ``path`` (resolved to the longest known module)."""
    found = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> int:
    """Index in ``LAYERS`` of the longest matching prefix; the package roots count as lowest."""
    best, best_len = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        if module in PACKAGES:
            return 0 if module == "zerolock_theory" else layer_of(module + ".x")
        raise AssertionError(f"{module} belongs to no layer; add it to LAYERS")
    return best


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    if module == "zerolock_theory":  # the package root re-exports the theory layer only
        assert all(layer_of(t) == 0 for t in GRAPH[module]), GRAPH[module]
        return
    upward = sorted(t for t in GRAPH[module] if t != "zerolock_theory" and layer_of(t) > layer_of(module))
    assert not upward, f"{module} (layer {layer_of(module)}) imports higher layers: {upward}"


def test_no_import_cycles():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if nxt == node or nxt not in GRAPH:
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def test_theory_imports_nothing_else_of_the_package():
    """The maths imports only itself and the closed vocabularies."""
    for module, targets in GRAPH.items():
        if module.startswith("zerolock_theory.theory"):
            assert all(t.startswith("zerolock_theory.theory") or t == "zerolock_theory.vocab" for t in targets), (
                module, targets)


def family_of(module: str) -> str | None:
    """The claim family of an ``analyses`` module, or None for the shared modules and the roof."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "analyses" and parts[1] in FAMILIES else None


def family_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import from one family into another (or into a non-shared module) outside ``FAMILY_EDGES``."""
    found = []
    for module, targets in sorted(graph.items()):
        family = family_of(module)
        if family is None:
            continue
        for target in sorted(targets):
            if not target.startswith("analyses.") or family_of(target) == family:
                continue
            other = family_of(target)
            if other is None and any(target == s or target.startswith(s + ".") for s in SHARED):
                continue
            if (family, other) not in FAMILY_EDGES:
                found.append(f"{module} -> {target}")
    return found


def test_families_import_no_other_family():
    assert family_violations(GRAPH) == []


def test_a_planted_import_between_families_is_caught():
    planted = {**GRAPH, "analyses.lemma2.claim": GRAPH["analyses.lemma2.claim"] | {"analyses.systems.memory"}}
    assert family_violations(planted) == ["analyses.lemma2.claim -> analyses.systems.memory"]
    upward = {**GRAPH, "analyses.stats.seeds": GRAPH["analyses.stats.seeds"] | {"analyses.suite"}}
    assert family_violations(upward) == []  # the shared modules are held by the layer order instead


def probe_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of ``probes`` from ``analyses``: the analyses read what the probes wrote through
    ``records`` (keys, the layout from the typed config) and ``readout_store``, never the probes."""
    return [f"{m} -> {t}" for m, targets in sorted(graph.items()) if m.split(".")[0] == "analyses"
            for t in sorted(targets) if t.split(".")[0] == "probes"]


def test_the_analyses_import_no_probe():
    assert probe_imports(GRAPH) == []
    planted = {**GRAPH, "analyses.io": GRAPH["analyses.io"] | {"probes.registry"}}
    assert probe_imports(planted) == ["analyses.io -> probes.registry"]


def test_a_planted_upward_import_is_caught():
    assert layer_of("zerolock_theory.app.cli.verify") > layer_of("analyses.registry") > layer_of("probes.scaling")
    planted = GRAPH["analyses.registry"] | {"zerolock_theory.app.workflows.verify"}
    assert sorted(t for t in planted if layer_of(t) > layer_of("analyses.registry")) == [
        "zerolock_theory.app.workflows.verify"]
