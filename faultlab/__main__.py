# `python -m faultlab` is the `faultlab` command.
from __future__ import annotations

from faultlab.cli import main

main()
