# Dry runs of scenarios that exist only as objects (generated ones): each is
# written to a TOML file named after its content, run once without faults on
# the target, and its `Reference` (reachable boundary occurrences, log,
# ledger) is cached, so the Hypothesis strategies and the fuzzer share one
# fault-free run per distinct scenario.  Also plans the cases of a reference
# the way exploration does.
from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from faultlab.lab.campaigns.explore import COVERAGE, plan_cases
from faultlab.lab.campaigns.targets import make_target
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.scenario import Scenario, dump_scenario

__all__ = ["DryRuns", "GeneratedCase", "applicable_cases", "default_dry_runs"]


@dataclass(frozen=True, slots=True)
class GeneratedCase:
    """A scenario, the case to run on it, and its fault-free reference run."""

    scenario: Scenario
    case: Case
    reference: Reference = field(repr=False, compare=False)

    @property
    def occurrence(self) -> str:
        return self.case.occurrence

    @property
    def fault(self) -> str:
        return self.case.fault

    @property
    def path(self) -> str:
        """The scenario's TOML file (written by the dry run)."""
        return self.case.scenario

    def __repr__(self) -> str:
        return f"GeneratedCase({self.case.id!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis pretty-prints a failing example, a dataclass field by
        # field (tens of kB unshrunk, with a warning): the case id says more.
        printer.text(repr(self))


def scenario_file_name(scenario: Scenario, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{scenario.name}-{digest}.toml"


class DryRuns:
    """Fault-free runs of scenario objects on one target, cached by content
    (and by whether the run was traced: `reference(..., traced=True)` for a
    case judged on its system calls, in a folder of its own)."""

    def __init__(self, options: LabOptions, *, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.options = options
        self._capacity = capacity
        self._cache: OrderedDict[tuple[str, bool], Reference] = OrderedDict()
        self._lock = threading.Lock()
        self._running: dict[str, threading.Lock] = {}  # one dry run per file at a time
        self.runs = 0  # fault-free runs actually made (cache misses)

    def write(self, scenario: Scenario) -> Path:
        """Write `scenario` as TOML under the work dir; return the file."""
        text = dump_scenario(scenario)
        folder = self.options.workdir / "scenarios"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / scenario_file_name(scenario, text)
        if not path.exists():
            temp = path.with_suffix(f".{threading.get_ident()}.tmp")
            temp.write_text(text, encoding="utf-8")
            temp.replace(path)
        return path

    def reference(self, scenario: Scenario, *, traced: bool = False) -> Reference:
        """The fault-free run of `scenario` (cached); `traced`: one whose
        system calls were recorded (where the options trace at all)."""
        path = str(self.write(scenario).resolve())
        key = (path, traced or self.options.trace)
        with self._lock:
            running = self._running.setdefault(path, threading.Lock())
        with running:  # another thread's run of the same file: wait for it
            with self._lock:
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
                    return cached
            options = self.options
            if key[1] and not options.trace:  # traced on demand, in its own folder
                options = replace(options, workdir=options.workdir / "traced", trace=True)
            reference = run_reference(path, scenario, options)
            with self._lock:
                self.runs += 1
                self._cache[key] = reference
                while len(self._cache) > self._capacity:
                    self._cache.popitem(last=False)
        return reference


def applicable_cases(reference: Reference, faults: Sequence[str]) -> list[Case]:
    """Every (kill point, fault) case of `reference` for `faults`, in plan order;
    the coverage check alone when the fault-free run failed (it reports why)."""
    if reference.returncode != 0 or reference.hung:
        return [Case(reference.scenario_path, COVERAGE, "reference")]
    cases = [c for c in plan_cases(reference, faults) if c.occurrence != COVERAGE]
    return cases or [Case(reference.scenario_path, COVERAGE, "reference")]


_DEFAULTS: dict[tuple[str | None, tuple[str, ...] | None, float, str], DryRuns] = {}
_DEFAULTS_LOCK = threading.Lock()


def default_dry_runs(
    *, policy: str | None = None, target: Sequence[str] | str | None = None,
    timeout: float = 60.0, spawn: str = "fork",
) -> DryRuns:  # fmt: skip
    """A process-wide `DryRuns` per (policy, target), in a temp dir removed at exit."""
    made = make_target(policy=policy, target=target)
    key = (policy, None if made.reference else made.command, timeout, spawn)
    with _DEFAULTS_LOCK:
        runs = _DEFAULTS.get(key)
        if runs is None:
            work = Path(tempfile.mkdtemp(prefix="faultlab-dry-"))
            atexit.register(shutil.rmtree, work, True)
            # untraced: cases_on asks for a traced run where a case needs one
            runs = DryRuns(LabOptions(made, work, timeout, spawn, trace=False))
            _DEFAULTS[key] = runs
        return runs
