// The blocking-I/O pool: every file write, sync and truncate of the runtime
// runs on one of a few OS threads, never on the main thread, as tokio's
// blocking pool or Go's runtime do it.  The caller waits for the answer, so
// the runtime stays deterministic; which pool thread runs a job is not.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

pub struct Pool {
    jobs: Mutex<Sender<Job>>,
}

impl Pool {
    pub fn new(threads: usize) -> Pool {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..threads {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("blocking-io-{}", i))
                .spawn(move || loop {
                    let job = {
                        let guard = receiver.lock().unwrap_or_else(|e| e.into_inner());
                        match guard.recv() {
                            Ok(job) => job,
                            Err(_) => return,
                        }
                    };
                    job();
                })
                .expect("cannot start an I/O thread");
        }
        Pool { jobs: Mutex::new(sender) }
    }

    /// Runs `work` on a pool thread and waits for its result.
    pub fn run<T, F>(&self, work: F) -> T
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (answer, result) = channel::<T>();
        let job: Job = Box::new(move || {
            let _ = answer.send(work());
        });
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).send(job).expect("the I/O pool is gone");
        result.recv().expect("an I/O job panicked")
    }
}
