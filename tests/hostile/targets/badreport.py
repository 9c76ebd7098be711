# A protocol target, called as `badreport.py MODE ARGS...`, that breaks the
# probe protocol in the way MODE names, then exits 0 without writing a log:
#   no-n        {"boundary": "turn/started"} (no occurrence number)
#   not-json    a line that is not JSON
#   types       {"boundary": 7, "n": "one"}
#   unknown     {"boundary": "turn/exploded", "n": 1}
#   huge        one 2 MiB line
from __future__ import annotations

import os
import sys

LINES = {
    "no-n": b'{"boundary":"turn/started"}',
    "not-json": b"turn/started 1",
    "types": b'{"boundary":7,"n":"one"}',
    "unknown": b'{"boundary":"turn/exploded","n":1}',
    "huge": b'{"boundary":"turn/started","n":1,"pad":"' + b"x" * (2 << 20) + b'"}',
}


def main() -> None:
    fds = os.environ.get("FAULTLAB_PROBE_FDS")
    if not fds:
        return
    report = int(fds.split(",")[0])
    line = LINES[sys.argv[1]] + b"\n"
    while line:
        line = line[os.write(report, line) :]


if __name__ == "__main__":
    main()
