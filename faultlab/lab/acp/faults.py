# The faults of the ACP drive as a table (faults/fault.py's `Fault` over
# `AcpOptions`): SIGKILL of the agent's process group, a graceful stop
# (SIGTERM) and the client's own session/cancel, each an `AcpAct` of
# acp/drive.py bound into its entry (what it does to the parked agent,
# whether the agent runs on, whether G10 applies), and a crash during
# recovery (double-sigkill, acp/doublecrash.py), which is planned by running
# recoveries and so comes last; it is in `all` (issue 30: all means every
# fault), bounded by --max-double-cases.  The drive dispatches through
# this table; adding an ACP fault is one entry below plus its tests.
from __future__ import annotations

import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import acp

from faultlab.lab.acp.child import AcpChild, Parked
from faultlab.lab.acp.doublecrash import plan_acp_double_cases, run_acp_double_case
from faultlab.lab.acp.drive import AcpAct, AcpOptions, run_acp_case
from faultlab.lab.faults.double import DOUBLE_FAULT
from faultlab.lab.faults.fault import (
    Fault,
    Planning,
    at_where,
    every_occurrence,
    fault_named,
    fault_table,
)
from faultlab.lab.faults.live import SIGTERM_WHERE
from faultlab.lab.oracle.acp import check_cancel, updates_between
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import Reference, read_bytes
from faultlab.lab.process.spawn import ChildExit
from faultlab.lab.read.jsonl import parse_log

__all__ = ["ACP_FAULTS", "CANCEL", "KILL", "STOP", "acp_fault"]

AcpFault = Fault[AcpOptions]
Injected = tuple[ChildExit | None, list[Violation]]


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


async def _kill(crash: AcpChild, _session: str, _log: Path, _reference: Reference,
                timeout: float) -> Injected:  # fmt: skip
    crash.kill()
    await crash.wait(timeout)
    return None, []


async def _stop(crash: AcpChild, _session: str, _log: Path, _reference: Reference,
                timeout: float) -> Injected:  # fmt: skip
    """SIGTERM: the client's running prompt must still be answered."""
    crash.signal(signal.SIGTERM)
    crash.reply("continue")
    found = []
    if await _settle(crash, timeout) is None:
        found.append(Violation(
            "GRACEFUL_CLOSE_MISSING",
            "the client's running session/prompt got no answer before the agent "
            "stopped on SIGTERM",
        ))  # fmt: skip
    return await crash.wait(timeout), found


async def _cancel(crash: AcpChild, session: str, log: Path, reference: Reference,
                  timeout: float) -> Injected:  # fmt: skip
    """The client cancels the running prompt: what it was shown and what the
    agent made durable must agree (faultlab/lab/oracle/acp.py)."""
    before = len(crash.messages)
    await crash.conn.cancel(session_id=session)
    crash.reply("continue")
    stop_reason = await _settle(crash, timeout)
    after = read_bytes(log)  # the agent is alive: what it made durable
    found = check_cancel(
        shown=updates_between(crash.messages, before), stop_reason=stop_reason,
        log=parse_log(after, str(log)), tools={s.name: s for s in reference.scenario.tools},
        trace=crash.trace,
    )  # fmt: skip
    return await crash.close(timeout), found


KILL = AcpAct(_kill, ran_on=False)
STOP = AcpAct(_stop, ran_on=True, graceful=True)
CANCEL = AcpAct(_cancel, ran_on=True)


def _acts(act: AcpAct) -> Callable[[Case, Reference, AcpOptions], CaseResult]:
    def run(case: Case, reference: Reference, options: AcpOptions) -> CaseResult:
        return run_acp_case(case, reference, options, act=act)

    return run


def _double(fault: AcpFault, reference: Reference, planning: Planning[AcpOptions]) -> list[Case]:
    return plan_acp_double_cases(reference, planning.needs_options(fault.name),
                                 max_cases=planning.max_double, jobs=planning.jobs,
                                 progress=planning.progress)  # fmt: skip


# In the order reports list them.  A graceful stop and a cancel are injected
# where a classic SIGTERM is (top-level boundaries of a turn).
ACP_FAULTS: Mapping[str, AcpFault] = fault_table((
    Fault("sigkill", "SIGKILL of the agent's process group", every_occurrence, _acts(KILL)),
    Fault("sigterm", "graceful stop: SIGTERM while a prompt runs", at_where, _acts(STOP),
          where=SIGTERM_WHERE),
    Fault("acp-cancel", "the client's session/cancel of the running prompt", at_where,
          _acts(CANCEL), where=SIGTERM_WHERE),
    Fault(DOUBLE_FAULT, "SIGKILL, then SIGKILL again during the session/load recovery",
          _double, run_acp_double_case, by_running=True),
))  # fmt: skip


def acp_fault(name: str) -> AcpFault:
    """The ACP drive's fault `name` (a usage error naming the known ones)."""
    return fault_named(ACP_FAULTS, name, drive="acp")
