"""The runtime's stop signals: real signals sent to this process, a real loop."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from faultlab.runtime.stopsignals import stop_signals


async def _until_stopped(send: object) -> list[str]:
    loop = asyncio.get_running_loop()
    stopped: list[str] = []
    woken = asyncio.Event()

    def stop(name: str) -> None:
        stopped.append(name)
        woken.set()

    with stop_signals(loop, stop):
        assert callable(send)
        send()
        # A hang guard, not a timing assertion: the signal must wake the loop.
        await asyncio.wait_for(woken.wait(), 10)
    return stopped


def test_sigterm_to_the_process_calls_stop_with_its_name() -> None:
    assert asyncio.run(_until_stopped(lambda: os.kill(os.getpid(), signal.SIGTERM))) == ["SIGTERM"]


def test_a_signal_delivered_to_another_thread_still_wakes_the_loop() -> None:
    # The C-level wakeup fd, not the main thread's Python handler, wakes the
    # loop: a signal taken by a thread blocked elsewhere must not be missed.
    parked = threading.Event()
    release = threading.Event()

    def blocked() -> None:
        parked.set()
        release.wait(30)

    thread = threading.Thread(target=blocked)
    thread.start()
    parked.wait(10)
    try:
        assert thread.ident is not None
        ident = thread.ident
        stopped = asyncio.run(_until_stopped(lambda: signal.pthread_kill(ident, signal.SIGINT)))
    finally:
        release.set()
        thread.join(10)
    assert stopped == ["SIGINT"]


def test_handlers_and_wakeup_fd_are_put_back() -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    wakeup_fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup_fd)

    async def inside() -> None:
        with stop_signals(asyncio.get_running_loop(), lambda _name: None):
            assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]

    asyncio.run(inside())
    assert {signum: signal.getsignal(signum) for signum in before} == before
    assert signal.set_wakeup_fd(wakeup_fd) == wakeup_fd


def test_other_signal_numbers_on_the_wakeup_fd_are_ignored() -> None:
    calls: list[str] = []

    async def inside() -> None:
        with stop_signals(asyncio.get_running_loop(), calls.append):
            # SIGUSR1 keeps its own handler; its byte on the wakeup fd is not a stop.
            previous = signal.signal(signal.SIGUSR1, lambda *_: None)
            try:
                os.kill(os.getpid(), signal.SIGUSR1)
                for _ in range(5):
                    await asyncio.sleep(0.01)
            finally:
                signal.signal(signal.SIGUSR1, previous)

    asyncio.run(inside())
    assert calls == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_each_signal_received_is_one_stop(signum: signal.Signals) -> None:
    async def twice() -> list[str]:
        loop = asyncio.get_running_loop()
        stopped: list[str] = []
        done = asyncio.Event()

        def stop(name: str) -> None:
            stopped.append(name)
            if len(stopped) == 2:
                done.set()

        with stop_signals(loop, stop):
            os.kill(os.getpid(), signum)
            await asyncio.sleep(0.01)
            os.kill(os.getpid(), signum)
            await asyncio.wait_for(done.wait(), 10)
        return stopped

    assert asyncio.run(twice()) == [signum.name, signum.name]
