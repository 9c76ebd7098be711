# A forked child takes the environment its request gives, as an exec'd child
# would: faultlab.forking.child.enter_child (every fork server's) changes only the variables
# that differ, and both os.environ and the C-level environment that a
# subprocess inherits end up exactly the request's (plus the probe's fds).
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.realprocess

# Runs in a fresh interpreter, as a forked child would after its hand-over.
_CHILD = """
import json, os, subprocess, sys
from faultlab.forking.child import enter_child
request = json.loads(sys.argv[1])
null = os.open(os.devnull, os.O_RDONLY)
enter_child(request, stdio=(null, 1, 2), probe=(7, 8), close=set(), program="p")
inherited = subprocess.run(["env", "-0"], stdout=subprocess.PIPE, check=True).stdout
seen = dict(item.split("=", 1) for item in inherited.decode().split("\\0") if item)
print(json.dumps({"environ": dict(os.environ), "inherited": seen, "cwd": os.getcwd(),
                  "argv": sys.argv}))
"""


def test_a_child_takes_exactly_its_requests_environment(tmp_path: Path) -> None:
    start = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "KEPT": "same",
        "CHANGED": "before",
        "DROPPED": "gone after",
    }
    wanted = {"PATH": start["PATH"], "PYTHONPATH": start["PYTHONPATH"], "KEPT": "same",
              "CHANGED": "after", "ADDED": "new = value"}  # fmt: skip
    request = {"env": wanted, "cwd": str(tmp_path), "argv": ["a.toml", "--quiet"]}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(request)], env=start, cwd="/",
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    expected = {**wanted, "FAULTLAB_PROBE_FDS": "7,8"}
    assert seen["environ"] == expected
    assert seen["inherited"] == expected
    assert seen["cwd"] == str(tmp_path)
    assert seen["argv"] == ["p", "a.toml", "--quiet"]
