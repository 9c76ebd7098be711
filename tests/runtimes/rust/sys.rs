// The few C library calls std does not wrap: signal handlers, flock, _exit.
// libc is linked into every std binary, so declaring them needs no crate.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

extern "C" {
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
    fn flock(fd: c_int, operation: c_int) -> c_int;
    fn _exit(status: c_int) -> !;
}

const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;
const LOCK_EX: c_int = 2;
const LOCK_NB: c_int = 4;

/// Set by SIGTERM/SIGINT: the running turn stops at its next safe point.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signum: c_int) {
    STOP.store(true, Ordering::SeqCst); // async-signal-safe: one atomic store
}

pub fn install_stop_handlers() {
    // glibc's signal() installs with SA_RESTART, so blocking reads in other
    // threads are resumed, not failed with EINTR.
    unsafe {
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
    }
}

pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// An exclusive, non-blocking flock: false when another process holds it.
pub fn try_lock(fd: c_int) -> std::io::Result<bool> {
    if unsafe { flock(fd, LOCK_EX | LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    if error.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(error)
    }
}

/// Leaves at once, running nothing (the lab went away: protocol section 5).
pub fn exit_now(status: i32) -> ! {
    unsafe { _exit(status) }
}
