// The agent loop: a turn is steps; a step logs its request, checkpoints it,
// streams the scripted model, records the answer, dispatches its tool calls
// and checkpoints the step.  Semantic checkpoints (docs/log-format.md 6.2):
// before the model is called, before a tool body runs, after each step, at
// the turn's end.  A failed checkpoint stops the turn (fail-closed); SIGTERM
// stops it at the next safe point with its real closing events.

use crate::bugs::Bugs;
use crate::json::{obj, s, Value};
use crate::probe::Probe;
use crate::scenario::{chunks, Scenario};
use crate::script::{choose, digest, history, next_turn_number, Cursor};
use crate::session::{Ledger, Session};
use crate::sys::stopping;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub enum End {
    Completed,
    Cancelled,
    Failed(String),
}

#[derive(Clone, Copy, PartialEq)]
pub enum Checkpoint {
    Request,
    Tool,
    PostStep,
    TurnEnd,
}

pub struct Runtime {
    pub scenario: Scenario,
    pub session: Session,
    pub probe: Arc<Probe>,
    pub ledger: Ledger,
    pub policy: String,
    pub bugs: Bugs,
    pub resumed: bool,
}

pub fn int(n: i64) -> Value {
    Value::Int(n)
}

/// Sleeps `ms`, waking early when a stop is requested.
fn pause(ms: u64) {
    let until = Instant::now() + Duration::from_millis(ms);
    while !stopping() {
        let now = Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(5)));
    }
}

impl Runtime {
    pub fn reach(&self, name: &str, facts: Vec<(&str, Value)>) {
        self.probe.reach(name, facts);
    }

    pub fn checkpoint(&mut self, which: Checkpoint) -> Result<(), String> {
        if self.policy == "turn-only" && which != Checkpoint::TurnEnd {
            return Ok(());
        }
        let skipped = match which {
            Checkpoint::Request => self.bugs.resume_skips_checkpoints && self.resumed,
            Checkpoint::Tool => self.bugs.no_tool_checkpoint || (self.bugs.resume_skips_checkpoints && self.resumed),
            _ => false,
        };
        if skipped {
            return Ok(());
        }
        let flushed = self.session.flush();
        if flushed.is_err() && which == Checkpoint::Request && self.bugs.ignores_failed_flush {
            return Ok(());
        }
        flushed
    }

    pub fn run_turn(&mut self, cursor: &Cursor) -> End {
        let turn = next_turn_number(&self.session.events);
        self.session.append("turn/start", obj(vec![
            ("turn", int(turn)), ("scriptTurn", int(cursor.script_turn as i64)), ("scriptStep", int(cursor.script_step as i64)),
        ]));
        self.session.append("user/message", obj(vec![("turn", int(turn)), ("message", s(&cursor.user))]));
        self.reach("turn/started", vec![("turn", int(turn))]);
        let mut step: i64 = 0;
        let mut script_step = cursor.script_step;
        let end = loop {
            if stopping() {
                break End::Cancelled;
            }
            match self.run_step(turn, step, cursor.script_turn, script_step) {
                Some(end) => break end,
                None => {
                    step += 1;
                    script_step += 1;
                }
            }
        };
        let (kind, reason) = match &end {
            End::Completed => ("completed", obj(vec![("kind", s("completed"))])),
            End::Cancelled => ("cancelled", obj(vec![("kind", s("cancelled"))])),
            End::Failed(e) => ("error", obj(vec![("kind", s("error")), ("message", s(e))])),
        };
        self.session.append("turn/end", obj(vec![("turn", int(turn)), ("reason", reason)]));
        self.reach("turn/logged", vec![("turn", int(turn)), ("reason", s(kind))]);
        match self.checkpoint(Checkpoint::TurnEnd) {
            Ok(()) => {
                self.reach("turn/durable", vec![("turn", int(turn))]);
                end
            }
            Err(e) => match end {
                End::Failed(first) => End::Failed(first),
                _ => End::Failed(e),
            },
        }
    }

    /// One step; Some(end) when the turn ends with it.
    fn run_step(&mut self, turn: i64, step: i64, script_turn: usize, script_step: usize) -> Option<End> {
        let at = vec![("turn", int(turn)), ("step", int(step))];
        let scripted = match self.scenario.turns.get(script_turn).and_then(|t| t.steps.get(script_step)) {
            Some(_) => (script_turn, script_step),
            None => return Some(End::Completed), // the script has no such step
        };
        self.session.append("step/start", obj(at.clone()));
        let messages = history(&self.session.events);
        let sent = digest(&messages);
        let request_id = format!("req-t{}-s{}", turn, step);
        let tools: Vec<Value> = self.scenario.tools.iter().map(|t| s(&t.name)).collect();
        let envelope = obj(vec![
            ("model", s("faultlab-scripted-rust")),
            ("params", obj(vec![("scriptTurn", int(scripted.0 as i64)), ("scriptStep", int(scripted.1 as i64))])),
            ("tools", Value::Arr(tools)),
            ("messageCount", int(messages.len() as i64)),
            ("digest", s(&sent)),
        ]);
        let mut header = obj(at.clone());
        header.set("requestId", s(&request_id));
        header.set("envelope", envelope);
        let seq = self.session.append("request/header", header);
        self.reach("request/logged", vec![("requestId", s(&request_id)), ("seq", int(seq as i64)), ("digest", s(&sent))]);
        if let Err(e) = self.checkpoint(Checkpoint::Request) {
            self.session.append("step/end", obj(at));
            return Some(End::Failed(e));
        }
        self.reach("request/durable", vec![
            ("requestId", s(&request_id)), ("digest", s(&sent)), ("messageCount", int(messages.len() as i64)),
        ]);
        // The scripted model answers from the history it was sent.
        let step_script = &self.scenario.turns[scripted.0].steps[scripted.1];
        let content = choose(step_script, &messages);
        let pieces = chunks(content);
        let text = content.text.clone();
        let requested: Vec<(String, Value)> = content.tool_calls.clone();
        let (delay, chunk_delay) = (step_script.delay_ms, step_script.chunk_delay_ms);
        pause(delay);
        if stopping() {
            self.session.append("step/end", obj(at));
            return Some(End::Cancelled);
        }
        for (index, delta) in pieces.iter().enumerate() {
            if index > 0 {
                pause(chunk_delay);
            }
            if stopping() {
                // Cancelled while streaming: the chunks so far, no answer.
                self.session.append("step/end", obj(at));
                return Some(End::Cancelled);
            }
            let mut data = obj(at.clone());
            data.set("index", int(index as i64));
            data.set("delta", s(delta));
            self.session.append("assistant/chunk", data);
            self.reach("model/chunk", vec![("requestId", s(&request_id)), ("index", int(index as i64))]);
        }
        let mut blocks = Vec::new();
        if !text.is_empty() {
            blocks.push(obj(vec![("type", s("text")), ("text", s(&text))]));
        }
        let mut calls: Vec<(String, String, Value)> = Vec::new();
        for (k, (name, arguments)) in requested.into_iter().enumerate() {
            let id = format!("call-t{}-s{}-{}", turn, step, k);
            blocks.push(obj(vec![("type", s("tool-call")), ("id", s(&id)), ("name", s(&name)), ("arguments", arguments.clone())]));
            calls.push((id, name, arguments));
        }
        let mut data = obj(at.clone());
        data.set("message", obj(vec![("role", s("assistant")), ("content", Value::Arr(blocks))]));
        let answer = self.session.append("assistant/message", data);
        let ids: Vec<Value> = calls.iter().map(|(id, _, _)| s(id)).collect();
        self.reach("assistant/recorded", vec![("requestId", s(&request_id)), ("seq", int(answer as i64)), ("callIds", Value::Arr(ids))]);
        let failure = if calls.is_empty() { None } else { self.dispatch(turn, step, answer, &calls) };
        self.session.append("step/end", obj(at.clone()));
        if let Some(e) = failure {
            return Some(End::Failed(e)); // no step/logged: a flush inside the step failed
        }
        self.reach("step/logged", at.clone());
        if let Err(e) = self.checkpoint(Checkpoint::PostStep) {
            return Some(End::Failed(e));
        }
        self.reach("step/durable", at);
        if calls.is_empty() {
            return Some(End::Completed);
        }
        None
    }

    /// Crash repair on load: appended and flushed as one batch, between the
    /// repair/logged and repair/durable boundaries.  Ok(count appended).
    pub fn repair(&mut self) -> Result<usize, String> {
        let plan = crate::repair::plan(&self.session.events, &self.scenario, self.bugs.repair_all_not_started);
        if plan.is_empty() {
            return Ok(0);
        }
        let first = self.session.next_seq() as i64;
        let count = plan.len();
        for (kind, data) in plan {
            self.session.append(&kind, data);
        }
        let facts = || vec![("first", int(first)), ("count", int(count as i64))];
        self.reach("repair/logged", facts());
        self.session.flush()?;
        self.reach("repair/durable", facts());
        Ok(count)
    }
}
