# What the pytest plugin (faultlab/pytest_plugin.py) runs: its options,
# validated; a scenario file's dry run and the cases it makes (the same plan
# as `faultlab explore`); one case run to a readable failure text with the
# evidence and the replay command; and `CrashLab`, the object behind the
# `crashlab` fixture.  Imported only when the plugin is in use.
from __future__ import annotations

import itertools
import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pytest

from faultlab.lab.campaigns.api import run_single
from faultlab.lab.campaigns.explore import COVERAGE, Shard, parse_shard, plan_cases, run_one
from faultlab.lab.campaigns.targets import make_target, parse_faults
from faultlab.lab.errors import LabUsageError, check_timeout
from faultlab.lab.faults.fault import Planning
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import explain
from faultlab.lab.process.reference import LabOptions, Reference, run_reference, slug
from faultlab.probe import ProbeError
from faultlab.scenario import POLICIES, Scenario, ScenarioError, dump_scenario, load_scenario

if TYPE_CHECKING:
    from faultlab.lab.blackbox.drive import BlackboxOptions

__all__ = [
    "CrashLab",
    "PluginOptions",
    "ScenarioProblem",
    "ScenarioRun",
    "failure_text",
    "plan_scenario",
    "plugin_options",
]


@dataclass(frozen=True, slots=True)
class PluginOptions:
    """The plugin's settings (command line over ini)."""

    enabled: bool
    policy: str | None
    faults: tuple[str, ...]
    target: str | None
    timeout: float
    shard: Shard | None
    workdir: Path
    agent: str | None = None  # a black-box agent (adapter name or file) instead
    delays_ms: tuple[int, ...] | None = None  # its kill delays (None: the defaults)


def plugin_options(
    *, enabled: bool, policy: str | None, faults: str, target: str | None, timeout: str,
    shard: str | None, basetemp: Path | None, agent: str | None = None,
    delays: str | None = None,
) -> PluginOptions:  # fmt: skip
    """Validate the settings; ValueError with a one-line message."""
    if agent is not None:
        return _agent_plugin_options(enabled=enabled, policy=policy, faults=faults,
                                     target=target, timeout=timeout, shard=shard,
                                     basetemp=basetemp, agent=agent, delays=delays)  # fmt: skip
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (policies: {', '.join(POLICIES)})")
    seconds = _seconds(timeout)
    try:
        fault_names = parse_faults(faults)
        parsed_shard = None if shard is None else parse_shard(shard)
        if target is not None:
            make_target(policy=policy, target=target)  # a malformed command fails here
    except LabUsageError as exc:
        raise ValueError(str(exc)) from None
    base = basetemp if basetemp is not None else Path(tempfile.mkdtemp(prefix="faultlab-pytest-"))
    return PluginOptions(enabled, policy, fault_names, target, seconds, parsed_shard,
                         base / "faultlab")  # fmt: skip


def _seconds(timeout: str) -> float:
    try:
        seconds = float(timeout)
    except ValueError:
        raise ValueError(f"timeout {timeout!r} is not a number of seconds") from None
    return check_timeout(seconds)  # a LabUsageError is a ValueError


def _agent_plugin_options(
    *, enabled: bool, policy: str | None, faults: str, target: str | None, timeout: str,
    shard: str | None, basetemp: Path | None, agent: str, delays: str | None,
) -> PluginOptions:  # fmt: skip
    """--faultlab-agent: a black-box agent's cases (docs/agents.md)."""
    from faultlab.lab.agents.launch import agent_launcher
    from faultlab.lab.campaigns.blackboxexplore import parse_blackbox_faults
    from faultlab.lab.servers.points import parse_delays

    if policy is not None or target is not None:
        raise ValueError("--faultlab-agent cannot be combined with a policy or a target")
    seconds = _seconds(timeout)
    try:
        delays_ms = None if delays is None else parse_delays(delays)
        agent_launcher(agent)  # an unknown or missing agent fails here
        fault_names = parse_blackbox_faults([f.strip() for f in faults.split(",") if f.strip()])
        parsed_shard = None if shard is None else parse_shard(shard)
    except LabUsageError as exc:
        raise ValueError(str(exc)) from None
    base = basetemp if basetemp is not None else Path(tempfile.mkdtemp(prefix="faultlab-pytest-"))
    return PluginOptions(enabled, None, fault_names, None, seconds, parsed_shard,
                         base / "faultlab", agent, delays_ms)  # fmt: skip


class ScenarioProblem(Exception):
    """A scenario file cannot be collected (one line: file, line, field)."""


def pytest_workers() -> int:
    """How many pytest processes run cases at once: pytest-xdist tells each of
    its workers how many there are (1 without it)."""
    try:
        return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        return 1


def _lab(options: PluginOptions, workdir: Path) -> LabOptions:
    # Each xdist worker runs one case at a time: together they are the jobs.
    return LabOptions(make_target(policy=options.policy, target=options.target), workdir,
                      options.timeout).for_jobs(pytest_workers())  # fmt: skip


def replay_command(case: Case, *, policy: str | None, target: str | None,
                   agent: str | None = None) -> str:  # fmt: skip
    argv = ["faultlab", "run", case.scenario, "--at", case.occurrence]
    if case.occurrence != COVERAGE:
        argv += ["--fault", case.fault]
    if policy:
        argv += ["--policy", policy]
    if target:
        argv += ["--target", target]
    if agent:
        argv += ["--agent", agent]
    return shlex.join(argv)


def failure_text(result: CaseResult, replay: str) -> str:
    """A failed case for people: verdict, each violation with its guarantee,
    message and evidence, where the logs are, and the command that replays it."""
    lines = [f"{result.case.id}: {result.verdict.upper()} ({', '.join(result.codes)})"]
    for violation in result.violations:
        lines.append(f"  {violation.code} [{violation.guarantee}]: {explain(violation.code)}")
        lines.append(f"    {violation.message}")
        if violation.evidence:
            lines.append(f"    evidence: {orjson.dumps(violation.evidence).decode()}")
    if "dir" in result.artifacts:
        kept = sorted(p.name for p in Path(result.artifacts["dir"]).glob("*.jsonl"))
        lines.append(f"  artifacts: {result.artifacts['dir']} ({', '.join(kept)})")
    lines.append(f"  replay: {replay}")
    return "\n".join(lines)


_numbers = itertools.count()


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """A collected scenario file: its dry run and its cases."""

    path: str
    reference: Reference
    cases: tuple[Case, ...]
    options: PluginOptions
    lab: LabOptions
    blackbox: BlackboxOptions | None = None  # --faultlab-agent

    @staticmethod
    def item_name(case: Case) -> str:
        return COVERAGE if case.occurrence == COVERAGE else f"{case.occurrence}[{case.fault}]"

    def run(self, case: Case) -> str | None:
        """Run `case`; None when every guarantee held, else the failure text."""
        if self.blackbox is not None:
            from faultlab.lab.campaigns.blackboxexplore import run_blackbox_or_coverage

            result = run_blackbox_or_coverage(case, self.reference, self.blackbox)
        else:
            result = run_one(case, self.reference, self.lab)
        if result.passed:
            return None
        replay = replay_command(case, policy=self.options.policy, target=self.options.target,
                                agent=self.options.agent)  # fmt: skip
        return failure_text(result, replay)


def plan_scenario(path: Path, options: PluginOptions) -> ScenarioRun:
    """Dry-run the scenario file and plan its cases (coverage first)."""
    shown = os.path.realpath(path)  # no RuntimeError on a symlink loop
    try:
        scenario = load_scenario(path)
    except (ScenarioError, ProbeError) as exc:
        raise ScenarioProblem(str(exc)) from None
    lab = _lab(options, options.workdir / f"{next(_numbers)}-{slug(path.name)}")
    if options.agent is not None:
        return _plan_agent_scenario(shown, scenario, options, lab)
    reference = run_reference(shown, scenario, lab)
    cases: tuple[Case, ...] = (Case(shown, COVERAGE, "reference"),)  # it reports a failed run
    if reference.returncode == 0 and not reference.hung:
        cases = tuple(plan_cases(reference, options.faults, Planning(lab)))
    return ScenarioRun(shown, reference, cases, options, lab)


def _plan_agent_scenario(shown: str, scenario: Scenario, options: PluginOptions,
                         lab: LabOptions) -> ScenarioRun:  # fmt: skip
    from faultlab.lab.agents.launch import agent_launcher
    from faultlab.lab.blackbox.drive import BlackboxOptions, run_blackbox_reference
    from faultlab.lab.blackbox.faults import plan_blackbox_cases
    from faultlab.lab.servers.points import DEFAULT_DELAYS_MS

    assert options.agent is not None
    blackbox = BlackboxOptions(agent_launcher(options.agent), lab.workdir, options.timeout,
                               options.delays_ms or DEFAULT_DELAYS_MS)  # fmt: skip
    reference = run_blackbox_reference(shown, scenario, blackbox)
    cases: tuple[Case, ...] = (Case(shown, COVERAGE, "reference"),)
    if reference.returncode == 0:
        cases += tuple(plan_blackbox_cases(reference, blackbox, options.faults))
    return ScenarioRun(shown, reference, cases, options, lab, blackbox)


class CrashLab:
    """Run faultlab cases from a test (the `crashlab` fixture)."""

    def __init__(self, options: PluginOptions, workdir: Path) -> None:
        self.options = options
        self.workdir = workdir
        self._count = itertools.count()

    def _scenario_file(self, scenario: str | Path | Scenario) -> str:
        if isinstance(scenario, Scenario):
            folder = self.workdir / "scenarios"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{scenario.name}.toml"
            path.write_text(dump_scenario(scenario), encoding="utf-8")
            return str(path)
        return str(scenario)

    def run(
        self, scenario: str | Path | Scenario, at: str, *, fault: str = "sigkill",
        policy: str | None = None, target: str | None = None, check_determinism: bool = False,
    ) -> CaseResult:  # fmt: skip
        """Run one case (`at`: `tool/durable#2`, or `coverage`) and return its result."""
        return run_single(
            self._scenario_file(scenario), at, fault=fault,
            policy=policy if policy is not None else self.options.policy,
            target=target if target is not None else self.options.target,
            timeout=self.options.timeout, workdir=self.workdir / f"case-{next(self._count)}",
            check_determinism=check_determinism,
        )  # fmt: skip

    def check(
        self, scenario: str | Path | Scenario, at: str, *, fault: str = "sigkill",
        policy: str | None = None, target: str | None = None,
    ) -> CaseResult:  # fmt: skip
        """`run`, and fail the test with the evidence unless every guarantee held."""
        result = self.run(scenario, at, fault=fault, policy=policy, target=target)
        if not result.passed:
            replay = replay_command(
                result.case, policy=policy or self.options.policy,
                target=target or self.options.target,
            )  # fmt: skip
            pytest.fail(failure_text(result, replay), pytrace=False)
        return result

    def boundaries(
        self, scenario: str | Path | Scenario, *, policy: str | None = None
    ) -> list[str]:
        """The boundary occurrences a fault-free run of `scenario` reaches."""
        path = self._scenario_file(scenario)
        lab = LabOptions(
            make_target(policy=policy or self.options.policy, target=self.options.target),
            self.workdir / f"dry-{next(self._count)}", self.options.timeout,
        ).for_jobs(pytest_workers())  # fmt: skip
        return run_reference(os.path.realpath(path), load_scenario(path), lab).occurrences
