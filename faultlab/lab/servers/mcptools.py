# faultlab's MCP tool server: a scenario's scripted tools served to a
# black-box agent over MCP (stdio or streamable HTTP), built on the official
# `mcp` SDK's low-level `Server`.  The agent spawns it from its MCP config, so
# it runs as the lab's grandchild and reports to the lab only through the
# gate's Unix socket: every call's `tool/received` before its effect,
# `tool/applied` after the ledger fsync, `tool/replied` after the reply's bytes
# left for the agent (docs/mcp-tools.md).  The ground truth of what the tools
# did is the world ledger, written in the runtime's record format.
#
# Start-up is paid per agent process start: the SDK (about 1.1 CPU-seconds of
# imports, its package `__init__` pulls its client, server and HTTP stacks
# whatever is imported from it) is imported only after the arguments, the
# scenario, the ledger and the gate socket were checked, so bad input fails at
# once, with the garbage collector off, and then frozen (docs/decisions.md,
# "The tool server's start-up CPU").
from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from faultlab.lab.errors import LabUsageError
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.lab.servers.scripted import (
    EXIT_GATE_CLOSED,
    IDEMPOTENCY_KEY,
    ToolCallOutcome,
    ToolRunner,
    tool_definitions,
)
from faultlab.scenario import ScenarioError, load_scenario

__all__ = [
    "EXIT_GATE_CLOSED",
    "EXIT_USAGE",
    "IDEMPOTENCY_KEY",
    "ServerOptions",
    "ToolCallOutcome",
    "ToolRunner",
    "main",
    "parse_args",
    "tool_definitions",
]

EXIT_USAGE = 2


# --- the command line -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerOptions:
    scenario: Path
    ledger: Path
    gate: Path | None = None
    transport: str = "stdio"
    port: int = 0
    url_file: Path | None = None


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise LabUsageError(message)


def parse_args(argv: list[str] | None = None) -> ServerOptions:
    """Raises LabUsageError on bad arguments."""
    parser = _OneLineParser(prog="python -m faultlab.lab.servers.mcptools",
                            description="Serve a scenario's tools over MCP.")  # fmt: skip
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--gate", type=Path, default=None, help="the lab's gate socket")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0, help="http: 0 = ephemeral")
    parser.add_argument("--url-file", type=Path, default=None, help="http: write the URL here")
    ns = parser.parse_args(argv)
    if not 0 <= ns.port <= 65535:
        raise LabUsageError(f"--port must be 0 to 65535, not {ns.port}")
    return ServerOptions(ns.scenario, ns.ledger, ns.gate, ns.transport, ns.port, ns.url_file)


def main(argv: list[str] | None = None) -> int:
    try:
        options = parse_args(argv)
        scenario = load_scenario(options.scenario)
        ledger = LedgerWriter(options.ledger)
        try:
            gate = GateClient(options.gate)
        except OSError as exc:
            raise LabUsageError(f"cannot connect to gate socket {options.gate}: "
                                f"{exc.strerror or exc}") from None  # fmt: skip
    except (LabUsageError, ScenarioError) as exc:
        print(f"faultlab-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    gc.disable()  # the SDK's import builds ~550 pydantic classes: nothing to collect meanwhile
    try:
        from faultlab.lab.servers.mcpserve import serve  # the SDK: imported once input is good
    finally:
        gc.freeze()  # what the imports made lives as long as the process: out of every
        gc.enable()  # later collection (the one at exit too)
    try:
        asyncio.run(serve(scenario, ledger, gate, gated=options.gate is not None,
                          transport=options.transport, port=options.port,
                          url_file=options.url_file))  # fmt: skip
    except KeyboardInterrupt:
        return 0
    finally:
        ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
