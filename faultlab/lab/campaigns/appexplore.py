# Framework apps beside the engine: the matrix of codes by mode that
# `explore --app --compare` prints, and the app drive's fault and mode
# parsers as earlier releases named them (faultlab/lab/drives/app.py is the
# drive).
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from faultlab.lab.apps.faults import APP_FAULTS
from faultlab.lab.campaigns.engine import ExploreResult
from faultlab.lab.drives.app import parse_compare
from faultlab.lab.drives.protocol import COVERAGE
from faultlab.lab.faults.fault import parse_fault_names
from faultlab.lab.oracle.case import CaseResult

__all__ = ["app_matrix", "by_mode", "parse_app_faults", "parse_compare"]


def parse_app_faults(faults: Sequence[str]) -> tuple[str, ...]:
    """`all` is every app fault; any other name must be one."""
    return parse_fault_names(faults, APP_FAULTS, drive="app")


def by_mode(result: ExploreResult) -> dict[str, ExploreResult]:
    """An app exploration's results per mode (the last part of each fault),
    in the order the modes ran."""
    modes: dict[str, list[CaseResult]] = {}
    for r in result.results:
        modes.setdefault(r.case.fault.rsplit("/", 1)[-1], []).append(r)
    return {mode: replace(result, results=tuple(rs), planned=None)
            for mode, rs in modes.items()}  # fmt: skip


def app_matrix(results: dict[str, ExploreResult]) -> list[str]:
    """One line per case (scenario, point, fault and resume style), one
    column per mode: its codes, `ok`, or its verdict."""
    modes = list(results)
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for mode, result in results.items():
        for r in result.results:
            if r.case.occurrence == COVERAGE:
                continue
            fault, style, _ = r.case.fault.split("/")
            key = (Path(r.case.scenario).name, r.case.occurrence, f"{fault}/{style}")
            text = ",".join(r.codes) if r.verdict == "fail" else (
                "ok" if r.passed else r.verdict)  # fmt: skip
            cells.setdefault(key, {})[mode] = text
    # Occurrence numbers count per run: checkpoint/put#2 of `exit` is not the
    # same point as that of `sync`; the model and tool boundaries line up.
    width = max([len(f"{k[0]} {k[1]} [{k[2]}]") for k in cells] + [4])
    columns = {m: max([len(row.get(m, "-")) for row in cells.values()] + [len(m)])
               for m in modes}  # fmt: skip
    lines = [(f"{'case':{width}}  " + "  ".join(f"{m:{columns[m]}}" for m in modes)).rstrip()]
    for key, row in cells.items():
        name = f"{key[0]} {key[1]} [{key[2]}]"
        cells_text = "  ".join(f"{row.get(m, '-'):{columns[m]}}" for m in modes)
        lines.append(f"{name:{width}}  {cells_text}".rstrip())
    return lines
