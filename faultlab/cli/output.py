# How every command ends: people's output on stderr, `--json` output on
# stdout, and one exit code.  `guarded` turns a user's mistake into one line
# and exit 2, and a bug into a traceback and exit 3; `FaultlabGroup` does the
# same for click's own usage errors.  The command modules all import this one,
# and it imports none of them.
from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any, NoReturn, TypeVar

import click
import orjson

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_VIOLATIONS",
    "FaultlabGroup",
    "UserError",
    "emit_json",
    "guarded",
    "held_signals",
    "say",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_VIOLATIONS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class UserError(Exception):
    """A mistake of the user's: one line, exit 2."""


def say(text: str = "", *, color: bool | None = None) -> None:
    """A line on stderr; `color=True` keeps ANSI styles off a terminal too
    (`--color always`), None lets click strip them there."""
    click.echo(text, err=True, color=color)


def emit_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def guarded(command: F) -> F:
    """Turn user mistakes into one line + exit 2 and bugs into exit 3."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> NoReturn:
        from faultlab import lab
        from faultlab.probe import ProbeError
        from faultlab.scenario import ScenarioError
        from faultlab.userfiles import UserFileError

        # SIGTERM always stops the lab, whatever the parent left blocked or
        # ignored; SIGINT keeps the disposition it was started with (a
        # background job of a non-interactive shell ignores it: docs/cli.md).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            _check_environment()
            code = command(*args, **kwargs)
        except (UserError, ScenarioError, ProbeError, lab.LabUsageError, UserFileError) as exc:
            say(f"faultlab: error: {exc}")
            code = EXIT_USAGE
        except KeyboardInterrupt:
            say("faultlab: interrupted; every child process was killed")
            code = EXIT_INTERRUPTED
        except Exception:
            say("faultlab: internal error (a bug in faultlab, please report it):")
            say(traceback.format_exc().rstrip())
            code = EXIT_INTERNAL
        finally:
            signal.signal(signal.SIGTERM, previous)
        sys.exit(code)

    return wrapper  # type: ignore[return-value]


def _check_environment() -> None:
    """What every command needs of its environment, said in one line (exit 2)
    before anything runs: arguments in UTF-8, and a working directory that
    still exists (relative paths, the default report folder, need it)."""
    from faultlab.userfiles import check_utf8

    for number, argument in enumerate(sys.argv[1:], start=1):
        check_utf8(argument, what=f"argument {number}")
    try:
        os.getcwd()
    except OSError as exc:
        raise UserError(f"the working directory is gone ({exc.strerror}): cd to a directory "
                        "that exists and run faultlab again") from None


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM ignored for a moment: while an interrupted run's
    report is written (a second ^C would leave half a report; SIGKILL still
    works)."""
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class FaultlabGroup(click.Group):
    """Usage errors as one line (`faultlab: error: ...`) and exit 2; bare
    `faultlab` prints its help and exits 0."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:
            # Bare `faultlab`: its help is what was asked for, not a mistake.
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            sys.exit(EXIT_OK)
        except click.UsageError as exc:
            where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
            say(f"faultlab: error: {where}{exc.format_message()}")
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            say(f"faultlab: error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        except click.Abort:
            say("faultlab: interrupted")
            sys.exit(EXIT_INTERRUPTED)
