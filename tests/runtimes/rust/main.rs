// A small agent runtime in Rust that faultlab can crash-test, written from
// faultlab's documents (docs/probe-protocol.md, docs/log-format.md,
// docs/runtime.md, docs/scenario-format.md, docs/guarantees.md) by someone
// who did not write faultlab's own runtime.  std only; README.md says how to
// build it, which TOML it reads and which deliberate bugs `--bug` turns on.
//
//   runtime SCENARIO --session-dir DIR [--session-id ID] [--resume [--repair-only]]
//           [--policy P] [--backend jsonl] [--ledger PATH] [--bug NAME]... [--quiet]
//
// Exit: 0 done, 2 usage, 3 internal, 4 corrupt log, 5 locked, 6 fail-closed
// (a checkpoint could not be made durable, or another OS error on a file),
// 7 stopped by SIGTERM/SIGINT, 70 the lab went away.

mod agent;
mod bugs;
mod dispatch;
mod json;
mod pool;
mod probe;
mod repair;
mod scenario;
mod script;
mod session;
mod sha256;
mod store;
mod sys;
mod toml;

use agent::{End, Runtime};
use probe::Probe;
use std::sync::{Arc, Mutex};

static PROBE: Mutex<Option<Arc<Probe>>> = Mutex::new(None);

/// Exits with `code` once every buffered probe report is on the pipe.
pub fn finish(code: i32) -> ! {
    let probe = PROBE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(probe) = probe {
        probe.flush();
    }
    std::process::exit(code)
}

fn fail(code: i32, message: &str) -> ! {
    eprintln!("rust-runtime: error: {}", message);
    finish(code)
}

struct Options {
    scenario: String,
    dir: String,
    id: String,
    resume: bool,
    repair_only: bool,
    policy: Option<String>,
    ledger: Option<String>,
    bugs: bugs::Bugs,
    quiet: bool,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let mut scenario = None;
    let mut dir = None;
    let mut o = Options {
        scenario: String::new(), dir: String::new(), id: String::new(), resume: false, repair_only: false,
        policy: None, ledger: None, bugs: bugs::Bugs::default(), quiet: false,
    };
    let value = |args: &mut std::iter::Skip<std::env::Args>, name: &str| -> String {
        match args.next() {
            Some(v) => v,
            None => fail(2, &format!("{} needs a value", name)),
        }
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--session-dir" => dir = Some(value(&mut args, &arg)),
            "--session-id" => o.id = value(&mut args, &arg),
            "--resume" => o.resume = true,
            "--repair-only" => o.repair_only = true,
            "--quiet" => o.quiet = true,
            "--policy" => {
                let policy = value(&mut args, &arg);
                if !scenario::POLICIES.contains(&policy.as_str()) {
                    fail(2, &format!("--policy {:?}: expected one of {}", policy, scenario::POLICIES.join(", ")));
                }
                o.policy = Some(policy);
            }
            "--backend" => {
                let backend = value(&mut args, &arg);
                if backend != "jsonl" {
                    fail(2, &format!("--backend {:?}: this runtime writes only the jsonl backend", backend));
                }
            }
            "--ledger" => o.ledger = Some(value(&mut args, &arg)),
            "--bug" => {
                let name = value(&mut args, &arg);
                if !o.bugs.enable(&name) {
                    fail(2, &format!("--bug {:?}: expected one of {}", name, bugs::NAMES.join(", ")));
                }
            }
            other if other.starts_with('-') => fail(2, &format!("unknown option {}", other)),
            other => {
                if scenario.is_some() {
                    fail(2, &format!("unexpected argument {:?}", other));
                }
                scenario = Some(other.to_string());
            }
        }
    }
    o.scenario = scenario.unwrap_or_else(|| fail(2, "missing SCENARIO"));
    o.dir = dir.unwrap_or_else(|| fail(2, "missing --session-dir DIR"));
    if o.repair_only && !o.resume {
        fail(2, "--repair-only needs --resume");
    }
    if o.id.is_empty() {
        o.id = format!("rust-{}-{}", std::process::id(), store::now() as u64);
    }
    o
}

fn main() {
    let o = options();
    let probe = match Probe::attach() {
        Ok(probe) => Arc::new(probe),
        Err(message) => fail(2, &message),
    };
    *PROBE.lock().unwrap_or_else(|e| e.into_inner()) = Some(probe.clone());
    if !o.bugs.dies_on_sigterm {
        sys::install_stop_handlers();
    }
    let scenario = scenario::load(&o.scenario).unwrap_or_else(|e| fail(2, &e));
    if scenario.backend != "jsonl" {
        fail(2, &format!("{}: backend {:?}: this runtime writes only the jsonl backend", o.scenario, scenario.backend));
    }
    let policy = o.policy.clone().unwrap_or_else(|| scenario.policy.clone());
    if let Err(e) = std::fs::create_dir_all(&o.dir) {
        fail(6, &format!("{}: {}", o.dir, e));
    }
    let pool = Arc::new(pool::Pool::new(3));
    let lock = store::lock(&o.dir, !o.bugs.no_writer_lock, &pool).unwrap_or_else(|e| fail(5, &e));
    let log = store::join(&o.dir, store::LOG_NAME);
    let exists = std::path::Path::new(&log).exists();
    let (events, store) = if exists {
        if !o.resume {
            fail(2, &format!("{}: a session already exists here (use --resume)", log));
        }
        let loaded = store::load(&log).unwrap_or_else(|e| fail(4, &e));
        if let (Some(note), false) = (&loaded.note, o.quiet) {
            eprintln!("rust-runtime: {}", note);
        }
        let store = store::Store::open(&o.dir, &loaded, lock, pool.clone(), probe.clone(), o.bugs)
            .unwrap_or_else(|e| fail(6, &format!("{}: {}", log, e)));
        (loaded.events, store)
    } else {
        if o.repair_only {
            fail(2, &format!("{}: no session log", log));
        }
        let store = store::Store::create(&o.dir, &o.id, lock, pool.clone(), probe.clone(), o.bugs)
            .unwrap_or_else(|e| fail(if e.kind() == std::io::ErrorKind::AlreadyExists { 2 } else { 6 }, &format!("{}: {}", log, e)));
        (Vec::new(), store)
    };
    let ledger_path = o.ledger.clone().unwrap_or_else(|| store::join(&o.dir, "world-ledger.jsonl"));
    let ledger_dir = match std::path::Path::new(&ledger_path).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_string_lossy().into_owned(),
        _ => ".".to_string(),
    };
    let mut runtime = Runtime {
        session: session::Session::new(events, store, probe.clone(), policy == "every-event"),
        ledger: session::Ledger::open(&ledger_path, &ledger_dir, pool.clone()),
        scenario, probe: probe.clone(), policy, bugs: o.bugs, resumed: o.resume && exists,
    };
    let repaired = runtime.repair().unwrap_or_else(|e| fail(6, &format!("{}: the repair could not be made durable: {}", log, e)));
    if o.repair_only {
        if !o.quiet {
            eprintln!("repaired: {} event(s) appended, log {}", repaired, log);
        }
        finish(0);
    }
    while let Some(cursor) = script::next_cursor(&runtime.session.events, &runtime.scenario) {
        if sys::stopping() {
            finish(7);
        }
        match runtime.run_turn(&cursor) {
            End::Completed => {}
            End::Cancelled => finish(7),
            End::Failed(e) => fail(6, &format!("{}: stopped fail-closed: {}", log, e)),
        }
    }
    finish(if sys::stopping() { 7 } else { 0 })
}
