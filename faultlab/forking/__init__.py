# What every fork server shares (the runtime's, the ACP agent's, the app
# children's): the server loop with its children forked ahead and its
# protocol (serve.py), a forked child's first steps (child.py), a request's
# script run in place of the server's program (script.py), and how each
# child is contained so that nothing it starts outlives it (contain.py, with
# the /proc scans it shares with the lab's per-case supervisor, procscan.py).
# Below both the lab and the runtime: it imports only the standard library,
# orjson and faultlab.probe, so a server on either side can use it.
from __future__ import annotations

__all__: list[str] = []
