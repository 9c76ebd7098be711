# The selftest's results for people and files: the table of variants and
# their verdicts, and the report `selftest-<run id>/` (selftest.json and
# selftest.txt, built aside, then renamed) with `selftest-latest` pointing at it.
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import orjson

from faultlab.lab.campaigns.selftest import SelftestResult
from faultlab.lab.report.html import selftest_html
from faultlab.lab.report.write import new_run_id

__all__ = ["format_table", "write_selftest_report"]


def format_table(result: SelftestResult) -> list[str]:
    """The people's table: variant, expected code(s), result, first case, time."""
    header = ("variant", "stage", "expected", "result", "first case that caught it", "time")
    body = [
        (
            r.variant,
            r.stage,
            ", ".join(r.expected) or "(no violation)",
            r.status,
            r.first_case or r.note or "-",
            f"{r.seconds:.1f}s",
        )
        for r in result.rows
    ]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in (header, *body)]  # fmt: skip
    lines.append("crash cases per fault (ran, + unsupported):")
    for r in result.rows:
        parts = [f"{fault} {t['ran']}" + (f"+{t['unsupported']}" if t["unsupported"] else "")
                 for fault, t in r.ran.items()]  # fmt: skip
        lines.append(f"  {r.variant} [{r.stage}]: {', '.join(parts) or 'none ran'}")
    for r in result.rows:
        if r.bad:
            lines.append(f"{r.variant} [{r.stage}]: {r.status.upper()}: {r.note}")
    caught, judged = result.score
    percent = 100 * caught / judged if judged else 0
    lines.append(
        f"mutation score {caught}/{judged} ({percent:.0f}%), false alarms {result.false_alarms}, "
        f"{result.seconds:.1f}s: " + ("PASS" if result.passed else "FAIL")
    )
    return lines


def write_selftest_report(result: SelftestResult, report_dir: Path) -> Path:
    """Write `selftest.json`, `selftest.txt` and `report.html` into `report_dir/selftest-<run id>/`
    (built aside, then renamed), and point `report_dir/selftest-latest` at it."""
    report_dir.mkdir(parents=True, exist_ok=True)
    run_id = f"selftest-{new_run_id()}"
    final = report_dir.resolve() / run_id
    building = report_dir / f".{run_id}.tmp"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    try:
        (building / "selftest.json").write_bytes(orjson.dumps(result.to_json(), option=option))
        table = format_table(result)
        if not result.complete:
            table.append(f"INCOMPLETE: interrupted after {len(result.rows)} row(s)")
        (building / "selftest.txt").write_text("\n".join(table) + "\n", "utf-8")
        (building / "report.html").write_text(selftest_html(result.to_json()), "utf-8")
        os.replace(building, final)
    except BaseException:  # a half-built report is never left behind
        shutil.rmtree(building, ignore_errors=True)
        raise
    link = report_dir / "selftest-latest"
    temp = report_dir / f".selftest-latest.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    os.symlink(run_id, temp)
    os.replace(temp, link)
    return final
