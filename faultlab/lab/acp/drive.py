# The lab as an ACP client (`--drive acp`): the target is an ACP agent (the
# reference runtime's `python -m faultlab.runtime.acp` by default), driven the
# way an editor drives it.  A case: initialize, session/new, one session/prompt
# per scripted turn, until the agent parks at the armed boundary; inject the
# fault (SIGKILL of its process group, SIGTERM, or session/cancel); spawn it
# again, session/load (twice: the second load must change nothing), check
# what the client was shown against the recovered log, and send the next
# prompts to the end of the script.  The agent tells the client the script's
# next user message in `_meta.faultlab.nextPrompt` (docs/acp.md).
from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import acp
from acp import text_block

from faultlab.lab.acp.child import AcpChild, Parked
from faultlab.lab.acp.fork import shared_acp_server
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DOUBLE_FAULT
from faultlab.lab.faults.live import plan_fault_cases
from faultlab.lab.oracle.acp import check_cancel, check_guidance, check_replay, updates_between
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.checks import Observation, check_case
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.live import check_graceful_close
from faultlab.lab.process.reference import (
    Reference,
    drift,
    owed_expectations,
    read_bytes,
    read_ledger,
    slug,
    write_trace,
)
from faultlab.lab.process.spawn import ChildExit, ChildHung
from faultlab.lab.process.target import LEDGER_NAME, LOG_NAME
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import LogView
from faultlab.scenario import Scenario

__all__ = [
    "ACP_FAULTS",
    "AcpOptions",
    "Outcome",
    "Recovered",
    "acp_target",
    "meta_next",
    "open_connection",
    "parse_acp_faults",
    "plan_acp_cases",
    "prompt_to_end",
    "recover_session",
    "run_acp_case",
    "run_acp_reference",
    "run_driven",
    "session_files",
    "start_armed",
]

# The faults an ACP drive injects: SIGKILL, SIGTERM (graceful stop) and the
# client's own session/cancel.
ACP_FAULTS = ("sigkill", "sigterm", "acp-cancel")


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """How ACP cases are run: the agent command (it gets SCENARIO
    --sessions-dir DIR [--policy P]), the work dir and the per-wait budget."""

    command: tuple[str, ...]
    workdir: Path
    timeout: float = 60.0
    policy: str | None = None
    reference: bool = True  # the reference runtime runs in its case dir; a --target
    # command in the user's cwd, as typed
    spawn: str = "fork"  # reference agents forked from a pre-imported server, or exec'd

    def __post_init__(self) -> None:
        if self.spawn not in ("fork", "exec"):
            raise LabUsageError(f"spawn must be 'fork' or 'exec', not {self.spawn!r}")

    def cwd(self, where: Path) -> str | None:
        return str(where) if self.reference else None

    def child(
        self, scenario: str, sessions: Path, where: Path, name: str, armed: str | None = None
    ) -> AcpChild:
        """The agent process of one run (not started)."""
        argv = self.argv(scenario, sessions)
        stderr = where / f"{name}.stderr"
        if self.reference and self.spawn == "fork":
            tail = argv[len(self.command) :]
            server = shared_acp_server()
            return AcpChild(argv, stderr, armed=armed, cwd=str(where), server=server,
                            server_argv=tail)  # fmt: skip
        return AcpChild(argv, stderr, armed=armed, cwd=self.cwd(where))

    def argv(self, scenario: str, sessions: Path) -> list[str]:
        argv = [*self.command, scenario, "--sessions-dir", str(sessions)]
        return argv + (["--policy", self.policy] if self.policy else [])


def acp_target(command: str | Sequence[str] | None) -> tuple[str, ...]:
    """The agent command: the reference ACP runtime, or the user's."""
    if command is None:
        return (sys.executable, "-m", "faultlab.runtime.acp")
    try:
        parts = tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)
    except ValueError as exc:
        raise LabUsageError(f"--target {command!r}: {exc}") from None
    if not parts:
        raise LabUsageError("--target: empty command")
    return parts


def parse_acp_faults(faults: Sequence[str]) -> tuple[str, ...]:
    """The ACP faults among `faults` in ACP_FAULTS order (`all` is ACP_FAULTS and
    double-sigkill, which, planned by running recoveries, comes last)."""
    every = (*ACP_FAULTS, DOUBLE_FAULT)
    names = [n for name in faults for n in (every if name == "all" else (name,))]
    for fault in names:
        if fault not in (*ACP_FAULTS, DOUBLE_FAULT):
            raise LabUsageError(
                f"fault {fault!r} is not supported with --drive acp "
                f"(supported: {', '.join(ACP_FAULTS)}, {DOUBLE_FAULT})"
            )
    return tuple(f for f in (*ACP_FAULTS, DOUBLE_FAULT) if f in names)


def plan_acp_cases(reference: Reference, faults: Sequence[str]) -> list[Case]:
    """SIGKILL at every occurrence; SIGTERM and session/cancel where a graceful
    stop applies (top-level turn boundaries).  double-sigkill cases are
    planned by running recoveries (faultlab/lab/acp/doublecrash.py)."""
    cases: list[Case] = []
    for fault in parse_acp_faults(faults):
        if fault == DOUBLE_FAULT:
            continue
        if fault == "sigkill":
            cases += [Case(reference.scenario_path, o, fault) for o in reference.occurrences]
        else:
            cases += [
                Case(c.scenario, c.occurrence, fault)
                for c in plan_fault_cases(reference, "sigterm")
            ]
    return cases


# -- one session driven as a client ----------------------------------------


def meta_next(result: Any) -> str | None:
    meta = (getattr(result, "field_meta", None) or {}).get("faultlab") or {}
    value = meta.get("nextPrompt")
    return value if isinstance(value, str) else None


async def _prompt(child: AcpChild, session_id: str, text: str, timeout: float) -> Any:
    return await child.call(
        child.conn.prompt(session_id=session_id, prompt=[text_block(text)]), timeout
    )


async def prompt_to_end(
    child: AcpChild, session_id: str, first: str | None, timeout: float
) -> list[str]:
    """Send the script's prompts until it is done; return the stop reasons.
    Raises Parked when the child parks at its armed boundary."""
    reasons = []
    text = first
    while text is not None:
        response = await _prompt(child, session_id, text, timeout)
        reasons.append(response.stop_reason)
        text = meta_next(response)
    return reasons


def session_files(sessions: Path, session_id: str) -> tuple[Path, Path]:
    return sessions / session_id / LOG_NAME, sessions / session_id / LEDGER_NAME


async def open_connection(child: AcpChild, timeout: float) -> None:
    """Initialize the started child's connection."""
    await child.call(child.conn.initialize(protocol_version=acp.PROTOCOL_VERSION), timeout)


def run_acp_reference(scenario_path: str, scenario: Scenario, options: AcpOptions) -> Reference:
    """The fault-free ACP run of a scenario: the baseline of every case."""
    return asyncio.run(_reference(scenario_path, scenario, options))


async def _reference(scenario_path: str, scenario: Scenario, options: AcpOptions) -> Reference:
    where = options.workdir / "acp-reference" / slug(Path(scenario_path).name)
    shutil.rmtree(where, ignore_errors=True)
    sessions = where / "sessions"
    child = options.child(scenario_path, sessions, where, "agent")
    hung, session_id = False, ""
    async with child:
        try:
            await open_connection(child, options.timeout)
            new = await child.call(child.conn.new_session(cwd=str(where)), options.timeout)
            session_id = new.session_id
            await prompt_to_end(child, session_id, meta_next(new), options.timeout)
            status = await child.close(options.timeout)
        except (ChildHung, Parked, acp.RequestError, ConnectionError) as exc:
            hung = isinstance(exc, ChildHung | Parked)
            child.kill()
            status = await child.wait(options.timeout)
            what = f"hung: {exc}" if hung else f"{type(exc).__name__}: {exc}"
            status = ChildExit(-9 if hung else status.returncode or 1, f"{what}\n{status.stderr}")
    log_path, ledger_path = session_files(sessions, session_id or "-")
    log_bytes = read_bytes(log_path)
    return Reference(
        scenario=owed_expectations(scenario, options.policy), scenario_path=scenario_path,
        trace=tuple(child.trace),
        log=parse_log(log_bytes, str(log_path)), ledger=read_ledger(ledger_path),
        returncode=status.returncode, log_bytes=log_bytes, stderr=status.stderr, hung=hung,
    )  # fmt: skip


# -- a case --------------------------------------------------------------------


async def start_armed(
    crash: AcpChild, reference: Reference, options: AcpOptions, where: Path
) -> tuple[str, Violation | None]:
    """Open a new session on the started, armed `crash` child and prompt it
    until it parks at its boundary: the session id, and a DRIFT violation if
    it ended first or parked off the reference run's path.  Its probe trace
    is written to WHERE/trace.jsonl."""
    await open_connection(crash, options.timeout)
    new = await crash.call(crash.conn.new_session(cwd=str(where)), options.timeout)
    with contextlib.suppress(Parked):
        await prompt_to_end(crash, new.session_id, meta_next(new), options.timeout)
    write_trace(where / "trace.jsonl", crash.trace)
    if not crash.parked:
        await crash.close(options.timeout)
        message = f"the ACP session ended without reaching {crash.armed}"
        return new.session_id, Violation("DRIFT", message)
    drifted = drift(crash.trace, reference)
    return new.session_id, None if drifted is None else Violation("DRIFT", drifted)


@dataclass(frozen=True, slots=True)
class Recovered:
    """What a recovery over ACP left: the log after its two loads, the log at
    its end, how it exited, what its replays broke, and its probe trace."""

    repaired: LogView
    final: LogView
    status: ChildExit
    violations: tuple[Violation, ...]
    trace: tuple[Mapping[str, Any], ...]


# A case's verdict, violations and artifacts (paths by name).
Outcome = tuple[Verdict, list[Violation], dict[str, str]]


def run_acp_case(case: Case, reference: Reference, options: AcpOptions) -> CaseResult:
    return run_driven(case, _case(case, reference, options))


def run_driven(case: Case, work: Coroutine[Any, Any, Outcome]) -> CaseResult:
    """Run a case's client session on a fresh event loop; a hang or a session
    that failed before its kill point is the case's verdict, not an error."""
    started = time.monotonic()
    verdict: Verdict
    try:
        verdict, violations, artifacts = asyncio.run(work)
    except ChildHung as hung:
        verdict, violations, artifacts = "hung", [Violation("CHILD_HUNG", str(hung))], {}
    except (acp.RequestError, ConnectionError) as exc:
        # The agent refused a request or went away before the fault was injected.
        message = f"the armed ACP session failed before its kill point: {type(exc).__name__}: {exc}"
        verdict, violations, artifacts = "drift", [Violation("DRIFT", message)], {}
    return CaseResult(case, verdict, tuple(violations), time.monotonic() - started, "", artifacts)


async def _case(case: Case, reference: Reference, options: AcpOptions) -> Outcome:
    where = options.workdir / "acp-cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    sessions = where / "sessions"
    artifacts = {"dir": str(where)}
    extra: list[Violation] = []
    crash = options.child(case.scenario, sessions, where, "crash", armed=case.occurrence)
    async with crash:
        session_id, drifted = await start_armed(crash, reference, options, where)
        log_path, ledger_path = session_files(sessions, session_id)
        artifacts["trace"] = str(where / "trace.jsonl")
        if drifted is not None:
            return "drift", [drifted], artifacts
        status: ChildExit | None = None
        if case.fault == "sigkill":
            crash.kill()
            await crash.wait(options.timeout)
        elif case.fault == "sigterm":
            crash.signal(signal.SIGTERM)
            crash.reply("continue")
            if await _settle(crash, options.timeout) is None:
                extra.append(Violation(
                    "GRACEFUL_CLOSE_MISSING",
                    "the client's running session/prompt got no answer before the agent "
                    "stopped on SIGTERM",
                ))  # fmt: skip
            status = await crash.wait(options.timeout)
        else:  # acp-cancel: the client cancels the running prompt
            before = len(crash.messages)
            await crash.conn.cancel(session_id=session_id)
            crash.reply("continue")
            stop_reason = await _settle(crash, options.timeout)
            after = read_bytes(log_path)  # the agent is alive: what it made durable
            extra += check_cancel(
                shown=updates_between(crash.messages, before), stop_reason=stop_reason,
                log=parse_log(after, str(log_path)),
                tools={s.name: s for s in reference.scenario.tools}, trace=crash.trace,
            )  # fmt: skip
            status = await crash.close(options.timeout)
        write_trace(where / "trace.jsonl", crash.trace)
    crashed_bytes = read_bytes(log_path)
    (where / "crashed.jsonl").write_bytes(crashed_bytes)
    crashed = parse_log(crashed_bytes, str(log_path))
    recovered = await recover_session(case, options, sessions, where, session_id, crashed, log_path)
    observation = Observation(
        scenario=reference.scenario, case=case, reference_log=reference.log,
        reference_ledger=reference.ledger, trace=tuple(crash.trace), crashed=crashed,
        repaired=recovered.repaired, repair_status=recovered.status, final=recovered.final,
        resume_status=recovered.status, final_ledger=read_ledger(ledger_path),
        diverged=case.fault != "sigkill",
    )  # fmt: skip
    violations = check_case(observation) + list(recovered.violations) + extra
    if case.fault == "sigterm":
        violations += check_graceful_close(observation, status)
    if recovered.status.returncode == 0:
        violations += check_guidance(crashed, recovered.repaired, recovered.trace)
    artifacts.update(
        {name: str(where / f"{name}.jsonl") for name in ("crashed", "repaired", "final")}
    )
    return ("fail" if violations else "pass"), violations, artifacts


async def _settle(child: AcpChild, timeout: float) -> str | None:
    """The parked prompt's answer after the fault: its stop reason, or None if
    the connection closed (the agent exited) or it answered with an error;
    further parks are let go (nothing else is armed)."""
    pending = child.pending
    if pending is None:
        return None
    while True:
        try:
            response = await child.call(pending, timeout)
        except Parked:
            child.reply("continue")
            continue
        except (acp.RequestError, ConnectionError):
            return None
        return str(response.stop_reason)


async def recover_session(
    case: Case, options: AcpOptions, sessions: Path, where: Path, session_id: str,
    crashed: LogView, log_path: Path,
) -> Recovered:  # fmt: skip
    """Spawn the agent again, load the session twice (comparing each replay
    with the log) and prompt it to the end of the script."""
    found: list[Violation] = []
    child = options.child(case.scenario, sessions, where, "resume")
    async with child:
        try:
            await open_connection(child, options.timeout)
            replays: list[LogView] = []
            text: str | None = None
            for attempt in ("session/load", "a second session/load"):
                before = len(child.messages)
                loaded = await child.call(
                    child.conn.load_session(cwd=str(where), session_id=session_id), options.timeout
                )
                view = parse_log(read_bytes(log_path), str(log_path))
                found += check_replay(updates_between(child.messages, before), view, label=attempt)
                replays.append(view)
                text = meta_next(loaded)
            repaired_bytes = read_bytes(log_path)
            (where / "repaired.jsonl").write_bytes(repaired_bytes)
            if [e.seq for e in replays[1].events] != [e.seq for e in replays[0].events]:
                found.append(Violation(
                    "REPAIR_NOT_IDEMPOTENT",
                    f"a second session/load changed the repaired log "
                    f"({len(replays[0].events)} -> {len(replays[1].events)} events)",
                ))  # fmt: skip
            await prompt_to_end(child, session_id, text, options.timeout)
            status = await child.close(options.timeout)
        except (acp.RequestError, ConnectionError, Parked) as exc:
            child.kill()
            killed = await child.wait(options.timeout)
            status = ChildExit(killed.returncode or 1, f"{exc}\n{killed.stderr}")
            repaired_bytes = (where / "repaired.jsonl").read_bytes() if (
                where / "repaired.jsonl").exists() else read_bytes(log_path)  # fmt: skip
    final_bytes = read_bytes(log_path)
    (where / "final.jsonl").write_bytes(final_bytes)
    repaired = parse_log(repaired_bytes, str(log_path)) if crashed.exists else crashed
    return Recovered(
        repaired, parse_log(final_bytes, str(log_path)), status, tuple(found), tuple(child.trace)
    )
