# Black-box cases (`--agent NAME|FILE`): the agent, unmodified, is pointed at
# faultlab's scripted model server and MCP tool server; the servers report
# every boundary to the gate, which fires at the case's kill point; after
# the kill point's delay the fault's `AgentKill` is applied (the agent's
# whole process tree SIGKILLed, or the agent alone; the drive's faults are
# the table in blackbox/faults.py), the agent is resumed with the scenario's
# resume prompt and run to the end of the script, and the oracle checks what
# the servers saw (faultlab/lab/oracle/blackbox.py).  One turn of the script
# is one agent process: the first prompt with the adapter's `first` command,
# every later one (and the resume after the kill) with its `resume` command.
from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultlab.lab.agents.launch import AgentLauncher, CaseAgent, CaseWiring
from faultlab.lab.blackbox.sessions import copy_session_files
from faultlab.lab.errors import LabUsageError, check_timeout
from faultlab.lab.oracle.blackbox import BlackboxObservation, check_blackbox
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.verdicts import drifted, hang, hung
from faultlab.lab.process.reference import BAD_REPORT, Reference, read_ledger, slug
from faultlab.lab.process.tree import ContainedProcess
from faultlab.lab.read.view import LogView
from faultlab.lab.servers.points import DEFAULT_DELAYS_MS, KillPoint, parse_kill_point
from faultlab.lab.servers.records import GateRecord, as_trace
from faultlab.lab.servers.rig import POLL, ServerRig
from faultlab.scenario import Scenario
from faultlab.userfiles import TargetFileError

__all__ = [
    "AgentKill",
    "BlackboxOptions",
    "plan_kill_points",
    "reference_dir",
    "run_blackbox_case",
    "run_blackbox_reference",
]

_SURVIVOR_GRACE = 10.0  # seconds processes spared by sigkill-agent may take to finish


@dataclass(frozen=True, slots=True)
class BlackboxOptions:
    """How black-box cases run: the agent, the work dir, the per-process
    budget, the delays each boundary occurrence is killed after, and how
    many times each case is repeated (agents persist asynchronously)."""

    agent: AgentLauncher
    workdir: Path
    timeout: float = 120.0
    delays_ms: tuple[int, ...] = DEFAULT_DELAYS_MS
    repeats: int = 1

    def __post_init__(self) -> None:
        check_timeout(self.timeout)
        if self.repeats < 1:
            raise LabUsageError(f"repeats must be at least 1, not {self.repeats}")
        for delay in self.delays_ms:
            KillPoint("model/request", 1, delay)  # validates the delay


@dataclass(frozen=True, slots=True)
class AgentKill:
    """What a black-box fault kills when the gate fires: the agent's whole
    process tree (every tool server it started, in whatever process group),
    or (`spares_others`) the agent's own group only, so that what it put
    elsewhere (a tool server in a group of its own) lives on and may finish
    what it was doing, as after a crash of the agent alone in the field."""

    spares_others: bool = False

    def apply(self, process: ContainedProcess) -> None:
        (process.kill_agent if self.spares_others else process.kill_tree)()


@dataclass
class _Run:
    """One agent process of a case."""

    kind: str  # "first" | "resume"
    turn: int
    status: int | None = None
    killed: bool = False
    answer: str = ""


@dataclass
class _Outcome:
    records: list[dict[str, Any]]
    runs: list[_Run] = field(default_factory=list)
    crash_records: int = 0  # records before the recovery started
    hung: str | None = None
    at_kill: dict[str, str] = field(default_factory=dict)


class _CaseRig(ServerRig):
    """One case's rig (the servers, the gate, the records) with the agent:
    its private directory, its adapter's commands and its runs."""

    def __init__(self, scenario_path: str, scenario: Scenario, options: BlackboxOptions,
                 where: Path, armed: KillPoint | None) -> None:  # fmt: skip
        super().__init__(where, armed, timeout=options.timeout, model=scenario,
                         naming=options.agent.tool_naming)  # fmt: skip
        self.scenario, self.options = scenario, options
        wiring = CaseWiring(where / "agent", self.model_url, self.tool_server(scenario_path),
                            str(uuid.uuid5(uuid.NAMESPACE_URL, str(where))),
                            self.model_key)  # fmt: skip
        wiring.directory.mkdir()
        self.agent: CaseAgent = options.agent.prepare(wiring)

    def _let_survivors_finish(self, process: ContainedProcess, run: int) -> None:
        """After `sigkill-agent`: what outlived the agent's group (a tool server
        in a group of its own) finishes what it was doing, as it would in the
        field, and exits when it sees the agent gone; bounded, then killed."""
        deadline = time.monotonic() + _SURVIVOR_GRACE
        while (left := process.descendants()) and time.monotonic() < deadline:
            time.sleep(POLL)
        self.gate.note("agent/survivors", run=run, left=len(left))

    def run(self, kind: str, turn: int, prompt: str, outcome: _Outcome, *, armed: bool,
            kill: AgentKill | None = None) -> _Run:  # fmt: skip
        """One agent process to its end, or to the kill when `armed` and the
        gate fires during it."""
        command = self.agent.first(prompt) if kind == "first" else self.agent.resume(prompt)
        run = _Run(kind, turn)
        outcome.runs.append(run)
        self.gate.note("agent/start", kind=kind, turn=turn, run=len(outcome.runs))
        name = f"run{len(outcome.runs)}-{kind}"
        stdout, stderr = self.outputs(name)
        process = ContainedProcess.start(
            list(command.argv), cwd=command.cwd or self.where / "agent", env=command.env,
            stdin_path=None, stdout_path=stdout, stderr_path=stderr, forward=self.forward,
        )  # fmt: skip
        # The agent's own time, from its exec to its exit (or to the kill):
        # what benchmarks/blackbox_overhead.py compares the case's time with.
        self.gate.note("agent/running", run=len(outcome.runs), pid=process.pid,
                       netns=process.networked)  # fmt: skip
        try:
            ending, run.status = self.watch(process, time.monotonic() + self.options.timeout,
                                            armed=armed)  # fmt: skip
            if ending == "exited":
                self.gate.note("agent/ended", run=len(outcome.runs))
            elif ending == "fired":
                armed_at = self.gate.armed
                if armed_at is not None and armed_at.delay_ms:
                    time.sleep(armed_at.delay_ms / 1000)
                self.gate.note("agent/ended", run=len(outcome.runs))
                kill = kill or AgentKill()
                kill.apply(process)
                self.kill_orphaned_tools()  # as if they had been in the tree
                outcome.at_kill = self.copy_session("at-kill")
                self.gate.release(survivors_proceed=kill.spares_others)
                run.killed, run.status = True, process.wait(self.options.timeout)
                if kill.spares_others:
                    self._let_survivors_finish(process, len(outcome.runs))
            else:
                outcome.hung = f"{name} neither exited nor reached its kill point in " \
                               f"{self.options.timeout:g} s"  # fmt: skip
        finally:
            process.close()
            self.kill_orphaned_tools()
            # Names the agent looked up, each answered NXDOMAIN in its
            # network namespace (a vendor's telemetry, an update check).
            names = process.names_looked_up
            looked_up = {"dns": names} if names else {}
            self.gate.note("agent/exit", run=len(outcome.runs), status=run.status,
                           killed=run.killed, **looked_up)  # fmt: skip
        run.answer = _answer(self.gate.snapshot(), len(outcome.runs))
        return run

    def copy_session(self, name: str) -> dict[str, str]:
        """The agent's session files as they are now, beside the case's
        records (a report keeps a failure's top-level files), with their
        SQLite sidecars, and what the adapter's reader makes of each
        (`NAME-N-FILE.history.json`): blackbox/sessions.py."""
        return copy_session_files(self.agent.session_files(), self.where, name,
                                  self.agent.read_session, self.write_json)  # fmt: skip


def _answer(records: Sequence[GateRecord], run: int) -> str:
    """The final answer the model server gave during agent run `run`."""
    current, answer = 0, ""
    for record in records:
        if record.get("fact") == "agent/start":
            current = int(record.get("run", 0))
        elif current == run and record.get("fact") == "model/response" and not record.get("calls"):
            answer = str(record.get("text") or "")
    return answer


def _prompts(scenario: Scenario) -> list[str]:
    return [turn.user for turn in scenario.turns]


def run_blackbox_reference(scenario_path: str, scenario: Scenario,
                           options: BlackboxOptions) -> Reference:  # fmt: skip
    """The fault-free run: every turn to its end.  Its trace is the gate's
    records, so its occurrences are the kill points of the cases."""
    where = reference_dir(options, scenario_path)
    rig = _CaseRig(scenario_path, scenario, options, where, None)
    outcome = _Outcome([])
    try:
        for turn, prompt in enumerate(_prompts(scenario)):
            run = rig.run("first" if turn == 0 else "resume", turn, prompt, outcome, armed=False)
            if run.status != 0 or outcome.hung:
                break
    finally:
        rig.close()
    refused: tuple[str, str] | None = None
    try:
        # The coverage case keeps this folder: the agent's session files
        # beside its requests (records.jsonl) and its stdout/stderr.
        rig.copy_session("final")
    except TargetFileError as error:  # a FIFO, a link, a huge file: every case an error
        refused = (error.code, str(error))
    records = rig.gate.snapshot()
    failed = next((r for r in outcome.runs if r.status != 0), None)
    stderr = ""
    if failed is not None or outcome.hung:
        index = outcome.runs.index(failed) + 1 if failed else len(outcome.runs)
        name = f"run{index}-{outcome.runs[index - 1].kind}"
        # Agents in print mode report their own errors on stdout (JSON lines).
        stderr = (outcome.hung or "") + (rig.tail(f"{name}.stderr")
                                         or rig.tail(f"{name}.stdout", 1500))  # fmt: skip
    if rig.tool_note():
        # Said last: what a failed fault-free run shows first (its last line).
        stderr = f"{stderr.rstrip()}\n{rig.tool_note()}".lstrip()
    return Reference(
        scenario=scenario, scenario_path=scenario_path, trace=as_trace(records),
        log=LogView(str(where), False, None, (), 0, 0, 0, ()), ledger=read_ledger(rig.ledger),
        returncode=BAD_REPORT if refused else _returncode(failed, outcome), log_bytes=b"",
        stderr=stderr,
        hung=outcome.hung is not None,
        ground_truth="servers", refused=refused,
    )  # fmt: skip


def reference_dir(options: BlackboxOptions, scenario_path: str) -> Path:
    """The folder of a scenario's fault-free run (kept by its coverage case)."""
    return options.workdir / "blackbox-reference" / slug(Path(scenario_path).name)


def _returncode(failed: _Run | None, outcome: _Outcome) -> int:
    if outcome.hung:
        return -9
    return 0 if failed is None else failed.status or 1


def plan_kill_points(reference: Reference, options: BlackboxOptions, fault: str) -> list[Case]:
    """The cases of `fault` (its name): every boundary occurrence the
    reference run reached, at every delay, repeated `options.repeats` times."""
    cases = []
    for occurrence in reference.occurrences:
        boundary, _, n = occurrence.partition("#")
        for delay in options.delays_ms:
            point = KillPoint(boundary, int(n), delay)
            for repeat in range(1, options.repeats + 1):
                suffix = f"~{repeat}" if options.repeats > 1 else ""
                cases.append(Case(reference.scenario_path, f"{point}{suffix}", fault))
    return cases


def run_blackbox_case(case: Case, reference: Reference, options: BlackboxOptions, *,
                      kill: AgentKill) -> CaseResult:  # fmt: skip
    """One case of a black-box fault that kills as `kill` says (blackbox/faults.py)."""
    started = time.monotonic()
    point = parse_kill_point(case.occurrence.partition("~")[0])
    where = options.workdir / "blackbox-cases" / slug(case.id)
    rig = _CaseRig(case.scenario, reference.scenario, options, where, point)
    outcome = _Outcome([])
    artifacts = {"dir": str(where), "records": str(rig.records)}
    prompts = _prompts(reference.scenario)
    verdict: Verdict = "pass"
    violations: list[Violation] = []
    try:
        killed = _crash(rig, prompts, outcome, kill)
        if outcome.hung:
            verdict, violations = hung(outcome.hung)
        elif killed is None:
            ran = ", ".join(str(r.status) for r in outcome.runs)
            message = (f"the agent never reached {point.occurrence} (the fault-free run did); "
                       f"its runs exited {ran}")  # fmt: skip
            verdict, violations = drifted(message)
        else:
            outcome.crash_records = len(rig.gate.snapshot())
            rig.gate.disarm()
            resume = rig.run("resume", killed, reference.scenario.resume_prompt, outcome,
                             armed=False)  # fmt: skip
            if resume.status == 0:
                for turn in range(killed + 1, len(prompts)):
                    if rig.run("resume", turn, prompts[turn], outcome, armed=False).status:
                        break
            violations = _judge(rig, reference, outcome, resume)
            late = _hang(outcome)  # a recovery run that hung
            if late is not None:
                violations.append(hang(late))
            verdict = "fail" if violations else "pass"
    finally:
        rig.close()
    artifacts.update(outcome.at_kill)
    artifacts.update(rig.copy_session("final"))
    detail = "; ".join(n for n in (rig.foreign_note(), rig.tool_note()) if n)
    return CaseResult(case, verdict, tuple(violations), time.monotonic() - started,
                      detail, artifacts)  # fmt: skip


def _hang(outcome: _Outcome) -> str | None:
    return outcome.hung


def _crash(rig: _CaseRig, prompts: Sequence[str], outcome: _Outcome,
           kill: AgentKill) -> int | None:  # fmt: skip
    """Run the script until the kill: the turn it came in, or None."""
    for turn, prompt in enumerate(prompts):
        run = rig.run("first" if turn == 0 else "resume", turn, prompt, outcome, armed=True,
                      kill=kill)  # fmt: skip
        if run.killed:
            return turn
        if run.status != 0 or outcome.hung:
            return None
    return None


def _judge(rig: _CaseRig, reference: Reference, outcome: _Outcome, resume: _Run) -> list[Violation]:
    records = rig.gate.snapshot()
    killed_run = next(i for i, r in enumerate(outcome.runs) if r.killed)
    observation = BlackboxObservation(
        scenario=reference.scenario, crash=tuple(records[: outcome.crash_records]),
        resume=tuple(records[outcome.crash_records :]), ledger=read_ledger(rig.ledger),
        reference_ledger=reference.ledger, resume_status=resume.status or 0,
        completed=tuple(r.answer for r in outcome.runs[:killed_run] if r.status == 0),
        resume_stderr=rig.tail(f"run{outcome.runs.index(resume) + 1}-resume.stderr"),
    )  # fmt: skip
    return check_blackbox(observation)
