// The child side of faultlab's probe protocol (docs/probe-protocol.md),
// written from the protocol document: boundary reports and file facts on the
// report pipe, parking at the armed occurrence, replies read by a thread of
// their own, exit 70 when the lab goes away.  Reports may come from any
// thread (the I/O pool reports its file facts); one lock keeps lines whole.

use crate::json::{obj, s, Value};
use crate::sys;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::io::FromRawFd;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

pub const BOUNDARIES: [&str; 16] = [
    "turn/started", "request/logged", "request/durable", "model/chunk", "assistant/recorded",
    "tool/logged", "tool/durable", "tool/effect", "tool/returned", "step/logged", "step/durable",
    "turn/logged", "turn/durable", "flush/written", "repair/logged", "repair/durable",
];

/// A one-shot failure of the session log the lab asked for (`fail-next-flush`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Write,
    Sync,
}

pub type Injection = Arc<Mutex<Option<(Op, i32)>>>;

const EIO: i32 = 5;
const ENOSPC: i32 = 28;
const BUFFER_LIMIT: usize = 16 * 1024;

struct Out {
    pipe: File,
    pending: String,
}

pub struct Probe {
    pub enabled: bool,
    buffered: bool,
    out: Mutex<Option<Out>>,
    counts: Mutex<HashMap<String, u64>>,
    armed: Option<(String, u64)>,
    replies: Mutex<Option<Receiver<Value>>>,
    pub injection: Injection,
}

impl Probe {
    /// Reads the environment (section 2); Err is a usage error (exit 2).
    pub fn attach() -> Result<Probe, String> {
        let injection: Injection = Arc::new(Mutex::new(None));
        let detached = Probe {
            enabled: false,
            buffered: false,
            out: Mutex::new(None),
            counts: Mutex::new(HashMap::new()),
            armed: None,
            replies: Mutex::new(None),
            injection: injection.clone(),
        };
        let spec = std::env::var("FAULTLAB_PROBE_FDS").unwrap_or_default();
        if spec.is_empty() {
            return Ok(detached);
        }
        let parts: Vec<&str> = spec.split(',').collect();
        let fds: Vec<i32> = parts.iter().filter_map(|p| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) { p.parse().ok() } else { None }
        }).collect();
        if parts.len() != 2 || fds.len() != 2 {
            return Err(format!("FAULTLAB_PROBE_FDS={:?}: expected 'REPORT_FD,REPLY_FD'", spec));
        }
        let mut armed = None;
        let arm = std::env::var("FAULTLAB_ARM").unwrap_or_default();
        if !arm.is_empty() {
            let (name, number) = match arm.split_once('#') {
                Some((name, number)) => (name, Some(number)),
                None => (arm.as_str(), None),
            };
            if !BOUNDARIES.contains(&name) {
                return Err(format!("FAULTLAB_ARM={:?}: unknown boundary {:?}", arm, name));
            }
            let n = match number {
                None => 1,
                Some(text) => match text.parse::<u64>() {
                    Ok(n) if n >= 1 && text.bytes().all(|b| b.is_ascii_digit()) => n,
                    _ => return Err(format!("FAULTLAB_ARM={:?}: the occurrence must be a whole number >= 1", arm)),
                },
            };
            armed = Some((name.to_string(), n));
        }
        // Rust's runtime already ignores SIGPIPE, so a write to a closed pipe
        // fails (and we exit 70) instead of killing the process.
        let pipe = unsafe { File::from_raw_fd(fds[0]) };
        let mut replies = unsafe { File::from_raw_fd(fds[1]) };
        let (sender, receiver) = channel::<Value>();
        std::thread::Builder::new()
            .name("probe-replies".to_string())
            .spawn(move || {
                let mut buffer: Vec<u8> = Vec::new();
                let mut chunk = [0u8; 65536];
                loop {
                    let n = match replies.read(&mut chunk) {
                        Ok(0) | Err(_) => sys::exit_now(70), // the lab went away
                        Ok(n) => n,
                    };
                    buffer.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buffer.drain(..=end).collect();
                        let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                        if let Ok(value) = crate::json::parse(&text) {
                            if value.is_obj() && sender.send(value).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the probe's reply reader: {}", e))?;
        let traced = !std::env::var("FAULTLAB_TRACED").unwrap_or_default().is_empty();
        Ok(Probe {
            enabled: true,
            buffered: !traced, // traced: every report before the next system call
            out: Mutex::new(Some(Out { pipe, pending: String::new() })),
            counts: Mutex::new(HashMap::new()),
            armed,
            replies: Mutex::new(Some(receiver)),
            injection,
        })
    }

    fn send(&self, message: &Value, now: bool) {
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(out) = guard.as_mut() {
            out.pending.push_str(&message.to_json());
            out.pending.push('\n');
            if now || !self.buffered || out.pending.len() >= BUFFER_LIMIT {
                Self::drain(out);
            }
        }
    }

    fn drain(out: &mut Out) {
        if !out.pending.is_empty() {
            if out.pipe.write_all(out.pending.as_bytes()).is_err() {
                sys::exit_now(70); // the lab closed the report pipe
            }
            out.pending.clear();
        }
    }

    /// Writes every buffered report (before an exit).
    pub fn flush(&self) {
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(out) = guard.as_mut() {
            Self::drain(out);
        }
    }

    pub fn fact(&self, kind: &str, facts: Vec<(&str, Value)>) {
        if !self.enabled {
            return;
        }
        let mut message = obj(vec![("fact", s(kind))]);
        for (key, value) in facts {
            message.set(key, value);
        }
        self.send(&message, false);
    }

    /// Reports a boundary; at the armed occurrence, parks until `continue`.
    pub fn reach(&self, name: &str, facts: Vec<(&str, Value)>) {
        if !self.enabled {
            return;
        }
        let n = {
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let count = counts.entry(name.to_string()).or_insert(0);
            *count += 1;
            *count
        };
        let parked = matches!(&self.armed, Some((armed, at)) if armed == name && *at == n);
        let mut message = obj(vec![("boundary", s(name)), ("n", Value::Int(n as i64))]);
        for (key, value) in facts {
            message.set(key, value);
        }
        if parked {
            message.set("parked", Value::Bool(true));
        }
        self.send(&message, parked);
        if parked {
            self.park();
        }
    }

    fn park(&self) {
        let guard = self.replies.lock().unwrap_or_else(|e| e.into_inner());
        let replies = match guard.as_ref() {
            Some(r) => r,
            None => return,
        };
        loop {
            let reply = match replies.recv() {
                Ok(reply) => reply,
                Err(_) => sys::exit_now(70),
            };
            match reply.str_of("action") {
                Some("continue") => return,
                Some("fail-next-flush") => {
                    let op = match reply.str_of("op") {
                        Some("write") => Op::Write,
                        Some("sync") => Op::Sync,
                        other => {
                            eprintln!("rust-runtime: error: fail-next-flush with op {:?}", other);
                            self.flush();
                            std::process::exit(3);
                        }
                    };
                    let errno = if reply.str_of("errno") == Some("ENOSPC") { ENOSPC } else { EIO };
                    *self.injection.lock().unwrap_or_else(|e| e.into_inner()) = Some((op, errno));
                }
                _ => {} // not for us: stay parked
            }
        }
    }
}
