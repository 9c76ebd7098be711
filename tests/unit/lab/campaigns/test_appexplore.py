# `--app` and `--compare` parsing and the durability matrix (no processes:
# the matrix is built from hand-made results).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab.apps import AppOptions, parse_app
from faultlab.lab.campaigns.appexplore import app_matrix, parse_app_faults, parse_compare
from faultlab.lab.campaigns.explore import ExploreResult
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation


def test_app_specs() -> None:
    assert parse_app("langgraph:pkg.mod:build") == ("langgraph", "pkg.mod:build")
    assert parse_app("pydantic-ai:pkg.mod:build") == ("pydantic-ai", "pkg.mod:build")
    for bad in ("crewai:m:f", "langgraph:m", "langgraph::f", "langgraph:m:1x", "pydantic-ai:m"):
        with pytest.raises(LabUsageError):
            parse_app(bad)
    with pytest.raises(LabUsageError):
        AppOptions("langgraph:m:f", Path("."), durability="never")
    # Each framework has its own mode dimension and default.
    assert AppOptions("langgraph:m:f", Path(".")).durability == "async"
    assert AppOptions("pydantic-ai:m:f", Path(".")).durability == "node"
    with pytest.raises(LabUsageError, match="save"):
        AppOptions("pydantic-ai:m:f", Path("."), durability="sync")


def test_compare_and_faults() -> None:
    assert parse_compare(None) == ("async",)
    assert parse_compare("durability=exit, sync") == ("exit", "sync")
    for bad in ("durability=", "mode=sync", "durability=fast"):
        with pytest.raises(LabUsageError):
            parse_compare(bad)
    assert parse_compare(None, framework="pydantic-ai") == ("node",)
    assert parse_compare("save=run,node", framework="pydantic-ai") == ("run", "node")
    for bad in ("durability=sync", "save=sync"):  # LangGraph's dimension is not pydantic-ai's
        with pytest.raises(LabUsageError, match=r"save=MODE|unknown save"):
            parse_compare(bad, framework="pydantic-ai")
    assert parse_app_faults(["all"]) == ("sigkill", "io-error", "second-writer")
    with pytest.raises(LabUsageError):
        parse_app_faults(["power-loss"])


def test_the_matrix_puts_modes_side_by_side() -> None:
    def result(mode: str, codes: tuple[str, ...]) -> ExploreResult:
        case = Case("/s/payment.toml", "tool/effect#1", f"sigkill/resume/{mode}")
        violations = tuple(Violation(c, "x") for c in codes)
        return ExploreResult((CaseResult(case, "fail" if codes else "pass", violations),), (), 0)

    lines = app_matrix({"async": result("async", ("SIDE_EFFECT_DUPLICATED",)),
                        "sync": result("sync", ())})  # fmt: skip
    assert lines[0].split()[1:] == ["async", "sync"]
    assert lines[1].split() == ["payment.toml", "tool/effect#1", "[sigkill/resume]",
                                "SIDE_EFFECT_DUPLICATED", "ok"]  # fmt: skip
