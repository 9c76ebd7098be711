# The fuzzer: Hypothesis draws scenarios and applicable (kill point, fault)
# cases (`faultlab.strategies`), the lab runs each case, and a failing case is
# checked for determinism, then shrunk by Hypothesis to the smallest scenario
# and kill point that still fail.
#
# A campaign of E examples with seed S is split into streams of
# `stream_size` examples, stream i seeded from (S, i): the set of examples is
# the same whatever --jobs (streams run in parallel threads) and --shard K/N
# (shard K runs the streams i with i % N == K - 1), so the union of the shards
# is the unsharded campaign.  The first stream to find a failure shrinks it;
# the others stop at their next example (fail fast).  Failing examples are
# saved in a Hypothesis example database that the first stream of a later
# campaign replays first.
from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky

from faultlab.lab.campaigns.determinism import NONDETERMINISTIC, check_determinism
from faultlab.lab.campaigns.dryrun import DryRuns, GeneratedCase
from faultlab.lab.campaigns.explore import Shard, run_one, tidy_passed
from faultlab.lab.campaigns.targets import make_target
from faultlab.lab.errors import LabUsageError, check_jobs, check_timeout
from faultlab.lab.faults.fault import all_names
from faultlab.lab.faults.table import CLASSIC_FAULTS, classic_fault
from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import LabOptions
from faultlab.lab.process.spawn import allow_children, kill_all, stop_children
from faultlab.scenario import POLICIES

__all__ = [
    "SELFTEST_SEED",
    "Example",
    "Finding",
    "FuzzInterrupted",
    "FuzzProgress",
    "FuzzResult",
    "FuzzSettings",
    "fuzz",
    "fuzz_campaign",
    "selftest_campaign",
    "shard_streams",
    "streams",
]


@dataclass(frozen=True, slots=True)
class FuzzSettings:
    """What a campaign runs.  Build with keywords; every field is validated."""

    examples: int = 100
    seed: int = 0
    faults: tuple[str, ...] = ("sigkill",)
    jobs: int = 1
    shard: Shard | None = None
    check_determinism: bool = False
    stream_size: int = 50
    database: Path | None = None  # the example database directory (None: none)
    max_turns: int = 2
    max_tools: int = 3
    # The policies generated scenarios are drawn with (an explicit --policy
    # overrides every scenario's).
    policies: tuple[str, ...] = ("semantic",)
    # False: a failure is reported as first found (a CI gate that only needs
    # to know that something fails, not the smallest example of it).
    shrink: bool = True
    # Examples drawn on each generated scenario (fewer if it has fewer
    # cases): one fault-free dry run serves them all.
    per_scenario: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.shrink, bool):
            raise LabUsageError(f"shrink must be True or False, not {self.shrink!r}")
        if not isinstance(self.examples, int) or self.examples < 1:
            raise LabUsageError(f"examples must be at least 1, not {self.examples!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise LabUsageError(f"seed must be a non-negative integer, not {self.seed!r}")
        if not self.faults:
            raise LabUsageError("faults: name at least one fault")
        for name in self.faults:
            if classic_fault(name).by_running:
                raise LabUsageError(f"fault {name!r} cannot be fuzzed: its cases are planned "
                                    "by running the target, not drawn")  # fmt: skip
        check_jobs(self.jobs)
        if type(self.per_scenario) is not int or not 1 <= self.per_scenario <= 100:
            raise LabUsageError(f"per_scenario must be 1 to 100 examples, not "
                                f"{self.per_scenario!r}")  # fmt: skip
        if not isinstance(self.stream_size, int) or self.stream_size < 1:
            raise LabUsageError(f"stream_size must be at least 1, not {self.stream_size!r}")
        if not self.policies or any(p not in POLICIES for p in self.policies):
            raise LabUsageError(f"policies must name some of {', '.join(POLICIES)}, not "
                                f"{self.policies!r}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Example:
    """One generated example and its verdict (shrinking runs are not examples)."""

    stream: int
    index: int
    generated: GeneratedCase
    result: CaseResult


@dataclass(frozen=True, slots=True)
class Finding:
    """The smallest failing example a stream found (or its first failing
    example, when the target turned out nondeterministic and was not shrunk)."""

    stream: int
    generated: GeneratedCase
    result: CaseResult
    first: CaseResult  # the failing example as first found, before shrinking
    shrink_runs: int
    shrunk: bool

    @property
    def tool_calls(self) -> int:
        """Tool calls the scenario's script makes (steps and branches)."""
        steps = [s for t in self.generated.scenario.turns for s in t.steps]
        return sum(len(s.tool_calls) + sum(len(b.tool_calls) for b in s.branches) for s in steps)


@dataclass(frozen=True, slots=True)
class FuzzProgress:
    """What a progress display shows."""

    done: int
    total: int
    failing: int
    shrink_runs: int
    phase: str  # "generating" | "shrinking" | "done"


@dataclass(frozen=True, slots=True)
class FuzzResult:
    examples: tuple[Example, ...]
    findings: tuple[Finding, ...]
    seconds: float
    settings: FuzzSettings
    streams: tuple[int, ...]
    complete: bool = True  # False: interrupted; `examples` are those run by then

    @property
    def passed(self) -> bool:
        return bool(self.examples) and not self.findings


class FuzzInterrupted(KeyboardInterrupt):
    """A campaign stopped by SIGINT or SIGTERM: `partial` holds the examples
    run and the findings made by then (marked incomplete)."""

    def __init__(self, partial: FuzzResult) -> None:
        super().__init__("interrupted")
        self.partial = partial


def streams(examples: int, stream_size: int) -> list[tuple[int, int]]:
    """(stream index, example count) of a campaign, in order."""
    count = math.ceil(examples / stream_size)
    return [(i, min(stream_size, examples - i * stream_size)) for i in range(count)]


def stream_seed(campaign_seed: int, stream: int) -> int:
    digest = hashlib.sha256(f"faultlab-fuzz:{campaign_seed}:{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class _Stopped(BaseException):
    """Another stream found a failure: end this stream without shrinking.  A
    BaseException, so Hypothesis does not take it for a failure of the test."""


class _Nondeterministic(BaseException):
    """The failing example did not reproduce: do not let Hypothesis shrink it."""


class CaseFailed(AssertionError):
    def __init__(self, result: CaseResult) -> None:
        super().__init__(f"{result.case.id}: {', '.join(result.codes) or result.verdict}")
        self.result = result


@dataclass
class _Campaign:
    """Shared state of the streams of one campaign."""

    total: int
    progress: Callable[[FuzzProgress], None] | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    shrink_runs: int = 0
    owner: int | None = None  # the stream that found the first failure
    interrupted: bool = False
    examples: list[Example] = field(default_factory=list)

    def report(self, phase: str) -> None:
        if self.progress is not None:
            failing = 0 if self.owner is None else 1
            self.progress(FuzzProgress(self.done, self.total, failing, self.shrink_runs, phase))

    def claim(self, stream: int) -> bool:
        """Is `stream` the one that shrinks?  The first to fail claims it."""
        with self.lock:
            if self.owner is None:
                self.owner = stream
            return self.owner == stream

    def stopped(self, stream: int) -> bool:
        return self.interrupted or (self.owner is not None and self.owner != stream)


def _database_key(options: LabOptions, fuzz_settings: FuzzSettings) -> bytes:
    target = options.target
    what = [
        "faultlab-fuzz-v1", target.policy or "", " ".join(target.command) if not target.reference
        else "reference", ",".join(fuzz_settings.faults), str(fuzz_settings.max_turns),
        str(fuzz_settings.max_tools), ",".join(fuzz_settings.policies),
    ]  # fmt: skip
    return hashlib.sha256("\0".join(what).encode()).hexdigest().encode()


def _run_stream(
    stream: int, count: int, first: bool, campaign: _Campaign, options: LabOptions,
    runs: DryRuns, fuzz_settings: FuzzSettings,
) -> Finding | None:  # fmt: skip
    from faultlab.lab.campaigns import strategies
    from faultlab.lab.campaigns.shapes import batches_on

    stream_options = dataclasses.replace(options, workdir=options.workdir / f"stream-{stream}")
    scenarios = strategies.scenarios(max_turns=fuzz_settings.max_turns,
                                     max_tools=fuzz_settings.max_tools,
                                     policies=fuzz_settings.policies)  # fmt: skip
    strategy = batches_on(runs, scenarios, fuzz_settings.faults, fuzz_settings.per_scenario)
    index = 0
    found: list[tuple[GeneratedCase, CaseResult]] = []  # failing runs, the last is the smallest
    first_failure: list[CaseResult] = []
    shrink_runs = 0
    nondeterministic: list[Violation] = []

    def check(generated: GeneratedCase, result: CaseResult) -> Violation | None:
        return check_determinism(
            generated.case, generated.reference, result, stream_options,
            workdir=options.workdir / f"stream-{stream}-again",
        )  # fmt: skip

    def body(batch: tuple[GeneratedCase, ...]) -> None:
        for generated in batch:  # each case an example; the stream ends at `count`
            one(generated)

    def one(generated: GeneratedCase) -> None:
        nonlocal index, shrink_runs
        if campaign.stopped(stream) or (index >= count and not first_failure):
            raise _Stopped
        result = run_one(generated.case, generated.reference, stream_options)
        if campaign.interrupted:  # its children were killed under it: not a verdict
            raise _Stopped
        shrinking = bool(first_failure)
        if not shrinking:
            violation = None
            if fuzz_settings.check_determinism or not result.passed:
                violation = check(generated, result)
            if violation is not None:
                result = dataclasses.replace(
                    result, verdict="fail", violations=(*result.violations, violation)
                )
            if result.passed:  # only failures' artifacts are reported: keep scratch small
                tidy_passed(result, stream_options.workdir)
            with campaign.lock:
                campaign.done += 1
                campaign.examples.append(Example(stream, index, generated, result))
            index += 1
            if not result.passed and not campaign.claim(stream):
                raise _Stopped
            campaign.report("generating")
            if violation is not None:
                first_failure.append(result)
                found.append((generated, result))
                nondeterministic.append(violation)
                raise _Nondeterministic
            if not result.passed:
                first_failure.append(result)
        else:
            shrink_runs += 1
            with campaign.lock:
                campaign.shrink_runs += 1
            campaign.report("shrinking")
        if not result.passed:
            found.append((generated, result))
            raise CaseFailed(result)

    phases = [Phase.explicit, Phase.generate, Phase.target]
    if fuzz_settings.shrink:
        phases.append(Phase.shrink)
    if first and fuzz_settings.database is not None:
        phases.insert(1, Phase.reuse)
    database = (
        DirectoryBasedExampleDatabase(str(fuzz_settings.database))
        if fuzz_settings.database is not None
        else None
    )
    test = settings(
        max_examples=count, deadline=None, database=database, derandomize=False,
        suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
        report_multiple_bugs=False, print_blob=False, phases=phases,
    )(seed(stream_seed(fuzz_settings.seed, stream))(given(strategy)(body)))  # fmt: skip
    test._hypothesis_internal_database_key = _database_key(options, fuzz_settings)  # type: ignore[attr-defined]
    shrunk = fuzz_settings.shrink
    try:
        test()
    except _Stopped:
        return None
    except _Nondeterministic:
        shrunk = False
    except CaseFailed:
        pass
    except Flaky as flaky:
        if not found:
            raise
        message = f"the failure did not reproduce while shrinking: {flaky}".splitlines()[0]
        nondeterministic.append(Violation(NONDETERMINISTIC, message))
        shrunk = False
    if not found:
        return None
    generated, result = found[-1]
    if nondeterministic and NONDETERMINISTIC not in result.codes:
        result = dataclasses.replace(
            result, verdict="fail", violations=(*result.violations, nondeterministic[0])
        )
    return Finding(stream, generated, result, first_failure[0], shrink_runs, shrunk)


def fuzz(
    options: LabOptions, fuzz_settings: FuzzSettings, *,
    progress: Callable[[FuzzProgress], None] | None = None,
) -> FuzzResult:  # fmt: skip
    """Run a campaign (or its shard) on `options.target`."""
    # A dry run is traced only for a drawn case judged on its system calls
    # (power-loss, torn-write: shapes.cases_on asks for that run again,
    # traced); the other examples do not pay for strace.
    options = dataclasses.replace(options.for_jobs(fuzz_settings.jobs), trace=False)
    started = time.monotonic()
    planned = shard_streams(fuzz_settings.examples, fuzz_settings.stream_size, fuzz_settings.shard)
    campaign = _Campaign(sum(count for _, count in planned), progress)
    runs = DryRuns(dataclasses.replace(options, workdir=options.workdir / "dry"))
    executor = ThreadPoolExecutor(fuzz_settings.jobs, thread_name_prefix="faultlab-fuzz")
    futures: list[Future[Finding | None]] = []
    try:
        futures = [
            executor.submit(_run_stream, i, count, n == 0, campaign, options, runs, fuzz_settings)
            for n, (i, count) in enumerate(planned)
        ]
        findings = [f for f in (future.result() for future in futures) if f is not None]
    except KeyboardInterrupt as stop:
        campaign.interrupted = True  # running streams stop at their next example
        executor.shutdown(wait=False, cancel_futures=True)
        stop_children()
        try:
            executor.shutdown(wait=True)  # they end at once: no child may start now
        finally:
            allow_children()
        done = [f.result() for f in futures if not f.cancelled() and f.exception() is None]
        partial = FuzzResult(
            tuple(sorted(campaign.examples, key=lambda e: (e.stream, e.index))),
            tuple(f for f in done if f is not None), time.monotonic() - started,
            fuzz_settings, tuple(i for i, _ in planned), complete=False,
        )  # fmt: skip
        raise FuzzInterrupted(partial) from stop
    except BaseException:
        campaign.interrupted = True
        executor.shutdown(wait=False, cancel_futures=True)
        kill_all()
        raise
    executor.shutdown(wait=True)
    campaign.report("done")
    examples = sorted(campaign.examples, key=lambda e: (e.stream, e.index))
    return FuzzResult(
        tuple(examples), tuple(findings), time.monotonic() - started, fuzz_settings,
        tuple(i for i, _ in planned),
    )  # fmt: skip


def shard_streams(examples: int, stream_size: int, shard: Shard | None) -> list[tuple[int, int]]:
    """The streams shard `shard` runs (all of them without a shard)."""
    planned = streams(examples, stream_size)
    if shard is None:
        return planned
    return [(i, count) for i, count in planned if i % shard.count == shard.index - 1]


def fuzz_campaign(
    *, policy: str | None = None, target: Sequence[str] | str | None = None,
    examples: int = 100, seed: int = 0, faults: Sequence[str] = ("sigkill",), jobs: int = 1,
    shard: Shard | None = None, check_determinism: bool = False, timeout: float = 60.0,
    workdir: Path, database: Path | None = None, spawn: str = "fork", stream_size: int = 50,
    progress: Callable[[FuzzProgress], None] | None = None,
    policies: Sequence[str] = ("semantic",), shrink: bool = True,
) -> FuzzResult:  # fmt: skip
    """A fuzz campaign on the reference runtime (or `target`), as `faultlab fuzz` runs it
    (`policies`: what generated scenarios are drawn with)."""
    timeout = check_timeout(timeout)
    fuzz_settings = FuzzSettings(
        examples=examples, seed=seed, faults=tuple(faults), jobs=jobs, shard=shard,
        check_determinism=check_determinism, stream_size=stream_size, database=database,
        policies=tuple(policies), shrink=shrink,
    )  # fmt: skip
    options = LabOptions(make_target(policy=policy, target=target), workdir, timeout, spawn)
    return fuzz(options, fuzz_settings, progress=progress)


# The seed of selftest campaigns: fixed, so that `faultlab selftest` judges the
# same examples on every run (a false alarm it finds can be replayed).
SELFTEST_SEED = 20261130


def selftest_campaign(
    *, target: Sequence[str] | None, examples: int, timeout: float, workdir: Path, jobs: int,
    policies: Sequence[str] = ("semantic",), shrink: bool = True,
) -> list[CaseResult]:  # fmt: skip
    """The fuzz stage of `faultlab selftest` (faultlab/lab/campaigns/selftest.py): a
    campaign of `examples` generated cases under every fault, seeded with
    SELFTEST_SEED, on `target` (None: the reference runtime); the verdict of
    every example (a failure is shrunk first: the smallest one is the finding)."""

    # `policies`: what each example's policy is drawn from (the selftest's
    # full reference campaign: every policy that promises every guarantee;
    # turn-only's known failures would be shrunk and reported as findings, so
    # the explore stage judges turn-only instead).
    result = fuzz_campaign(
        target=target, examples=examples, seed=SELFTEST_SEED,
        faults=all_names(CLASSIC_FAULTS, by_running=False), jobs=jobs, timeout=timeout,
        workdir=workdir, policies=policies, shrink=shrink,
    )  # fmt: skip
    return [example.result for example in result.examples] + [
        finding.result for finding in result.findings
    ]
