# The selftest's correct runtimes in other languages (issue 30, item 6).
# Each `[[foreign]]` runtime of the zoo registry (a Node.js runtime written
# from faultlab's documents alone, say) runs at every catching case of the
# chosen variants that it can run (classic drive, a backend it writes), and
# must raise no false alarm there.  So each check that catches a variant is
# shown twice in one selftest: failing the variant that breaks it, and passing
# a correct runtime faultlab's authors did not write, whose file I/O has
# another shape than the reference's.  Running the stages is
# faultlab/lab/campaigns/selftest.py; judging, selftestjudge.py.
from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from faultlab.lab.campaigns.selftestjudge import SelftestRow, Stage, judge_reference
from faultlab.lab.campaigns.zoo import ForeignRuntime, QuickCase, ZooVariant
from faultlab.lab.oracle.case import CaseResult

__all__ = ["foreign_cases", "foreign_row"]

Parallel = Callable[[Sequence[Callable[[], CaseResult]]], list[CaseResult]]
# Runs one case on a target command: (case, command, backend, folder) -> result
RunCase = Callable[[QuickCase, list[str], "str | None", Path], CaseResult]


def foreign_cases(
    runtime: ForeignRuntime, chosen: Sequence[ZooVariant]
) -> list[tuple[QuickCase, str | None]]:
    """(case, backend) for every documented catching case of `chosen` that
    `runtime` can run: classic-drive variants on a backend it writes."""
    return list(
        dict.fromkeys(
            (case, variant.backend)
            for variant in chosen
            if variant.drive == "classic" and (variant.backend or "jsonl") in runtime.backends
            for case in variant.quick
        )
    )


def foreign_row(
    runtime: ForeignRuntime, chosen: Sequence[ZooVariant], *, stage: Stage, workdir: Path,
    parallel: Parallel, run_case: RunCase,
) -> SelftestRow:  # fmt: skip
    """The false-alarm row of `runtime` ("not-available" when its interpreter
    is not on PATH: not counted, and the note says so)."""
    name = f"{runtime.name} (correct, {runtime.interpreter})"
    if shutil.which(runtime.interpreter) is None:
        note = f"{runtime.interpreter} is not on PATH: this correct runtime was not run"
        return SelftestRow(name, stage, (), "not-available", None, 0, 0, note=note, correct=True)
    started = time.monotonic()
    cases = foreign_cases(runtime, chosen)
    if not cases:  # nothing of this runtime's to judge: not a false alarm, not a pass
        note = "none of the chosen variants has a case this runtime can run"
        return SelftestRow(name, stage, (), "not-available", None, 0, 0, note=note, correct=True)
    calls = [partial(run_case, case, list(runtime.command), backend, workdir / str(i))
             for i, (case, backend) in enumerate(cases)]  # fmt: skip
    results = parallel(calls)
    return judge_reference(results, stage=stage, seconds=time.monotonic() - started, name=name)
