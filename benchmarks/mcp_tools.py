# Start-up cost of faultlab's MCP tool server and of the reference black-box
# agent, both paid on every agent process start (several per case).  Side by
# side in one run, alternating: the tool server and the agent of the working
# tree ("now") against the same code at a git revision ("before", unpacked
# with `git archive`), each started as the lab starts it (`-I` with the tree
# put on sys.path, as the rig does for a checkout).  The tool server session:
# spawn -> `initialize` answered -> `tools/list` answered -> stdin closed ->
# exit; the agent: start with a missing MCP config -> its usage error (every
# import paid, no server started).  CPU is the child's own (user + system,
# from wait4), the figure that counts on a CPU-bound test machine; wall to
# the `initialize` answer is shown beside it.  Prints medians and now/before.
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "payment.toml"
BEFORE = "96979fd27c39e427ad749c2fa02324aaeb990d28"  # the last commit before the cut
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n'
)
LIST = (b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')  # fmt: skip


def _boot(tree: Path, module: str) -> list[str]:
    return [sys.executable, "-I", "-c",
            f"import runpy, sys; sys.path[:0] = [{str(tree)!r}]; "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"]  # fmt: skip


def _cpu(process: subprocess.Popen[bytes]) -> float:
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def server_session(tree: Path, ledger: Path) -> tuple[float, float]:
    """(CPU seconds of the whole session, wall seconds to the initialize answer)."""
    start = time.perf_counter()
    server = subprocess.Popen([*_boot(tree, "faultlab.lab.servers.mcptools"), str(SCENARIO),
                               "--ledger", str(ledger)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tree)  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(INITIALIZE)
    server.stdin.flush()
    line = server.stdout.readline()
    ready = time.perf_counter() - start
    server.stdin.write(LIST)
    server.stdin.flush()
    listed = server.stdout.readline()
    if b'"result"' not in line or b"charge_card" not in listed:
        raise SystemExit(f"no initialize/tools answer: {line[:200]!r} {listed[:200]!r}")
    server.stdin.close()  # EOF: the server ends
    cpu = _cpu(server)
    if server.returncode != 0:
        raise SystemExit(f"tool server exited {server.returncode}")
    return cpu, ready


def agent_start(tree: Path, scratch: Path) -> float:
    """CPU seconds of the reference agent up to its usage error."""
    agent = subprocess.Popen([*_boot(tree, "faultlab.runtime.httpagent"), "--model-url",
                              "http://127.0.0.1:9/", "--mcp-config", str(scratch / "none.json"),
                              "--session-dir", str(scratch / "session"), "--quiet", "hi"],
                             stderr=subprocess.DEVNULL, cwd=tree)  # fmt: skip
    cpu = _cpu(agent)
    if agent.returncode != 2:
        raise SystemExit(f"the agent exited {agent.returncode}, not 2 (usage)")
    return cpu


def _unpack(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "faultlab"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--before", default=BEFORE, help="git revision of the 'before' side")
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        trees = {"before": _unpack(args.before, Path(tempfile.mkdtemp(dir=scratch))),
                 "now": ROOT}  # fmt: skip
        for i in range(args.repeats + 1):  # round 0 warms up (bytecode, page cache)
            order = list(trees) if i % 2 else list(reversed(trees))
            for side in order:
                cpu, ready = server_session(trees[side], scratch / f"{side}-{i}.jsonl")
                agent = agent_start(trees[side], scratch)
                if i:
                    for key, value in (("server", cpu), ("ready", ready), ("agent", agent)):
                        rows.setdefault(f"{key}:{side}", []).append(value)
    labels = {"server": "tool server session, CPU", "ready": "tool server to initialize, wall",
              "agent": "reference agent to usage error, CPU"}  # fmt: skip
    print(f"median of {args.repeats}; before = {args.before[:12]}; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    for key, label in labels.items():
        before = statistics.median(rows[f"{key}:before"])
        now = statistics.median(rows[f"{key}:now"])
        print(f"{label:38} before {before * 1000:7.0f} ms  now {now * 1000:7.0f} ms"
              f"  now/before {now / before:5.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
