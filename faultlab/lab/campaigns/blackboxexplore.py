# Black-box pieces beside the engine: the kill points a fuzz campaign of an
# agent draws with Hypothesis, and the agent drive's faults and cases as the
# pytest plugin asks for them (faultlab/lab/drives/agent.py is the drive).
from __future__ import annotations

from collections.abc import Sequence

from faultlab.lab.blackbox.drive import BlackboxOptions
from faultlab.lab.blackbox.faults import BLACKBOX_FAULTS
from faultlab.lab.drives.agent import AgentDrive
from faultlab.lab.drives.protocol import COVERAGE, reference_failed
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import parse_fault_names
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.lab.servers.points import KillPoint

__all__ = ["draw_kill_points", "parse_blackbox_faults", "run_blackbox_or_coverage"]


def parse_blackbox_faults(faults: Sequence[str]) -> tuple[str, ...]:
    """`all` is every black-box fault; any other name must be one."""
    return parse_fault_names(faults, BLACKBOX_FAULTS, drive="agent")


def run_blackbox_or_coverage(
    case: Case, reference: Reference, options: BlackboxOptions
) -> CaseResult:
    """One planned case (its coverage case, or a crash case) of the agent drive."""
    drive = AgentDrive(options, options.agent.name)
    if case.occurrence == COVERAGE:
        return drive.coverage(case, reference, ())
    if reference.returncode != 0:
        return reference_failed(case, reference)
    return drive.run(case, reference)


def draw_kill_points(
    occurrences: Sequence[str], *, count: int, seed: int, faults: Sequence[str],
    max_delay_ms: int,
) -> list[tuple[KillPoint, str]]:  # fmt: skip
    """`count` distinct (kill point, fault) pairs drawn by Hypothesis from the
    occurrences a fault-free run reached, with any delay from 0 to
    `max_delay_ms` (its draws favour the ends, 0 and the maximum, and small
    numbers), the same ones for the same seed."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st

    if count < 1 or max_delay_ms < 0 or not occurrences or not faults:
        raise LabUsageError("fuzzing an agent needs examples >= 1, a delay bound >= 0, "
                            "and a fault-free run that reached some boundary")  # fmt: skip
    drawn: dict[tuple[KillPoint, str], None] = {}
    point = st.builds(
        lambda occurrence, delay, fault: (
            KillPoint(occurrence.partition("#")[0], int(occurrence.partition("#")[2]), delay),
            fault,
        ),
        st.sampled_from(list(dict.fromkeys(occurrences))),
        st.integers(min_value=0, max_value=max_delay_ms),
        st.sampled_from(list(faults)),
    )  # fmt: skip

    @with_seed(seed)
    @settings(max_examples=count * 5, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(point)
    def collect(pair: tuple[KillPoint, str]) -> None:
        if len(drawn) < count:
            drawn[pair] = None

    collect()
    return list(drawn)
