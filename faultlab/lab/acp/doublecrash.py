# Crashes during recovery over ACP (`double-sigkill` with `--drive acp`): the
# agent is SIGKILLed at K1 of a fresh session, spawned again and sent
# session/load, then SIGKILLed again at a boundary occurrence K2 that the
# second agent reaches, during the load (its repair) or in a later prompt;
# a third agent loads the session twice and prompts to the end of the
# script.  The planning (which K2s a recovery reaches, sampled and bounded)
# is the classic drive's (faultlab/lab/faults/double.py), with a probe that
# recovers over ACP; the oracle is the double-crash oracle with the ACP
# drive's own checks (replays, outcome guidance).
from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import acp

from faultlab.lab.acp.child import AcpChild, Parked
from faultlab.lab.acp.drive import (
    AcpOptions,
    Outcome,
    meta_next,
    open_connection,
    prompt_to_end,
    recover_session,
    run_driven,
    session_files,
    start_armed,
)
from faultlab.lab.faults.double import (
    DEFAULT_MAX_DOUBLE,
    DOUBLE_SEED,
    NO_RESUME_POINT,
    PlanProgress,
    parse_pair,
    plan_pairs,
)
from faultlab.lab.oracle.acp import check_guidance, check_replay, updates_between
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.checks import Observation
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.double import FirstCrash, check_double
from faultlab.lab.oracle.verdicts import drifted
from faultlab.lab.process.reference import Reference, read_bytes, read_ledger, slug, write_trace
from faultlab.lab.process.spawn import ChildExit, ChildHung
from faultlab.lab.read.jsonl import parse_log

__all__ = ["plan_acp_double_cases", "run_acp_double_case"]

async def _kill_at(
    first: str, reference: Reference, options: AcpOptions, where: Path, sessions: Path
) -> tuple[str, str | None, AcpChild]:
    """A fresh session killed at `first`: its id, how it drifted if it never
    got there, and the killed child (for its trace)."""
    crash = options.child(reference.scenario_path, sessions, where, "crash", armed=first)
    async with crash:
        session_id, off_path = await start_armed(crash, reference, options, where)
        if off_path is None:
            crash.kill()
            await crash.wait(options.timeout)
    return session_id, off_path, crash


async def _probe(
    reference: Reference, options: AcpOptions, first: str, where: Path
) -> tuple[tuple[str, ...], str | None]:
    """Kill at `first`, recover over ACP unarmed to the end: the occurrences
    the recovering agent reached (in its own numbering), or a failure."""
    shutil.rmtree(where, ignore_errors=True)
    sessions = where / "sessions"
    try:
        session_id, off_path, _crash = await _kill_at(first, reference, options, where, sessions)
        if off_path is not None:
            return (), f"the crash at {first}: {off_path}"
        log_path, _ledger = session_files(sessions, session_id)
        crashed = parse_log(read_bytes(log_path), str(log_path))
        case = Case(reference.scenario_path, first, "sigkill")
        recovered = await recover_session(case, options, sessions, where, session_id, crashed,
                                          log_path)  # fmt: skip
    except ChildHung as exc:
        return (), f"the recovery after {first} hung: {exc}"
    except (acp.RequestError, ConnectionError) as exc:
        return (), f"the session killed at {first} failed: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(where, ignore_errors=True)
    if recovered.status.returncode != 0:
        return (), f"the recovery after {first} exited {recovered.status.returncode}"
    return tuple(f"{m['boundary']}#{m['n']}" for m in recovered.trace if "boundary" in m), None


def plan_acp_double_cases(
    reference: Reference, options: AcpOptions, *, max_cases: int = DEFAULT_MAX_DOUBLE,
    seed: int = DOUBLE_SEED, jobs: int = 1, progress: PlanProgress | None = None,
) -> list[Case]:  # fmt: skip
    """The `double-sigkill` cases of a scenario over ACP: one fault-free ACP
    recovery per K1 probed, then (K1, K2) pairs as the classic drive plans them."""
    return plan_pairs(
        reference,
        lambda first, where: asyncio.run(_probe(reference, options, first, where)),
        workdir=options.workdir, max_cases=max_cases, seed=seed, jobs=jobs, progress=progress,
    )  # fmt: skip


def run_acp_double_case(case: Case, reference: Reference, options: AcpOptions) -> CaseResult:
    """Kill at K1, session/load in a new agent and kill it at K2, then load
    twice in a third and prompt to the end; judge both crashes together."""
    return run_driven(case, _double(case, reference, options))


async def _double(case: Case, reference: Reference, options: AcpOptions) -> Outcome:
    first, second = parse_pair(case.occurrence)
    where = options.workdir / "acp-cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    artifacts = {"dir": str(where)}
    if second == NO_RESUME_POINT:
        _reached, failure = await _probe(reference, options, first, where / "probe")
        message = failure or f"the fault-free recovery after {first} failed while planning"
        return "error", [Violation("RESUME_FAILED", message)], artifacts
    sessions = where / "sessions"
    session_id, off_path, crash = await _kill_at(first, reference, options, where, sessions)
    artifacts["trace"] = str(where / "trace.jsonl")
    if off_path is not None:
        return (*drifted(off_path), artifacts)
    log_path, ledger_path = session_files(sessions, session_id)
    crashed_bytes = read_bytes(log_path)
    (where / "crashed1.jsonl").write_bytes(crashed_bytes)
    crashed = parse_log(crashed_bytes, str(log_path))
    found: list[Violation] = []
    repaired_bytes: bytes | None = None
    resume = options.child(case.scenario, sessions, where, "resume1", armed=second)
    async with resume:
        try:
            await open_connection(resume, options.timeout)
            before = len(resume.messages)
            loaded = await resume.call(
                resume.conn.load_session(cwd=str(where), session_id=session_id), options.timeout
            )  # fmt: skip
            repaired_bytes = read_bytes(log_path)
            (where / "repaired1.jsonl").write_bytes(repaired_bytes)
            found += check_replay(
                updates_between(resume.messages, before),
                parse_log(repaired_bytes, str(log_path)), label="the first session/load",
            )  # fmt: skip
            await prompt_to_end(resume, session_id, meta_next(loaded), options.timeout)
        except Parked:
            pass
        except (acp.RequestError, ConnectionError) as exc:
            resume.kill()
            message = f"the recovery after {first} failed before reaching {second}: {exc}"
            return "fail", [Violation("RESUME_FAILED", message)], artifacts
        write_trace(where / "resume-trace.jsonl", resume.trace)
        artifacts["resumeTrace"] = str(where / "resume-trace.jsonl")
        if not resume.parked:
            await resume.close(options.timeout)
            message = (f"the recovery after {first} ended without reaching {second} "
                       "(its fault-free recovery did)")  # fmt: skip
            return (*drifted(message), artifacts)
        resume.kill()
        await resume.wait(options.timeout)
    again_bytes = read_bytes(log_path)
    (where / "crashed.jsonl").write_bytes(again_bytes)
    again = parse_log(again_bytes, str(log_path))
    recovered = await recover_session(case, options, sessions, where, session_id, again, log_path)
    observation = Observation(
        scenario=reference.scenario, case=case, reference_log=reference.log,
        reference_ledger=reference.ledger, trace=tuple(resume.trace), crashed=again,
        repaired=recovered.repaired, repair_status=recovered.status, final=recovered.final,
        resume_status=recovered.status, final_ledger=read_ledger(ledger_path), diverged=False,
    )  # fmt: skip
    first_crash = FirstCrash(
        trace=tuple(crash.trace), crashed=crashed, repair_status=ChildExit(0, ""),
        repaired=None if repaired_bytes is None else parse_log(repaired_bytes, str(log_path)),
    )  # fmt: skip
    violations = check_double(first_crash, observation) + found + list(recovered.violations)
    if recovered.status.returncode == 0:
        violations += check_guidance(again, recovered.repaired, recovered.trace)
    artifacts.update({name: str(where / f"{name}.jsonl")
                      for name in ("crashed1", "crashed", "repaired", "final")})  # fmt: skip
    if repaired_bytes is not None:
        artifacts["repaired1"] = str(where / "repaired1.jsonl")
    return ("fail" if violations else "pass"), violations, artifacts
