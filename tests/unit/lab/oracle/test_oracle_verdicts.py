# The lab's own verdicts (faultlab/lab/oracle/verdicts.py), which every drive
# and fault runner builds through: a drift and a hang are never a pass, carry
# their code and message, and a hang keeps what was found before it.
from __future__ import annotations

from faultlab.lab.oracle.codes import GUARANTEES, Violation
from faultlab.lab.oracle.verdicts import drifted, hang, hung


def test_a_drift_is_its_own_verdict_with_the_drift_code() -> None:
    assert drifted("exited 0 without reaching tool/durable#1") == (
        "drift", [Violation("DRIFT", "exited 0 without reaching tool/durable#1")])


def test_a_hang_keeps_what_was_found_before_it() -> None:
    found = Violation("TOOL_INTENT_LOST", "lost")
    verdict, violations = hung("recovery of x: no exit in 5 s", found)
    assert verdict == "hung"
    assert [v.code for v in violations] == ["CHILD_HUNG", "TOOL_INTENT_LOST"]
    assert violations[0].message == "recovery of x: no exit in 5 s"


def test_a_late_hang_is_a_violation_among_others() -> None:
    assert hang("run3-resume did not finish in 5 s") == Violation(
        "CHILD_HUNG", "run3-resume did not finish in 5 s")


def test_both_codes_are_registered_codes() -> None:
    assert {"DRIFT", "CHILD_HUNG"} <= set(GUARANTEES)
