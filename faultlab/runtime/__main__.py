# Child entry point: `python -m faultlab.runtime SCENARIO --session-dir DIR
# [--resume] [--backend jsonl|sqlite]` runs a scenario to completion (or
# repairs and resumes a crashed session).  It is what the lab spawns, and it
# is usable by hand: it narrates on stderr.  Exit codes: 0 completed, 2 usage
# or scenario error, 3 internal error, 4 corrupt session log, 5 session locked
# by another writer, 6 a checkpoint could not be made durable (stopped
# fail-closed), 7 stopped gracefully by SIGTERM/SIGINT.
from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import traceback
from collections.abc import Callable

from faultlab.probe import PROBE, ProbeError
from faultlab.runtime import EXIT_CODES
from faultlab.runtime.app import SessionRunner
from faultlab.runtime.backends import (
    BACKENDS,
    SessionCorruptError,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
)
from faultlab.runtime.checkpoints import POLICIES
from faultlab.runtime.persistence import FlushError
from faultlab.runtime.stopsignals import stop_signals
from faultlab.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["main"]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    # Built once: a forked child (faultlab/runtime/forkserver.py) inherits it.
    parser = argparse.ArgumentParser(
        prog="python -m faultlab.runtime",
        description="Run a faultlab scenario on the reference agent runtime.",
    )
    parser.add_argument("scenario", help="scenario file (TOML)")
    parser.add_argument("--session-dir", required=True, help="directory of the session log")
    parser.add_argument(
        "--resume", action="store_true", help="repair and continue the session in --session-dir"
    )
    parser.add_argument(
        "--repair-only",
        action="store_true",
        help="with --resume: repair the session and exit without continuing it",
    )
    parser.add_argument(
        "--ledger", help="world ledger file (default: SESSION_DIR/world-ledger.jsonl)"
    )
    parser.add_argument("--policy", choices=sorted(POLICIES), help="override the scenario's policy")
    parser.add_argument(
        "--backend", choices=BACKENDS, help="override the scenario's persistence backend"
    )
    parser.add_argument("--session-id", help="id of a new session (default: random)")
    parser.add_argument("--quiet", action="store_true", help="print only errors")
    return parser


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _error(text: str) -> None:
    print(f"faultlab.runtime: error: {text}", file=sys.stderr, flush=True)


async def _run(runner: SessionRunner, say: Callable[[str], None]) -> int:
    with stop_signals(asyncio.get_running_loop(), runner.request_stop):
        outcome = await runner.run()
    if outcome.reason == "repaired":
        say(f"repaired: {outcome.repaired} event(s) appended, log {outcome.log_path}")
        return EXIT_CODES["ok"]
    if outcome.reason == "cancelled":
        reason = runner.agent.cancel.reason if runner.agent else "stop"
        say(f"stopped: {reason}; closing events persisted")
        return EXIT_CODES["stopped"]
    say(f"done: {outcome.turns} turn(s), log {outcome.log_path}")
    return EXIT_CODES["ok"]


def warm_up() -> None:
    """Do once what every run does first (for the fork server, before it forks):
    build the parser and parse a command line, and run one empty event loop
    with the stop handlers installed and removed, so that the objects asyncio
    creates lazily on its first use exist before the fork instead of in every
    child.  It leaves no state behind but those objects, so running it again
    (as a child forked ahead does) changes nothing."""
    # Parsing touches the parser's actions as every child's parse will (the
    # fork server's children forked ahead run this again to copy those pages
    # before they are handed a request); the result is thrown away.
    _parser().parse_args(["warm-up.toml", "--session-dir", "warm-up", "--resume", "--quiet"])
    import faultlab.runtime.backends.sqlite  # noqa: F401 (sqlite3, imported lazily otherwise)

    async def empty() -> None:
        with stop_signals(asyncio.get_running_loop(), lambda _name: None):
            pass

    asyncio.run(empty())


def main(argv: list[str] | None = None, *, scenario: Scenario | None = None) -> int:
    """Run the child; `scenario` is the already parsed file (the fork server's cache)."""
    args = _parser().parse_args(argv)
    if args.repair_only and not args.resume:
        _error("--repair-only needs --resume")
        return EXIT_CODES["usage"]
    try:
        # Buffered: this process parks or exits, and flushes before it
        # exits (below), so the lab still has every report when it looks.
        PROBE.attach_from_environ(buffered=True)
        if scenario is None:
            scenario = load_scenario(args.scenario)
    except (ScenarioError, ProbeError) as exc:
        _error(str(exc))
        return EXIT_CODES["usage"]
    try:
        return _run_session(args, scenario)
    finally:
        PROBE.flush()


def _run_session(args: argparse.Namespace, scenario: Scenario) -> int:
    say = (lambda _text: None) if args.quiet else _say
    runner = SessionRunner(
        scenario,
        args.session_dir,
        resume=args.resume,
        ledger_path=args.ledger,
        policy=args.policy,
        backend=args.backend,
        session_id=args.session_id,
        repair_only=args.repair_only,
        say=say,
    )
    try:
        return asyncio.run(_run(runner, say))
    except SessionCorruptError as exc:
        _error(str(exc))
        return EXIT_CODES["corrupt"]
    except SessionLockedError as exc:
        _error(str(exc))
        return EXIT_CODES["locked"]
    except (SessionExistsError, SessionMissingError) as exc:
        _error(str(exc))
        return EXIT_CODES["usage"]
    except FlushError as exc:
        _error(f"stopped fail-closed: {exc}")
        return EXIT_CODES["persistence"]
    except OSError as exc:
        _error(f"{exc.filename or ''}: {exc.strerror or exc}")
        return EXIT_CODES["persistence"]
    except Exception:
        traceback.print_exc()
        return EXIT_CODES["internal"]


if __name__ == "__main__":
    sys.exit(main())
