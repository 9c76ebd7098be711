# docs/architecture.md names every room of the tree in a row of its tables
# (the path in the first cell): every package under faultlab/ (a directory
# with an `__init__.py`, at any depth) as `faultlab/<path>/`, every top-level
# module of faultlab/ and of faultlab/lab/ as `faultlab/<path>.py`, and every
# layer of the two import-linter `layers` contracts in pyproject.toml
# ([tool.importlinter]: the top level, the lab's rooms); and its layer
# drawing lists the contracts' layers in their order (a line marked
# `(planned)` aside).  A failure lists what is missing and where it belongs.
# The checkers themselves are tested on a made-up tree and text.
from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"

# A path as the docs write it (the same rule as tests/unit/test_docs_paths.py).
_PATH = re.compile(r"(?<![\w./-])faultlab/[\w./-]*")


def named_paths(text: str) -> set[str]:
    """Every `faultlab/...` path in the first cell of a table row of `text`
    (a path named only in prose has no row, so no layer)."""
    named = set()
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) >= 4 and cells[0] == "":  # "| a | b | c |" -> "", a, b, c, ""
            named |= {m.group().rstrip(".,") for m in _PATH.finditer(cells[1])}
    return named


def packages(root: Path) -> list[str]:
    """Every package under `root`/faultlab, as `faultlab/a/b/` (the root too)."""
    base = root / "faultlab"
    return sorted(
        f"{init.parent.relative_to(root).as_posix()}/"
        for init in base.rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def modules(root: Path, package: str) -> list[str]:
    """The modules directly in `package` (like `faultlab/lab`), `__init__` aside."""
    return sorted(
        path.relative_to(root).as_posix()
        for path in (root / package).glob("*.py")
        if path.name != "__init__.py"
    )


def _layer_names(layer: str) -> list[str]:
    # "acp | blackbox | apps" is three layers that may not import each other;
    # import-linter writes an optional layer as "(name)".
    return [name.strip().strip("()").strip() for name in layer.split("|") if name.strip()]


def contract_layers(pyproject: Path) -> dict[str, list[list[str]]]:
    """container -> its layers from the top, each the names joined by `|`,
    for every `layers` contract."""
    config = tomllib.loads(pyproject.read_text("utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers: dict[str, list[list[str]]] = {}
    for contract in contracts:
        if contract.get("type") != "layers":
            continue
        for container in contract.get("containers", []):
            layers.setdefault(container, []).extend(
                _layer_names(layer) for layer in contract["layers"]
            )
    return layers


def contract_rooms(pyproject: Path) -> dict[str, list[str]]:
    """container -> the names of its layers, for every `layers` contract."""
    return {
        container: [name for layer in layers for name in layer]
        for container, layers in contract_layers(pyproject).items()
    }


_TOKEN = re.compile(r"\S+(?: \S+)*")  # words joined by single spaces: `acp/ | apps/`


def drawing_layers(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """The layer drawing of the `## Layers` section (its first code block):
    the left column (faultlab/) and the right one (faultlab/lab/), each
    layer's names without `/` or `.py`; a right-hand entry followed by
    `(planned)` is left out, and so is the arrow between the columns."""
    section = text.split("\n## Layers", 1)[1]
    block = section.split("```", 2)[1].strip("\n").splitlines()
    column = block[0].index("faultlab/lab/")
    left: list[list[str]] = []
    right: list[list[str]] = []
    for line in block[1:]:
        tokens = [(m.start(), m.group()) for m in _TOKEN.finditer(line)]
        planned = any(token == "(planned)" for _, token in tokens)
        for start, token in tokens:
            if token == "(planned)" or re.fullmatch(r"-+>", token):
                continue
            names = [n.strip().removesuffix("/").removesuffix(".py") for n in token.split("|")]
            if start < column:
                left.append(names)
            elif not planned:
                right.append(names)
    return left, right


def drawing_problems(text: str, layers: dict[str, list[list[str]]]) -> list[str]:
    """How the drawing differs from the contracts (empty: it matches)."""
    left, right = drawing_layers(text)
    problems = []
    for side, container, drawn in (("left", "faultlab", left), ("right", "faultlab.lab", right)):
        wanted = layers.get(container, [])
        if [sorted(layer) for layer in drawn] != [sorted(layer) for layer in wanted]:
            shown = lambda rows: " / ".join(" | ".join(r) for r in rows)  # noqa: E731
            problems.append(f"the {side} column draws {shown(drawn)}; the contract on "
                            f"{container} has {shown(wanted)}")  # fmt: skip
    return problems


def room_path(root: Path, container: str, name: str) -> str:
    """How the doc must name layer `name` of `container` (a dotted package):
    `faultlab/lab/servers/` for a package, `faultlab/lab/errors.py` for a
    module; a name not in the tree (yet) as a package."""
    folder = container.replace(".", "/")
    if (root / folder / f"{name}.py").is_file():
        return f"{folder}/{name}.py"
    return f"{folder}/{name}/"


def missing_rooms(root: Path, text: str) -> dict[str, list[str]]:
    """What the doc does not name, by why it must: {reason: [path, ...]}."""
    named = named_paths(text)
    wanted = {
        "packages of faultlab/ (directories with an __init__.py)": [
            p for p in packages(root) if p != "faultlab/"
        ],
        "top-level modules of faultlab/": modules(root, "faultlab"),
        "rooms of faultlab/lab/": [
            *[p for p in packages(root) if re.fullmatch(r"faultlab/lab/[^/]+/", p)],
            *modules(root, "faultlab/lab"),
        ],
    }
    for container, names in contract_rooms(root / "pyproject.toml").items():
        reason = f"layers of the import-linter contract on {container} (pyproject.toml)"
        wanted[reason] = [room_path(root, container, name) for name in names]
    missing: dict[str, list[str]] = {}
    for reason, paths in wanted.items():
        absent = sorted({p for p in paths if p not in named})
        if absent:
            missing[reason] = absent
    return missing


def test_the_architecture_doc_names_every_room() -> None:
    missing = missing_rooms(REPO, DOC.read_text("utf-8"))
    assert not missing, (
        "docs/architecture.md does not name these paths (give each a row, with its "
        "layer, in the folder or room table, written as a path like "
        "`faultlab/lab/servers/`):\n"
        + "\n".join(f"  {reason}: {', '.join(paths)}" for reason, paths in missing.items())
    )


def test_the_layer_drawing_matches_the_contracts() -> None:
    problems = drawing_problems(DOC.read_text("utf-8"), contract_layers(REPO / "pyproject.toml"))
    assert not problems, (
        "docs/architecture.md's layer drawing is out of step with pyproject.toml "
        "[tool.importlinter] (top layer first; `|` joins the layers of one line):\n  "
        + "\n  ".join(problems)
    )


def test_the_rooms_are_found_in_the_tree_and_the_contracts() -> None:
    # Guards the checker against finding nothing (a moved pyproject, a renamed tree).
    found = packages(REPO)
    assert {"faultlab/", "faultlab/lab/", "faultlab/lab/servers/", "faultlab/runtime/acp/"} <= set(
        found
    )
    assert "faultlab/userfiles.py" in modules(REPO, "faultlab")
    rooms = contract_rooms(REPO / "pyproject.toml")
    assert {"acp", "blackbox", "apps", "errors"} <= set(rooms["faultlab.lab"])
    assert {"cli", "pytest_plugin", "probe", "lab", "runtime"} <= set(rooms["faultlab"])


def test_the_checker_names_each_missing_room(tmp_path: Path) -> None:
    for package in ("faultlab", "faultlab/lab", "faultlab/lab/read", "faultlab/lab/servers",
                    "faultlab/runtime", "faultlab/runtime/deep/er"):  # fmt: skip
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "faultlab/runtime/deep/__init__.py").write_text("")
    (tmp_path / "faultlab/lab/agents").mkdir()  # data only: no __init__.py, not a package
    for module in ("faultlab/probe.py", "faultlab/lab/errors.py"):
        (tmp_path / module).write_text("")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.importlinter]\nroot_package = 'faultlab'\n"
        "[[tool.importlinter.contracts]]\nname = 'top'\ntype = 'layers'\n"
        "containers = ['faultlab']\nlayers = ['lab | runtime', 'probe']\n"
        "[[tool.importlinter.contracts]]\nname = 'lab'\ntype = 'layers'\n"
        "containers = ['faultlab.lab']\nlayers = ['(drives)', 'servers', 'read', 'errors']\n"
        "[[tool.importlinter.contracts]]\nname = 'f'\ntype = 'forbidden'\n"
        "source_modules = ['faultlab.probe']\nforbidden_modules = ['faultlab.lab']\n"
    )
    text = (
        "| `faultlab/lab/` | the lab |\n| `faultlab/runtime/` | the runtime |\n"
        "| `faultlab/lab/read/` | readers |\n| faultlab/lab/errors.py, | errors |\n"
        "| `faultlab/runtime/deep/` | deep |\n| `faultlab/lab/servers` | no slash: not named |\n"
    )
    assert missing_rooms(tmp_path, text) == {
        "packages of faultlab/ (directories with an __init__.py)": [
            "faultlab/lab/servers/", "faultlab/runtime/deep/er/",
        ],
        "top-level modules of faultlab/": ["faultlab/probe.py"],
        "rooms of faultlab/lab/": ["faultlab/lab/servers/"],
        "layers of the import-linter contract on faultlab (pyproject.toml)": [
            "faultlab/probe.py",
        ],
        "layers of the import-linter contract on faultlab.lab (pyproject.toml)": [
            "faultlab/lab/drives/", "faultlab/lab/servers/",
        ],
    }  # fmt: skip


def test_the_drawing_checker_reads_both_columns_and_skips_planned_rooms() -> None:
    text = (
        "intro\n\n## Layers\n\nsome words\n\n```\n"
        "faultlab/          faultlab/lab/\n"
        "  cli | bench        report/\n"
        "  lab  ----->        drives/      (planned)\n"
        "  probe              acp/ | apps/\n"
        "                     errors.py\n"
        "```\n\n## Next\n\n```\nnot a drawing\n```\n"
    )
    left, right = drawing_layers(text)
    assert left == [["cli", "bench"], ["lab"], ["probe"]]
    assert right == [["report"], ["acp", "apps"], ["errors"]]
    layers = {"faultlab": [["bench", "cli"], ["lab"], ["probe"]],
              "faultlab.lab": [["report"], ["drives"], ["apps", "acp"], ["errors"]]}  # fmt: skip
    assert drawing_problems(text, layers) == [
        "the right column draws report / acp | apps / errors; the contract on faultlab.lab "
        "has report / drives / apps | acp / errors"
    ]
    layers["faultlab.lab"].remove(["drives"])
    assert drawing_problems(text, layers) == []
