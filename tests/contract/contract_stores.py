# The backends the contract suite runs on: one factory per backend, keyed by
# the id that appears in every test name ("[jsonl]", "[sqlite]").  Adding a
# backend means adding one entry here.  FAULTLAB_CONTRACT_BACKENDS (a comma
# list) selects others, e.g. the deliberately broken one below, which the
# suite must fail (tests/contract/test_contract_catches_broken.py).
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from faultlab.runtime.backends import Backend, JsonlBackend
from faultlab.runtime.backends.jsonl_format import encode_events
from faultlab.runtime.backends.sqlite import SqliteBackend
from faultlab.runtime.events import Event

Factory = Callable[[Path], Backend]


class GapAcceptingBackend(JsonlBackend):
    """BROKEN on purpose: writes any batch as given, with no check that it
    starts at the next seq or runs without a gap.  The suite must fail on it."""

    def append_batch(self, events: Sequence[Event]) -> None:
        if not events:
            return
        payload = encode_events(events)
        try:
            self._maybe_fail("write")
            os.write(self._fd, payload)
        except OSError:
            self._roll_back()
            raise
        self._written_size += len(payload)
        self._next_seq = events[-1].seq + 1


FACTORIES: dict[str, Factory] = {
    "jsonl": JsonlBackend,
    "sqlite": SqliteBackend,
    "broken-gap": GapAcceptingBackend,
}

DEFAULT = ("jsonl", "sqlite")


def selected() -> list[str]:
    chosen = os.environ.get("FAULTLAB_CONTRACT_BACKENDS")
    names = [n.strip() for n in chosen.split(",") if n.strip()] if chosen else list(DEFAULT)
    unknown = [n for n in names if n not in FACTORIES]
    if unknown:
        raise ValueError(f"FAULTLAB_CONTRACT_BACKENDS: unknown backend(s) {unknown}")
    return names
