# The findings table of docs/agents.md, made from black-box reports: per
# agent (and the version its adapter pins), per kill point (boundary and
# delay, repeats folded together), how many cases ran and which codes they
# got how often.  `faultlab agents findings REPORT...` prints it or rewrites
# the table between its markers in a document, so the docs never drift from
# a measurement.
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from faultlab.lab.errors import LabUsageError

__all__ = ["FINDINGS_END", "FINDINGS_START", "Finding", "findings_markdown", "read_findings",
           "write_findings"]  # fmt: skip

FINDINGS_START = (
    "<!-- findings:start (faultlab agents findings REPORT... --write docs/agents.md) -->"
)
FINDINGS_END = "<!-- findings:end -->"


@dataclass
class Finding:
    """The cases of one agent at one kill point (boundary#n@delay)."""

    agent: str
    version: str
    kill_point: str
    fault: str
    cases: int = 0
    passed: int = 0
    codes: Counter[str] = field(default_factory=Counter)


def _run_dir(path: Path) -> Path:
    return path if (path / "cases.jsonl").is_file() else path / "latest"


def read_findings(reports: Sequence[Path]) -> list[Finding]:
    """Findings of the black-box runs among `reports` (run folders, or report
    folders whose `latest` is used).  Raises LabUsageError for a folder with
    no black-box run."""
    from faultlab.lab.agents.adapter import find_adapter

    found: dict[tuple[str, str, str], Finding] = {}
    for report in reports:
        run = _run_dir(report)
        try:
            info = orjson.loads((run / "run.json").read_bytes())
            lines = (run / "cases.jsonl").read_bytes().splitlines()
        except (OSError, orjson.JSONDecodeError) as exc:
            raise LabUsageError(f"{report}: not a faultlab report ({exc})") from None
        if info.get("drive") != "agent" or not info.get("target"):
            raise LabUsageError(f"{run}: not a black-box run (explore --agent)")
        agent = str(info["target"][0])
        try:
            version = find_adapter(agent).version
        except LabUsageError:
            version = "?"
        for line in lines:
            case = orjson.loads(line)
            if case.get("fault") == "reference":
                continue
            point = str(case["occurrence"]).partition("~")[0]
            key = (agent, point, str(case["fault"]))
            finding = found.setdefault(key, Finding(Path(agent).stem, version, point, key[2]))
            finding.cases += 1
            finding.passed += case.get("verdict") == "pass"
            finding.codes.update(case.get("codes") or ())
    return sorted(found.values(), key=lambda f: (f.agent, f.fault, _order(f.kill_point)))


def _order(point: str) -> tuple[str, int, int]:
    boundary, _, rest = point.partition("#")
    n, _, delay = rest.partition("@")
    return boundary, int(n or 0), int(delay.removesuffix("ms").removesuffix("s") or 0)


def findings_markdown(findings: Sequence[Finding]) -> str:
    rows = ["| agent | version | kill point | fault | cases | passed | codes (cases) |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for f in findings:
        codes = ", ".join(f"`{c}` ({n})" for c, n in sorted(f.codes.items())) or "none"
        rows.append(f"| {f.agent} | {f.version} | `{f.kill_point}` | {f.fault} | {f.cases} "
                    f"| {f.passed} | {codes} |")  # fmt: skip
    by_agent: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for f in findings:
        by_agent[f.agent].update(f.codes)
    summary = [f"- **{agent}**: " + (", ".join(f"`{c}` x{n}" for c, n in codes.most_common())
                                     or "every case passed")
               for agent, codes in sorted(by_agent.items())]  # fmt: skip
    return "\n".join([*summary, "", *rows]) + "\n"


def write_findings(document: Path, markdown: str, *,
                   markers: tuple[str, str] = (FINDINGS_START, FINDINGS_END)) -> None:  # fmt: skip
    """Replace the table between `markers` (the findings table's unless
    told) in `document`, atomically."""
    opening, closing = markers
    text = document.read_text(encoding="utf-8")
    start, end = text.find(opening), text.find(closing)
    if start < 0 or end < start:
        kind = "findings " if markers == (FINDINGS_START, FINDINGS_END) else ""
        raise LabUsageError(f"{document}: no {kind}markers ({opening} ... {closing})")
    new = text[: start + len(opening)] + "\n\n" + markdown + "\n" + text[end:]
    temporary = document.with_suffix(document.suffix + ".tmp")
    temporary.write_text(new, encoding="utf-8")
    temporary.replace(document)
