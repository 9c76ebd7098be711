// A reader for the subset of TOML that scenario files use (README.md lists
// it), producing the same JSON values the rest of the runtime works with.
// Anything outside the subset is an error naming the line, never a guess.

use crate::json::Value;

pub fn parse(text: &str) -> Result<Value, String> {
    let mut parser = Parser { chars: text.chars().collect(), at: 0, line: 1 };
    parser.document()
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    line: usize,
}

fn table_mut(value: &mut Value) -> &mut Vec<(String, Value)> {
    match value {
        Value::Obj(fields) => fields,
        _ => unreachable!("only tables are walked"),
    }
}

fn entry<'v>(fields: &'v mut Vec<(String, Value)>, key: &str) -> Option<&'v mut Value> {
    fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl Parser {
    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("line {}: {}", self.line, what))
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn spaces(&mut self) {
        while matches!(self.peek(), Some(' ') | Some('\t')) {
            self.at += 1;
        }
    }

    fn comment(&mut self) {
        if self.peek() == Some('#') {
            while !matches!(self.peek(), None | Some('\n')) {
                self.at += 1;
            }
        }
    }

    /// Spaces, comments and newlines (inside arrays).
    fn blank(&mut self) {
        loop {
            self.spaces();
            self.comment();
            match self.peek() {
                Some('\n') => {
                    self.line += 1;
                    self.at += 1;
                }
                Some('\r') => self.at += 1,
                _ => return,
            }
        }
    }

    fn end_of_line(&mut self) -> Result<(), String> {
        self.spaces();
        self.comment();
        match self.peek() {
            None => Ok(()),
            Some('\r') if self.chars.get(self.at + 1) == Some(&'\n') => {
                self.at += 2;
                self.line += 1;
                Ok(())
            }
            Some('\n') => {
                self.at += 1;
                self.line += 1;
                Ok(())
            }
            Some(c) => self.fail(&format!("unexpected {:?} after a value", c)),
        }
    }

    fn document(&mut self) -> Result<Value, String> {
        let mut root = Value::Obj(Vec::new());
        let mut path: Vec<String> = Vec::new();
        let mut defined: Vec<Vec<String>> = Vec::new();
        loop {
            self.blank();
            match self.peek() {
                None => return Ok(root),
                Some('[') => {
                    self.at += 1;
                    let array = self.peek() == Some('[');
                    if array {
                        self.at += 1;
                    }
                    self.spaces();
                    path = self.dotted_key()?;
                    self.spaces();
                    let close = if array { "]]" } else { "]" };
                    for c in close.chars() {
                        if self.peek() != Some(c) {
                            return self.fail(&format!("expected '{}' to close the header", close));
                        }
                        self.at += 1;
                    }
                    self.end_of_line()?;
                    if !array {
                        if defined.contains(&path) {
                            return self.fail(&format!("table [{}] defined twice", path.join(".")));
                        }
                        defined.push(path.clone());
                    }
                    self.open(&mut root, &path, array)?;
                }
                Some(_) => {
                    let key = self.key()?;
                    self.spaces();
                    if self.peek() == Some('.') {
                        return self.fail("dotted keys are outside the supported TOML subset");
                    }
                    if self.peek() != Some('=') {
                        return self.fail("expected '=' after a key");
                    }
                    self.at += 1;
                    self.spaces();
                    let value = self.value()?;
                    self.end_of_line()?;
                    let table = self.walk(&mut root, &path)?;
                    if entry(table, &key).is_some() {
                        return self.fail(&format!("key {:?} defined twice", key));
                    }
                    table.push((key, value));
                }
            }
        }
    }

    /// Creates the table (or appends a table to the array) at `path`.
    fn open(&self, root: &mut Value, path: &[String], array: bool) -> Result<(), String> {
        let (last, parents) = path.split_last().expect("a header has a key");
        let table = self.walk(root, parents)?;
        match entry(table, last) {
            None => {
                let fresh = Value::Obj(Vec::new());
                table.push((last.clone(), if array { Value::Arr(vec![fresh]) } else { fresh }));
            }
            Some(Value::Arr(items)) if array => items.push(Value::Obj(Vec::new())),
            Some(Value::Obj(_)) if !array => {} // created implicitly by a deeper header
            Some(_) => return self.fail(&format!("{} redefined with another type", path.join("."))),
        }
        Ok(())
    }

    /// The table `path` names: through arrays of tables to their last element.
    fn walk<'v>(&self, root: &'v mut Value, path: &[String]) -> Result<&'v mut Vec<(String, Value)>, String> {
        let mut here = table_mut(root);
        for key in path {
            if entry(here, key).is_none() {
                here.push((key.clone(), Value::Obj(Vec::new())));
            }
            let next = entry(here, key).expect("just made");
            here = match next {
                Value::Obj(fields) => fields,
                Value::Arr(items) => match items.last_mut() {
                    Some(Value::Obj(fields)) => fields,
                    _ => return self.fail(&format!("{} is not a table", key)),
                },
                _ => return self.fail(&format!("{} is not a table", key)),
            };
        }
        Ok(here)
    }

    fn dotted_key(&mut self) -> Result<Vec<String>, String> {
        let mut parts = vec![self.key()?];
        loop {
            self.spaces();
            if self.peek() != Some('.') {
                return Ok(parts);
            }
            self.at += 1;
            self.spaces();
            parts.push(self.key()?);
        }
    }

    fn key(&mut self) -> Result<String, String> {
        match self.peek() {
            Some('"') => self.basic_string(),
            Some('\'') => self.literal_string(),
            _ => {
                let start = self.at;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    self.at += 1;
                }
                if self.at == start {
                    return self.fail("expected a key");
                }
                Ok(self.chars[start..self.at].iter().collect())
            }
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some('"') => {
                if self.chars[self.at..].starts_with(&['"', '"', '"']) {
                    return self.fail("multi-line strings are outside the supported TOML subset");
                }
                Ok(Value::Str(self.basic_string()?))
            }
            Some('\'') => Ok(Value::Str(self.literal_string()?)),
            Some('[') => self.array(),
            Some('{') => self.inline_table(),
            Some('t') | Some('f') => {
                let word = self.bare();
                match word.as_str() {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => self.fail(&format!("invalid value {:?}", word)),
                }
            }
            Some(c) if c == '-' || c == '+' || c.is_ascii_digit() => self.number(),
            _ => self.fail("expected a value"),
        }
    }

    fn bare(&mut self) -> String {
        let start = self.at;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || "+-._".contains(c)) {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    fn number(&mut self) -> Result<Value, String> {
        let word = self.bare();
        let digits: String = word.chars().filter(|c| *c != '_').collect();
        let plain = digits.trim_start_matches(|c| c == '+' || c == '-');
        if plain.starts_with("0x") || plain.starts_with("0o") || plain.starts_with("0b") || plain == "inf" || plain == "nan" {
            return self.fail(&format!("number {:?} is outside the supported TOML subset", word));
        }
        if !plain.chars().next().map_or(false, |c| c.is_ascii_digit()) {
            return self.fail(&format!("invalid number {:?}", word));
        }
        if plain.contains('.') || plain.contains('e') || plain.contains('E') {
            match digits.parse::<f64>() {
                Ok(f) => Ok(Value::Float(f)),
                Err(_) => self.fail(&format!("invalid number {:?}", word)),
            }
        } else if plain.contains(':') || plain.contains('-') {
            self.fail("dates and times are outside the supported TOML subset")
        } else {
            match digits.parse::<i64>() {
                Ok(i) => Ok(Value::Int(i)),
                Err(_) => self.fail(&format!("invalid integer {:?}", word)),
            }
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.blank();
            if self.peek() == Some(']') {
                self.at += 1;
                return Ok(Value::Arr(items));
            }
            items.push(self.value()?);
            self.blank();
            match self.peek() {
                Some(',') => self.at += 1,
                Some(']') => {}
                _ => return self.fail("expected ',' or ']' in an array"),
            }
        }
    }

    fn inline_table(&mut self) -> Result<Value, String> {
        self.at += 1;
        let mut fields: Vec<(String, Value)> = Vec::new();
        self.spaces();
        if self.peek() == Some('}') {
            self.at += 1;
            return Ok(Value::Obj(fields));
        }
        loop {
            self.spaces();
            let key = self.key()?;
            self.spaces();
            if self.peek() != Some('=') {
                return self.fail("expected '=' in an inline table (dotted keys are not supported)");
            }
            self.at += 1;
            self.spaces();
            let value = self.value()?;
            if entry(&mut fields, &key).is_some() {
                return self.fail(&format!("key {:?} defined twice", key));
            }
            fields.push((key, value));
            self.spaces();
            match self.peek() {
                Some(',') => self.at += 1,
                Some('}') => {
                    self.at += 1;
                    return Ok(Value::Obj(fields));
                }
                _ => return self.fail("expected ',' or '}' in an inline table"),
            }
        }
    }

    fn literal_string(&mut self) -> Result<String, String> {
        self.at += 1;
        let start = self.at;
        while !matches!(self.peek(), None | Some('\'') | Some('\n')) {
            self.at += 1;
        }
        if self.peek() != Some('\'') {
            return self.fail("unterminated string");
        }
        let text = self.chars[start..self.at].iter().collect();
        self.at += 1;
        Ok(text)
    }

    fn basic_string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => return self.fail("unterminated string"),
                Some('"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.at += 1;
                    let escape = self.peek();
                    self.at += 1;
                    match escape {
                        Some('"') => out.push('"'),
                        Some('\\') => out.push('\\'),
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some('r') => out.push('\r'),
                        Some('b') => out.push('\u{8}'),
                        Some('f') => out.push('\u{c}'),
                        Some('u') => out.push(self.unicode(4)?),
                        Some('U') => out.push(self.unicode(8)?),
                        _ => return self.fail("invalid escape in a string"),
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn unicode(&mut self, width: usize) -> Result<char, String> {
        let end = self.at + width;
        if end > self.chars.len() {
            return self.fail("short unicode escape");
        }
        let hex: String = self.chars[self.at..end].iter().collect();
        self.at = end;
        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
            Some(c) => Ok(c),
            None => self.fail("invalid unicode escape"),
        }
    }
}
