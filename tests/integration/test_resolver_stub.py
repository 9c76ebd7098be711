# The resolver stub of an agent's network namespace (issue 33): inside it,
# every name is answered NXDOMAIN at once by the supervisor
# (reaperrelay.py), the agent's /etc/resolv.conf points there (a private
# bind mount: the lab's own file is untouched), and each name looked up is
# reported to the lab once (`names_looked_up`, the black-box drive's
# `agent/exit` records).  Codex retried its look-ups for about 5 s per
# process without it.  The packet functions are checked on their own too.
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from faultlab.lab.process.reaperrelay import _nxdomain, _qname
from faultlab.lab.process.tree import ContainedProcess

pytestmark = pytest.mark.realprocess
ROOT_ALLOWED = os.geteuid() == 0  # unshare(CLONE_NEWNET | CLONE_NEWNS) needs root here


def query(name: str, *, flags: bytes = b"\x01\x00", questions: int = 1) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    header = b"\xab\xcd" + flags + questions.to_bytes(2, "big") + b"\x00\x00" * 2 + b"\x00\x01"
    return header + labels + b"\x00" + b"\x00\x01\x00\x01"  # A, IN (and an EDNS count)


def test_a_standard_query_is_answered_nxdomain_with_its_question() -> None:
    asked = query("API.Example.test")
    reply = _nxdomain(asked)
    assert reply is not None
    assert reply[:2] == b"\xab\xcd"  # its id
    assert reply[2] == 0x81 and reply[3] == 0x83  # a response, RD kept; RA, NXDOMAIN
    assert reply[4:12] == b"\x00\x01" + b"\x00" * 6  # the question only: no answer, no EDNS
    assert reply[12:] == asked[12:]
    assert _qname(asked) == "api.example.test"


def test_other_queries_get_notimp_formerr_or_nothing() -> None:
    inverse = _nxdomain(query("a.test", flags=b"\x08\x00"))  # opcode 1
    assert inverse is not None and inverse[3] & 0x0F == 4
    for broken in (query("a.test")[:-3], query("a.test", questions=0),
                   b"\xab\xcd\x01\x00\x00\x01" + b"\x00" * 6 + b"\xc0\x0c"):  # fmt: skip
        reply = _nxdomain(broken)
        assert reply is not None and reply[3] & 0x0F == 1 and reply[4:6] == b"\x00\x00"
        assert _qname(broken) == ""
    assert _nxdomain(query("a.test", flags=b"\x81\x80")) is None  # a response
    assert _nxdomain(b"\x00" * 11) is None  # a runt


LOOKUPS = """
import socket
for name in ("api.vendor.test", "telemetry.vendor.test", "api.vendor.test"):
    try:
        socket.getaddrinfo(name, 443)
        print("resolved", name)
    except socket.gaierror as error:
        print("not found", name, error.errno == socket.EAI_NONAME)
"""


@pytest.mark.skipif(not ROOT_ALLOWED, reason="network and mount namespaces need root here")
def test_names_are_answered_at_once_and_reported(tmp_path: Path) -> None:
    before = Path("/etc/resolv.conf").read_bytes()
    out = tmp_path / "out"
    with ContainedProcess.start(
        [sys.executable, "-c", LOOKUPS], cwd=tmp_path, env=dict(os.environ), stdin_path=None,
        stdout_path=out, stderr_path=out, forward={free_port(): str(tmp_path / "lab.sock")},
    ) as proc:  # fmt: skip
        assert proc.networked
        assert proc.wait(60) == 0, out.read_text()
        names = proc.names_looked_up
    lines = out.read_text().splitlines()
    assert lines[:3] == [f"not found {n} True" for n in
                         ("api.vendor.test", "telemetry.vendor.test", "api.vendor.test")]
    # EAI_NONAME is an answer (NXDOMAIN from the stub): a resolver that timed
    # out on an unreachable server gives EAI_AGAIN instead.  No clock is read.
    assert names == ["api.vendor.test", "telemetry.vendor.test"]  # each name once
    assert Path("/etc/resolv.conf").read_bytes() == before  # the lab's own view is untouched
    supervisor = proc.supervisor.pid if proc.supervisor is not None else 0
    assert not Path(f"/tmp/faultlab-resolv-{supervisor}").exists()  # unlinked once mounted


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
