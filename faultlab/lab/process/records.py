# The world ledger's records: one JSON object per applied effect, appended
# and fsynced by whoever applied it (the reference runtime's ledger tools,
# faultlab's MCP tool server and the apps' ledger tools through
# `faultlab.lab.servers.ledger.Ledger`, or a third-party target's tools).  The
# readers are `faultlab.lab.process.reference.read_ledger` and the `Ledger`
# itself (what other writers appended), both through `ledger_record`; the
# oracles read the records they return (G6, the effects a recovery applied
# again).
from __future__ import annotations

from typing import Any, TypedDict, cast

__all__ = ["LedgerRecord", "ledger_record"]


class LedgerRecord(TypedDict, total=False):
    """One applied effect.  A target writes the ledger, so a record is any
    JSON object that `read_ledger` could parse: a key may be missing and a
    value of any JSON type, which is why the values are `Any` and every
    reader converts what it takes (`str(r.get("tool"))`).  Extra keys are
    kept and ignored."""

    callId: Any  # the call that applied it (str; a nested call: `<parent>.<k>`)
    tool: Any  # the tool's name (str)
    arguments: Any  # the call's arguments (a JSON object)
    key: Any  # the idempotency key it was applied under (str), or null


def ledger_record(value: object) -> LedgerRecord | None:
    """One decoded ledger line as a record, or None when it is not a JSON
    object (a foreign line: skipped, as a torn one is)."""
    return cast(LedgerRecord, value) if isinstance(value, dict) else None
