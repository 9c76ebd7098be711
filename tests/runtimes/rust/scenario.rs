// The scenario (docs/scenario-format.md) as this runtime needs it: the tools
// with their annotations, the scripted turns, steps and branches.  Keys the
// runtime does not act on (`description`, `boundaries`, `expect`) are read by
// the lab, not here.

use crate::json::Value;

pub struct Tool {
    pub name: String,
    pub read_only: bool,
    pub idempotent: bool,
    pub parallel_safe: bool,
    pub accepts_key: bool,
    pub ledger: bool,
    pub latency_ms: u64,
    pub result: String,
    pub fails: bool,
    pub observes: Option<String>,
    pub calls: Vec<(String, Value)>,
}

impl Tool {
    pub fn safe_to_retry(&self) -> bool {
        self.read_only || self.idempotent
    }
}

pub struct Content {
    pub text: String,
    pub chunks: Option<usize>,
    pub chunk_size: Option<usize>,
    pub tool_calls: Vec<(String, Value)>,
}

pub struct Branch {
    pub when: String,
    pub tool: Option<String>,
    pub content: Content,
}

pub struct Step {
    pub content: Content,
    pub delay_ms: u64,
    pub chunk_delay_ms: u64,
    pub branches: Vec<Branch>,
}

pub struct Turn {
    pub user: String,
    pub steps: Vec<Step>,
}

pub struct Scenario {
    pub policy: String,
    pub backend: String,
    pub max_parallel: usize,
    pub resume_prompt: String,
    pub tools: Vec<Tool>,
    pub turns: Vec<Turn>,
}

impl Scenario {
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

pub const POLICIES: [&str; 3] = ["semantic", "turn-only", "every-event"];
const CODES: [&str; 5] = [
    "TOOL_OUTCOME_UNKNOWN",
    "TOOL_NOT_STARTED",
    "ABORTED_BEFORE_DISPATCH",
    "CHECKPOINT_FAILED",
    "TOOL_FAILED",
];

type Fields<'a> = &'a [(String, Value)];

fn fields<'a>(value: &'a Value, at: &str) -> Result<Fields<'a>, String> {
    match value {
        Value::Obj(fields) => Ok(fields),
        _ => Err(format!("{}: expected a table", at)),
    }
}

fn find<'a>(table: Fields<'a>, key: &str) -> Option<&'a Value> {
    table.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn text(table: Fields, key: &str, default: &str, at: &str) -> Result<String, String> {
    match find(table, key) {
        None => Ok(default.to_string()),
        Some(Value::Str(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{}.{}: expected a string", at, key)),
    }
}

fn flag(table: Fields, key: &str, at: &str) -> Result<bool, String> {
    match find(table, key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{}.{}: expected true or false", at, key)),
    }
}

fn whole(table: Fields, key: &str, low: i64, high: i64, at: &str) -> Result<Option<i64>, String> {
    match find(table, key) {
        None => Ok(None),
        Some(Value::Int(i)) if *i >= low && *i <= high => Ok(Some(*i)),
        Some(_) => Err(format!("{}.{}: expected an integer in {}..{}", at, key, low, high)),
    }
}

fn array<'a>(table: Fields<'a>, key: &str, at: &str) -> Result<&'a [Value], String> {
    match find(table, key) {
        None => Ok(&[]),
        Some(Value::Arr(items)) => Ok(items),
        Some(_) => Err(format!("{}.{}: expected an array", at, key)),
    }
}

fn calls(table: Fields, key: &str, at: &str) -> Result<Vec<(String, Value)>, String> {
    let mut out = Vec::new();
    for (i, item) in array(table, key, at)?.iter().enumerate() {
        let here = format!("{}.{}[{}]", at, key, i);
        let call = fields(item, &here)?;
        let tool = match find(call, "tool") {
            Some(Value::Str(name)) => name.clone(),
            _ => return Err(format!("{}.tool: required string", here)),
        };
        let arguments = match find(call, "arguments") {
            None => Value::Obj(Vec::new()),
            Some(v) if v.is_obj() => v.clone(),
            Some(_) => return Err(format!("{}.arguments: expected a table", here)),
        };
        out.push((tool, arguments));
    }
    Ok(out)
}

fn content(table: Fields, at: &str) -> Result<Content, String> {
    let repeat = whole(table, "repeat", 1, 100_000, at)?.unwrap_or(1) as usize;
    let chunks = whole(table, "chunks", 1, i64::MAX, at)?.map(|n| n as usize);
    let chunk_size = whole(table, "chunk_size", 1, i64::MAX, at)?.map(|n| n as usize);
    if chunks.is_some() && chunk_size.is_some() {
        return Err(format!("{}: chunks and chunk_size exclude each other", at));
    }
    let content = Content {
        text: text(table, "text", "", at)?.repeat(repeat),
        chunks,
        chunk_size,
        tool_calls: calls(table, "tool_calls", at)?,
    };
    if content.text.is_empty() && content.tool_calls.is_empty() {
        return Err(format!("{}: a step needs text or tool calls", at));
    }
    Ok(content)
}

fn tool(name: &str, value: &Value) -> Result<Tool, String> {
    let at = format!("tools.{}", name);
    let table = fields(value, &at)?;
    let effect = text(table, "effect", "none", &at)?;
    if effect != "none" && effect != "ledger" {
        return Err(format!("{}.effect: expected \"none\" or \"ledger\"", at));
    }
    let observes = match find(table, "observes") {
        None => None,
        Some(Value::Str(s)) => Some(s.clone()),
        Some(_) => return Err(format!("{}.observes: expected a string", at)),
    };
    Ok(Tool {
        name: name.to_string(),
        read_only: flag(table, "read_only", &at)?,
        idempotent: flag(table, "idempotent", &at)?,
        parallel_safe: flag(table, "parallel_safe", &at)?,
        accepts_key: flag(table, "accepts_idempotency_key", &at)?,
        ledger: effect == "ledger",
        latency_ms: whole(table, "latency_ms", 0, 60_000, &at)?.unwrap_or(0) as u64,
        result: text(table, "result", "ok", &at)?,
        fails: flag(table, "fails", &at)?,
        observes,
        calls: calls(table, "calls", &at)?,
    })
}

pub fn load(path: &str) -> Result<Scenario, String> {
    let source = std::fs::read_to_string(path).map_err(|e| format!("{}: {}", path, e))?;
    let root = crate::toml::parse(&source).map_err(|e| format!("{}: {}", path, e))?;
    build(&root).map_err(|e| format!("{}: {}", path, e))
}

fn build(root: &Value) -> Result<Scenario, String> {
    let top = fields(root, "scenario")?;
    if let Some(format) = find(top, "format") {
        if format != &Value::Int(1) {
            return Err("format: this runtime reads scenario format 1".to_string());
        }
    }
    let policy = text(top, "policy", "semantic", "")?;
    if !POLICIES.contains(&policy.as_str()) {
        return Err(format!("policy: unknown policy {:?}", policy));
    }
    let mut tools = Vec::new();
    if let Some(table) = find(top, "tools") {
        for (name, value) in fields(table, "tools")? {
            tools.push(tool(name, value)?);
        }
    }
    let mut turns = Vec::new();
    for (t, turn) in array(top, "turns", "")?.iter().enumerate() {
        let at = format!("turns[{}]", t);
        let table = fields(turn, &at)?;
        let user = match find(table, "user") {
            Some(Value::Str(s)) => s.clone(),
            _ => return Err(format!("{}.user: required string", at)),
        };
        let mut steps = Vec::new();
        for (k, step) in array(table, "steps", &at)?.iter().enumerate() {
            let here = format!("{}.steps[{}]", at, k);
            let step_table = fields(step, &here)?;
            let mut branches = Vec::new();
            for (b, branch) in array(step_table, "branches", &here)?.iter().enumerate() {
                let there = format!("{}.branches[{}]", here, b);
                let branch_table = fields(branch, &there)?;
                let when = text(branch_table, "when", "", &there)?;
                if !CODES.contains(&when.as_str()) {
                    return Err(format!("{}.when: unknown code {:?}", there, when));
                }
                let tool = match find(branch_table, "tool") {
                    None => None,
                    Some(Value::Str(s)) => Some(s.clone()),
                    Some(_) => return Err(format!("{}.tool: expected a string", there)),
                };
                branches.push(Branch { when, tool, content: content(branch_table, &there)? });
            }
            steps.push(Step {
                content: content(step_table, &here)?,
                delay_ms: whole(step_table, "delay_ms", 0, 60_000, &here)?.unwrap_or(0) as u64,
                chunk_delay_ms: whole(step_table, "chunk_delay_ms", 0, 60_000, &here)?.unwrap_or(0) as u64,
                branches,
            });
        }
        if steps.is_empty() {
            return Err(format!("{}.steps: at least one step", at));
        }
        turns.push(Turn { user, steps });
    }
    if turns.is_empty() {
        return Err("turns: at least one turn".to_string());
    }
    let scenario = Scenario {
        policy,
        backend: text(top, "backend", "jsonl", "")?,
        max_parallel: whole(top, "max_parallel_tools", 1, 64, "")?.unwrap_or(4) as usize,
        resume_prompt: text(top, "resume_prompt", "Continue.", "")?,
        tools,
        turns,
    };
    check_names(&scenario)?;
    Ok(scenario)
}

fn check_names(scenario: &Scenario) -> Result<(), String> {
    let known = |name: &str, at: String| -> Result<(), String> {
        match scenario.tool(name) {
            Some(_) => Ok(()),
            None => Err(format!("{}: unknown tool {:?}", at, name)),
        }
    };
    for tool in &scenario.tools {
        for (name, _) in &tool.calls {
            known(name, format!("tools.{}.calls", tool.name))?;
        }
        if let Some(name) = &tool.observes {
            known(name, format!("tools.{}.observes", tool.name))?;
        }
    }
    for (t, turn) in scenario.turns.iter().enumerate() {
        for (k, step) in turn.steps.iter().enumerate() {
            let mut contents = vec![&step.content];
            contents.extend(step.branches.iter().map(|b| &b.content));
            for content in contents {
                for (name, _) in &content.tool_calls {
                    known(name, format!("turns[{}].steps[{}].tool_calls", t, k))?;
                }
                if !content.tool_calls.is_empty() && k + 1 == turn.steps.len() {
                    return Err(format!("turns[{}].steps[{}]: a step that calls tools cannot be the last", t, k));
                }
            }
        }
    }
    Ok(())
}

/// The text split into the chunks the scripted model streams.
pub fn chunks(content: &Content) -> Vec<String> {
    let chars: Vec<char> = content.text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    if let Some(size) = content.chunk_size {
        return chars.chunks(size).map(|c| c.iter().collect()).collect();
    }
    if let Some(count) = content.chunks {
        let count = count.min(chars.len());
        let (base, extra) = (chars.len() / count, chars.len() % count);
        let mut out = Vec::new();
        let mut at = 0;
        for i in 0..count {
            let len = base + if i < extra { 1 } else { 0 };
            out.push(chars[at..at + len].iter().collect());
            at += len;
        }
        return out;
    }
    // One chunk per word: each run of non-space followed by its spaces.
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for c in chars {
        if !c.is_whitespace() && in_space {
            out.push(std::mem::take(&mut current));
            in_space = false;
        }
        if c.is_whitespace() {
            in_space = true;
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
