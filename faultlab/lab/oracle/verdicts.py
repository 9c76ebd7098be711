# The two verdicts the lab gives a case on its own account, built here for
# every drive and every fault runner: `drift` (DRIFT: the crash run did not
# reach its kill point the way the fault-free run did, so nothing was hurt
# where the case says) and `hung` (CHILD_HUNG: a child neither reached its
# kill point nor exited within the timeout, and was killed).  A case never
# passes on either: it checked nothing there.
from __future__ import annotations

from faultlab.lab.oracle.case import Verdict
from faultlab.lab.oracle.codes import Violation

__all__ = ["Judged", "drifted", "hang", "hung"]

# A case's verdict and its violations, before they are wrapped in a CaseResult.
Judged = tuple[Verdict, list[Violation]]


def drifted(message: str) -> Judged:
    """The case never reached its kill point as the fault-free run did: `message` says how."""
    return "drift", [Violation("DRIFT", message)]


def hang(message: str) -> Violation:
    """A child that hung, among what a case found (a recovery that hung
    after the crash was judged): the case fails with it."""
    return Violation("CHILD_HUNG", message)


def hung(message: str, *also: Violation) -> Judged:
    """A child hung before the case could be judged (`also`: what was found
    before it did)."""
    return "hung", [hang(message), *also]
