# The LangGraph reader on a database written by LangGraph's own saver: the
# root namespace is the thread; a subgraph's newer checkpoint (even a
# brand-new empty one) does not hide it, and what a subgraph in flight made
# durable counts.  And the turn-taking of parallel calls (CallOrder).
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from faultlab.lab.apps.callorder import CallOrder
from faultlab.lab.apps.lgstate import read_thread
from faultlab.lab.read.histories import Call

THREAD = "faultlab-case"
ASK = AIMessage("Charging.", tool_calls=[{"name": "charge_card", "args": {}, "id": "c1"}])


def _put(saver: SqliteSaver, ns: str, messages: list[object], step: int) -> None:
    checkpoint = empty_checkpoint()  # a fresh, time-ordered id
    checkpoint["channel_values"] = {"messages": messages}
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ns}}
    saver.put(config, checkpoint, {"step": step, "source": "loop"}, {})  # type: ignore[arg-type, typeddict-item]
    time.sleep(0.002)


def test_a_new_empty_subgraph_checkpoint_does_not_hide_the_root(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    _put(saver, "", [HumanMessage("charge"), ASK], 1)
    _put(saver, "agent:task-2", [], -1)  # the next subgraph run's input checkpoint
    thread = read_thread(db, THREAD)
    assert [c.id for c in thread.durable().calls()] == ["c1"]
    assert len(thread.chain) == 1  # the root's chain only


def test_what_a_subgraph_in_flight_made_durable_counts(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    _put(saver, "agent:old", [HumanMessage("old"), AIMessage("an earlier, finished run")], 0)
    _put(saver, "", [HumanMessage("charge")], 0)
    _put(saver, "agent:task-1", [HumanMessage("charge"), ASK], 1)
    thread = read_thread(db, THREAD)
    assert thread.history.user_texts() == ["charge"]
    assert [c.id for c in thread.durable().calls()] == ["c1"]
    # Each message once, and nothing of the finished subgraph.
    assert [m.text for m in thread.durable().messages] == ["charge", "Charging."]


def test_parallel_bodies_take_turns_in_call_order() -> None:
    order = CallOrder(timeout=10)
    order.expect([Call(c, "lookup") for c in ("a", "b", "c")])
    ran: list[str] = []

    def body(call: str) -> None:
        with order.turn(call):
            ran.append(call)

    threads = [threading.Thread(target=body, args=(c,)) for c in ("c", "b", "a")]
    for t in threads:
        t.start()
        time.sleep(0.01)  # started in reverse order
    for t in threads:
        t.join(10)
    assert ran == ["a", "b", "c"]


def test_a_call_left_out_delays_the_rest_only_until_the_timeout() -> None:
    late: list[str] = []
    order = CallOrder(timeout=0.05, late=late.append)
    order.expect([Call("a", "lookup"), Call("b", "lookup")])
    with order.turn("b"):  # "a" never runs
        pass
    assert late == ["b"]
    with pytest.raises(ValueError, match="timeout"):
        CallOrder(timeout=0)


def test_a_call_invoked_with_its_arguments_alone_is_identified() -> None:
    order = CallOrder()
    order.expect([Call("a", "lookup", {"order": 7}), Call("b", "lookup", {"order": 8}),
                  Call("c", "lookup", {"order": 8})])  # fmt: skip
    assert order.identify("lookup", {"order": 8}) == "b"
    with order.turn("b"):
        pass
    assert order.identify("lookup", {"order": 8}) == "c"  # b has run
    assert order.identify("charge", {"order": 8}) is None


def test_equal_messages_of_one_history_both_stay(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    said = [HumanMessage("hi"), AIMessage("Noted."), HumanMessage("hi"), AIMessage("Noted.")]
    _put(saver, "", said, 3)
    assert len(read_thread(db, THREAD).durable().messages) == 4
