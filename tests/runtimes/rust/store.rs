// The JSONL session log on disk (docs/log-format.md sections 1, 6, 7): the
// writer lock, atomic creation, loading with its torn-tail and corruption
// rules, the cut of a damaged tail into a kept file, and batch appends with
// rollback to the last fsync.  Every file operation runs on the I/O pool and
// reports its probe fact from there, right after the system call.

use crate::bugs::Bugs;
use crate::json::{obj, s, Value};
use crate::pool::Pool;
use crate::probe::{Injection, Op, Probe};
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::sync::Arc;

pub const LOG_NAME: &str = "session.jsonl";
pub const EVENT_TYPES: [&str; 10] = [
    "turn/start", "user/message", "step/start", "step/end", "request/header",
    "assistant/chunk", "assistant/message", "tool/call", "tool/result", "turn/end",
];

pub struct Event {
    pub seq: u64,
    pub kind: String,
    pub data: Value,
}

pub fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') { format!("{}{}", dir, name) } else { format!("{}/{}", dir, name) }
}

fn num(n: u64) -> Value {
    Value::Int(n as i64)
}

fn take_injection(injection: &Injection, op: Op) -> Option<io::Error> {
    let mut armed = injection.lock().unwrap_or_else(|e| e.into_inner());
    match *armed {
        Some((wanted, errno)) if wanted == op => {
            *armed = None;
            Some(io::Error::from_raw_os_error(errno))
        }
        _ => None,
    }
}

/// Takes the writer lock (section 6.4; `enforce` false: the broken variant
/// that never flocks).  Err: the message (held by another, or an OS error).
pub fn lock(dir: &str, enforce: bool, pool: &Pool) -> Result<File, String> {
    let path = join(dir, "session.jsonl.lock");
    // No O_TRUNC: a refused writer must leave the holder's pid in place.
    let mut file = OpenOptions::new().read(true).write(true).create(true).mode(0o644).open(&path)
        .map_err(|e| format!("cannot open {}: {}", path, e))?;
    match if enforce { crate::sys::try_lock(file.as_raw_fd()) } else { Ok(true) } {
        Ok(true) => {}
        Ok(false) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(format!(
                "{}: session is locked by another live writer (pid {}); refusing to open a second writer",
                join(dir, LOG_NAME), holder.trim()
            ));
        }
        Err(e) => return Err(format!("cannot lock {}: {}", path, e)),
    }
    let pid = format!("{}\n", std::process::id());
    pool.run(move || -> io::Result<File> {
        file.set_len(0)?;
        file.write_all_at(pid.as_bytes(), 0)?;
        Ok(file)
    })
    .map_err(|e| format!("cannot write {}: {}", path, e))
}

pub struct Loaded {
    pub events: Vec<Event>,
    pub bytes: Vec<u8>,
    pub valid: u64,
    pub note: Option<String>,
}

fn bad_event(line: &[u8], expected: u64) -> Result<Event, String> {
    let text = std::str::from_utf8(line).map_err(|_| "line is not UTF-8".to_string())?;
    let value = crate::json::parse(text).map_err(|e| format!("line is not JSON ({})", e))?;
    if !value.is_obj() {
        return Err("line is not a JSON object".to_string());
    }
    let seq = match value.get("seq") {
        Some(Value::Int(n)) if *n >= 0 => *n as u64,
        _ => return Err("field 'seq' is missing or not a non-negative integer".to_string()),
    };
    let kind = match value.str_of("type") {
        Some(kind) if EVENT_TYPES.contains(&kind) => kind.to_string(),
        _ => return Err("field 'type' is not an event type of format 1".to_string()),
    };
    if !matches!(value.get("time"), Some(Value::Int(_)) | Some(Value::Float(_))) {
        return Err("field 'time' is not a number".to_string());
    }
    let data = match value.get("data") {
        Some(v) if v.is_obj() => v.clone(),
        _ => return Err("field 'data' is not an object".to_string()),
    };
    if seq > expected {
        return Err(format!("seq gap: seq {} where {} was expected", seq, expected));
    }
    if seq < expected {
        return Err(format!("seq duplicate: seq {} where {} was expected", seq, expected));
    }
    Ok(Event { seq, kind, data })
}

fn is_turn_end(line: &[u8]) -> bool {
    let parsed = std::str::from_utf8(line).ok().and_then(|t| crate::json::parse(t).ok());
    matches!(parsed, Some(v) if v.str_of("type") == Some("turn/end"))
}

/// Reads a log by the rules of section 7.  Err: corruption (exit 4).
pub fn load(path: &str) -> Result<Loaded, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {}", path, e))?;
    let corrupt = |line: usize, offset: usize, problem: &str| {
        format!("{}:{}: corrupt session log at byte {}: {}", path, line, offset, problem)
    };
    let header_end = match bytes.iter().position(|b| *b == b'\n') {
        Some(end) => end,
        None => return Err(corrupt(1, 0, "no complete session header line")),
    };
    let header = std::str::from_utf8(&bytes[..header_end]).map_err(|_| corrupt(1, 0, "header is not JSON (not UTF-8)"))?;
    let header = crate::json::parse(header).map_err(|e| corrupt(1, 0, &format!("header is not JSON ({})", e)))?;
    if header.str_of("type") != Some("session") {
        return Err(corrupt(1, 0, "first line is not a session header"));
    }
    if header.get("format") != Some(&Value::Int(1)) {
        return Err(corrupt(1, 0, "header field 'format' is not 1; this reader knows 1"));
    }
    if header.str_of("id").is_none() {
        return Err(corrupt(1, 0, "header field 'id' is missing or not a string"));
    }
    let mut lines: Vec<(usize, usize)> = Vec::new(); // (start, end without '\n')
    let mut start = header_end + 1;
    while let Some(n) = bytes[start..].iter().position(|b| *b == b'\n') {
        lines.push((start, start + n));
        start += n + 1;
    }
    let tail_start = start;
    let mut events = Vec::new();
    for (index, &(from, to)) in lines.iter().enumerate() {
        match bad_event(&bytes[from..to], events.len() as u64) {
            Ok(event) => events.push(event),
            Err(problem) => {
                let line = index + 2;
                if lines[index + 1..].iter().any(|&(a, b)| is_turn_end(&bytes[a..b])) {
                    return Err(corrupt(line, from, &problem));
                }
                let note = format!(
                    "line {} (byte {}) is damaged after the last completed turn and was cut with everything after it: {}",
                    line, from, problem
                );
                return Ok(Loaded { events, bytes, valid: from as u64, note: Some(note) });
            }
        }
    }
    let valid = tail_start as u64;
    let note = if tail_start < bytes.len() {
        Some(format!("torn last line of {} bytes at byte {} was cut", bytes.len() - tail_start, tail_start))
    } else {
        None
    };
    Ok(Loaded { events, bytes, valid, note })
}

/// The open log of one writer.
pub struct Store {
    pub path: String,
    dir: String,
    file: Arc<File>,
    lock: Arc<File>,
    written: u64,
    synced: u64,
    pool: Arc<Pool>,
    probe: Arc<Probe>,
    bugs: Bugs,
}

fn sync_dir(pool: &Pool, probe: &Arc<Probe>, dir: &str) -> io::Result<()> {
    let (probe, dir) = (probe.clone(), dir.to_string());
    pool.run(move || {
        File::open(&dir)?.sync_all()?;
        probe.fact("dirsync", vec![("dir", s(&dir))]);
        Ok(())
    })
}

fn open_append(path: &str) -> io::Result<File> {
    OpenOptions::new().append(true).open(path)
}

impl Store {
    /// Creates a new log atomically with its header (section 6.5).
    pub fn create(dir: &str, id: &str, lock: File, pool: Arc<Pool>, probe: Arc<Probe>, bugs: Bugs) -> io::Result<Store> {
        let path = join(dir, LOG_NAME);
        let temp = join(dir, &format!(".{}.{}.tmp", LOG_NAME, std::process::id()));
        let header = obj(vec![
            ("type", s("session")), ("format", Value::Int(1)), ("id", s(id)), ("createdAt", Value::Float(now())),
        ]);
        let line = format!("{}\n", header.to_json());
        let size = line.len() as u64;
        let (p, t, job_probe) = (path.clone(), temp.clone(), probe.clone());
        pool.run(move || -> io::Result<()> {
            let file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o644).open(&t)?;
            file.write_all_at(line.as_bytes(), 0)?;
            file.sync_all()?;
            drop(file);
            let linked = std::fs::hard_link(&t, &p);
            let _ = std::fs::remove_file(&t);
            linked?;
            job_probe.fact("create", vec![("file", s(&p)), ("size", num(size))]);
            Ok(())
        })?;
        sync_dir(&pool, &probe, dir)?;
        let p = path.clone();
        let file = pool.run(move || open_append(&p))?;
        Ok(Store {
            path, dir: dir.to_string(), file: Arc::new(file), lock: Arc::new(lock),
            written: size, synced: size, pool, probe, bugs,
        })
    }

    /// Opens a loaded log for appending, first cutting what the load cut
    /// (section 7.3): kept in a new file, fsynced, the directory fsynced,
    /// then the log truncated and fsynced.
    pub fn open(dir: &str, loaded: &Loaded, lock: File, pool: Arc<Pool>, probe: Arc<Probe>, bugs: Bugs) -> io::Result<Store> {
        let path = join(dir, LOG_NAME);
        let p = path.clone();
        let file = Arc::new(pool.run(move || open_append(&p))?);
        let size = loaded.bytes.len() as u64;
        let mut store = Store {
            path, dir: dir.to_string(), file, lock: Arc::new(lock),
            written: size, synced: size, pool, probe, bugs,
        };
        if loaded.valid < size {
            store.cut(loaded.valid, loaded.bytes[loaded.valid as usize..].to_vec())?;
        }
        Ok(store)
    }

    fn cut(&mut self, valid: u64, kept: Vec<u8>) -> io::Result<()> {
        let base = format!("{}.cut-{}", self.path, valid);
        let kept_in = self.pool.run(move || -> io::Result<String> {
            for k in 0..1000 {
                let name = if k == 0 { base.clone() } else { format!("{}.{}", base, k) };
                let file = match OpenOptions::new().write(true).create_new(true).mode(0o644).open(&name) {
                    Ok(file) => file,
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e),
                };
                file.write_all_at(&kept, 0)?;
                file.sync_data()?;
                return Ok(name);
            }
            Err(io::Error::new(io::ErrorKind::Other, format!("{}: too many cut files", base)))
        })?;
        sync_dir(&self.pool, &self.probe, &self.dir)?;
        let (file, probe, path, bug) = (self.file.clone(), self.probe.clone(), self.path.clone(), self.bugs.cut_not_truncated);
        let kept_name = kept_in.clone();
        self.pool.run(move || -> io::Result<()> {
            if !bug {
                file.set_len(valid)?;
            }
            probe.fact("cut", vec![("file", s(&path)), ("size", num(valid)), ("keptIn", s(&kept_name))]);
            file.sync_data()?;
            probe.fact("fsync", vec![("file", s(&path)), ("size", num(valid))]);
            Ok(())
        })?;
        if !self.bugs.cut_not_truncated {
            self.written = valid;
            self.synced = valid;
        }
        Ok(())
    }

    /// Writes one batch with one vectored write (looping on short writes),
    /// reaches flush/written, then fdatasyncs.  On failure the file is cut
    /// back to its last synced size, so the retried batch cannot repeat seqs.
    pub fn append(&mut self, lines: &[String]) -> Result<(), String> {
        let buffers: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
        let total: usize = buffers.iter().map(|b| b.len()).sum();
        let (file, probe, path, injection) = (self.file.clone(), self.probe.clone(), self.path.clone(), self.probe.injection.clone());
        let offset = self.written;
        let wrote = self.pool.run(move || -> io::Result<usize> {
            if let Some(error) = take_injection(&injection, Op::Write) {
                return Err(error);
            }
            let mut done = 0usize;
            while done < total {
                let mut skip = done;
                let mut slices: Vec<IoSlice> = Vec::new();
                for buffer in &buffers {
                    if skip >= buffer.len() {
                        skip -= buffer.len();
                        continue;
                    }
                    slices.push(IoSlice::new(&buffer[skip..]));
                    skip = 0;
                }
                let n = (&*file).write_vectored(&slices)?;
                if n == 0 {
                    return Err(io::Error::new(io::ErrorKind::WriteZero, "the log took no bytes"));
                }
                probe.fact("write", vec![("file", s(&path)), ("offset", num(offset + done as u64)), ("bytes", num(n as u64))]);
                done += n;
            }
            Ok(done)
        });
        if let Err(e) = wrote {
            return Err(self.roll_back(e));
        }
        self.written += total as u64;
        self.probe.reach("flush/written", vec![("file", s(&self.path)), ("size", num(self.written))]);
        let (file, probe, path, injection) = (self.file.clone(), self.probe.clone(), self.path.clone(), self.probe.injection.clone());
        let wrong = if self.bugs.fsync_wrong_file { Some(self.lock.clone()) } else { None };
        let (size, trusting) = (self.written, self.bugs.trusts_failed_fsync);
        let synced = self.pool.run(move || -> io::Result<()> {
            let mut result = match take_injection(&injection, Op::Sync) {
                Some(error) => Err(error),
                None => match &wrong {
                    Some(other) => other.sync_data(),
                    None => file.sync_data(),
                },
            };
            if result.is_err() && trusting {
                result = file.sync_data(); // the broken variant: retry and believe it
            }
            match &result {
                Ok(()) => probe.fact("fsync", vec![("file", s(&path)), ("size", num(size))]),
                Err(e) => probe.fact("fsync-failed", vec![("file", s(&path)), ("size", num(size)), ("error", s(&e.to_string()))]),
            }
            result
        });
        if let Err(e) = synced {
            return Err(self.roll_back(e));
        }
        self.synced = self.written;
        Ok(())
    }

    /// After a failed write or fsync: every byte since the last good fsync may
    /// be lost, so cut them off; the caller keeps the events and writes them
    /// again as new pages.
    fn roll_back(&mut self, error: io::Error) -> String {
        let (file, probe, path, synced) = (self.file.clone(), self.probe.clone(), self.path.clone(), self.synced);
        let cut = self.pool.run(move || -> io::Result<()> {
            file.set_len(synced)?;
            probe.fact("truncate", vec![("file", s(&path)), ("size", num(synced))]);
            Ok(())
        });
        if let Err(e) = cut {
            eprintln!("rust-runtime: error: {}: cannot roll back a failed flush: {}", self.path, e);
            crate::finish(6);
        }
        self.written = synced;
        error.to_string()
    }
}

pub fn now() -> f64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(_) => 0.0,
    }
}
