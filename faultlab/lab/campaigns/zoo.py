# The zoo registry: the broken runtime variants `faultlab selftest` must
# catch, read from a TOML file (tests/variants/zoo.toml in a source checkout).
# Owns the file format, its validation (one-line errors naming file, entry and
# field) and where the default registry is.  What to do with it is
# faultlab/lab/campaigns/selftest.py's business.
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from faultlab.lab.campaigns.targets import DRIVES
from faultlab.lab.drives.registry import drive_faults
from faultlab.lab.errors import LabUsageError, check_timeout
from faultlab.lab.faults.double import parse_pair
from faultlab.lab.faults.fault import all_names, fault_named, parse_fault_names
from faultlab.lab.oracle.codes import GUARANTEES
from faultlab.lab.process.target import bundled_scenarios
from faultlab.lab.servers.points import parse_kill_point
from faultlab.probe import ProbeError, parse_occurrence
from faultlab.scenario import BACKENDS
from faultlab.userfiles import MAX_SCENARIO_BYTES, UserFileError, read_bytes

__all__ = ["ForeignRuntime", "QuickCase", "Zoo", "ZooVariant", "default_zoo_path", "load_zoo"]

_FORMAT = 1
ZOO_DRIVES = (*DRIVES, "agent")


@dataclass(frozen=True, slots=True)
class QuickCase:
    """One case (scenario, occurrence, fault) where a variant's bug shows."""

    scenario: Path
    at: str
    fault: str
    # run the case twice and compare (faultlab run --check-determinism)
    check_determinism: bool = False

    @property
    def id(self) -> str:
        # A coverage case is a reference run only: its id says so, whichever
        # fault's plan it checks (faultlab/lab/campaigns/api.py run_single).
        fault = "reference" if self.at == "coverage" else self.fault
        return f"{self.scenario.name}::{self.at}[{fault}]"


@dataclass(frozen=True, slots=True)
class ZooVariant:
    """A broken runtime, the codes the oracle must report for it, and where to look."""

    name: str
    script: Path
    bug: str
    expect: tuple[str, ...]  # every one must be reported by some case
    scenarios: tuple[Path, ...]  # the smallest set whose exploration catches it
    faults: tuple[str, ...]
    quick: tuple[QuickCase, ...]  # what --quick runs: the documented catching cases
    timeout: float = 60.0
    fuzz_examples: int | None = None  # a fuzz campaign for the fuzz stage, if any
    backend: str | None = None  # run with --backend (None: each scenario's own)
    # False: exhaustive exploration cannot show the bug (it needs a second run of
    # a case, say): the full selftest judges the variant by its fuzz stage only
    explore: bool = True
    # "acp": the variant is an ACP agent (docs/acp.md); "agent": a black-box
    # agent (docs/agents.md): its script takes the reference HTTP agent's
    # arguments and runs under an adapter made from the bundled `reference`
    drive: str = "classic"


@dataclass(frozen=True, slots=True)
class ForeignRuntime:
    """A correct runtime in another language (issue 30): run at every
    variant's catching cases, where it must raise no false alarm."""

    name: str
    interpreter: str  # a program on PATH; the row is "not-available" without it
    script: Path
    args: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("jsonl",)  # the variants' backends it can run
    quick: bool = True  # also in `selftest --quick` (False: the full selftest only)

    @property
    def command(self) -> tuple[str, ...]:
        return (self.interpreter, str(self.script), *self.args)


@dataclass(frozen=True, slots=True)
class Zoo:
    """A registry file: its variants in file order, the correct runtimes in
    other languages, and the false-alarm fuzz sizes."""

    path: Path
    variants: tuple[ZooVariant, ...]
    reference_fuzz_examples: int | None = None
    reference_fuzz_quick_examples: int | None = None
    reference_fuzz_exhaustive_examples: int | None = None  # default: reference_fuzz_examples
    foreign: tuple[ForeignRuntime, ...] = ()

    def select(self, names: str | None) -> tuple[ZooVariant, ...]:
        """The variants named in a comma-separated list (all when None)."""
        if names is None:
            return self.variants
        known = {v.name: v for v in self.variants}
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        if not wanted:
            raise LabUsageError("--variants: name at least one variant")
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise LabUsageError(
                f"--variants: unknown variant(s) {', '.join(unknown)} in {self.path} "
                f"(variants: {', '.join(known)})"
            )
        return tuple(known[n] for n in dict.fromkeys(wanted))


def default_zoo_path() -> Path:
    """tests/variants/zoo.toml of the source checkout faultlab runs from."""
    path = Path(__file__).resolve().parents[3] / "tests" / "variants" / "zoo.toml"
    if not path.is_file():
        raise LabUsageError(
            f"{path}: no zoo registry here (the zoo lives in a source checkout of faultlab); "
            "pass --zoo PATH"
        )
    return path


class _Fields:
    """Typed access to one table of the file, with errors naming where."""

    def __init__(self, path: Path, where: str, table: Mapping[str, Any], known: set[str]) -> None:
        self.path, self.where, self.table = path, where, table
        extra = sorted(set(table) - known)
        if extra:
            self.fail(extra[0], f"unknown field (fields: {', '.join(sorted(known))})")

    def fail(self, field: str, problem: str) -> NoReturn:
        raise LabUsageError(f"{self.path}: {self.where}: field '{field}': {problem}")

    def text(self, field: str) -> str:
        value = self.table.get(field)
        if not isinstance(value, str) or not value.strip():
            self.fail(field, "required, a non-empty string")
        return str(value)

    def texts(self, field: str) -> tuple[str, ...]:
        value = self.table.get(field)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self.fail(field, "required, a non-empty list of strings")
        return tuple(value)

    def positive(self, field: str, default: float | None) -> float | None:
        value = self.table.get(field, default)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
        ):
            self.fail(field, f"must be a positive number, not {value!r}")
        return value


def _scenario(fields: _Fields, field: str, name: str) -> Path:
    for base in (bundled_scenarios(), fields.path.parent):
        candidate = (base / name).resolve()
        if candidate.is_file():
            return candidate
    fields.fail(field, f"no scenario {name!r} among the bundled ones or beside the registry")


def _fuzz(fields: _Fields) -> int | None:
    table = fields.table.get("fuzz")
    if table is None:
        return None
    if not isinstance(table, dict):
        fields.fail("fuzz", "must be a table, e.g. { examples = 200 }")
    inner = _Fields(fields.path, f"{fields.where}: fuzz", table, {"examples"})
    examples = inner.table.get("examples")
    if not isinstance(examples, int) or isinstance(examples, bool) or examples < 1:
        inner.fail("examples", "required, a positive integer")
    return int(examples)


def _variant(path: Path, index: int, table: Any) -> ZooVariant:
    if not isinstance(table, dict):
        raise LabUsageError(f"{path}: variant {index}: must be a table")
    known = {
        "name", "script", "bug", "expect", "scenarios", "faults", "quick", "timeout", "fuzz",
        "backend", "drive", "explore",
    }  # fmt: skip
    name = table.get("name")
    fields = _Fields(path, f"variant {name if isinstance(name, str) else index}", table, known)
    name = fields.text("name")
    script = (path.parent / str(table.get("script", f"{name}.py"))).resolve()
    if not script.is_file():
        fields.fail("script", f"{script} does not exist")
    expect = fields.texts("expect")
    for code in expect:
        if code not in GUARANTEES:
            fields.fail("expect", f"unknown code {code!r}")
    scenarios = tuple(_scenario(fields, "scenarios", s) for s in fields.texts("scenarios"))
    backend = table.get("backend")
    if backend is not None and backend not in BACKENDS:
        fields.fail("backend", f"unknown backend {backend!r} (backends: {', '.join(BACKENDS)})")
    drive = table.get("drive", "classic")
    if drive not in ZOO_DRIVES:
        fields.fail("drive", f"unknown drive {drive!r} (drives: {', '.join(ZOO_DRIVES)})")
    # The faults the variant's drive runs, read off its table (an ACP
    # variant's imports the ACP SDK, slow: only for an ACP variant).  The
    # registry's "all" is every fault of the drive's `all` not planned by
    # running the target: double-sigkill, in the command line's `all` since
    # issue 30, costs five exec'd children a case, so a variant that needs it
    # lists it by name.
    possible = drive_faults(drive)
    faults_value = table.get("faults", "all")
    faults = all_names(possible, by_running=False)
    if faults_value != "all":
        faults = fields.texts("faults")
        try:
            parse_fault_names(faults, possible, drive=drive)
        except LabUsageError as exc:
            fields.fail("faults", str(exc))
    quick_value = table.get("quick")
    if not isinstance(quick_value, list) or not quick_value:
        fields.fail("quick", "required, a non-empty list of { scenario, at, fault } tables")
    quick = []
    for number, item in enumerate(quick_value, start=1):
        if not isinstance(item, dict):
            fields.fail("quick", f"entry {number} must be a table")
        inner = _Fields(path, f"{fields.where}: quick {number}", item,
                        {"scenario", "at", "fault", "check_determinism"})  # fmt: skip
        at = inner.text("at")
        fault = str(item.get("fault", "sigkill"))
        try:
            by_running = fault_named(possible, fault, drive=drive).by_running
        except LabUsageError as exc:
            inner.fail("fault", str(exc))
        try:
            if drive == "agent":  # a black-box kill point: boundary#n@delay
                at = str(parse_kill_point(at))
            elif by_running:  # a crash during recovery: K1+K2
                at = "+".join(parse_pair(at))
            elif at != "coverage":  # "coverage": the scenario's coverage check alone
                boundary, n = parse_occurrence(at)
                at = f"{boundary}#{n}"
        except (ProbeError, LabUsageError) as exc:
            inner.fail("at", str(exc))
        scenario = _scenario(inner, "scenario", inner.text("scenario"))
        twice = item.get("check_determinism", False)
        if not isinstance(twice, bool):
            inner.fail("check_determinism", f"must be true or false, not {twice!r}")
        quick.append(QuickCase(scenario, at, fault, twice))
    try:
        timeout = check_timeout(table.get("timeout", 60.0))
    except LabUsageError as exc:
        fields.fail("timeout", str(exc))
    explore = table.get("explore", True)
    if not isinstance(explore, bool):
        fields.fail("explore", f"must be true or false, not {explore!r}")
    fuzz_examples = _fuzz(fields)
    if not explore and fuzz_examples is None:
        fields.fail("explore", "false needs a fuzz campaign ({ examples = N }) to judge it")
    return ZooVariant(
        name=name,
        script=script,
        bug=fields.text("bug"),
        expect=expect,
        scenarios=scenarios,
        faults=tuple(faults),
        quick=tuple(quick),
        timeout=timeout,
        fuzz_examples=fuzz_examples,
        backend=backend,
        drive=drive,
        explore=explore,
    )


def _foreign(path: Path, index: int, table: Any) -> ForeignRuntime:
    if not isinstance(table, dict):
        raise LabUsageError(f"{path}: foreign {index}: must be a table")
    name = table.get("name")
    where = f"foreign {name if isinstance(name, str) else index}"
    fields = _Fields(path, where, table,
                     {"name", "interpreter", "script", "args", "backends", "quick"})  # fmt: skip
    script = (path.parent / fields.text("script")).resolve()
    if not script.is_file():
        fields.fail("script", f"{script} does not exist")
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        fields.fail("args", "must be a list of strings")
    backends = fields.texts("backends") if "backends" in table else ("jsonl",)
    for backend in backends:
        if backend not in BACKENDS:
            fields.fail("backends", f"unknown backend {backend!r} ({', '.join(BACKENDS)})")
    quick = table.get("quick", True)
    if not isinstance(quick, bool):
        fields.fail("quick", f"must be true or false, not {quick!r}")
    return ForeignRuntime(fields.text("name"), fields.text("interpreter"), script, tuple(args),
                          tuple(backends), quick)  # fmt: skip


def load_zoo(path: Path) -> Zoo:
    """Read and validate a zoo registry file."""
    try:
        raw = tomllib.loads(
            read_bytes(path, what="zoo registry", limit=MAX_SCENARIO_BYTES).decode("utf-8")
        )
    except UserFileError as exc:  # missing, a FIFO, a device, a loop (faultlab.userfiles)
        raise LabUsageError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabUsageError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise LabUsageError(f"{path}: invalid TOML: {exc}") from None
    top = _Fields(path, "top level", raw, {"format", "variant", "reference", "foreign"})
    if raw.get("format") != _FORMAT:
        top.fail("format", f"must be {_FORMAT}, not {raw.get('format')!r}")
    entries = raw.get("variant")
    if not isinstance(entries, list) or not entries:
        top.fail("variant", "required, at least one [[variant]] table")
    variants = tuple(_variant(path, i, t) for i, t in enumerate(entries, start=1))
    seen: set[str] = set()
    for variant in variants:
        if variant.name in seen:
            raise LabUsageError(f"{path}: variant {variant.name}: the name is used twice")
        seen.add(variant.name)
    reference = raw.get("reference", {})
    if not isinstance(reference, dict):
        top.fail("reference", "must be a table")
    foreign = raw.get("foreign", [])
    if not isinstance(foreign, list):
        top.fail("foreign", "must be a list of [[foreign]] tables")
    sizes = ("fuzz_examples", "fuzz_quick_examples", "fuzz_exhaustive_examples")
    ref = _Fields(path, "reference", reference, set(sizes))
    full, quick, exhaustive = (ref.positive(f, None) for f in sizes)
    return Zoo(
        path=path,
        variants=variants,
        reference_fuzz_examples=None if full is None else int(full),
        reference_fuzz_quick_examples=None if quick is None else int(quick),
        reference_fuzz_exhaustive_examples=None if exhaustive is None else int(exhaustive),
        foreign=tuple(_foreign(path, i, t) for i, t in enumerate(foreign, start=1)),
    )
