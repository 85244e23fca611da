"""The documentation holds together: every environment variable the settings
read is on docs/configuration.md, every relative link between the pages (and
its anchor) resolves, the README stays a front page, and each perf script has
its figures in perf/README.md."""

import ast
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from django.conf import settings

from tests.support.docs import (
    DOCS,
    PROJECT_ROOT,
    README,
    anchors,
    github_slug,
    links,
    user_docs,
)

SETTINGS = PROJECT_ROOT / "mlrbench_site" / "settings"
CONFIGURATION = DOCS / "configuration.md"
PERF_README = PROJECT_ROOT / "perf" / "README.md"
# The pages a user reads, and the perf figures they link to.
LINKED_PAGES = [*user_docs(), PERF_README]
# Pages other work writes (issue 37's build: uv, the lock file, the Docker image),
# linked before they land; a link to one is checked like any other once it exists.
PENDING = {DOCS / "build.md"}
# The environment reader's methods that take a variable's name first (django-environ).
ENV_READERS = {
    "str", "bool", "int", "float", "list", "tuple", "dict", "json", "url", "db", "db_url",
    "cache", "cache_url", "email", "email_url", "search_url", "path", "get_value", "bytes",
}  # fmt: skip


def _variable_reads(tree: ast.AST, filename: str) -> dict[str, int]:
    """Every variable a settings module reads: `env("X")`, `env.<reader>("X")`,
    `os.environ.get("X")`, `os.environ["X"]`, `os.getenv("X")`. A read whose
    name is not a literal fails here: this scan could not tell what it reads."""
    names: dict[str, int] = {}

    def name_of(node: ast.expr) -> None:
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            pytest.fail(f"{filename}:{node.lineno} reads a variable by a computed name")
        names.setdefault(node.value, node.lineno)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            call = ast.unparse(node.func)
            reader = call.removeprefix("env.")
            by_env = call == "env" or (call.startswith("env.") and reader in ENV_READERS)
            if by_env or call in ("os.environ.get", "os.getenv", "environ.get"):
                name_of(node.args[0])
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            name_of(node.slice)
    return names


def _settings_variables() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(SETTINGS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line in _variable_reads(tree, path.name).items():
            found.setdefault(name, f"{path.relative_to(PROJECT_ROOT)}:{line}")
    return found


def test_the_scan_finds_every_variable_the_settings_record():
    """The settings record every name their reader is asked for (SITE_ENV_NAMES);
    the scan must find at least those, or it would miss a variable silently."""
    scanned = set(_settings_variables())
    assert set(settings.SITE_ENV_NAMES) - scanned == set()
    assert len(scanned) > 100


def test_every_variable_the_settings_read_is_on_the_configuration_page():
    page = CONFIGURATION.read_text(encoding="utf-8")
    missing = {
        name: where for name, where in _settings_variables().items() if f"`{name}`" not in page
    }
    assert missing == {}, "add these to docs/configuration.md (name, default, meaning)"


def test_every_variable_of_the_env_example_is_on_the_configuration_page():
    page = CONFIGURATION.read_text(encoding="utf-8")
    example = (PROJECT_ROOT / ".env.example").read_text(encoding="utf-8")
    names = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.M))
    assert len(names) > 20
    assert {name for name in names if f"`{name}`" not in page} == set()


def _resolve(page: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return (page.parent / unquote(path)).resolve() if path else page, anchor


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, anchor = _resolve(page, target)
        if not path.exists() and path not in PENDING:
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_the_docs_index_lists_every_page():
    listed = {target.partition("#")[0] for target in links(DOCS / "README.md")}
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    assert pages - listed == set()
    assert "build.md" in listed  # written by the build's own work; linked before it lands


def test_the_readme_is_a_front_page_and_links_the_docs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    assert "./scripts/quickstart.sh" in text and "./scripts/test.sh" in text
    assert "docs/README.md" in links(README)


def test_every_perf_script_has_its_figures_in_the_perf_readme():
    headings = anchors(PERF_README)
    scripts = sorted(
        path.name for path in (PROJECT_ROOT / "perf").glob("*.py") if path.name != "__init__.py"
    )
    missing = [name for name in scripts if f"perf{name.removesuffix('.py')}py" not in headings]
    assert missing == [], "give each a `## perf/NAME.py` section in perf/README.md"


def test_the_pages_the_commands_name_have_the_sections_they_name():
    """Commands and the quick start point people at a page's section
    (`docs/judging.md: Judging with a local model`); it must be there."""
    sources = [
        *(PROJECT_ROOT / "scripts").glob("*.sh"),
        *PROJECT_ROOT.glob("*/management/commands/*.py"),
    ]
    named = {
        (page, heading.strip())
        for path in sources
        for page, heading in re.findall(
            r"docs/([\w-]+\.md): ([A-Z][\w ,'-]+)", path.read_text(encoding="utf-8")
        )
    }
    assert ("judging.md", "Judging with a local model") in named
    missing = {
        (page, heading)
        for page, heading in named
        if github_slug(heading) not in anchors(DOCS / page)
    }
    assert missing == set()
