# The docs name only code that exists: every `faultlab/...` file or folder path
# in docs/*.md and the READMEs is in the repo, every dotted name
# `faultlab.x.y[.NAME]` is a module or an attribute of one, a name written in
# backticks right after a module's path is defined in that file, and every
# name a `from faultlab... import ...` line imports is there (and public, when
# the module has `__all__`).  A failure names the file, the line and what is
# missing; the checker itself is tested on a made-up text.
from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Which documents are checked: globbed, so a new doc is checked too.
DOC_PATTERNS = ("docs/**/*.md", "README.md", "*/README.md", "tests/*/README.md")

_PATH = re.compile(r"(?<![\w./-])faultlab/[\w./-]*")
_DOTTED = re.compile(r"(?<![\w./-])faultlab(?:\.[A-Za-z_]\w*)+")
# A path followed by a name in backticks says the name is defined in that file.
_PATH_AND_NAME = re.compile(r"`(faultlab/[\w/]+\.py)` `([A-Za-z_]\w*)`")
_FROM_IMPORT = re.compile(r"\bfrom\s+(faultlab(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#`]+)")
# A dotted name that ends like this is a file name (`faultlab.toml`), not a module.
_FILE_SUFFIXES = frozenset({"toml", "json", "jsonl", "md", "py", "txt", "html", "xml", "sh", "db"})


@dataclass(frozen=True, slots=True)
class Missing:
    line: int
    reference: str
    reason: str


def doc_files(root: Path = REPO) -> list[Path]:
    found = {path for pattern in DOC_PATTERNS for path in root.glob(pattern) if path.is_file()}
    return sorted(found)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _top_level_names(source: Path) -> set[str]:
    """Names a module defines at its top level, read without running it (for
    `__main__` modules, whose import would run the program)."""
    tree = ast.parse(source.read_text("utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _defined_names(source: Path) -> set[str]:
    """Every function and class a module defines (at any depth) and the names
    it assigns at its top level."""
    tree = ast.parse(source.read_text("utf-8"))
    names = _top_level_names(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _find_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent is missing or is not a package
        return None


def unresolved(dotted: str, *, public: bool = False) -> str | None:
    """Why `dotted` names neither a module nor an attribute of one (None: it
    does).  The longest prefix that is a module is imported and the rest looked
    up on it; with `public`, a module with `__all__` must list the first name."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if "__main__" in parts[: cut - 1]:
            continue  # not a package; looking inside it would import (run) it
        spec = _find_spec(module)
        if spec is not None:
            break
    else:
        return f"no module {parts[0]}"
    rest = parts[cut:]
    if not rest:
        return None
    if parts[cut - 1] == "__main__":
        if spec.origin is None or len(rest) > 1:
            return f"cannot look up {'.'.join(rest)} in {module} without running it"
        if rest[0] in _top_level_names(Path(spec.origin)):
            return None
        return f"{module} defines no {rest[0]}"
    value: object = importlib.import_module(module)
    if public:
        exported = getattr(value, "__all__", None)
        if exported is not None and rest[0] not in exported:
            return f"{rest[0]} is not in {module}.__all__"
    for depth, name in enumerate(rest):
        if not hasattr(value, name):
            owner = ".".join([module, *rest[:depth]])
            return f"no module {'.'.join(parts[: cut + 1])}, and {owner} has no attribute {name}"
        value = getattr(value, name)
    return None


def missing_references(text: str, root: Path = REPO) -> list[Missing]:
    """Every path, dotted name and imported name in `text` that does not exist."""
    found: list[Missing] = []
    for match in _PATH.finditer(text):
        path = match.group().rstrip(".,")
        if not (root / path).exists():
            found.append(Missing(_line_of(text, match.start()), path, "no such file or folder"))
    for match in _PATH_AND_NAME.finditer(text):
        path, name = match.groups()
        source = root / path
        if source.is_file() and name not in _defined_names(source):
            line = _line_of(text, match.start())
            found.append(Missing(line, f"{path} {name}", f"{path} defines no {name}"))
    for match in _DOTTED.finditer(text):
        dotted = match.group()
        if dotted.rsplit(".", 1)[-1] in _FILE_SUFFIXES:
            continue
        reason = unresolved(dotted)
        if reason is not None:
            found.append(Missing(_line_of(text, match.start()), dotted, reason))
    for match in _FROM_IMPORT.finditer(text):
        module, names = match.group(1), match.group(2).strip("() \n")
        for item in names.split(","):
            name = item.split(" as ")[0].strip()
            if not name.isidentifier():
                continue
            reason = unresolved(f"{module}.{name}", public=True)
            if reason is not None:
                line = _line_of(text, match.start())
                found.append(Missing(line, f"from {module} import {name}", reason))
    return sorted(set(found), key=lambda m: (m.line, m.reference))


def test_the_docs_are_found() -> None:
    names = {str(path.relative_to(REPO)) for path in doc_files()}
    assert {"README.md", "docs/cli.md", "benchmarks/README.md"} <= names


@pytest.mark.parametrize("doc", doc_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_path_and_module_a_doc_names_exists(doc: Path) -> None:
    where = doc.relative_to(REPO)
    problems = missing_references(doc.read_text("utf-8"))
    assert not problems, "\n".join(f"{where}:{m.line}: {m.reference}: {m.reason}" for m in problems)


def test_the_checker_reports_each_missing_path_and_name_with_its_line() -> None:
    text = "\n".join(
        [
            "The reader is `faultlab/lab/read/jsonl.py`, the rooms are under faultlab/lab/.",
            "Gone: `faultlab/lab/logread.py`, and faultlab/lab/runner.py.",
            "Modules: `faultlab.lab.read.jsonl.parse_log`, `faultlab.runtime.__main__.main`.",
            "Stale: `faultlab.lab.api.run_single`, `faultlab.lab.read.jsonl.no_such_name`.",
            "```python",
            "from faultlab.lab import run_single, LabUsageError as Usage",
            "from faultlab.lab import (",
            "    importlib,",
            "    not_there,",
            ")",
            "```",
            "Files: faultlab.toml is not a module.",
            "Codes: `faultlab/lab/oracle/codes.py` `GUARANTEES`,"
            " `faultlab/lab/oracle/case.py` `GUARANTEES`.",
        ]
    )
    problems = missing_references(text)
    assert [(m.line, m.reference) for m in problems] == [
        (2, "faultlab/lab/logread.py"),
        (2, "faultlab/lab/runner.py"),
        (4, "faultlab.lab.api.run_single"),
        (4, "faultlab.lab.read.jsonl.no_such_name"),
        (7, "from faultlab.lab import importlib"),
        (7, "from faultlab.lab import not_there"),
        (13, "faultlab/lab/oracle/case.py GUARANTEES"),
    ]
    reasons = {m.reference: m.reason for m in problems}
    assert reasons["faultlab.lab.api.run_single"].startswith("no module faultlab.lab.api")
    assert "has no attribute no_such_name" in reasons["faultlab.lab.read.jsonl.no_such_name"]
    not_exported = "importlib is not in faultlab.lab.__all__"
    assert reasons["from faultlab.lab import importlib"] == not_exported


def test_a_main_module_is_read_not_run() -> None:
    # `python -m faultlab` runs the CLI on import: its names are read from the source.
    assert unresolved("faultlab.__main__.main") is None
    assert unresolved("faultlab.__main__.nothing") == "faultlab.__main__ defines no nothing"
