# How an ACP agent is driven: the agent as a lab child over the ACP SDK's
# client side, its fork server, and a case run the way an editor would.
from __future__ import annotations

from faultlab.lab.acp.child import (
    AcpChild,
    Parked,
)
from faultlab.lab.acp.drive import (
    ACP_FAULTS,
    AcpOptions,
    acp_target,
    parse_acp_faults,
    plan_acp_cases,
    run_acp_case,
    run_acp_reference,
)
from faultlab.lab.acp.fork import (
    ACP_SERVER,
    shared_acp_server,
)

__all__ = [
    "ACP_FAULTS",
    "ACP_SERVER",
    "AcpChild",
    "AcpOptions",
    "Parked",
    "acp_target",
    "parse_acp_faults",
    "plan_acp_cases",
    "run_acp_case",
    "run_acp_reference",
    "shared_acp_server",
]
