// The session in memory and its persistence: events get contiguous seqs when
// appended; `flush` makes every event appended so far durable as one batch,
// and a failed flush keeps its events for the next one (docs/log-format.md
// 6.6).  Also the world ledger of the scripted tools' side effects.

use crate::json::{obj, s, Value};
use crate::pool::Pool;
use crate::probe::Probe;
use crate::store::{now, Event, Store};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Arc;

pub struct Session {
    pub events: Vec<Event>,
    lines: Vec<String>, // encoded events not yet durable, from `durable` on
    durable: usize,
    pub store: Store,
    probe: Arc<Probe>,
    every_event: bool,
    failure: Option<String>, // a failed flush under every-event, for the next checkpoint
}

impl Session {
    pub fn new(events: Vec<Event>, store: Store, probe: Arc<Probe>, every_event: bool) -> Session {
        let durable = events.len();
        Session { events, lines: Vec::new(), durable, store, probe, every_event, failure: None }
    }

    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    pub fn append(&mut self, kind: &str, data: Value) -> u64 {
        let seq = self.next_seq();
        let line = obj(vec![
            ("seq", Value::Int(seq as i64)), ("type", s(kind)), ("time", Value::Float(now())), ("data", data.clone()),
        ]);
        self.lines.push(format!("{}\n", line.to_json()));
        self.events.push(Event { seq, kind: kind.to_string(), data });
        if self.every_event {
            if let Err(e) = self.flush() {
                self.failure.get_or_insert(e);
            }
        }
        seq
    }

    /// The barrier: every event appended so far is durable when this returns Ok.
    pub fn flush(&mut self) -> Result<(), String> {
        if self.durable == self.events.len() {
            return match self.failure.take() {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        let (first, last) = (self.durable as i64, self.events.len() as i64 - 1);
        match self.store.append(&self.lines) {
            Ok(()) => {
                self.durable = self.events.len();
                self.lines.clear();
                self.probe.fact("flush", vec![("ok", Value::Bool(true)), ("first", Value::Int(first)), ("last", Value::Int(last))]);
                match self.failure.take() {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }
            Err(e) => {
                self.probe.fact("flush", vec![
                    ("ok", Value::Bool(false)), ("first", Value::Int(first)), ("last", Value::Int(last)), ("error", s(&e)),
                ]);
                Err(e)
            }
        }
    }
}

/// One fsynced JSON line per applied side effect, keyed by call id; an
/// idempotency key is applied at most once, across restarts too.
pub struct Ledger {
    path: String,
    dir: String,
    file: Option<Arc<File>>,
    size: u64,
    records: Vec<Value>,
    keys: HashSet<String>,
    pool: Arc<Pool>,
}

impl Ledger {
    pub fn open(path: &str, dir: &str, pool: Arc<Pool>) -> Ledger {
        let mut records = Vec::new();
        let mut size = 0;
        if let Ok(bytes) = std::fs::read(path) {
            size = bytes.len() as u64;
            for line in bytes.split(|b| *b == b'\n') {
                // A torn last record was never applied.
                let text = std::str::from_utf8(line).ok();
                if let Some(value) = text.and_then(|t| crate::json::parse(t).ok()) {
                    if value.is_obj() {
                        records.push(value);
                    }
                }
            }
        }
        let keys = records.iter().filter_map(|r| r.str_of("key").map(|k| k.to_string())).collect();
        Ledger { path: path.to_string(), dir: dir.to_string(), file: None, size, records, keys, pool }
    }

    pub fn count(&self, tool: &str) -> usize {
        self.records.iter().filter(|r| r.str_of("tool") == Some(tool)).count()
    }

    /// Records one effect; false when its key was applied before.
    pub fn apply(&mut self, call_id: &str, tool: &str, arguments: &Value, key: Option<&str>) -> io::Result<bool> {
        if let Some(key) = key {
            if self.keys.contains(key) {
                return Ok(false);
            }
        }
        let record = obj(vec![
            ("callId", s(call_id)), ("tool", s(tool)), ("arguments", arguments.clone()),
            ("key", key.map(s).unwrap_or(Value::Null)),
        ]);
        let mut line = format!("{}\n", record.to_json());
        if self.file.is_none() {
            let (path, dir) = (self.path.clone(), self.dir.clone());
            let existed = std::path::Path::new(&path).exists();
            let file = self.pool.run(move || -> io::Result<File> {
                let file = OpenOptions::new().append(true).create(true).mode(0o644).open(&path)?;
                if !existed {
                    // The world must not forget the file that records it.
                    File::open(&dir)?.sync_all()?;
                }
                Ok(file)
            })?;
            if self.size > 0 && std::fs::read(&self.path).map(|b| !b.ends_with(b"\n")).unwrap_or(false) {
                line.insert(0, '\n'); // end a torn record's line so this one stands alone
            }
            self.file = Some(Arc::new(file));
        }
        let file = self.file.clone().expect("opened above");
        let (at, bytes) = (self.size, line.clone().into_bytes());
        self.pool.run(move || -> io::Result<()> {
            file.write_all_at(&bytes, at)?; // pwrite; the descriptor appends anyway
            file.sync_data()
        })?;
        self.size += line.len() as u64;
        self.records.push(record);
        if let Some(key) = key {
            self.keys.insert(key.to_string());
        }
        Ok(true)
    }
}
