# The benchmark results for people and files: issue 4's acceptance targets next
# to the figures, the table, and the JSON file (written atomically, optionally
# merged section by section).  Works on the JSON form of the results, so a file
# merged from several runs prints the same way.
from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from faultlab.bench.common import median

__all__ = ["acceptance", "table", "write_json"]


def acceptance(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Issue 4's acceptance targets next to the figures present in `report`.

    A figure is judged on its median.  Where the report has the samples of
    each round (the sides measured beside each other), the check also holds
    the figure of every round (`rounds`) and in how many of them the target
    is met (`rounds_met`): on a shared, noisy machine a median a few percent
    from its target says little without that spread."""
    checks: list[dict[str, Any]] = []

    def check(section: str, figure: str, value: float) -> None:
        comparison, bound, unit = _TARGETS[figure]
        item = {
            "section": section, "figure": figure, "value": value,
            "target": f"{comparison} {bound:g}{unit}", "met": _meets(figure, value),
        }  # fmt: skip
        rounds = _per_round(report[section], figure)
        if rounds is not None:
            item["rounds"] = rounds
            item["rounds_met"] = sum(_meets(figure, value) for value in rounds)
        checks.append(item)

    if (o := report.get("offline_states")) is not None:
        check("offline_states", "offline_vs_real", o["figures"]["ratio"])
    if (c := report.get("crash_loop")) is not None:
        check("crash_loop", "fork_vs_exec", c["fork_vs_exec"])
        check("crash_loop", "fork_case_vs_floor", c["fork_case_vs_floor"])
    if (c := report.get("checkpoint_cost")) is not None:
        constant = c["semantic_fsyncs_constant"]
        checks.append(
            {"section": "checkpoint_cost", "figure": "semantic_fsyncs_constant",
             "value": constant, "target": "same count", "met": constant}
        )  # fmt: skip
        check("checkpoint_cost", "semantic_vs_turn_only_stream", c["semantic_vs_turn_only_stream"])
    if (c := report.get("log_reload")) is not None:
        check("log_reload", "orjson_vs_json", c["orjson_vs_json"])
        check("log_reload", "orjson_mb_per_s", c["orjson_mb_per_s"])
    if (c := report.get("explore_jobs")) is not None:
        check("explore_jobs", "speedup", c["speedup"])
    return checks


# Each numeric target: (comparison, bound, unit), as issue 4 states it.
_TARGETS: dict[str, tuple[str, float, str]] = {
    "offline_vs_real": (">=", 100.0, "x"),
    "fork_vs_exec": (">=", 15.0, "x"),
    "fork_case_vs_floor": ("<=", 8.0, "x"),
    "semantic_vs_turn_only_stream": (">=", 0.9, "x"),
    "orjson_vs_json": (">=", 3.0, "x"),
    "orjson_mb_per_s": (">=", 100.0, " MB/s"),
    "speedup": (">=", 1.6, "x"),
}


def _meets(figure: str, value: float) -> bool:
    comparison, bound, _unit = _TARGETS[figure]
    return value >= bound if comparison == ">=" else value <= bound


def _samples(section: Mapping[str, Any], key: str) -> list[float] | None:
    """The per-round samples `key` of `section`, if present and all positive
    (reports written before a list was kept lack it)."""
    values = section.get(key)
    if not isinstance(values, list | tuple) or not values:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in values):
        return None
    return [float(x) for x in values]


def _pairs(section: Mapping[str, Any], top: str, bottom: str) -> list[float] | None:
    """`top[i] / bottom[i]` for every round i of two per-round sample lists of
    `section`; None unless both are there, for the same number of rounds."""
    tops, bottoms = _samples(section, top), _samples(section, bottom)
    if tops is None or bottoms is None or len(tops) != len(bottoms):
        return None
    return [t / b for t, b in zip(tops, bottoms, strict=True)]


def _per_round(section: Mapping[str, Any], figure: str) -> list[float] | None:
    """The value of `figure` in each round of `section`, from its samples."""
    if figure == "fork_vs_exec":
        return _pairs(section, "exec_seconds", "fork_seconds")
    if figure == "fork_case_vs_floor":
        cases = section.get("cases")
        seconds = _pairs(section, "fork_seconds", "floor_round_ms")
        if seconds is None or not isinstance(cases, int) or cases < 1:
            return None
        return [ratio * 1000 / cases for ratio in seconds]  # (s / case) / (floor ms)
    if figure == "orjson_vs_json":
        return _pairs(section, "json_seconds", "orjson_seconds")
    if figure == "orjson_mb_per_s":
        megabytes = section.get("megabytes")
        seconds = _samples(section, "orjson_seconds")
        if seconds is None or not isinstance(megabytes, int | float) or megabytes <= 0:
            return None
        return [megabytes / one for one in seconds]
    if figure == "speedup":
        return _pairs(section, "jobs1_seconds", "jobs2_seconds")
    return None


def _row(label: str, value: str, note: str = "") -> str:
    return f"  {label:<34} {value:>14}  {note}".rstrip()


def _table_crash_loop(c: Mapping[str, Any]) -> list[str]:
    lines = [
        f"crash loop: {c['scenario']}, {c['cases']} SIGKILL case(s) x {c['rounds']} round(s)",
        _row(
            "fork", f"{c['fork_cases_per_s']:.1f} cases/s", f"{c['fork_ms_per_case']:.1f} ms/case"
        ),
        _row(
            "exec", f"{c['exec_cases_per_s']:.1f} cases/s", f"{c['exec_ms_per_case']:.1f} ms/case"
        ),
        _row(
            "fork, no child forked ahead",
            f"{c['on_request_cases_per_s']:.1f} cases/s",
            f"{c['on_request_ms_per_case']:.1f} ms/case (information)",
        ),
        _row(
            "floor: fork, park, SIGKILL, reap",
            f"{c['floor_ms']:.3f} ms",
            f"median of {c['floor_repetitions']}"
            + (f", parent RSS {rss:.0f} MB" if (rss := c.get("floor_parent_rss_mb")) else ""),
        ),
        _row("fork / exec (cases per second)", f"{c['fork_vs_exec']:.1f}x"),
        _row("fork case / floor", f"{c['fork_case_vs_floor']:.1f}x"),
        _row(
            "fork case per process / floor",
            f"{c['fork_process_vs_floor']:.1f}x",
            f"{c['processes_per_case']:.2f} processes per case (information)",
        ),
        _row("forked ahead / forked on request", f"{c['fork_vs_on_request']:.2f}x"),
    ]
    if "fork_vs_cold" in c:  # reports written before the warm-up was compared lack it
        lines.append(
            _row(
                "warm / cold children (one job)",
                f"{c['fork_vs_cold']:.2f}x",
                f"cold {c['cold_ms_per_case']:.1f} ms/case (information)",
            )
        )
    return lines


def _table_explore_jobs(c: Mapping[str, Any]) -> list[str]:
    passed = "all passed" if c["all_passed"] else "NOT all passed"
    lines = [
        f"explore: {', '.join(c['scenarios'])}, {c['cases']} case(s) x {c['rounds']} round(s), "
        f"{passed}",
        _row("--jobs 1", f"{c['jobs1_median']:.2f} s"),
        _row("--jobs 2", f"{c['jobs2_median']:.2f} s"),
        _row("speed-up (jobs 1 / jobs 2)", f"{c['speedup']:.2f}x"),
    ]
    measured_cpu = "jobs1_cores" in c  # reports written before the CPU was measured lack it
    if measured_cpu:
        cores = f"{c['jobs1_cores']:.2f} / {c['jobs2_cores']:.2f}"
        cpu = f"{c['jobs1_cpu_ms_per_case']:.1f} / {c['jobs2_cpu_ms_per_case']:.1f} ms"
        lines += [
            "  for information: CPU (lab, fork server, children) per wall second",
            _row("cores busy, --jobs 1 / --jobs 2", cores),
            _row("CPU per case, --jobs 1 / --jobs 2", cpu),
            _row("speed-up bound: 2 cores / jobs-1 cores", f"{2 / c['jobs1_cores']:.2f}x"),
        ]
    lines += [
        "  for information, no target: the fork server forking on request",
        _row("--jobs 1, forked on request", f"{c['on_request_jobs1_median']:.2f} s"),
        _row("--jobs 2, forked on request", f"{c['on_request_jobs2_median']:.2f} s"),
        _row("speed-up, forked on request", f"{c['on_request_speedup']:.2f}x"),
    ]
    if measured_cpu:
        cores = f"{c['on_request_jobs1_cores']:.2f} / {c['on_request_jobs2_cores']:.2f}"
        lines.append(_row("cores busy, forked on request", cores))
    if "cold_jobs2_median" in c:
        lines += [
            "  for information, no target: --jobs 2, the waiting children not warming up",
            _row("--jobs 2, cold", f"{c['cold_jobs2_median']:.2f} s"),
            _row("cold / default, --jobs 2", f"{c['cold_vs_default_jobs2']:.2f}x"),
        ]
    return lines


def _table_log_reload(c: Mapping[str, Any]) -> list[str]:
    per_event = f" ({size:.0f} B/event)" if (size := c.get("bytes_per_event")) else ""
    lines = [
        f"log reload + expected repair: {c['megabytes']:.1f} MB, {c['events']} events"
        f"{per_event}, {c['turns']} turns x {c['rounds']} round(s)",
        _row("orjson", f"{c['orjson_mb_per_s']:.1f} MB/s"),
        _row("json (standard library)", f"{c['json_mb_per_s']:.1f} MB/s"),
        _row("orjson / json", f"{c['orjson_vs_json']:.2f}x"),
    ]
    if (d := c.get("documents")) is not None:
        lines += [
            f"  for information, no target: {d['megabytes']:.1f} MB of larger events "
            f"({d['shape']}), {d['events']} events ({d['bytes_per_event']:.0f} B/event)",
            _row("  orjson", f"{d['orjson_mb_per_s']:.1f} MB/s"),
            _row("  json (standard library)", f"{d['json_mb_per_s']:.1f} MB/s"),
            _row("  orjson / json", f"{d['orjson_vs_json']:.2f}x"),
        ]
    return lines


def _table_checkpoint_cost(c: Mapping[str, Any]) -> list[str]:
    lines = [
        f"checkpoint cost: one turn each, {c['rounds']} round(s)",
        f"  {'policy':<12} {'workload':<18} {'fsyncs':>6} {'flushes':>7} {'per second':>14}",
    ]
    for r in c["runs"]:
        unit = "chunks" if r["workload"] == "stream" else "calls"
        lines.append(
            f"  {r['policy']:<12} {r['units']:>6} {unit:<11} {r['fsyncs']:>6} {r['flushes']:>7} "
            f"{r['per_second']:>9.0f} {unit}/s"
        )
    same = "same" if c["semantic_fsyncs_constant"] else "DIFFERENT"
    lines += [
        _row(
            f"semantic fsyncs, {c['short_chunks']} vs {c['long_chunks']} chunks",
            f"{c['semantic_fsyncs_short']} vs {c['semantic_fsyncs_long']}",
            same,
        ),
        _row("semantic / turn-only, stream", f"{c['semantic_vs_turn_only_stream']:.2f}x"),
        _row("semantic / turn-only, tool calls", f"{c['semantic_vs_turn_only_tools']:.2f}x"),
    ]
    return lines


def _table_offline_states(section: Mapping[str, Any]) -> list[str]:
    f = section["figures"]
    return [
        f"offline crash states vs real SIGKILL cases: {f['scenario']}",
        _row("offline states/s", f"{f['offlineStatesPerSecond']:.1f}"),
        _row("real SIGKILL cases/s", f"{f['realCasesPerSecond']:.2f}"),
        _row("offline / real, per state", f"{f['ratio']:.1f}x"),
    ]


def _table_double_crash(c: Mapping[str, Any]) -> list[str]:
    return [
        f"crashes during recovery: {c['scenario']}, {c['rounds']} round(s), 1 job, "
        f"at most {c['bound']} double cases",
        _row(
            f"single SIGKILL, {c['single_cases']} cases", f"{c['single_ms_per_case']:.1f} ms/case"
        ),
        _row(
            f"double-sigkill, {c['double_cases']} cases + planning",
            f"{c['double_ms_per_case']:.1f} ms/case",
        ),
        _row("double / single, per case", f"{c['double_vs_single']:.2f}x"),
    ]


def _table_syscall_trace(c: Mapping[str, Any]) -> list[str]:
    def ms(key: str) -> str:
        return f"{1000 * median(c[key]):.0f} ms"

    return [
        f"reference run traced (strace) vs untraced: {c['scenario']}, {c['rounds']} round(s)",
        _row("forked (fork server)", ms("fork_seconds")),
        _row("exec'd", ms("exec_seconds")),
        _row("exec'd under strace", ms("traced_seconds"), f"{c['syscall_facts']} file facts"),
        _row("traced / forked", f"{c['traced_vs_fork']:.2f}x"),
        _row("traced / exec'd", f"{c['traced_vs_exec']:.2f}x"),
    ] + ([] if "traced_fork_seconds" not in c else [  # reports before issue 34 lack it
        _row("forked, strace attached", ms("traced_fork_seconds")),
        _row("exec'd under strace / forked traced", f"{c['traced_exec_vs_traced_fork']:.2f}x"),
        _row("CPU per run: exec'd traced / forked traced",
             f"{1000 * c['cpu_seconds']['traced']:.0f} / "
             f"{1000 * c['cpu_seconds']['traced-fork']:.0f} ms "
             f"({c['traced_exec_vs_traced_fork_cpu']:.2f}x)"),
    ])  # fmt: skip


_TABLES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "crash_loop": _table_crash_loop,
    "explore_jobs": _table_explore_jobs,
    "log_reload": _table_log_reload,
    "checkpoint_cost": _table_checkpoint_cost,
    "offline_states": _table_offline_states,
    "double_crash": _table_double_crash,
    "syscall_trace": _table_syscall_trace,
}


def table(report: Mapping[str, Any]) -> list[str]:
    """The figures, ratios and acceptance targets of `report`, for people."""
    machine = report.get("machine", {})
    lines = [
        f"faultlab bench{' --quick' if report.get('quick') else ''}: {machine.get('cpus')} CPU(s), "
        f"Python {machine.get('python')}; pairs measured side by side, medians"
    ]
    if machine.get("scratch"):
        lines.append(
            f"case sessions under {machine['scratch']}; checkpoint-cost logs under "
            f"{machine.get('tempdir')}"
        )
    if (load := report.get("load")) is not None:
        lines.append(
            f"load average (1 min) before {load['before']:.2f}, after {load['after']:.2f}: "
            "other work on the machine slows every figure"
        )
    for name, render in _TABLES.items():
        if name in report:
            lines += ["", *render(report[name])]
    checks = acceptance(report)
    if checks:
        note = " (--quick: small sizes, only indicative)" if report.get("quick") else ""
        lines += ["", f"issue 4 targets{note}:"]
        for item in checks:
            value = item["value"]
            shown = str(value).lower() if isinstance(value, bool) else _shown(value)
            verdict = "met" if item["met"] else "NOT met"
            if (rounds := item.get("rounds")) is not None:
                verdict += (
                    f" (rounds {_shown(min(rounds))}-{_shown(max(rounds))}, "
                    f"met in {item['rounds_met']} of {len(rounds)})"
                )
            lines.append(
                f"  {item['figure']:<30} {shown:>10}  target {item['target']:<12} {verdict}"
            )
    return lines


def _shown(value: float) -> str:
    return f"{value:.{3 if value < 10 else 1}f}"


def write_json(path: Path, report: Mapping[str, Any], *, merge: bool = False) -> None:
    """Write `report` to `path` atomically (temp file, fsync, rename).  With
    `merge`, its sections replace those of the JSON already there."""
    data: dict[str, Any] = {}
    if merge:
        try:
            old = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            old = None
        if isinstance(old, dict):
            data.update(old)
    data.update(report)
    data["acceptance"] = acceptance(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
