// Tool dispatch for one step: calls run in groups (a run of parallel-safe
// calls shares a pool of `max_parallel_tools`, any other call runs alone);
// each admitted call's tool/call is logged and checkpointed before its body
// starts; bodies sleep, make nested calls and apply their effect; top-level
// results are logged in model order as soon as every earlier one is in.
//
// Bodies are tasks of a small scheduler on the main thread, like futures on
// an async runtime: a body's latency is a timer, its effect goes through the
// I/O pool.  Timers fire in the order of a virtual clock (the deadline they
// were given from the moment that started them), so the order of events is
// the same in every run, however loaded the machine: the crash lab compares
// each crash run with a fault-free one and calls any difference DRIFT.

use crate::agent::{int, Checkpoint, Runtime};
use crate::json::{obj, s, Value};
use crate::sys::stopping;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Outcome {
    pub content: String,
    pub is_error: bool,
    pub code: Option<&'static str>,
    pub cite: u64,
}

#[derive(Clone, Copy)]
enum Phase {
    Start,
    Nested(usize),
    Effect,
    Done,
}

struct Task {
    id: String,
    name: String,
    arguments: Value,
    parent: Option<usize>,
    top: Option<usize>,
    seq: u64,
    phase: Phase,
}

struct Dispatch<'r> {
    rt: &'r mut Runtime,
    turn: i64,
    step: i64,
    answer: u64,
    calls: Vec<(String, String, Value)>,
    results: Vec<Option<Outcome>>,
    recorded: usize,
    failure: Option<String>,
    tasks: Vec<Task>,
    timers: BinaryHeap<Reverse<(u64, u64, usize)>>,
    timer_count: u64,
    clock: u64, // virtual microseconds since the group started
    started: Instant,
    running: usize,
}

fn not_started(code: &'static str, text: String, cite: u64) -> Outcome {
    Outcome { content: text, is_error: true, code: Some(code), cite }
}

impl Runtime {
    /// Runs the calls of one assistant message; Some(error) when a tool
    /// checkpoint failed (every call is answered either way).
    pub fn dispatch(&mut self, turn: i64, step: i64, answer: u64, calls: &[(String, String, Value)]) -> Option<String> {
        let parallel: Vec<bool> = calls.iter()
            .map(|(_, name, _)| self.scenario.tool(name).map_or(false, |t| t.parallel_safe))
            .collect();
        let mut d = Dispatch {
            rt: self, turn, step, answer, calls: calls.to_vec(), results: vec![None; calls.len()], recorded: 0,
            failure: None, tasks: Vec::new(), timers: BinaryHeap::new(), timer_count: 0, clock: 0,
            started: Instant::now(), running: 0,
        };
        let mut index = 0;
        while index < calls.len() {
            let mut end = index + 1;
            if parallel[index] {
                while end < calls.len() && parallel[end] {
                    end += 1;
                }
            }
            let limit = if parallel[index] { d.rt.scenario.max_parallel } else { 1 };
            d.run_group((index..end).collect(), limit);
            index = end;
        }
        d.record_ready();
        d.failure
    }
}

impl<'r> Dispatch<'r> {
    fn at(&self) -> Vec<(&'static str, Value)> {
        vec![("turn", int(self.turn)), ("step", int(self.step))]
    }

    fn run_group(&mut self, group: Vec<usize>, limit: usize) {
        let mut pending: VecDeque<usize> = group.into_iter().collect();
        self.started = Instant::now();
        self.clock = 0;
        loop {
            let mut admitted: Vec<(usize, u64)> = Vec::new();
            while self.running + admitted.len() < limit {
                let index = match pending.pop_front() {
                    Some(index) => index,
                    None => break,
                };
                let (id, name, arguments) = self.calls[index].clone();
                if let Some(reason) = &self.failure {
                    let text = format!("Tool call {} ({}) was not started: the turn stopped before it was dispatched because the session could not be saved ({}). It had no effect.", name, id, reason);
                    self.results[index] = Some(not_started("ABORTED_BEFORE_DISPATCH", text, self.answer));
                    continue;
                }
                if stopping() {
                    self.results[index] = Some(self.aborted(index, self.answer));
                    continue;
                }
                let mut data = obj(self.at());
                data.set("callId", s(&id));
                data.set("name", s(&name));
                data.set("arguments", arguments);
                let seq = self.rt.session.append("tool/call", data);
                self.rt.reach("tool/logged", vec![("callId", s(&id)), ("seq", int(seq as i64)), ("parentCallId", Value::Null)]);
                admitted.push((index, seq));
            }
            if !admitted.is_empty() {
                // The tool checkpoint, shared by the calls admitted together.
                match self.rt.checkpoint(Checkpoint::Tool) {
                    Err(reason) => {
                        for (index, seq) in admitted {
                            let (id, name, _) = &self.calls[index];
                            let text = format!("Tool call {} ({}) was not started: the session could not be saved before running it ({}). It had no effect.", name, id, reason);
                            self.results[index] = Some(not_started("CHECKPOINT_FAILED", text, seq));
                        }
                        self.failure = Some(reason);
                    }
                    Ok(()) => {
                        for (index, seq) in admitted {
                            if stopping() {
                                // Cancelled while the checkpoint was pending.
                                self.results[index] = Some(self.aborted(index, seq));
                                continue;
                            }
                            let (id, name, arguments) = self.calls[index].clone();
                            self.rt.reach("tool/durable", vec![("callId", s(&id)), ("seq", int(seq as i64)), ("parentCallId", Value::Null)]);
                            let task = self.spawn(id, name, arguments, None, Some(index), seq);
                            self.running += 1;
                            self.advance(task);
                        }
                    }
                }
            }
            self.record_ready();
            if self.running == 0 {
                if pending.is_empty() {
                    return;
                }
                continue;
            }
            let Reverse((deadline, _, task)) = self.timers.pop().expect("a running body waits on a timer");
            let due = self.started + Duration::from_micros(deadline);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            self.clock = deadline;
            self.advance(task);
        }
    }

    fn aborted(&self, index: usize, cite: u64) -> Outcome {
        let (id, name, _) = &self.calls[index];
        let text = format!("Tool call {} ({}) was not started: the turn was cancelled before it was dispatched. It had no effect.", name, id);
        not_started("ABORTED_BEFORE_DISPATCH", text, cite)
    }

    fn spawn(&mut self, id: String, name: String, arguments: Value, parent: Option<usize>, top: Option<usize>, seq: u64) -> usize {
        self.tasks.push(Task { id, name, arguments, parent, top, seq, phase: Phase::Start });
        self.tasks.len() - 1
    }

    /// Runs a body until it waits (on a timer or a nested call) or ends.
    fn advance(&mut self, task: usize) {
        loop {
            let (latency, nested, ledger) = match self.rt.scenario.tool(&self.tasks[task].name) {
                Some(tool) => (tool.latency_ms, tool.calls.clone(), tool.ledger),
                None => (0, Vec::new(), false),
            };
            match self.tasks[task].phase {
                Phase::Start => {
                    self.tasks[task].phase = Phase::Nested(0);
                    if latency > 0 {
                        self.timer_count += 1;
                        self.timers.push(Reverse((self.clock + latency * 1000, self.timer_count, task)));
                        return;
                    }
                }
                Phase::Nested(i) => match nested.get(i) {
                    Some((name, arguments)) => {
                        self.tasks[task].phase = Phase::Nested(i + 1);
                        let parent = self.tasks[task].id.clone();
                        let id = format!("{}.{}", parent, i);
                        let mut data = obj(self.at());
                        data.set("callId", s(&id));
                        data.set("name", s(name));
                        data.set("arguments", arguments.clone());
                        data.set("parentCallId", s(&parent));
                        let seq = self.rt.session.append("tool/call", data);
                        // Nested calls have no checkpoint of their own: the
                        // parent's covers them.
                        let facts = || vec![("callId", s(&id)), ("seq", int(seq as i64)), ("parentCallId", s(&parent))];
                        self.rt.reach("tool/logged", facts());
                        self.rt.reach("tool/durable", facts());
                        let child = self.spawn(id.clone(), name.clone(), arguments.clone(), Some(task), None, seq);
                        self.advance(child); // its end resumes this body
                        return;
                    }
                    None => self.tasks[task].phase = Phase::Effect,
                },
                Phase::Effect => {
                    self.tasks[task].phase = Phase::Done;
                    if ledger {
                        self.effect(task);
                    }
                }
                Phase::Done => {
                    self.finish(task);
                    return;
                }
            }
        }
    }

    fn effect(&mut self, task: usize) {
        let (id, name, arguments) = (self.tasks[task].id.clone(), self.tasks[task].name.clone(), self.tasks[task].arguments.clone());
        let keyed = self.rt.scenario.tool(&name).map_or(false, |t| t.accepts_key);
        let key = if keyed { Some(id.as_str()) } else { None };
        let applied = match self.rt.ledger.apply(&id, &name, &arguments, key) {
            Ok(applied) => applied,
            Err(e) => {
                eprintln!("rust-runtime: error: the world ledger: {}", e);
                crate::finish(6);
            }
        };
        let parent = self.parent_id(task);
        self.rt.reach("tool/effect", vec![("callId", s(&id)), ("tool", s(&name)), ("applied", Value::Bool(applied)), ("parentCallId", parent)]);
    }

    fn parent_id(&self, task: usize) -> Value {
        match self.tasks[task].parent {
            Some(p) => s(&self.tasks[p].id),
            None => Value::Null,
        }
    }

    fn finish(&mut self, task: usize) {
        let outcome = {
            let t = &self.tasks[task];
            let tool = self.rt.scenario.tool(&t.name);
            match tool {
                None => not_started("TOOL_FAILED", format!("Tool '{}' does not exist.", t.name), t.seq),
                Some(tool) => {
                    let mut content = tool.result.clone();
                    if let Some(observed) = &tool.observes {
                        content = format!("{}: {} {} effect(s) applied", content, self.rt.ledger.count(observed), observed);
                    }
                    let code = if tool.fails { Some("TOOL_FAILED") } else { None };
                    Outcome { content, is_error: tool.fails, code, cite: t.seq }
                }
            }
        };
        let id = self.tasks[task].id.clone();
        let parent = self.parent_id(task);
        self.rt.reach("tool/returned", vec![("callId", s(&id)), ("parentCallId", parent.clone()), ("isError", Value::Bool(outcome.is_error))]);
        match (self.tasks[task].parent, self.tasks[task].top) {
            (Some(p), _) => {
                let mut data = self.result_data(&id, &outcome);
                data.set("parentCallId", parent);
                self.rt.session.append("tool/result", data);
                self.advance(p);
            }
            (None, Some(index)) => {
                self.results[index] = Some(outcome);
                self.running -= 1;
            }
            (None, None) => {}
        }
    }

    fn result_data(&self, id: &str, outcome: &Outcome) -> Value {
        let mut data = obj(self.at());
        data.set("callId", s(id));
        data.set("content", s(&outcome.content));
        data.set("isError", Value::Bool(outcome.is_error));
        if let Some(code) = outcome.code {
            data.set("error", obj(vec![("code", s(code)), ("message", s(&outcome.content))]));
        }
        data.set("sourceEventSeqs", Value::Arr(vec![int(outcome.cite as i64)]));
        data
    }

    /// Logs the top-level results that are in, in model order.
    fn record_ready(&mut self) {
        while self.recorded < self.results.len() {
            let outcome = match &self.results[self.recorded] {
                Some(outcome) => outcome.clone(),
                None => return,
            };
            let id = self.calls[self.recorded].0.clone();
            let data = self.result_data(&id, &outcome);
            self.rt.session.append("tool/result", data);
            self.recorded += 1;
        }
    }
}
