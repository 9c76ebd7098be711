# Which planned cases run, and when a run stops: pytest's conventions over
# case ids.  `-k EXPR` is a keyword expression (words matched as
# case-insensitive substrings of the case id, combined with and, or, not and
# parentheses; parsed here by recursive descent, never evaluated as Python),
# `--lf` a set of ids (the failures of the newest report, read by the report
# room), `-x`/`--maxfail N` the number of failing cases after which the run
# stops.  The exploration engine applies a `Selection` after sharding.
# `sample` keeps at most N cases per scenario and fault, drawn with a fixed
# seed: a campaign sized to a budget that still reaches every scenario under
# every fault (the full selftest's secondary configurations, issue 34).
from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from faultlab.lab.drives.protocol import COVERAGE
from faultlab.lab.errors import LabUsageError

__all__ = ["Selection", "keyword_matcher"]

Matcher = Callable[[str], bool]

# A token is a parenthesis or a run of anything else but white space; so a
# word may hold the characters of case ids (`tool/effect#1`, `[sigkill]`).
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_OPERATORS = ("and", "or", "not")


def keyword_matcher(expression: str) -> Matcher:
    """A predicate over case ids for `-k EXPRESSION`, as pytest reads one:
    `expr := or_expr; or_expr := and_expr ('or' and_expr)*; and_expr :=
    not_expr ('and' not_expr)*; not_expr := 'not' not_expr | '(' expr ')' | WORD`.
    A WORD matches an id containing it (case-insensitive).  Raises
    LabUsageError for a malformed expression."""
    tokens: list[str] = _TOKEN.findall(expression)
    if not tokens:
        raise LabUsageError("-k: empty expression")
    position = 0

    def fail(why: str) -> LabUsageError:
        return LabUsageError(f"-k {expression!r}: {why}")

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = tokens[position]
        position += 1
        return token

    def or_expr() -> Matcher:
        parts = [and_expr()]
        while peek() == "or":
            take()
            parts.append(and_expr())
        return parts[0] if len(parts) == 1 else (lambda s: any(p(s) for p in parts))

    def and_expr() -> Matcher:
        parts = [not_expr()]
        while peek() == "and":
            take()
            parts.append(not_expr())
        return parts[0] if len(parts) == 1 else (lambda s: all(p(s) for p in parts))

    def not_expr() -> Matcher:
        token = peek()
        if token is None:
            raise fail("the expression ends where a word was expected")
        if token == "not":
            take()
            inner = not_expr()
            return lambda s: not inner(s)
        if token == "(":
            take()
            inner = or_expr()
            if peek() != ")":
                raise fail("a '(' is not closed")
            take()
            return inner
        if token == ")" or token in _OPERATORS:
            raise fail(f"unexpected {token!r} where a word was expected")
        word = take().lower()
        return lambda s: word in s.lower()

    matcher = or_expr()
    if position != len(tokens):
        raise fail(f"unexpected {tokens[position]!r} after a complete expression")
    return matcher


@dataclass(frozen=True, slots=True)
class Selection:
    """The cases to run and when to stop: `keyword` (-k), `ids` (--lf: only
    these case ids; None: every id), `maxfail` (stop once this many cases
    failed; None: never), `sample` (of the cases kept, at most this many per
    scenario and fault, drawn with `seed`; each scenario's coverage case
    always runs; None: all)."""

    keyword: str | None = None
    ids: frozenset[str] | None = None
    maxfail: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.maxfail is not None and self.maxfail < 1:
            raise LabUsageError(f"maxfail must be at least 1, not {self.maxfail}")
        if self.sample is not None and (isinstance(self.sample, bool) or self.sample < 1):
            raise LabUsageError(f"sample must be at least 1 case, not {self.sample!r}")
        if self.keyword is not None:
            keyword_matcher(self.keyword)  # a malformed expression fails before any run

    def take(self, case_ids: Sequence[str]) -> list[int]:
        """The indices of the ids to run, in order."""
        match = keyword_matcher(self.keyword) if self.keyword is not None else None
        kept = [
            i for i, case_id in enumerate(case_ids)
            if (self.ids is None or case_id in self.ids) and (match is None or match(case_id))
        ]  # fmt: skip
        return kept if self.sample is None else self._sampled(case_ids, kept, self.sample)

    def _sampled(self, case_ids: Sequence[str], kept: list[int], sample: int) -> list[int]:
        groups: dict[str, list[int]] = {}
        for i in kept:
            scenario, _sep, rest = case_ids[i].partition("::")
            if rest.startswith(f"{COVERAGE}["):
                groups[case_ids[i]] = [i]  # a group of its own: always runs
                continue
            fault = rest[rest.rfind("[") :] if rest.endswith("]") else ""
            groups.setdefault(f"{scenario}{fault}", []).append(i)
        chosen: set[int] = set()
        for key, members in groups.items():
            if len(members) <= sample:
                chosen.update(members)
            else:  # seeded by the group too: the same draw in every run
                chosen.update(random.Random(f"{self.seed}:{key}").sample(members, sample))
        return [i for i in kept if i in chosen]
