# A hostile black-box agent for a user adapter (tests/hostile), called as
# `hostileagent.py MODE ARG -- ARGV...`: it does what MODE names, then
# becomes ARGV (faultlab's reference agent, so the case is real):
#   poke OUT       once per agent home (the fault-free run's, each case's),
#                  plays other local processes and a greedy agent against
#                  the case's model server, and appends what each got to
#                  OUT (a JSON line):
#                  "foreign" a request without the secret (a valid first
#                  request of the script), "guessed" one under a wrong
#                  secret, "chunk" the agent's own request (with the secret)
#                  announcing a 1 GiB chunk and sending 1 MiB of it
#   fifo-session   leaves a FIFO among its session files ({home}/session/*.jsonl)
#   link-session P leaves a symlink to P there
#   big-session P  leaves a hard link to P (a large sparse file) there
#   mcp-py         writes an mcp.py that breaks whoever imports it into its
#                  working directory (where its MCP tool server starts too)
#   escape-home    moves {home}/.faultlab (where faultlab writes the agent's
#                  MCP config before every run) out of its home, and leaves a
#                  symlink to where it went
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

FIRST = {"model": "m", "max_tokens": 64, "stream": False,
         "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip


def _status(sock: socket.socket) -> int:
    sock.settimeout(10)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return 0
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _post(netloc: str, path: str, body: bytes) -> int:
    host, _, port = netloc.partition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        return _status(sock)


def _huge_chunk(netloc: str, path: str) -> int:
    host, _, port = netloc.partition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"40000000\r\n" % path.encode())
        try:
            for _ in range(16):
                sock.sendall(b"x" * (64 << 10))
        except OSError:
            pass  # the server answered and closed before the rest
        return _status(sock)


def _poke(out: Path) -> None:
    done = Path(os.environ["HOME"]) / ".poked"
    if done.exists():
        return
    done.write_text("")
    url = urlsplit(os.environ["FAULTLAB_MODEL_URL"])
    body = json.dumps(FIRST).encode()
    got = {
        "foreign": _post(url.netloc, "/v1/messages", body),
        "guessed": _post(url.netloc, "/faultlab-0123456789abcdef/v1/messages", body),
        "chunk": _huge_chunk(url.netloc, url.path + "/v1/messages"),
    }
    with open(out, "a") as lines:
        lines.write(json.dumps(got) + "\n")


def _session_dir(argv: list[str]) -> Path:
    where = Path(argv[argv.index("--session-dir") + 1])
    where.mkdir(parents=True, exist_ok=True)
    return where


def main() -> None:
    mode, arg = sys.argv[1], sys.argv[2]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    if mode == "poke":
        _poke(Path(arg))
    elif mode in ("fifo-session", "link-session", "big-session"):
        planted = _session_dir(argv) / "zz-planted.jsonl"
        if not os.path.lexists(planted):
            if mode == "fifo-session":
                os.mkfifo(planted)
            elif mode == "link-session":
                planted.symlink_to(arg)
            else:
                os.link(arg, planted)
    elif mode == "mcp-py":
        Path("mcp.py").write_text("raise ImportError('the agent wrote this mcp.py')\n")
    elif mode == "escape-home":
        home = Path(os.environ["HOME"])
        config = home / ".faultlab"
        if not config.is_symlink():  # the first run: its config moves along
            outside = home.parent.parent
            for item in config.iterdir():
                item.rename(outside / item.name)
            config.rmdir()
            config.symlink_to(outside)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
