# Behaviour check for issue 29's refactor (one pipeline for every drive):
# `record` runs `faultlab explore --json` over a fixed set of configurations
# (every drive, both backends, both example apps) and keeps per configuration
# the sorted (case id, verdict, sorted codes) rows, the exit code and the wall
# seconds; `compare` diffs two such records and exits 1 on any difference
# outside the known-racy points listed in RACY below.  It owns only that:
# the configurations, the reader of both JSON shapes, and the racy list.
#
#   python3 benchmarks/compare_explore.py record OUT.json [--configs a,b] [--root TREE]
#   python3 benchmarks/compare_explore.py compare BASE.json NEW.json [--configs a,b]
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

# name -> explore arguments (after `explore --json --no-report -j JOBS`).
# Paths are relative to the tree under test (`--root`), which is also put
# first on the children's PYTHONPATH so that its faultlab is the one run.
CONFIGS: dict[str, list[str]] = {
    # a. classic drive, every fault (double-sigkill is not in `all`), JSONL
    "classic-jsonl": ["--faults", "all,double-sigkill", "--backend", "jsonl", "scenarios/"],
    # b. the same on the SQLite backend
    "classic-sqlite": ["--faults", "all,double-sigkill", "--backend", "sqlite", "scenarios/"],
    # c. the ACP drive (`all` = sigkill, sigterm, acp-cancel; docs/acp.md)
    "acp": ["--drive", "acp", "--faults", "all", "scenarios/"],
    # d. the black-box drive with the bundled reference agent, kill at delay 0
    "agent-reference": ["--agent", "reference", "--delays", "0", "scenarios/"],
    # e. the LangGraph example app in its three durability modes
    "app-langgraph": ["--app", "langgraph:examples.langgraph_refund:build_graph",
                      "--compare", "durability=exit,async,sync", "scenarios/payment.toml"],
    # f. the pydantic-ai example app in its two save modes
    "app-pydantic-ai": ["--app", "pydantic-ai:examples.pydantic_ai_refund:build_agent",
                        "--compare", "save=node,run", "scenarios/payment.toml"],
}

# Known-racy points: their verdict and codes move between two runs of the same
# code (docs/frameworks.md, "Stability over three runs"), so a difference there
# is reported as "racy", never as a failure.  Each entry: (configuration,
# regular expression matched against the whole case id).  App case ids read
# `payment.toml::POINT#N[FAULT/STYLE/MODE]`.
RACY: list[tuple[str, str]] = [
    # LangGraph durability=async: the checkpoint writes run on a background
    # thread while the graph goes on; every point's codes are a race with it.
    ("app-langgraph", r".*\[[^\]]*/async\]"),
    # Any app, any mode: after a pending-writes write completes, what a resent
    # message finds depends on the order of the background write and the
    # step's checkpoint (moved between ok and INVALID in `sync`).
    ("app-*", r".*::checkpoint/writes-done#\d+\[[^\]]*/resend(/[^\]]*)?\]"),
]

Row = tuple[str, str, tuple[str, ...]]  # case id, verdict, sorted codes


def rows_of(document: dict[str, Any]) -> list[Row]:
    """The sorted rows of one `explore --json` document, in either shape: today's
    `--app` document (`modes.{mode}.cases`, the mode already in each case id) or
    the one shape of every drive (`cases`, with a `drive` field)."""
    if "cases" in document:
        cases = list(document["cases"])
    elif "modes" in document:
        cases = [c for mode in document["modes"].values() for c in mode["cases"]]
    else:
        raise ValueError(f"no 'cases' nor 'modes' in the document (keys {sorted(document)})")
    rows = {(str(c["id"]), str(c["verdict"]), tuple(sorted(map(str, c.get("codes") or []))))
            for c in cases}
    if len(rows) != len(cases):
        raise ValueError(f"{len(cases) - len(rows)} duplicate case row(s)")
    return sorted(rows)


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("click", "orjson", "langgraph", "langgraph-checkpoint-sqlite", "pydantic-ai"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


def _head(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() or "unknown"


def record(out: Path, names: list[str], root: Path, jobs: int) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    doc: dict[str, Any] = {"root": str(root), "head": _head(root), "jobs": jobs,
                           "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                           "versions": _versions(), "configs": {}}  # fmt: skip
    worst = 0
    for name in names:
        argv = [sys.executable, "-m", "faultlab", "explore", "--json", "--no-report",
                "-j", str(jobs), *CONFIGS[name]]  # fmt: skip
        log = out.with_name(f"{out.name}.{name}.log")
        print(f"{name}: {' '.join(argv[1:])} (stderr: {log})", file=sys.stderr, flush=True)
        load = os.getloadavg()[0]
        start = time.monotonic()
        with log.open("wb") as err:
            done = subprocess.run(argv, cwd=root, env=env, stdout=subprocess.PIPE,
                                  stderr=err, check=False)  # fmt: skip
        seconds = round(time.monotonic() - start, 1)
        entry: dict[str, Any] = {"argv": argv[3:], "exit": done.returncode, "seconds": seconds,
                                 "load": round(load, 1)}  # fmt: skip
        try:
            rows = rows_of(orjson.loads(done.stdout))
            entry["rows"] = [[i, v, list(c)] for i, v, c in rows]
        except (orjson.JSONDecodeError, ValueError, KeyError, TypeError) as error:
            entry["error"] = f"unreadable output: {error}"
            entry["rows"] = []
            worst = 3
        if done.returncode not in (0, 1):
            worst = 3
        doc["configs"][name] = entry
        print(f"{name}: exit {done.returncode}, {len(entry['rows'])} cases, {seconds} s"
              + (f", {entry['error']}" if "error" in entry else ""), file=sys.stderr, flush=True)
        tmp = out.with_name(out.name + ".tmp")  # after each config: a crash keeps the others
        tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        tmp.replace(out)
    return worst


def is_racy(config: str, case_id: str) -> bool:
    return any(re.fullmatch(pattern, case_id)
               and (config == where or (where.endswith("*") and config.startswith(where[:-1])))
               for where, pattern in RACY)  # fmt: skip


def compare_config(name: str, base: dict[str, Any], new: dict[str, Any]) -> bool:
    """Print the differences of one configuration; True when there is none
    outside the racy points."""
    old_rows = {r[0]: (r[1], tuple(r[2])) for r in base["rows"]}
    new_rows = {r[0]: (r[1], tuple(r[2])) for r in new["rows"]}
    hard: list[str] = []
    racy: list[str] = []

    def show(entry: tuple[str, tuple[str, ...]] | None) -> str:
        return "-" if entry is None else f"{entry[0]} {','.join(entry[1]) or 'ok'}"

    for case in sorted(old_rows.keys() | new_rows.keys()):
        was, now = old_rows.get(case), new_rows.get(case)
        if was == now:
            continue
        kind = "missing" if now is None else "extra" if was is None else "changed"
        line = f"  {kind:8} {case}: {show(was)} -> {show(now)}"
        (racy if is_racy(name, case) else hard).append(line)
    problems = [f"  error: {new['error']}"] if "error" in new else []
    if base["exit"] != new["exit"] and not (racy and not hard):
        problems.append(f"  exit {base['exit']} -> {new['exit']}")
    head = (f"{name}: {len(old_rows)} -> {len(new_rows)} cases, "
            f"{base['seconds']} -> {new['seconds']} s")  # fmt: skip
    verdict = "DIFFERENT" if hard or problems else "identical"
    if racy:
        verdict += f" ({len(racy)} racy row(s) moved)"
    print(f"{head}: {verdict}")
    for line in [*problems, *hard]:
        print(line)
    for line in racy:
        print(f"  racy {line.strip()}")
    return not (hard or problems)


def compare(base_path: Path, new_path: Path, names: list[str] | None) -> int:
    base = orjson.loads(base_path.read_bytes())["configs"]
    new = orjson.loads(new_path.read_bytes())["configs"]
    chosen = names if names is not None else [n for n in base if n in new]
    ok = True
    for name in chosen:
        if name not in base or name not in new:
            print(f"{name}: not recorded in {base_path if name not in base else new_path}")
            ok = False
            continue
        ok = compare_config(name, base[name], new[name]) and ok
    if names is None:
        for name in sorted(base.keys() ^ new.keys()):
            print(f"{name}: only in {base_path if name in base else new_path} (not compared)")
    print("behaviour unchanged" if ok else "behaviour CHANGED")
    return 0 if ok else 1


def _names(text: str | None, default: list[str]) -> list[str]:
    if text is None:
        return default
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configuration(s) {', '.join(unknown)}; known: "
                         + ", ".join(CONFIGS))  # fmt: skip
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__ or "compare explore runs")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the configurations, write their rows")
    rec.add_argument("out", type=Path)
    rec.add_argument("--configs", help=f"comma-separated, of: {', '.join(CONFIGS)}")
    rec.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                     help="the tree under test (default: this script's repository)")
    rec.add_argument("-j", "--jobs", type=int, default=2)
    cmp = sub.add_parser("compare", help="diff two records; exit 1 on a non-racy difference")
    cmp.add_argument("base", type=Path)
    cmp.add_argument("new", type=Path)
    cmp.add_argument("--configs")
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out.resolve(), _names(args.configs, list(CONFIGS)),
                      args.root.resolve(), args.jobs)  # fmt: skip
    return compare(args.base, args.new, None if args.configs is None else
                   _names(args.configs, []))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
