# The framework-app drive (`--app FRAMEWORK:MODULE:FACTORY`): faultlab builds
# the app with a scripted model, ledger tools and a reporting proxy around its
# own checkpointer or history store (faultlab/lab/apps/), hurt with the faults
# of its table (faultlab/lab/apps/faults.py).  An app compared in
# several modes (`--compare durability=exit,async,sync`) is one variant per
# mode; each case's fault names its mode (`sigkill/resume/sync`).
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from faultlab.lab.apps.drive import (
    MODES,
    STORE_WRITES,
    AppOptions,
    run_app_reference,
    style_refusal,
)
from faultlab.lab.apps.faults import APP_FAULTS, app_fault
from faultlab.lab.drives.protocol import PlanContext, coverage_result
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import Planning, all_names, parse_fault_names, plan_faults
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.live import kill_all
from faultlab.lab.process.reference import Reference
from faultlab.lab.servers.points import APP_BOUNDARIES, parse_kill_point
from faultlab.scenario import Scenario

__all__ = ["AppDrive", "parse_compare"]


def parse_compare(text: str | None, *, framework: str = "langgraph") -> tuple[str, ...]:
    """`durability=exit,async,sync` (LangGraph) or `save=node,run`
    (pydantic-ai) -> the modes; None -> the framework's default mode."""
    name, known, default = MODES[framework]
    if text is None:
        return (default,)
    key, _, values = text.partition("=")
    modes = tuple(dict.fromkeys(v.strip() for v in values.split(",") if v.strip()))
    if key.strip() != name or not modes:
        raise LabUsageError(f"--compare {text}: a {framework} app compares {name}=MODE,... "
                            f"(modes: {', '.join(known)})")  # fmt: skip
    for mode in modes:
        if mode not in known:
            raise LabUsageError(f"--compare: unknown {name} {mode!r} "
                                f"(modes: {', '.join(known)})")  # fmt: skip
    return modes


@dataclass(frozen=True, slots=True)
class AppDrive:
    """The app drive over `options` in one mode, or (`modes`) its variants."""

    options: AppOptions
    base: Path  # the run's work dir; each mode works in base/MODE
    modes: tuple[str, ...] = ()
    name: str = "app"
    faults: tuple[str, ...] = tuple(APP_FAULTS)
    all_faults: tuple[str, ...] = all_names(APP_FAULTS)

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    @property
    def mode(self) -> str:
        return self.options.durability

    @property
    def coverage_fault(self) -> str:
        return f"reference/{self.mode}"

    def for_jobs(self, jobs: int) -> AppDrive:
        return self

    def for_faults(self, faults: Sequence[str]) -> AppDrive:
        return self

    def variants(self) -> Sequence[AppDrive]:
        return tuple(self._in(mode) for mode in self.modes or (self.mode,))

    def variant_for(self, fault: str) -> AppDrive:
        """FAULT/STYLE/MODE (a recorded case), reference/MODE (its coverage
        case), or FAULT alone (the first mode, the `resume` style)."""
        parts = fault.split("/")
        if len(parts) == 2 and parts[0] == "reference":
            return self._in(parts[1])
        if len(parts) == 1:
            parts = [fault, "resume", (self.modes or (self.mode,))[0]]
        if len(parts) != 3:
            raise LabUsageError(f"app case fault {fault!r}: expected FAULT/STYLE/MODE, "
                                "e.g. sigkill/resume/sync")  # fmt: skip
        variant = self._in(parts[2])
        return replace(variant, options=replace(variant.options, styles=(parts[1],)))

    def case_fault(self, fault: str) -> str:
        if "/" in fault:
            return fault
        return f"{fault}/{self.options.styles[0]}/{self.mode}"

    def _in(self, mode: str) -> AppDrive:
        options = replace(self.options, durability=mode, workdir=self.base / mode)
        return replace(self, options=options, modes=())

    def reference(self, path: str, scenario: Scenario) -> Reference:
        return run_app_reference(path, scenario, self.options)

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        return plan_faults(APP_FAULTS, reference, faults, Planning(self.options))

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        # Declared boundaries name probe boundaries, which an app never
        # reports; every tool the script's steps call must have run, a ledger
        # tool's effect been applied, and the app's store been written.
        scenario = reference.scenario
        called = {c.tool for t in scenario.turns for s in t.steps for c in s.tool_calls}
        effects = any(t.effect == "ledger" and t.name in called for t in scenario.tools)
        store = STORE_WRITES.get(self.options.framework)
        needs = [(store, "a write of the app's store")] if store else []
        if effects:
            needs.append(("tool/effect", "a tool's effect in the world ledger"))
        return coverage_result(
            case, reference, declared=False, tool_boundary="tool/started#1", needs=needs,
            seen="does the factory give the model the tools it is passed, and does the app run "
            "the calls the model asks for?",
        )  # fmt: skip

    def run(self, case: Case, reference: Reference) -> CaseResult:
        return app_fault(case.fault).run(case, reference, self.options)

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        bare = [name.split("/")[0] for name in names]  # a recorded case's FAULT/STYLE/MODE
        return parse_fault_names(bare, APP_FAULTS, drive=self.name)

    def parse_occurrence(self, text: str, fault: str) -> str:
        point = parse_kill_point(text, boundaries=APP_BOUNDARIES)
        if point.delay_ms:
            raise LabUsageError(f"{text}: an app's kill points have no delay")
        return point.occurrence

    def check_applies(self, case: Case, reference: Reference) -> None:
        if case.occurrence not in reference.occurrences:
            raise LabUsageError(f"{case.occurrence}: the fault-free run of {self.options.app} "
                                f"never reached it (it reached "
                                f"{len(set(reference.occurrences))} occurrence(s))")  # fmt: skip
        # A case asked in a style the app cannot resume in is refused, never
        # run into a false alarm (an explore plans only the styles it can).
        style = case.fault.split("/")[1] if case.fault.count("/") == 2 else ""
        refusal = style_refusal(reference, self.options, style) if style == "invocation" else None
        if refusal:
            raise LabUsageError(refusal)

    def kill_all(self) -> None:
        kill_all()

    def run_options(self) -> dict[str, Any]:
        return {"app": self.options.app, "spawn": self.options.spawn,
                "modes": list(self.modes or (self.mode,))}  # fmt: skip
