"""The package's shape: no import circles, and every registered learner complete."""

import ast
from importlib import resources
from pathlib import Path

import pytest

import edgestream
from edgestream import learners
from edgestream.state import engine_header, engine_header_path, runtime_header_path

PACKAGE = Path(edgestream.__file__).parent


def imports_of(path: Path) -> set[str]:
    """Modules of edgestream that ``path`` imports (module level or inside functions)."""
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
            if node.module:
                found.add(f"{base}.{node.module}")
            else:
                found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_no_import_circles():
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    graph = {name: imports_of(path) & modules.keys() for name, path in modules.items()}

    def visit(module, chain):
        if module in chain:
            pytest.fail("import circle: " + " -> ".join(chain[chain.index(module):] + [module]))
        for imported in graph[module]:
            visit(imported, chain + [module])

    for module in graph:
        visit(module, [])


@pytest.mark.parametrize("name", list(learners.REGISTRY))
def test_every_learner_is_complete(name):
    spec = learners.REGISTRY[name]
    csrc = Path(str(resources.files("edgestream.csrc")))
    assert all((csrc / f"{module}.h").is_file() for module in spec.runtime)
    assert (Path(str(resources.files("edgestream.codegen"))) / spec.template).is_file()
    params = set().union(*(spec.make(task).get_params() for task in spec.tasks))  # an option of one of its forms
    assert set(spec.ladder_params) <= params
    assert {option.param for option in spec.options} <= params
    if spec.state is not None:
        assert runtime_header_path(spec.state).read_text() == spec.state.header()


def test_the_engine_table_is_generated_from_the_state_descriptions():
    states = [spec.state for spec in learners.REGISTRY.values() if spec.state is not None]
    assert engine_header_path().read_text() == engine_header(states)
