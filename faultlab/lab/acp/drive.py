# The lab as an ACP client (`--drive acp`): the target is an ACP agent (the
# reference runtime's `python -m faultlab.runtime.acp` by default), driven the
# way an editor drives it.  A case: initialize, session/new, one session/prompt
# per scripted turn, until the agent parks at the armed boundary; inject the
# fault (its `AcpAct`: SIGKILL of its process group, SIGTERM, or
# session/cancel; the drive's faults are the table in acp/faults.py); spawn it
# again, session/load (twice: the second load must change nothing), check
# what the client was shown against the recovered log, and send the next
# prompts to the end of the script.  The agent tells the client the script's
# next user message in `_meta.faultlab.nextPrompt` (docs/acp.md).
from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import acp
from acp import text_block

from faultlab.lab.acp.child import AcpChild, Parked
from faultlab.lab.acp.fork import shared_acp_server
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.acp import check_guidance, check_replay, updates_between
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.checks import Observation, check_case
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.live import check_graceful_close
from faultlab.lab.oracle.verdicts import drifted, hung
from faultlab.lab.process.drift import drift
from faultlab.lab.process.reference import (
    Reference,
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
    "AcpAct",
    "AcpOptions",
    "Inject",
    "Outcome",
    "Recovered",
    "acp_target",
    "meta_next",
    "open_connection",
    "prompt_to_end",
    "recover_session",
    "run_acp_case",
    "run_acp_reference",
    "run_driven",
    "session_files",
    "start_armed",
]

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
    # A script that patches the runtime and serves it over ACP (an ACP zoo
    # variant, `Target.script`): forked from the ACP server under "fork".
    script: str | None = None

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
        if (self.reference or self.script is not None) and self.spawn == "fork":
            tail = argv[len(self.command) :]
            cwd = str(where) if self.reference else os.getcwd()  # a script: the user's cwd
            return AcpChild(argv, stderr, armed=armed, cwd=cwd, server=shared_acp_server(),
                            server_argv=tail, script=self.script)  # fmt: skip
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
) -> tuple[str, str | None]:
    """Open a new session on the started, armed `crash` child and prompt it
    until it parks at its boundary: the session id, and how the run drifted
    if it ended first or parked off the reference run's path.  Its probe
    trace is written to WHERE/trace.jsonl."""
    await open_connection(crash, options.timeout)
    new = await crash.call(crash.conn.new_session(cwd=str(where)), options.timeout)
    with contextlib.suppress(Parked):
        await prompt_to_end(crash, new.session_id, meta_next(new), options.timeout)
    write_trace(where / "trace.jsonl", crash.trace)
    if not crash.parked:
        await crash.close(options.timeout)
        return new.session_id, f"the ACP session ended without reaching {crash.armed}"
    return new.session_id, drift(crash.trace, reference)


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
# What a fault does to the agent parked at its kill point, given the crash
# child, the session's id and log file, the reference run and the timeout:
# how the agent exited when the fault let it run on (None: it was killed),
# and what the fault's own checks found.
Inject = Callable[[AcpChild, str, Path, Reference, float],
                  Awaitable[tuple[ChildExit | None, list[Violation]]]]  # fmt: skip


@dataclass(frozen=True, slots=True)
class AcpAct:
    """How one ACP fault hurts the parked agent (`inject`), whether the agent
    runs on after it (`ran_on`: the crashed log is not a prefix of the
    reference's, the oracle's `diverged`), and whether the stop must close the
    turn durably (`graceful`: G10)."""

    inject: Inject
    ran_on: bool
    graceful: bool = False


def run_acp_case(case: Case, reference: Reference, options: AcpOptions, *,
                 act: AcpAct) -> CaseResult:  # fmt: skip
    """One case of an ACP fault whose action is `act` (acp/faults.py)."""
    return run_driven(case, _case(case, reference, options, act))


def run_driven(case: Case, work: Coroutine[Any, Any, Outcome]) -> CaseResult:
    """Run a case's client session on a fresh event loop; a hang or a session
    that failed before its kill point is the case's verdict, not an error."""
    started = time.monotonic()
    verdict: Verdict
    try:
        verdict, violations, artifacts = asyncio.run(work)
    except ChildHung as exc:
        (verdict, violations), artifacts = hung(str(exc)), {}
    except (acp.RequestError, ConnectionError) as exc:
        # The agent refused a request or went away before the fault was injected.
        message = f"the armed ACP session failed before its kill point: {type(exc).__name__}: {exc}"
        (verdict, violations), artifacts = drifted(message), {}
    return CaseResult(case, verdict, tuple(violations), time.monotonic() - started, "", artifacts)


async def _case(case: Case, reference: Reference, options: AcpOptions, act: AcpAct) -> Outcome:
    where = options.workdir / "acp-cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    sessions = where / "sessions"
    artifacts = {"dir": str(where)}
    crash = options.child(case.scenario, sessions, where, "crash", armed=case.occurrence)
    async with crash:
        session_id, off_path = await start_armed(crash, reference, options, where)
        log_path, ledger_path = session_files(sessions, session_id)
        artifacts["trace"] = str(where / "trace.jsonl")
        if off_path is not None:
            return (*drifted(off_path), artifacts)
        status, extra = await act.inject(crash, session_id, log_path, reference, options.timeout)
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
        diverged=act.ran_on,
    )  # fmt: skip
    violations = check_case(observation) + list(recovered.violations) + extra
    if act.graceful:
        violations += check_graceful_close(observation, status)
    if recovered.status.returncode == 0:
        violations += check_guidance(crashed, recovered.repaired, recovered.trace)
    artifacts.update(
        {name: str(where / f"{name}.jsonl") for name in ("crashed", "repaired", "final")}
    )
    return ("fail" if violations else "pass"), violations, artifacts


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
