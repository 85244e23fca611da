"""MLRC-Bench's task folder format: what an import reads, what a method archive
may hold, how a run's work folder is made, and where its score comes from.

A task folder, as MLRC-Bench publishes one::

    env/main.py                   python main.py -m <method> -p dev|test   (run inside env/)
    env/evaluation.py             evaluate_model(method, phase), get_score(method, phase)
    env/methods/__init__.py       all_method_handlers() -> {name: class}; my_method the baseline
    env/...                       the task's code and its dev data
    scripts/research_problem.txt  the task statement
    scripts/read_only_files.txt   paths under env/ (globs) methods may not change
    scripts/test_data/...         copied into env/data/ for the test phase only
    scripts/test_constants.py     env/constants.py for the test phase (when present)
    scripts/environment.yml       the task's environment (or scripts/requirements.txt)

A folder published without scripts/'s text files (README and env/ only) is
imported with the organiser's --research-problem FILE (default: the folder's
README), --read-only GLOB ... and --requirements FILE; a part that is neither
in the folder nor given is named, never guessed.

A run lays the task out as MLRC-Bench's launch script does: a working copy of
env/ with the task's scripts/ beside it (`../scripts/...` resolves, in dev and
test alike), the label files left out of both (only the scoring step has
them); in the test phase only, `scripts/test_data/*` is copied into data/ and
test_constants.py over constants.py.

A method archive holds `methods/` (laid over env/methods/), `method_name.txt`
(what to pass to -m) and, optionally, `trial.txt` (which of the agent's trials
it belongs to, 1 when absent). No database writes here.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# What an import cannot do without, from the folder itself.
REQUIRED_FILES = ("env/main.py", "env/evaluation.py", "env/methods/__init__.py")
TEST_DATA_PART = "scripts/test_data"
TEST_CONSTANTS = "scripts/test_constants.py"
RESEARCH_PROBLEM = "scripts/research_problem.txt"
READ_ONLY_LIST = "scripts/read_only_files.txt"
# A folder without scripts/research_problem.txt: its README is the statement.
README_NAMES = ("README.md", "README.txt", "README")
# The work folder of a run, as MLRC-Bench's launch lays it out: main.py runs
# in env/, and `../scripts/` is the task's scripts/.
ENV_FOLDER = "env"
SCRIPTS_FOLDER = "scripts"
# The environment files an import reads, the first found wins.
ENVIRONMENT_FILES = (
    "scripts/environment.yml",
    "scripts/environment.yaml",
    "scripts/requirements.txt",
)
# The evaluation functions main.py calls: the site calls them in two processes.
EVALUATION_FUNCTIONS = ("evaluate_model", "get_score")
# Files under env/ (after the test data joined data/) only the scoring step sees:
# MLRC-Bench names its label files so (dev_labels.csv, test_labels.csv).
DEFAULT_LABEL_PATTERNS = ("data/*label*", "data/*labels*/*")
# Never part of a task version: caches and what earlier runs left.
SKIPPED_PARTS = frozenset({"__pycache__", ".git", ".ipynb_checkpoints"})
SKIPPED_ENV_TOPS = frozenset({"output"})
METHODS_FOLDER = "methods"
METHOD_NAME_FILE = "method_name.txt"
TRIAL_FILE = "trial.txt"
# MLRC-Bench's configurations: where the method's idea came from.
IDEA_SOURCE_FILE = "idea_source.txt"
IDEA_SOURCE_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")
IDEA_SOURCE_DEFAULT = "none"
EVALS_FILE = "output/idea_evals.json"
# A method name goes on a command line: a Python-ish identifier only.
METHOD_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")
COMMAND = "python main.py -m {method} -p {phase}"
SHIM_ROOT = Path(__file__).resolve().parent / "mlrc_shim"
SHIM_INSIDE = "/opt/mlrc"
# The two steps of main.py the site runs apart (see mlrc_shim/mlrc_method.py).
METHOD_STEP = "python " + SHIM_INSIDE + "/mlrc_method.py -m {method} -p {phase}"
SCORE_STEP = "python " + SHIM_INSIDE + "/mlrc_score.py -m {method} -p {phase}"
# What the method step reports (runtime and lines), beside the method's outputs.
METHOD_REPORT = "output/.mlrc_method_run.json"
VERSION_ENVIRONMENT_FILE = "environment.json"
LOG_TAIL_CHARS = 2000


@dataclass(frozen=True)
class TaskSpec:
    """A task folder and the parts the organiser gave for what it lacks: the
    statement, the read-only list and the environment file, as text, with
    where each came from (what the import says)."""

    root: Path
    research_problem: str
    read_only: str
    # (the environment file's name under scripts/, its text); None: no packages.
    environment: tuple[str, str] | None
    sources: dict[str, str]


def _environment_file(root: Path, requirements: Path | None) -> tuple[str, Path] | None:
    if requirements is not None:
        name = "requirements.txt" if requirements.suffix == ".txt" else "environment.yml"
        return f"scripts/{name}", requirements
    for relative in ENVIRONMENT_FILES:
        if (root / relative).is_file():
            return relative, root / relative
    return None


def _read(path: Path, label: str, problems: list[str]) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{label} {path} cannot be read ({exc})")
        return ""


def _statement(root: Path, given: Path | None, problems: list[str]) -> tuple[str, str]:
    """The research problem's text and where it came from."""
    if given is not None:
        return _read(given, "--research-problem", problems), str(given)
    if (root / RESEARCH_PROBLEM).is_file():
        return _read(root / RESEARCH_PROBLEM, "", problems), RESEARCH_PROBLEM
    for name in README_NAMES:
        if (root / name).is_file():
            return _read(root / name, "", problems), name
    problems.append(
        f"the task folder has no {RESEARCH_PROBLEM} file and no README: "
        "give the statement with --research-problem FILE"
    )
    return "", ""


def task_spec(
    root: Path,
    *,
    research_problem: Path | None = None,
    read_only: list[str] | None = None,
    requirements: Path | None = None,
    test_phase_local: bool = True,
) -> tuple[TaskSpec | None, list[str]]:
    """The task as an import takes it, or every part it lacks, named.

    The organiser's parts win over the folder's. A task whose test phase is
    scored elsewhere (`test_phase_local=False`) needs no scripts/test_data/."""
    if not root.is_dir():
        return None, [f"{root} is not a folder"]
    problems = [
        f"the task folder has no {relative} file"
        for relative in REQUIRED_FILES
        if not (root / relative).is_file()
    ]
    if test_phase_local and not (root / TEST_DATA_PART).is_dir():
        problems.append(f"the task folder has no {TEST_DATA_PART} folder")
    evaluation = root / "env" / "evaluation.py"
    if evaluation.is_file():
        defined = _functions_defined(evaluation.read_text(encoding="utf-8", errors="replace"))
        for name in EVALUATION_FUNCTIONS:
            if name not in defined:
                problems.append(f"env/evaluation.py defines no {name}(Method, phase)")
    statement, statement_from = _statement(root, research_problem, problems)
    sources = {"research problem": statement_from}
    if read_only is not None:
        read_only_text = "".join(f"{pattern}\n" for pattern in read_only)
        sources["read-only files"] = "--read-only"
    elif (root / READ_ONLY_LIST).is_file():
        read_only_text = _read(root / READ_ONLY_LIST, "", problems)
        sources["read-only files"] = READ_ONLY_LIST
    else:
        read_only_text = ""
        problems.append(
            f"the task folder has no {READ_ONLY_LIST} file: give the files methods may not "
            "change with --read-only GLOB ..."
        )
    environment = None
    found = _environment_file(root, requirements)
    if found is not None:
        name, path = found
        label = "--requirements" if requirements is not None else ""
        environment = (name, _read(path, label, problems))
        sources["environment"] = str(requirements) if requirements is not None else name
    if problems:
        return None, problems
    return TaskSpec(root, statement, read_only_text, environment, sources), []


def _functions_defined(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def _files_under(root: Path, *, skip_tops: frozenset[str] = frozenset()) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        relative_folder = Path(folder).relative_to(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIPPED_PARTS and not (relative_folder == Path(".") and d in skip_tops)
        )
        for name in sorted(files):
            if not name.endswith(".pyc"):
                found.append((relative_folder / name).as_posix())
    return found


# The parts of scripts/ a task spec holds as text (the organiser's or the folder's).
_SPEC_PARTS = frozenset({RESEARCH_PROBLEM, READ_ONLY_LIST, *ENVIRONMENT_FILES})


def _task_files(spec: TaskSpec) -> list[tuple[str, Path | bytes]]:
    """The files that make a task version, by their path in the task folder:
    env/, all of scripts/ (MLRC-Bench puts it beside env/), and the spec's parts."""
    root = spec.root
    files: list[tuple[str, Path | bytes]] = [
        (f"env/{path}", root / "env" / path)
        for path in _files_under(root / "env", skip_tops=SKIPPED_ENV_TOPS)
    ]
    if (root / "scripts").is_dir():
        for path in _files_under(root / "scripts"):
            relative = f"scripts/{path}"
            if relative not in _SPEC_PARTS:
                files.append((relative, root / "scripts" / path))
    files.append((RESEARCH_PROBLEM, spec.research_problem.encode()))
    files.append((READ_ONLY_LIST, spec.read_only.encode()))
    if spec.environment is not None:
        files.append((spec.environment[0], spec.environment[1].encode()))
    return sorted(files, key=lambda item: item[0])


def folder_digest(spec: TaskSpec) -> str:
    """One digest of the task's files and their paths: a changed folder, a new version."""
    digest = hashlib.sha256()
    for relative, source in _task_files(spec):
        content = hashlib.sha256()
        if isinstance(source, bytes):
            content.update(source)
        else:
            with source.open("rb") as handle:
                while block := handle.read(1 << 20):
                    content.update(block)
        digest.update(relative.encode() + b"\0" + content.digest())
    return digest.hexdigest()


def read_only_patterns(text: str) -> list[str]:
    """The globs of read_only_files.txt (blank lines and # comments skipped)."""
    patterns = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line.removeprefix("./").removeprefix("env/").rstrip("/"))
    return patterns


def read_only_match(path: str, patterns: Iterable[str]) -> str | None:
    """The pattern that makes `path` (relative to env/) read-only, or None.

    A pattern names a file, a glob, or a folder (everything under it)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern + "/"):
            return pattern
        parents = PurePosixPath(path).parents
        if any(fnmatch.fnmatchcase(str(parent), pattern) for parent in parents):
            return pattern
    return None


def _readable(root: Path) -> None:
    """The sandbox user copies from here, so everything must be readable by others."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            # chmod follows links: never change what a link points at.
            if not os.path.islink(path):
                os.chmod(path, 0o644)


def snapshot_write(
    spec: TaskSpec, target: Path, *, environment: list[str] | None = None, python: str = ""
) -> None:
    """Copy a task version to `target`: env/, scripts/ (less its test data),
    test_data/ and test_constants.py (kept apart: the test phase's), and its
    environment's requirements (environment.json)."""
    staging = target.with_name(f".{target.name}-staging")
    if staging.exists():
        shutil.rmtree(staging)
    for relative, source in _task_files(spec):
        copies = []
        if relative.startswith("env/"):
            copies.append(staging / relative)
        elif relative.startswith(f"{TEST_DATA_PART}/"):
            copies.append(staging / "test_data" / relative.removeprefix(f"{TEST_DATA_PART}/"))
        else:
            copies.append(staging / relative)
            if relative == TEST_CONSTANTS:
                copies.append(staging / "test_constants.py")
        for copy in copies:
            copy.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, bytes):
                copy.write_bytes(source)
            else:
                shutil.copyfile(source, copy)
    (staging / "test_data").mkdir(parents=True, exist_ok=True)
    (staging / VERSION_ENVIRONMENT_FILE).write_text(
        json.dumps({"requirements": environment or [], "python": python}, indent=2) + "\n",
        encoding="utf-8",
    )
    _readable(staging)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


DEV_TEST_DATA_CHOICES = ("auto", "beside", "hidden")


def reads_scripts_test_data(root: Path) -> str:
    """The first file under env/ whose code names `scripts/test_data` ("" when
    none does): its dev phase reads the test data beside env/."""
    for relative in _files_under(root / "env", skip_tops=SKIPPED_ENV_TOPS):
        if relative.endswith(".py"):
            text = (root / "env" / relative).read_text(encoding="utf-8", errors="replace")
            if "scripts/test_data" in text:
                return f"env/{relative}"
    return ""


# ---------------------------------------------------------------- methods


def method_names(init_source: str) -> set[str]:
    """The names `all_method_handlers()` returns, read without running it: the
    string keys of dict literals and subscript assignments in the function."""
    try:
        tree = ast.parse(init_source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for function in ast.walk(tree):
        if not (isinstance(function, ast.FunctionDef) and function.name == "all_method_handlers"):
            continue
        for node in ast.walk(function):
            names |= _string_keys(node)
    return names


def _string_keys(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Dict):
        keys = [key for key in node.keys if isinstance(key, ast.Constant)]
        return {key.value for key in keys if isinstance(key.value, str)}
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
        return {keyword.arg for keyword in node.keywords if keyword.arg}
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return {key.value}
    return set()


@dataclass(frozen=True)
class MethodChoice:
    name: str | None
    trial: int
    problem: str | None
    idea_source: str = IDEA_SOURCE_DEFAULT


def idea_source_read(paths: list[str], read: Callable[[str], bytes | None]) -> tuple[str, str]:
    """(idea source, problem): `none`, `human`, `agent` or a free label such as `coi`."""
    if IDEA_SOURCE_FILE not in paths:
        return IDEA_SOURCE_DEFAULT, ""
    text = (_text(read, IDEA_SOURCE_FILE) or "").lower()
    if not IDEA_SOURCE_RE.match(text):
        return IDEA_SOURCE_DEFAULT, (
            f"{IDEA_SOURCE_FILE} must hold one label: none, human, agent or a short name "
            "such as coi (lowercase letters, digits, _ . -)"
        )
    return text, ""


def _text(read: Callable[[str], bytes | None], path: str) -> str | None:
    raw = read(path)
    return None if raw is None else raw.decode("utf-8", errors="replace").strip()


def method_choose(
    *, paths: list[str], read: Callable[[str], bytes | None], task_init: str, baseline: str
) -> MethodChoice:
    """The method an archive asks to run (method_name.txt, else the one handler
    its methods/__init__.py adds to the task's) and its trial."""
    idea_source, idea_problem = idea_source_read(paths, read)
    if idea_problem:
        return MethodChoice(None, 1, idea_problem)
    trial_text = _text(read, TRIAL_FILE) if TRIAL_FILE in paths else None
    trial = 1
    if trial_text is not None:
        if not trial_text.isdigit() or not 1 <= int(trial_text) <= 1000:
            return MethodChoice(None, 1, f"{TRIAL_FILE} must hold a trial number from 1 to 1000")
        trial = int(trial_text)
    init = f"{METHODS_FOLDER}/__init__.py"
    handlers = method_names((_text(read, init) or "") if init in paths else task_init)
    if METHOD_NAME_FILE in paths:
        name = _text(read, METHOD_NAME_FILE) or ""
        if not METHOD_NAME_RE.match(name):
            return MethodChoice(None, trial, f"{METHOD_NAME_FILE} must hold one method name")
        # A name main.py would not find fails at run time with a KeyError: refused
        # here instead, with the names it knows (when they could be read at all).
        if handlers and name not in handlers:
            return MethodChoice(
                None,
                trial,
                f"{METHOD_NAME_FILE} names {name}, which all_method_handlers() does not "
                f"return; the methods this task knows: {', '.join(sorted(handlers))}",
            )
        return MethodChoice(name, trial, None, idea_source)
    new = sorted(handlers - method_names(task_init) - {baseline})
    if len(new) != 1:
        found = ", ".join(new) or "none"
        return MethodChoice(
            None,
            trial,
            f"the archive has no {METHOD_NAME_FILE} and all_method_handlers() does not add "
            f"exactly one method to the task's (found: {found}); name it in {METHOD_NAME_FILE}",
        )
    return MethodChoice(new[0], trial, None, idea_source)


def archive_problems(*, paths: list[str], patterns: list[str]) -> list[str]:
    """What is wrong with a method archive's layout: no methods/, or read-only files."""
    problems = []
    if not any(path.startswith(f"{METHODS_FOLDER}/") for path in paths):
        problems.append(
            f"a method archive for an MLRC-Bench task holds a {METHODS_FOLDER}/ folder "
            f"(laid over the task's env/{METHODS_FOLDER}/) and {METHOD_NAME_FILE}"
        )
    for path in sorted(paths):
        if not path.startswith(f"{METHODS_FOLDER}/"):
            continue
        pattern = read_only_match(path, patterns)
        if pattern is not None:
            problems.append(
                f"the archive changes the read-only file {path} "
                f"(read_only_files.txt: {pattern}); leave it out"
            )
    return problems


def command_for(method: str, phase: str) -> str:
    if not METHOD_NAME_RE.match(method):
        raise ValueError(f"{method!r} is not a method name")
    return COMMAND.format(method=method, phase=phase)


def method_of_command(command: str) -> str | None:
    match = re.fullmatch(r"python main\.py -m (\S+) -p \S+", command.strip())
    return match.group(1) if match else None


# ---------------------------------------------------------------- runs


def _copy_tree(
    source: Path, target: Path, *, prefix: str = "", skip: Callable[[str], bool] | None = None
) -> int:
    """Copy `source` into `target`; `skip` gets each file's path as it will be
    under the work folder (`prefix` + its path under `source`)."""
    copied = 0
    for relative in _files_under(source):
        if skip is not None and skip(prefix + relative):
            continue
        copy = target / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, copy)
        copied += copy.stat().st_size
    return copied


@dataclass(frozen=True)
class TaskCopy:
    """What a work folder is made of: a task version's files and a phase."""

    env_dir: Path
    patterns: list[str]
    labels: list[str]
    # The test phase only: scripts/test_data/ (into data/) and test_constants.py.
    test_data_dir: Path | None = None
    test_constants: Path | None = None
    # The version's scripts/ (less its test data) and its test data, laid
    # beside env/ in every phase (None: a version imported before they were kept).
    scripts_dir: Path | None = None
    version_test_data: Path | None = None
    # Files of scripts/ the phase does not get (test_constants.py in a dev
    # phase that does not get the test data either).
    scripts_hidden: tuple[str, ...] = ()


def _lay_methods(work: Path, method_files: list[tuple[str, bytes]], patterns: list[str]):
    copied, restored = 0, []
    for path, content in method_files:
        relative = PurePosixPath(path)
        if relative.is_absolute() or ".." in relative.parts or relative.parts[0] != METHODS_FOLDER:
            continue
        if read_only_match(path, patterns) is not None:
            restored.append(path)
            continue
        target = work.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        copied += len(content)
    return copied, restored


def is_label(path: str, labels: list[str]) -> bool:
    """Whether a path of the work folder (relative to env/; `../scripts/...`
    for the scripts beside it) is a label file. A test data file is matched
    both where it lies and where the test phase puts it (data/)."""
    if read_only_match(path, labels) is not None:
        return True
    test_data = f"../{TEST_DATA_PART}/"
    return path.startswith(test_data) and (
        read_only_match("data/" + path.removeprefix(test_data), labels) is not None
    )


def test_phase_lay(task: TaskCopy, env: Path, *, with_labels: bool = False) -> int:
    """MLRC-Bench's test phase in an env/ copy: `cp -r ../scripts/test_data/*
    data/` (overlaying) and test_constants.py as constants.py."""
    copied = 0

    def skip(path: str) -> bool:
        return not with_labels and is_label(path, task.labels)

    if task.test_data_dir is not None:
        copied += _copy_tree(task.test_data_dir, env / "data", prefix="data/", skip=skip)
    if task.test_constants is not None and task.test_constants.is_file():
        shutil.copyfile(task.test_constants, env / "constants.py")
        copied += (env / "constants.py").stat().st_size
    return copied


def _scripts_lay(task: TaskCopy, scripts: Path, *, with_labels: bool) -> int:
    def skip(path: str) -> bool:
        if path.removeprefix("../scripts/") in task.scripts_hidden:
            return True
        return not with_labels and is_label(path, task.labels)

    scripts.mkdir(parents=True, exist_ok=True)
    copied = 0
    if task.scripts_dir is not None and task.scripts_dir.is_dir():
        copied += _copy_tree(task.scripts_dir, scripts, prefix="../scripts/", skip=skip)
    if task.version_test_data is not None and task.version_test_data.is_dir():
        copied += _copy_tree(
            task.version_test_data, scripts / "test_data", prefix=f"../{TEST_DATA_PART}/", skip=skip
        )
    return copied


def work_prepare(
    *,
    task: TaskCopy,
    method_files: list[tuple[str, bytes]],
    work: Path,
    with_labels: bool = False,
) -> tuple[int, list[str]]:
    """A work folder as MLRC-Bench's launch makes it: `work/env/`, a fresh copy
    of the task's env/ with the method's methods/ laid over it, and
    `work/scripts/`, the task's scripts/ beside it (so `../scripts/...`
    resolves); for the test phase only (never for dev), `test_data/*` copied
    into env/data/ and test_constants.py as constants.py.

    Read-only files are the task's: the archive's are not laid. The label files
    are left out of both folders unless `with_labels` (the scoring step's copy,
    which gets no method code). Returns the bytes copied in and the read-only
    paths restored."""

    def skip(path: str) -> bool:
        return not with_labels and is_label(path, task.labels)

    env = work / ENV_FOLDER
    copied = _copy_tree(task.env_dir, env, skip=skip)
    copied_methods, restored = _lay_methods(env, method_files, task.patterns)
    copied += copied_methods
    copied += _scripts_lay(task, work / SCRIPTS_FOLDER, with_labels=with_labels)
    copied += test_phase_lay(task, env, with_labels=with_labels)
    (env / "output").mkdir(exist_ok=True)
    return copied, restored


# A folder whose every file is read-only and that holds more files than this is
# mounted read-only as one (a data folder of images would otherwise take one
# mount per file); new files cannot be made in it either.
READ_ONLY_FOLDER_AT = 64


def read_only_paths(work: Path, patterns: list[str]) -> list[str]:
    """The paths of a prepared work folder that the sandbox mounts read-only:
    the files read_only_files.txt matches, whole folders where they are many."""
    files = _files_under(work)
    matched = {path for path in files if read_only_match(path, patterns) is not None}
    by_folder: dict[str, list[str]] = {}
    for path in files:
        for parent in PurePosixPath(path).parents:
            if str(parent) != ".":
                by_folder.setdefault(str(parent), []).append(path)
    folders = sorted(
        (
            folder
            for folder, under in by_folder.items()
            if len(under) > READ_ONLY_FOLDER_AT and all(p in matched for p in under)
        ),
        key=len,
    )
    chosen: list[str] = []
    for folder in folders:
        if not any(folder.startswith(f"{outer}/") for outer in chosen):
            chosen.append(folder)
    covered = tuple(f"{folder}/" for folder in chosen)
    return chosen + sorted(path for path in matched if not path.startswith(covered))


def outputs_copy(source: Path, target: Path, read: Callable[[Path, int], bytes | None]) -> int:
    """The method's output/ files (plain files only, read with `read`) into the
    scoring step's output/, less any idea_evals.json the method wrote."""
    copied = 0
    for relative in _files_under(source):
        if relative in (Path(EVALS_FILE).name, Path(METHOD_REPORT).name):
            continue
        content = read(source / relative, 1 << 30)
        if content is None:
            continue
        copy = target / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(content)
        copied += len(content)
    return copied


def shim_install(target: Path, python: str) -> Path:
    """The MLAgentBench stand-in and a `python` command, for the sandbox at /opt/mlrc."""
    shutil.copytree(SHIM_ROOT, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "bin").mkdir()
    _readable(target)
    os.symlink(python, target / "bin" / "python")
    return target


def _storable(value: object) -> object:
    # JSON (and PostgreSQL's jsonb) has no NaN or infinity: keep them as text.
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Evaluation:
    score: float | None
    entry: dict
    problem: str


def evaluation_read(raw: bytes | None, phase: str) -> Evaluation:
    """The last evaluation the run saved for its phase in output/idea_evals.json."""
    if raw is None:
        return Evaluation(None, {}, f"the run saved no score: it wrote no {EVALS_FILE}")
    try:
        data = json.loads(raw)
    except ValueError:
        return Evaluation(None, {}, f"{EVALS_FILE} is not JSON")
    entries = data.get("implementations") if isinstance(data, dict) else data
    ours = [e for e in entries or [] if isinstance(e, dict) and e.get("phase") == phase]
    if not ours:
        return Evaluation(None, {}, f"the run saved no score for the {phase} phase in {EVALS_FILE}")
    entry = {
        key: _storable(value)
        for key, value in ours[-1].items()
        if isinstance(value, int | float | str | bool) or value is None
    }
    performance = ours[-1].get("performance")
    if not isinstance(performance, int | float) or not _finite(performance):
        return Evaluation(
            None, entry, f"the score it saved ({performance!r}) is not a finite number"
        )
    return Evaluation(float(performance), entry, "")


def log_tail(text: str) -> str:
    tail = text[-LOG_TAIL_CHARS:]
    return tail if len(text) <= LOG_TAIL_CHARS else "…" + tail


def method_report_read(raw: bytes | None) -> dict[str, float]:
    """Runtime and logical lines as the method step reported them (numbers only)."""
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        key: data[key]
        for key in ("runtime", "method_complexity", "base_complexity")
        if _finite(data.get(key)) and data[key] >= 0
    }


# Metrics whose scores have bounds, by the names tasks give them (lowercase):
# a score outside is a forged or broken one, never a result.
KNOWN_METRIC_RANGES: dict[str, tuple[float | None, float | None]] = {
    **dict.fromkeys(
        ("accuracy", "acc", "mrr", "auc", "roc_auc", "f1", "precision", "recall", "map", "ndcg"),
        (0.0, 1.0),
    ),
    **dict.fromkeys(("rmse", "mse", "mae", "loss", "log_loss", "perplexity"), (0.0, None)),
}


def metric_range(metric: str) -> tuple[float | None, float | None]:
    return KNOWN_METRIC_RANGES.get(metric.strip().lower(), (None, None))


def score_range_problem(score: float, low: float | None, high: float | None, metric: str) -> str:
    """Why a score is outside its metric's range ('' when it is inside)."""
    if low is not None and score < low:
        return f"the score {score:g} is below the lowest possible {metric} ({low:g}): refused"
    if high is not None and score > high:
        return f"the score {score:g} is above the highest possible {metric} ({high:g}): refused"
    return ""
