# Time-to-ready of faultlab's MCP tool server: an agent spawns it per process
# start, so its start-up is paid on every case.  Measures, side by side in one
# run, a bare interpreter start (`python -c pass`), the cost of importing the
# lab package and of the MCP SDK alone, and `python -m
# faultlab.lab.servers.mcptools` until its `initialize` answer arrives over
# stdio; prints medians and the ratio against the bare interpreter.
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
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n'
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def time_command(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, env=_env(), cwd=ROOT)
    return time.perf_counter() - start


def time_to_ready(ledger: Path) -> float:
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "faultlab.lab.servers.mcptools",
         str(ROOT / "scenarios" / "payment.toml"), "--ledger", str(ledger)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(), cwd=ROOT,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(INITIALIZE)
    server.stdin.flush()
    line = server.stdout.readline()
    ready = time.perf_counter() - start
    if b'"result"' not in line:
        raise SystemExit(f"no initialize result: {line[:200]!r}")
    server.stdin.close()  # EOF: the server ends
    server.wait(10)
    return ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    rows: dict[str, list[float]] = {k: [] for k in ("bare", "lab", "sdk", "server")}
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(repeats):  # interleaved, so machine load hits every row alike
            rows["bare"].append(time_command(["-c", "pass"]))
            rows["lab"].append(time_command(["-c", "import faultlab.lab.servers.mcptools"]))
            rows["sdk"].append(time_command(["-c", "import mcp.server.stdio"]))
            rows["server"].append(time_to_ready(Path(scratch) / f"ledger-{i}.jsonl"))
    bare = statistics.median(rows["bare"])
    labels = {
        "bare": "python -c pass",
        "lab": "import faultlab.lab.servers.mcptools (no SDK)",
        "sdk": "import mcp.server.stdio",
        "server": "mcptools: spawn -> initialize answered",
    }
    print(f"median of {repeats}")
    for key, label in labels.items():
        median = statistics.median(rows[key])
        print(f"{label:48} {median * 1000:8.1f} ms  {median / bare:6.1f}x bare")


if __name__ == "__main__":
    main()
