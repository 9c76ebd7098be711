// What the model sees and says: the model-visible history derived from the
// log (docs/log-format.md section 10) and its digest; the scripted model's
// choice of a step's content or branch; and where a reloaded session goes on
// in its script.

use crate::json::{obj, s, Value};
use crate::scenario::{Content, Scenario, Step};
use crate::store::Event;

pub fn history(events: &[Event]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    for event in events {
        match event.kind.as_str() {
            "user/message" => {
                let text = event.data.get("message").cloned().unwrap_or(Value::Null);
                messages.push(obj(vec![
                    ("role", s("user")),
                    ("content", Value::Arr(vec![obj(vec![("type", s("text")), ("text", text)])])),
                ]));
            }
            "assistant/message" => messages.push(event.data.get("message").cloned().unwrap_or(Value::Null)),
            "tool/result" if event.data.get("parentCallId").is_none() => {
                let field = |k: &str| event.data.get(k).cloned().unwrap_or(Value::Null);
                let mut block = obj(vec![
                    ("type", s("tool-result")), ("callId", field("callId")), ("content", field("content")),
                    ("isError", field("isError")),
                ]);
                if let Some(error) = event.data.get("error") {
                    block.set("error", error.clone());
                }
                let joins = matches!(messages.last(), Some(m) if m.str_of("role") == Some("tool"));
                if joins {
                    if let Some(Value::Obj(fields)) = messages.last_mut() {
                        if let Some((_, Value::Arr(blocks))) = fields.iter_mut().find(|(k, _)| k == "content") {
                            blocks.push(block);
                        }
                    }
                } else {
                    messages.push(obj(vec![("role", s("tool")), ("content", Value::Arr(vec![block]))]));
                }
            }
            _ => {}
        }
    }
    messages
}

pub fn digest(messages: &[Value]) -> String {
    crate::sha256::hex_digest(Value::Arr(messages.to_vec()).canonical().as_bytes())
}

/// The (id, name) of every tool-call block of an assistant message.
pub fn calls_of(message: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(blocks) = message.get("content").and_then(|c| c.as_arr()) {
        for block in blocks {
            if block.str_of("type") == Some("tool-call") {
                let id = block.str_of("id").unwrap_or("").to_string();
                out.push((id, block.str_of("name").unwrap_or("").to_string()));
            }
        }
    }
    out
}

/// The step's content, or the first branch whose code is among the latest
/// batch of tool results the model is sent.
pub fn choose<'a>(step: &'a Step, messages: &[Value]) -> &'a Content {
    let mut latest: Option<(usize, Vec<(String, String)>)> = None;
    for (i, message) in messages.iter().enumerate() {
        if message.str_of("role") == Some("assistant") {
            let calls = calls_of(message);
            if !calls.is_empty() {
                latest = Some((i, calls));
            }
        }
    }
    let mut codes: Vec<(String, String)> = Vec::new(); // (tool, code)
    if let Some((at, calls)) = latest {
        for message in &messages[at + 1..] {
            if message.str_of("role") != Some("tool") {
                continue;
            }
            for block in message.get("content").and_then(|c| c.as_arr()).map(|v| v.as_slice()).unwrap_or(&[]) {
                let id = block.str_of("callId").unwrap_or("");
                let code = block.get("error").and_then(|e| e.str_of("code"));
                if let (Some((_, tool)), Some(code)) = (calls.iter().find(|(c, _)| c == id), code) {
                    codes.push((tool.clone(), code.to_string()));
                }
            }
        }
    }
    for branch in &step.branches {
        let hit = codes.iter().any(|(tool, code)| {
            code == &branch.when && branch.tool.as_ref().map_or(true, |t| t == tool)
        });
        if hit {
            return &branch.content;
        }
    }
    &step.content
}

pub struct Cursor {
    pub script_turn: usize,
    pub script_step: usize,
    pub user: String,
}

fn fresh(scenario: &Scenario, script_turn: usize) -> Option<Cursor> {
    scenario.turns.get(script_turn).map(|turn| Cursor { script_turn, script_step: 0, user: turn.user.clone() })
}

/// Where the script goes on after the log's last turn (None: it has ended).
/// A turn that gave its final answer moves on to the next scripted turn;
/// an interrupted one goes on at its first step with no assistant message,
/// opened with the scenario's resume prompt.
pub fn next_cursor(events: &[Event], scenario: &Scenario) -> Option<Cursor> {
    let start = match events.iter().rposition(|e| e.kind == "turn/start") {
        Some(start) => start,
        None => return fresh(scenario, 0),
    };
    let opened = &events[start].data;
    let script_turn = opened.int_of("scriptTurn").unwrap_or(0).max(0) as usize;
    let script_step = opened.int_of("scriptStep").unwrap_or(0).max(0) as usize;
    let rest = &events[start..];
    let answers: Vec<&Event> = rest.iter().filter(|e| e.kind == "assistant/message").collect();
    let completed = rest.iter().rev().find(|e| e.kind == "turn/end")
        .and_then(|e| e.data.get("reason")).and_then(|r| r.str_of("kind")) == Some("completed");
    let final_answer = answers.last().map_or(false, |a| calls_of(a.data.get("message").unwrap_or(&Value::Null)).is_empty());
    if completed || final_answer {
        return fresh(scenario, script_turn + 1);
    }
    let step = script_step + answers.len();
    match scenario.turns.get(script_turn) {
        Some(turn) if step < turn.steps.len() => {
            Some(Cursor { script_turn, script_step: step, user: scenario.resume_prompt.clone() })
        }
        _ => fresh(scenario, script_turn + 1),
    }
}

pub fn next_turn_number(events: &[Event]) -> i64 {
    events.iter().rev().find(|e| e.kind == "turn/start").and_then(|e| e.data.int_of("turn")).map_or(0, |t| t + 1)
}
