"""One factory per model (issue 37, item 6): every `class XFactory` under
tests/ is found by reading the sources, its model resolved, and a model with
two factories (a second definition, or a subclass that adjusts defaults)
fails; so does a factory outside its model's app's `tests/<app>/factories.py`.
Variants are factory_boy traits on the one factory."""

import ast
import importlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.apps import apps

from tests.conftest import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"
# The app whose tests/<app>/factories.py holds the factories of a Django app's models.
OWNER_OF_APP = {"auth": "benchmark"}
# Bases that make a class a factory without giving it a model.
FACTORY_BASES = {"DjangoModelFactory", "ModelFactory", "Factory"}


@dataclass(frozen=True)
class FactoryClass:
    path: str
    name: str
    model: str  # the model's label ("benchmark.Agent"), or the factory it extends


def _meta_options(node: ast.ClassDef) -> dict[str, ast.expr]:
    for item in node.body:
        if isinstance(item, ast.ClassDef) and item.name == "Meta":
            return {
                target.id: statement.value
                for statement in item.body
                if isinstance(statement, ast.Assign)
                for target in statement.targets
                if isinstance(target, ast.Name)
            }
    return {}


def _base_name(base: ast.expr) -> str:
    while isinstance(base, ast.Subscript):  # ModelFactory[Agent]
        base = base.value
    if isinstance(base, ast.Attribute):  # factory.django.DjangoModelFactory, base.AgentFactory
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def _model_label(expression: ast.expr, imported: dict[str, str]) -> str:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return apps.get_model(expression.value)._meta.label
    if isinstance(expression, ast.Name) and expression.id in imported:
        model = getattr(importlib.import_module(imported[expression.id]), expression.id)
        return model._meta.label
    raise AssertionError(f"cannot resolve the factory model {ast.unparse(expression)}")


def factory_classes(source: str, path: str) -> list[FactoryClass]:
    """The factories a module defines: each with its model, or with `extends:`
    the factory it subclasses when it names no model of its own."""
    tree = ast.parse(source, filename=path)
    imported = {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [_base_name(base) for base in node.bases]
        if not any(base.endswith("Factory") for base in bases):
            continue
        options = _meta_options(node)
        abstract = options.get("abstract")
        if isinstance(abstract, ast.Constant) and abstract.value is True:
            continue
        if "model" in options:
            model = _model_label(options["model"], imported)
        else:
            extended = [base for base in bases if base not in FACTORY_BASES]
            model = f"extends:{extended[0] if extended else '?'}"
        found.append(FactoryClass(path, node.name, model))
    return found


def all_factory_classes(root: Path = TESTS) -> list[FactoryClass]:
    return [
        factory
        for path in sorted(root.rglob("*.py"))
        for factory in factory_classes(
            path.read_text(encoding="utf-8"), str(path.relative_to(PROJECT_ROOT))
        )
    ]


def models_with_several(factories: list[FactoryClass]) -> dict[str, list[str]]:
    """Each model with more than one factory, naming them; a factory that
    extends another counts as a second factory of the other's model."""
    model_of_name = {f.name: f.model for f in factories if not f.model.startswith("extends:")}
    by_model: dict[str, list[str]] = defaultdict(list)
    for f in factories:
        model = f.model
        if model.startswith("extends:"):
            model = model_of_name.get(model.removeprefix("extends:"), model)
        by_model[model].append(f"{f.path}:{f.name}")
    return {model: names for model, names in by_model.items() if len(names) > 1}


def test_every_model_has_one_factory_under_tests():
    factories = all_factory_classes()
    assert len(factories) >= 10, "the scan found the factories"
    assert models_with_several(factories) == {}


def test_each_factory_lives_in_its_model_apps_factories_module():
    misplaced = {}
    for f in all_factory_classes():
        app_label = f.model.split(".")[0]
        wanted = f"tests/{OWNER_OF_APP.get(app_label, app_label)}/factories.py"
        if f.path != wanted:
            misplaced[f"{f.path}:{f.name}"] = wanted
    assert misplaced == {}


def test_a_second_factory_of_a_model_is_found_however_it_is_written():
    """The scan itself: a subclass adjusting defaults, a second definition by
    string label, and one by class are all second factories of Agent."""
    subclass = (
        "import factory\n"
        "from tests.benchmark import factories as base\n"
        "class AgentFactory(base.AgentFactory):\n"
        "    base_model = ''\n"
    )
    by_label = (
        "import factory\n"
        "class OtherAgentFactory(factory.django.DjangoModelFactory):\n"
        "    class Meta:\n"
        "        model = 'benchmark.Agent'\n"
    )
    by_class = (
        "from benchmark.models import Agent\n"
        "from tests.support.model_factory import ModelFactory\n"
        "class ThirdAgentFactory(ModelFactory[Agent]):\n"
        "    class Meta:\n"
        "        model = Agent\n"
    )
    factories = all_factory_classes()
    for source in (subclass, by_label, by_class):
        extra = factory_classes(source, "tests/somewhere/factories.py")
        several = models_with_several([*factories, *extra])
        assert list(several) == ["benchmark.Agent"], source
        assert len(several["benchmark.Agent"]) == 2
