# What becomes of a case or a fault-free run when a file its target wrote
# cannot be read safely (faultlab.userfiles raised a `TargetFileError`: a
# symlink, a FIFO or a device where a regular file belongs, or a file over
# its limit).  The engine catches the error around every drive's `reference`
# and `run` (so every drive has it): the case is an `error` with the code
# the reader named (TARGET_FILE_REFUSED, TARGET_OUTPUT_TOO_LARGE), never a
# hang, a traceback or a pass; a refused fault-free run makes every case of
# its scenario that error (`reference_failed`).
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import BAD_REPORT, Reference
from faultlab.lab.read.view import LogView
from faultlab.scenario import Scenario
from faultlab.userfiles import TargetFileError

__all__ = ["guarded_reference", "guarded_run", "refused_message"]


def refused_message(error: TargetFileError) -> str:
    return f"the target left {error.path}, which the lab does not read: {error.problem}"


def guarded_run(run: Callable[[Case, Reference], CaseResult],
                case: Case, reference: Reference) -> CaseResult:  # fmt: skip
    """`run(case, reference)`, or the error case its refused file makes."""
    started = time.monotonic()
    try:
        return run(case, reference)
    except TargetFileError as error:
        violation = Violation(error.code, refused_message(error), {"file": error.path})
        return CaseResult(case, "error", (violation,), time.monotonic() - started,
                          refused_message(error))  # fmt: skip


def guarded_reference(reference: Callable[[str, Scenario], Reference],
                      path: str, scenario: Scenario) -> Reference:  # fmt: skip
    """`reference(path, scenario)`, or a failed one naming its refused file."""
    try:
        return reference(path, scenario)
    except TargetFileError as error:
        message = refused_message(error)
        return Reference(
            scenario=scenario, scenario_path=path, trace=(),
            log=LogView(str(Path(error.path)), True, None, (), 0, 0, 0, ()), ledger=(),
            returncode=BAD_REPORT, log_bytes=b"", stderr=message, refused=(error.code, message),
        )  # fmt: skip
