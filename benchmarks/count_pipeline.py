# Issue 29's counts of the case pipelines, measured on a source tree with the
# ast module (nothing is imported or run): options types, explore/run_single
# pairs, places that validate jobs and timeouts, fault-name comparisons in the
# lab, process-handle classes, modules over 450 lines, the modules that build
# DRIFT and CHILD_HUNG, and the CLI's imports of lab internals.  It owns only
# these definitions (each function's docstring says what it counts).
#
#   python3 benchmarks/count_pipeline.py [ROOT] [-v]
from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

Place = str  # "path:line" (or "path" for a module), with a note
Counter = Callable[["Tree"], list[Place]]


class Tree:
    """The parsed modules of ROOT/faultlab, by path relative to ROOT."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, ast.Module] = {}
        self.lines: dict[str, int] = {}
        for path in sorted((root / "faultlab").rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            rel = path.relative_to(root).as_posix()
            self.modules[rel] = ast.parse(text, rel)
            self.lines[rel] = len(text.splitlines())

    def under(self, prefix: str) -> Iterator[tuple[str, ast.Module]]:
        return ((p, m) for p, m in self.modules.items() if p.startswith(prefix))


def _name(node: ast.expr) -> str:
    """The last identifier of a Name or an Attribute chain (`case.fault` -> fault)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def options_types(tree: Tree) -> list[Place]:
    """Classes named *Options in faultlab/lab that a drive takes: annotated as a
    parameter of a function that also takes a `case` or a `reference`."""
    defined = {n.name: f"{p}:{n.lineno}" for p, m in tree.under("faultlab/lab/")
               for n in ast.walk(m)
               if isinstance(n, ast.ClassDef) and n.name.endswith("Options")}  # fmt: skip
    taken: set[str] = set()
    for _, module in tree.under("faultlab/lab/"):
        for fn in ast.walk(module):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            if not {a.arg for a in args} & {"case", "reference"}:
                continue
            for a in args:
                text = ast.unparse(a.annotation) if a.annotation else ""
                taken |= {c for c in defined if re.search(rf"\b{c}\b", text)}
    return [f"{defined[c]} {c}" for c in sorted(taken)]


def explore_pairs(tree: Tree) -> list[Place]:
    """Top-level explore[_K] functions in faultlab/lab with a run_single[_K] (or
    run_K_single) function for the same kind K."""
    explore: dict[str, str] = {}
    single: dict[str, str] = {}
    for path, module in tree.under("faultlab/lab/"):
        for fn in module.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                if m := re.fullmatch(r"explore(?:_(\w+))?", fn.name):
                    explore[m[1] or ""] = f"{path}:{fn.lineno} {fn.name}"
                elif m := re.fullmatch(r"run(?:_(\w+))?_single(?:_(\w+))?", fn.name):
                    single[m[1] or m[2] or ""] = f"{path}:{fn.lineno} {fn.name}"
    kinds = {"": "classic", "blackbox": "agent", "app": "app", "acp": "acp"}
    return [f"{explore[k]} + {single[k]} ({kinds.get(k, k)})" for k in sorted(explore)
            if k in single]  # fmt: skip


def _raises_about(node: ast.If, word: str) -> bool:
    return any(isinstance(n, ast.Raise) and word in ast.unparse(n) for b in node.body
               for n in ast.walk(b))  # fmt: skip


def _zero_or_one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (0, 1) and type(node.value) is int


def jobs_checks(tree: Tree) -> list[Place]:
    """Lower-bound checks of `jobs` (a name or an attribute): `jobs < 1`, `<= 0`."""
    found = []
    for path, module in tree.under("faultlab/"):
        for n in ast.walk(module):
            if isinstance(n, ast.Compare) and _name(n.left) == "jobs" \
                    and isinstance(n.ops[0], ast.Lt | ast.LtE) \
                    and _zero_or_one(n.comparators[0]):  # fmt: skip
                found.append(f"{path}:{n.lineno} {ast.unparse(n)}")
    return found


def timeout_checks(tree: Tree) -> list[Place]:
    """Where a timeout is checked to be positive: an `if` comparing a timeout
    (or `seconds`) with 0 whose body raises an error naming the timeout, a
    `positive("timeout", ...)` call, a command-line `--timeout` option with a
    checked type."""
    found = []
    for path, module in tree.under("faultlab/"):
        for n in ast.walk(module):
            if isinstance(n, ast.If) and any(
                isinstance(c, ast.Compare) and re.search(r"timeout|seconds", _name(c.left))
                and any(isinstance(x, ast.Constant) and x.value == 0 for x in c.comparators)
                for c in ast.walk(n.test)) and _raises_about(n, "timeout"):  # fmt: skip
                found.append(f"{path}:{n.lineno} {ast.unparse(n.test)}")
            elif isinstance(n, ast.Call) and n.args and _name(n.func) == "positive" \
                    and isinstance(n.args[0], ast.Constant) and n.args[0].value == "timeout":
                found.append(f"{path}:{n.lineno} {ast.unparse(n)}")  # fmt: skip
            elif isinstance(n, ast.Call) and any(isinstance(a, ast.Constant) and a.value ==
                    "--timeout" for a in n.args) and any(k.arg == "type" for k in n.keywords):
                found.append(f"{path}:{n.lineno} option --timeout")  # fmt: skip
    return found


def fault_names(tree: Tree) -> set[str]:
    """faultlab/probe.py's FAULTS, and every string in a lab constant *_FAULT(S)."""
    names: set[str] = set()
    for path, module in tree.modules.items():
        if path != "faultlab/probe.py" and not path.startswith("faultlab/lab/"):
            continue
        for n in module.body:
            if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Name) and re.fullmatch(r"([A-Z]+_)*FAULTS?", t.id)
                    for t in n.targets):  # fmt: skip
                names |= {c.value for c in ast.walk(n.value)
                          if isinstance(c, ast.Constant) and isinstance(c.value, str)}  # fmt: skip
    return names


def fault_comparisons(tree: Tree) -> list[Place]:
    """In faultlab/lab: ==, !=, in, not in with a fault name on one side (a
    string literal of one, a tuple, list or set holding one, or a constant
    *_FAULT / *_FAULTS): `case.fault == "sigkill"`, `fault in POWER_FAULTS`,
    `DOUBLE_FAULT in faults`."""
    names = fault_names(tree)

    def faulty(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(faulty(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
        return bool(re.fullmatch(r"([A-Z]+_)*FAULTS?", _name(node)))

    found = []
    for path, module in tree.under("faultlab/lab/"):
        for n in ast.walk(module):
            if not isinstance(n, ast.Compare):
                continue
            sides = [n.left, *n.comparators]
            for op, left, right in zip(n.ops, sides[:-1], sides[1:], strict=True):
                if isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) \
                        and (faulty(left) or faulty(right)):  # fmt: skip
                    found.append(f"{path}:{n.lineno} {ast.unparse(n)}")
    return found


def fault_grep_lines(tree: Tree) -> list[Place]:
    """The issue's own measure: lines of faultlab/lab matching the regular
    expression `\\.?fault (==|!=|in|not in) ` (it also counts `for fault in`)."""
    pattern = re.compile(r"\.?fault (==|!=|in|not in) ")
    found = []
    for path in tree.modules:
        if path.startswith("faultlab/lab/"):
            text = (tree.root / path).read_text(encoding="utf-8")
            found += [f"{path}:{i} {line.strip()}" for i, line in
                      enumerate(text.splitlines(), 1) if pattern.search(line)]  # fmt: skip
    return found


def process_handles(tree: Tree) -> list[Place]:
    """Public classes in faultlab/ with a `pid` (field, attribute or property)
    and a `kill` or `wait` method."""
    found = []
    for path, module in tree.under("faultlab/"):
        for cls in ast.walk(module):
            if not isinstance(cls, ast.ClassDef) or cls.name.startswith("_"):
                continue
            methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
            has_pid = "pid" in methods or any(
                (isinstance(n, ast.AnnAssign) and _name(n.target) == "pid")
                or (isinstance(n, ast.Attribute) and n.attr == "pid"
                    and isinstance(n.value, ast.Name) and n.value.id == "self"
                    and isinstance(n.ctx, ast.Store))
                for n in ast.walk(cls))  # fmt: skip
            if has_pid and methods & {"kill", "wait"}:
                found.append(f"{path}:{cls.lineno} {cls.name}")
    return found


def long_modules(tree: Tree) -> list[Place]:
    """Modules of faultlab/ over 450 lines."""
    return [f"{p} {n}" for p, n in sorted(tree.lines.items(), key=lambda x: -x[1]) if n > 450]


def _code_modules(code: str) -> Counter:
    def count(tree: Tree) -> list[Place]:
        """Modules holding the literal CODE: those that build a Violation with
        it, and the codes' registry (the issue counts it too)."""
        found = []
        for path, module in tree.under("faultlab/"):
            hits = [n for n in ast.walk(module) if isinstance(n, ast.Constant) and n.value == code]
            if not hits:
                continue
            built = [n.lineno for n in ast.walk(module)
                     if isinstance(n, ast.Call) and _name(n.func) == "Violation" and n.args
                     and isinstance(n.args[0], ast.Constant)
                     and n.args[0].value == code]  # fmt: skip
            found.append(f"{path} " + (f"Violation at {built}" if built else "not a Violation"))
        return found

    count.__doc__ = (count.__doc__ or "").replace("CODE", code)
    return count


def cli_lab_imports(tree: Tree) -> list[Place]:
    """Import statements under faultlab/cli of a module below faultlab.lab
    (`from faultlab.lab.report import x`; `from faultlab.lab import x` is not)."""
    found = []
    for path, module in tree.under("faultlab/cli/"):
        for n in ast.walk(module):
            names = ([n.module or ""] if isinstance(n, ast.ImportFrom)
                     else [a.name for a in n.names] if isinstance(n, ast.Import)
                     else [])  # fmt: skip
            if any(name.startswith("faultlab.lab.") for name in names):
                found.append(f"{path}:{n.lineno} {ast.unparse(n)[:90]}")
    return found


COUNTS: list[tuple[str, Counter]] = [
    ("options types", options_types),
    ("explore/run_single pairs", explore_pairs),
    ("jobs checks", jobs_checks),
    ("timeout checks", timeout_checks),
    ("fault-name comparisons in faultlab/lab", fault_comparisons),
    ("  the issue's grep for them", fault_grep_lines),
    ("process handles", process_handles),
    ("modules over 450 lines", long_modules),
    ("modules with DRIFT", _code_modules("DRIFT")),
    ("modules with CHILD_HUNG", _code_modules("CHILD_HUNG")),
    ("CLI imports of lab internals", cli_lab_imports),
]


def _modules(places: list[Place]) -> int:
    return len({p.split()[0].split(":")[0] for p in places})


def _order(place: Place) -> tuple[str, int]:
    where = place.split()[0].split(":")
    return where[0], int(where[1]) if len(where) > 1 and where[1].isdigit() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Issue 29's pipeline counts of a tree.")
    parser.add_argument("root", type=Path, nargs="?", default=Path.cwd())
    parser.add_argument("-v", "--verbose", action="store_true", help="list the places")
    args = parser.parse_args(argv)
    tree = Tree(args.root.resolve())
    for label, counter in COUNTS:
        places = counter(tree)
        print(f"{label}: {len(places)} (in {_modules(places)} module(s))")
        if args.verbose:
            print(f"    # {' '.join((counter.__doc__ or '').split())}")
            for place in sorted(places, key=_order):
                print(f"    {place}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
