# What faultlab serves a black-box agent: the scripted model over HTTP, the
# scenario's tools over MCP, and the gate where both report and hold; and
# the rig (rig.py) that sets them up for one case of the agent and app drives.
# Every name is imported when first used: the MCP tool server, started per
# agent run, imports the gate, not the model server.
from __future__ import annotations

from typing import TYPE_CHECKING

from faultlab.lab.process.exports import exports_on_use

if TYPE_CHECKING:
    from faultlab.lab.servers.gate import Gate, GateBridge, GateClient, GateClosed
    from faultlab.lab.servers.model import ModelServer
    from faultlab.lab.servers.points import (
        BLACKBOX_BOUNDARIES,
        DEFAULT_DELAYS_MS,
        KillPoint,
        parse_kill_point,
    )

__all__ = [
    "BLACKBOX_BOUNDARIES",
    "DEFAULT_DELAYS_MS",
    "Gate",
    "GateBridge",
    "GateClient",
    "GateClosed",
    "KillPoint",
    "ModelServer",
    "parse_kill_point",
]

_NAMES = {  # submodule: the names it defines that the package re-exports
    "gate": "Gate GateBridge GateClient GateClosed",
    "model": "ModelServer",
    "points": "BLACKBOX_BOUNDARIES DEFAULT_DELAYS_MS KillPoint parse_kill_point",
}
__getattr__ = exports_on_use(__name__, _NAMES)
