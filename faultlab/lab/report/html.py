# report.html: one self-contained page per report (inline CSS and a few
# lines of JavaScript, nothing fetched), built from the report's own files
# (summary.json, cases.jsonl, failures/<case>/), so explorations, merges and
# fuzz campaigns get the same page.  A summary; per scenario the boundary x
# fault matrix, cells coloured by verdict and linking to their failure
# (collapsed per scenario: thousands of cases stay fast); per failure the
# crash run's timeline with the kill point marked, the crashed, repaired and
# final logs with repair events highlighted, the world ledger's effects
# counted against the fault-free run, the violations and the replay command.
# Plain string building with html.escape: the page is small and fixed.
from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.oracle.codes import Violation, promise
from faultlab.lab.process.reference import slug
from faultlab.lab.read import read_any
from faultlab.lab.report.console import harm_in_words, where_to_look
from faultlab.lab.report.shardschema import confined_dir
from faultlab.userfiles import MAX_LOG_BYTES, UserFileError, read_bytes

__all__ = ["REFERENCES", "html_report", "selftest_html", "write_html"]

REFERENCES = "references"  # <run>/references/<scenario>.ledger.jsonl: fault-free ledgers
# Failures shown in full: the first of each kind (scenario and codes) first,
# then in case order, up to DETAILED; the rest are listed with their replay
# command, so a page of hundreds of failures still opens at once.
DETAILED = 40
LOG_ROWS = 150  # rows per log shown
_FAILED = frozenset({"fail", "drift", "hung", "error"})
_LOGS = ("crashed", "repaired", "final")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _anchor(case_id: str) -> str:
    return "case-" + slug(case_id).replace("#", "_").replace("[", "_").replace("]", "_")


def _bytes(path: Path) -> bytes:
    """A file of the report: regular, never through a link, bounded
    (a merged report's files came from its shards); b"" if unreadable."""
    try:
        return read_bytes(path, what="report file", limit=MAX_LOG_BYTES, follow=False)
    except UserFileError:
        return b""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        records = [orjson.loads(line) for line in _bytes(path).splitlines() if line.strip()]
    except orjson.JSONDecodeError:
        return []
    return [record for record in records if isinstance(record, dict)]


def write_html(run: Path, *, final: Path | None = None) -> Path:
    """Write `run/report.html` from the report files in `run` (a report being
    built, whose paths are shown as under `final`); return its path."""
    out = run / "report.html"
    out.write_text(html_report(run, final=final), encoding="utf-8")
    return out


def html_report(run: Path, *, final: Path | None = None) -> str:
    try:
        loaded: Any = orjson.loads(_bytes(run / "summary.json"))
    except orjson.JSONDecodeError:
        loaded = {}
    summary: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
    cases = _jsonl(run / "cases.jsonl")
    failing = [c for c in cases if c.get("verdict") in _FAILED]
    body = [_summary(summary, cases, failing), _matrices(cases)]
    body.append(f"<h2>Failures ({len(failing)})</h2>")
    if not failing:
        body.append("<p class=ok>No case failed: every guarantee held.</p>")
    detailed = _pick_detailed(failing)
    for case in failing:
        body.append(_failure(run, case, final or run) if id(case) in detailed
                    else _failure_line(case))  # fmt: skip
    title = f"faultlab {summary.get('kind', 'run')} {summary.get('runId', run.name)}"
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width'><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n<h1>{_e(title)}</h1>\n"
            + "\n".join(body) + f"\n<script>{_JS}</script>\n</body></html>\n")  # fmt: skip


def _pick_detailed(failing: list[dict[str, Any]]) -> set[int]:
    """The failures drawn in full (by identity): one of each kind first."""
    kinds: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for case in failing:
        kinds.setdefault((str(case.get("scenario")), tuple(case.get("codes", []))), case)
    ordered = [*kinds.values(), *(c for c in failing if c not in kinds.values())]
    return {id(case) for case in ordered[:DETAILED]}


def _summary(summary: dict[str, Any], cases: list[dict[str, Any]],
             failing: list[dict[str, Any]]) -> str:  # fmt: skip
    passed = bool(summary.get("passed", not failing))
    verdict = "all guarantees held" if passed else "violations found"
    counts = Counter(str(c.get("verdict")) for c in cases)
    tally = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    codes = Counter(code for c in failing for code in dict.fromkeys(c.get("codes", [])))
    rows = "".join(
        f"<tr><td><code>{_e(code)}</code></td><td>{n}</td><td>{_e(promise(code))}</td></tr>"
        for code, n in codes.most_common()
    )
    command = " ".join(str(a) for a in summary.get("argv", []))
    parts = [
        f"<section id=summary class='{'pass' if passed else 'fail'}'>",
        f"<p class=verdict>{_e(verdict)}</p>",
        f"<p>{len(cases)} case(s): {_e(tally)} in {summary.get('seconds', 0)}s; policy "
        f"{_e(summary.get('policy') or 'as each scenario says')}; target "
        f"{_e(' '.join(summary.get('target') or ['reference runtime']))}</p>",
        f"<p>command: <code>{_e(command)}</code></p>" if command else "",
    ]
    if rows:
        parts.append("<table><tr><th>code</th><th>cases</th><th>guarantee broken</th></tr>"
                     f"{rows}</table>")  # fmt: skip
    parts.append("</section>")
    return "\n".join(parts)


def _matrices(cases: list[dict[str, Any]]) -> str:
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        if case.get("occurrence") != "coverage":
            name = Path(str(case.get("scenario", "?"))).name
            by_scenario.setdefault(name, []).append(case)
    parts = ["<h2>Boundary &times; fault</h2>",
             "<p><label><input type=checkbox id=only-failing> only rows with a failure</label></p>"]
    for name, members in by_scenario.items():
        faults = list(dict.fromkeys(str(c.get("fault")) for c in members))
        rows: dict[str, dict[str, dict[str, Any]]] = {}
        for case in members:
            rows.setdefault(str(case.get("occurrence")), {})[str(case.get("fault"))] = case
        bad = sum(1 for c in members if c.get("verdict") in _FAILED)
        head = "".join(f"<th>{_e(f)}</th>" for f in faults)
        lines = []
        for occurrence, row in rows.items():
            cells = "".join(_cell(row.get(fault)) for fault in faults)
            failing = any(c.get("verdict") in _FAILED for c in row.values())
            lines.append(f"<tr class='{'bad' if failing else 'good'}'>"
                         f"<th>{_e(occurrence)}</th>{cells}</tr>")  # fmt: skip
        parts.append(
            f"<details class=scenario{' open' if bad else ''}><summary>{_e(name)}: "
            f"{len(members)} case(s), {bad} failing</summary><table class=matrix>"
            f"<tr><th>occurrence</th>{head}</tr>{''.join(lines)}</table></details>"
        )
    return "\n".join(parts)


def _cell(case: dict[str, Any] | None) -> str:
    if case is None:
        return "<td class=na></td>"
    verdict = str(case.get("verdict"))
    title = _e(f"{case.get('id')}: {verdict} {' '.join(case.get('codes', []))}")
    if verdict in _FAILED:
        return (f"<td class='v-{_e(verdict)}'><a href='#{_anchor(str(case.get('id')))}' "
                f"title='{title}'>{_e(verdict)}</a></td>")  # fmt: skip
    shown = "ok" if verdict == "pass" else verdict
    return f"<td class='v-{_e(verdict)}' title='{title}'>{_e(shown)}</td>"


def _failure_line(case: dict[str, Any]) -> str:
    return (f"<section class=failure id='{_anchor(str(case.get('id')))}'><h3>{_e(case.get('id'))}"
            f"</h3><p>{_e(', '.join(case.get('codes', [])) or case.get('verdict'))}; replay: "
            f"<code>{_e(case.get('replay', ''))}</code></p></section>")  # fmt: skip


def _failure(run: Path, case: dict[str, Any], shown: Path) -> str:
    case_id = str(case.get("id"))
    artifacts = case.get("artifacts")
    given = artifacts.get("dir") if isinstance(artifacts, dict) else None
    # Only a folder inside the report: an absolute path or `..` would pull
    # another folder's files into the page.
    confined = isinstance(given, str) and confined_dir(given) is None
    relative = str(given) if confined else f"failures/{slug(case_id)}"
    where = run / relative
    replay = str(case.get("replay") or _read_text(where / "replay.sh").strip())
    codes = list(dict.fromkeys(case.get("codes", [])))
    look = list(dict.fromkeys(n for c in codes for n in where_to_look(c)))
    parts = [
        f"<section class=failure id='{_anchor(case_id)}'>",
        f"<h3>{_e(case_id)} <span class='v-{_e(case.get('verdict'))}'>"
        f"{_e(str(case.get('verdict')).upper())}</span></h3>",
        f"<p>replay: <code class=replay>{_e(replay)}</code></p>",
        _violations(case.get("violations", []), case.get("detail", "")),
        f"<p>the problem shows in: {_e(', '.join(look) or 'violations.json')} "
        f"(<code>{_e(shown / relative)}</code>)</p>",
        "<div class=cols>",
        _timeline(_jsonl(where / "trace.jsonl"), str(case.get("fault")), _durable(where)),
        _logs(where),
        "</div>",
        _ledger(run, case, where),
        "</section>",
    ]
    return "\n".join(parts)


def _read_text(path: Path) -> str:
    return _bytes(path).decode("utf-8", "replace")


def _violations(violations: Iterable[dict[str, Any]], detail: str) -> str:
    items = []
    for v in violations:
        evidence = orjson.dumps(v.get("evidence", {}), option=orjson.OPT_SORT_KEYS).decode()
        code = str(v.get("code"))
        harm = harm_in_words(Violation(code, str(v.get("message")), dict(v.get("evidence", {}))))
        items.append(
            f"<li><code class=code>{_e(code)}</code> {_e(promise(code))}"
            f"<br><b>{_e(harm)}</b><br><code class=evidence>{_e(evidence)}</code></li>"
        )
    if not items and detail:
        items.append(f"<li>{_e(detail)}</li>")
    return "<ul class=violations>" + "".join(items) + "</ul>"


def _durable(where: Path) -> int | None:
    """Events durable at the kill: those of the crashed log."""
    for suffix in (".jsonl", ".db"):
        path = where / f"crashed{suffix}"
        if path.is_file():
            try:
                return len(read_any(str(path)).events)
            except Exception:  # an unreadable crashed log: said by its own view
                return None
    return None


def _timeline(trace: Sequence[Mapping[str, Any]], fault: str, durable: int | None) -> str:
    """The crash run as the probe reported it: boundaries (durable ones
    tagged) and file facts in order, the kill point marked with what was
    durable at that moment."""
    if not trace:
        return "<div class=timeline><h4>timeline</h4><p>no probe trace kept</p></div>"
    items = []
    for message in trace:
        if "boundary" in message:
            name = f"{message['boundary']}#{message.get('n', '?')}"
            what = message.get("tool") or message.get("callId") or message.get("requestId") or ""
            kind = "durable" if str(message["boundary"]).endswith("/durable") else "boundary"
            if message.get("parked"):
                held = "" if durable is None else f"; durable then: {durable} event(s)"
                mark = f"&#9889; {_e(fault)} here{_e(held)}"
                items.append(f"<li class=kill data-kill=1><b>{_e(name)}</b> {_e(what)} "
                             f"<span class=killmark>{mark}</span></li>")  # fmt: skip
            else:
                items.append(f"<li class={kind}>{_e(name)} {_e(what)}</li>")
        elif "fact" in message:
            target = message.get("file") or message.get("dir") or message.get("requestId") or ""
            items.append(f"<li class=fact>{_e(message['fact'])} {_e(Path(str(target)).name)}</li>")
    return ("<div class=timeline><h4>timeline of the crash run</h4><ol>" + "".join(items)
            + "</ol></div>")  # fmt: skip


def _logs(where: Path) -> str:
    views = {}
    for name in _LOGS:
        for suffix in (".jsonl", ".db"):
            path = where / f"{name}{suffix}"
            if path.is_file():
                try:
                    views[name] = read_any(str(path)).events
                except Exception:  # a log the reader refuses is shown as missing
                    views[name] = ()
                break
    if not views:
        return "<div class=logs><p>no logs kept</p></div>"
    crashed = len(views.get("crashed", ()))
    repaired = len(views.get("repaired", ())) or crashed
    parts = ["<div class=logs>"]
    for name, events in views.items():
        rows = []
        for event in list(events)[:LOG_ROWS]:
            seq = int(event.seq)
            kind = "" if name == "crashed" or seq < crashed else (
                "repair" if seq < repaired else "resume")  # fmt: skip
            data = event.data
            brief = " ".join(f"{k}={data[k]}" for k in ("turn", "step", "callId", "name")
                             if k in data)  # fmt: skip
            error = data.get("error")
            if isinstance(error, dict) and error.get("code"):
                brief += f" error={error['code']}"
            reason = data.get("reason")
            if isinstance(reason, dict):
                brief += f" reason={reason.get('kind')}"
            rows.append(f"<tr class='{kind}'><td>{seq}</td><td>{_e(event.type)}</td>"
                        f"<td>{_e(brief)}</td></tr>")  # fmt: skip
        more = f"<p>and {len(events) - LOG_ROWS} more</p>" if len(events) > LOG_ROWS else ""
        parts.append(f"<details class=log{' open' if name == 'crashed' else ''}><summary>"
                     f"{name} log: {len(events)} event(s)</summary><table>{''.join(rows)}"
                     f"</table>{more}</details>")  # fmt: skip
    parts.append("<p class=legend><span class=repair>repair</span> added by crash repair, "
                 "<span class=resume>resume</span> by the resumed run</p></div>")  # fmt: skip
    return "\n".join(parts)


def _effect(record: dict[str, Any]) -> str:
    arguments = orjson.dumps(record.get("arguments"), option=orjson.OPT_SORT_KEYS).decode()
    return f"{record.get('tool')} {arguments}"


def _ledger(run: Path, case: dict[str, Any], where: Path) -> str:
    final = _jsonl(where / "world-ledger.jsonl")
    name = Path(str(case.get("scenario", ""))).name
    reference_path = run / REFERENCES / f"{name}.ledger.jsonl"
    reference = _jsonl(reference_path) if reference_path.is_file() else None
    if not final and not reference:
        return "<div class=ledger><h4>world ledger</h4><p>no effect was applied</p></div>"
    after = Counter(_effect(r) for r in final)
    before = Counter(_effect(r) for r in reference or ())
    rows = []
    for effect in dict.fromkeys([*before, *after]):
        more = reference is not None and after[effect] > before[effect]
        shown = "?" if reference is None else str(before[effect])
        rows.append(f"<tr class='{'more' if more else ''}'><td><code>{_e(effect)}</code></td>"
                    f"<td>{shown}</td><td>{after[effect]}</td></tr>")  # fmt: skip
    return ("<div class=ledger><h4>world ledger: effects applied</h4><table><tr><th>effect</th>"
            "<th>fault-free run</th><th>crash + recovery</th></tr>" + "".join(rows)
            + "</table></div>")  # fmt: skip


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
code{font:12px ui-monospace,monospace;background:#f4f4f4;padding:0 .2em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top}
#summary{padding:.5em 1em;border-left:6px solid #2a2}#summary.fail{border-color:#c22}
.verdict{font-size:1.3em;font-weight:bold}
.matrix td{text-align:center;min-width:3em}.v-pass{background:#dfd}.v-fail{background:#f88}
.v-drift,.v-hung,.v-error{background:#fc6}.v-unsupported{background:#eee;color:#888}
.na{background:#fafafa}.matrix a{color:#600;font-weight:bold;display:block}
details.scenario{margin:.3em 0}summary{cursor:pointer;font-weight:bold}
.failure{border-top:2px solid #c22;margin-top:1.5em;padding-top:.3em}
.failure:target{background:#fff8e0}
.cols{display:flex;gap:1.5em;flex-wrap:wrap}.timeline ol{padding-left:1.5em;margin:0}
.timeline .fact{color:#888}.timeline .durable{color:#060;font-weight:bold}
.timeline .kill{background:#c22;color:#fff;padding:0 .3em}
tr.repair td,span.repair{background:#ffe08a}tr.resume td,span.resume{background:#dde8ff}
tr.more td{background:#f88}.code{font-weight:bold}.evidence{color:#555}
.hidden{display:none}
"""
_JS = """
function openTarget(){var id=location.hash.slice(1);try{id=decodeURIComponent(id);}
catch(e){}if(!id)return;
var el=document.getElementById(id);for(var p=el;p;p=p.parentElement){if(p.tagName==='DETAILS')
p.open=true;}if(el)el.scrollIntoView();}
window.addEventListener('hashchange',openTarget);openTarget();
document.getElementById('only-failing').addEventListener('change',function(e){
document.querySelectorAll('table.matrix tr.good').forEach(function(r){
r.classList.toggle('hidden',e.target.checked);});});
window.addEventListener('load',function(){
document.body.setAttribute('data-load-ms',String(Math.round(performance.now())));});
document.body.setAttribute('data-ready','1');
"""


_GOOD_STATUS = frozenset({"detected", "clean"})


def selftest_html(report: dict[str, Any]) -> str:
    """report.html of a selftest (its selftest.json): one row per variant and
    stage, coloured by status, the problems first."""
    rows = sorted(report.get("rows", []), key=lambda r: r.get("status") in _GOOD_STATUS)
    body = []
    for row in rows:
        status = str(row.get("status"))
        verdict = "pass" if status in _GOOD_STATUS else (
            "unsupported" if status == "not-available" else "fail")  # fmt: skip
        expected = ", ".join(row.get("expected", []))
        found = ", ".join(f"{c} x{n}" for c, n in row.get("codes", {}).items())
        about = promise(row["expected"][0]) if row.get("expected") else ""
        body.append(f"<tr class='v-{verdict}'><td>{_e(row.get('variant'))}</td>"
                    f"<td>{_e(row.get('stage'))}</td><td>{_e(status)}</td><td>{_e(expected)}"
                    f"</td><td>{_e(found)}</td><td>{_e(about)}</td>"
                    f"<td>{_e(row.get('firstCase') or row.get('note', ''))}</td></tr>")  # fmt: skip
    bad = sum(1 for r in rows if r.get("status") in ("missed", "wrong-code", "false-alarm"))
    verdict = "the oracle caught every variant" if not bad else f"{bad} problem row(s)"
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>faultlab "
            f"selftest</title><style>{_CSS}</style></head><body><h1>faultlab selftest</h1>"
            f"<section id=summary class='{'fail' if bad else 'pass'}'><p class=verdict>"
            f"{_e(verdict)}</p></section><table class=selftest><tr><th>variant</th><th>stage"
            f"</th><th>status</th><th>expected</th><th>codes found</th><th>guarantee</th>"
            f"<th>first case / note</th></tr>{''.join(body)}</table></body></html>\n")  # fmt: skip
