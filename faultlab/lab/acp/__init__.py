# How an ACP agent is driven: the agent as a lab child over the ACP SDK's
# client side, its fork server, a case run the way an editor would, and the
# drive's fault table (faults.py).
from __future__ import annotations

from faultlab.lab.acp.child import (
    AcpChild,
    Parked,
)
from faultlab.lab.acp.drive import (
    AcpAct,
    AcpOptions,
    acp_target,
    run_acp_case,
    run_acp_reference,
)
from faultlab.lab.acp.faults import ACP_FAULTS, acp_fault
from faultlab.lab.acp.fork import (
    ACP_SERVER,
    shared_acp_server,
)

__all__ = [
    "ACP_FAULTS",
    "ACP_SERVER",
    "AcpAct",
    "AcpChild",
    "AcpOptions",
    "Parked",
    "acp_fault",
    "acp_target",
    "run_acp_case",
    "run_acp_reference",
    "shared_acp_server",
]
