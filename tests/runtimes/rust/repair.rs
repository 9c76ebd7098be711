// Crash repair (docs/log-format.md section 8), a pure function of the log
// and of each tool's retry safety: the events that close an open last turn.

use crate::json::{obj, s, Value};
use crate::scenario::Scenario;
use crate::script::calls_of;
use crate::store::Event;
use std::collections::{HashMap, HashSet};

const NOT_STARTED: &str = "Tool call {name} ({call_id}) was never started: the session stopped before it was dispatched, so it had no effect. Call it again if it is still needed.";
const UNKNOWN_SAFE: &str = "The outcome of tool call {name} ({call_id}) is unknown: the session stopped after it was dispatched and before its result was recorded. The tool is read-only or idempotent, so it is safe to call it again.";
const UNKNOWN_VERIFY: &str = "The outcome of tool call {name} ({call_id}) is unknown: the session stopped after it was dispatched and before its result was recorded. It may have taken effect. Do not retry it blindly: retry only if the operation is read-only or idempotent; otherwise verify the external state first or ask the user.";

struct Logged<'a> {
    seq: u64,
    data: &'a Value,
}

fn result(template: &str, code: &str, retry: &str, name: &str, id: &str, at: &Value, cite: u64) -> Value {
    let text = template.replace("{name}", name).replace("{call_id}", id);
    let mut data = obj(vec![
        ("turn", at.get("turn").cloned().unwrap_or(Value::Null)),
        ("step", at.get("step").cloned().unwrap_or(Value::Null)),
        ("callId", s(id)),
        ("content", s(&text)),
        ("isError", Value::Bool(true)),
        ("error", obj(vec![("code", s(code)), ("message", s(&text)), ("retry", s(retry))])),
        ("sourceEventSeqs", Value::Arr(vec![Value::Int(cite as i64)])),
        ("synthetic", Value::Bool(true)),
    ]);
    if let Some(parent) = at.get("parentCallId") {
        data.set("parentCallId", parent.clone());
    }
    data
}

/// The repair events (type, data) for `events`; empty when the last turn is closed.
/// `all_not_started` is the broken variant that calls every dangling call
/// never started.
pub fn plan(events: &[Event], scenario: &Scenario, all_not_started: bool) -> Vec<(String, Value)> {
    let start = match events.iter().rposition(|e| e.kind == "turn/start") {
        Some(start) => start,
        None => return Vec::new(),
    };
    let turn = &events[start..];
    if turn.iter().any(|e| e.kind == "turn/end") {
        return Vec::new();
    }
    let mut answered: HashSet<&str> = HashSet::new();
    let mut logged: HashMap<&str, Logged> = HashMap::new();
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for event in turn {
        let id = event.data.str_of("callId").unwrap_or("");
        match event.kind.as_str() {
            "tool/result" => {
                answered.insert(id);
            }
            "tool/call" => {
                logged.insert(id, Logged { seq: event.seq, data: &event.data });
                if let Some(parent) = event.data.str_of("parentCallId") {
                    children.entry(parent).or_insert_with(Vec::new).push(id);
                }
            }
            _ => {}
        }
    }
    let unknown = |id: &str, entry: &Logged| -> (String, Value) {
        let name = entry.data.str_of("name").unwrap_or("");
        let safe = scenario.tool(name).map_or(false, |t| t.safe_to_retry());
        let (template, retry) = if safe { (UNKNOWN_SAFE, "safe") } else { (UNKNOWN_VERIFY, "verify") };
        ("tool/result".to_string(), result(template, "TOOL_OUTCOME_UNKNOWN", retry, name, id, entry.data, entry.seq))
    };
    let mut out: Vec<(String, Value)> = Vec::new();
    for event in turn.iter().filter(|e| e.kind == "assistant/message") {
        let message = event.data.get("message").unwrap_or(&Value::Null);
        for (id, name) in calls_of(message) {
            if answered.contains(id.as_str()) {
                continue;
            }
            match logged.get(id.as_str()) {
                Some(_) if !all_not_started => {
                    // Its unanswered nested calls first, depth first, in log order.
                    let mut stack: Vec<(&str, bool)> = vec![(id.as_str(), false)];
                    let mut order: Vec<&str> = Vec::new();
                    while let Some((call, expanded)) = stack.pop() {
                        if expanded {
                            order.push(call);
                            continue;
                        }
                        stack.push((call, true));
                        for child in children.get(call).map(|v| v.as_slice()).unwrap_or(&[]).iter().rev() {
                            if !answered.contains(child) {
                                stack.push((child, false));
                            }
                        }
                    }
                    for call in order {
                        out.push(unknown(call, &logged[call]));
                    }
                }
                _ => {
                    let at = &event.data;
                    let data = result(NOT_STARTED, "TOOL_NOT_STARTED", "safe", &name, &id, at, event.seq);
                    out.push(("tool/result".to_string(), data));
                }
            }
        }
    }
    let turn_number = events[start].data.get("turn").cloned().unwrap_or(Value::Null);
    if let Some(open) = turn.iter().rposition(|e| e.kind == "step/start") {
        if !turn[open..].iter().any(|e| e.kind == "step/end") {
            let step = turn[open].data.get("step").cloned().unwrap_or(Value::Null);
            out.push(("step/end".to_string(), obj(vec![("turn", turn_number.clone()), ("step", step)])));
        }
    }
    let reason = obj(vec![("kind", s("interrupted"))]);
    out.push(("turn/end".to_string(), obj(vec![("turn", turn_number), ("reason", reason)])));
    out
}
