# A request's script run in a forked child (a zoo variant: a script that
# patches the runtime in-process, then runs it): what `python SCRIPT ARGS`
# does once the interpreter is up, for every fork server whose child may be
# handed a script instead of its own program (the runtime's, the ACP
# agent's); and `run_main`, how any forked program's main is run and left
# as an interpreter would (also the tool server's fork server,
# faultlab/lab/servers/mcpfork.py).  The modules the server imported are
# already loaded: a script that patches them patches this child's copy only.
from __future__ import annotations

import atexit
import os
import runpy
import sys
import threading
import traceback
from collections.abc import Callable

__all__ = ["run_main", "run_script"]


def run_script(script: str) -> int:
    """Run `script` as `__main__` with this process's argv, the way `python
    SCRIPT` does (its folder first on sys.path), as `run_main` runs a
    program; return its exit code."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))

    def main() -> None:
        runpy.run_path(script, run_name="__main__")

    return run_main(main)


def run_main(main: Callable[[], int | None]) -> int:
    """Call `main` as an interpreter runs a program (its return or
    SystemExit's code; a traceback and 1 for an uncaught exception), then do
    what the interpreter does on its way out (wait for the threads that are
    not daemons, run the atexit hooks); return its exit code."""
    try:
        code = _exit_code(main())
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except Exception:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    return code


def _exit_code(code: object) -> int:
    """The status `sys.exit(code)` gives a process."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
