// Deliberate bugs (`--bug NAME`): broken variants of this runtime that the
// crash lab must catch, each with the code named here (README.md).

#[derive(Clone, Copy, Default)]
pub struct Bugs {
    /// The log's flush fdatasyncs the lock file and reports an fsync of the
    /// log: FSYNC_WRONG_FILE (system-call ground truth).
    pub fsync_wrong_file: bool,
    /// No tool checkpoint: the body runs before its tool/call is durable:
    /// TOOL_INTENT_LOST.
    pub no_tool_checkpoint: bool,
    /// Repair answers every dangling call TOOL_NOT_STARTED:
    /// REPAIR_MISCLASSIFIED.
    pub repair_all_not_started: bool,
    /// A torn tail is kept in its cut file but the log is never truncated:
    /// the next append is glued to the torn line.
    pub cut_not_truncated: bool,
    /// No flock on the lock file: SEQ_FORK.
    pub no_writer_lock: bool,
    /// No SIGTERM handler: GRACEFUL_CLOSE_MISSING.
    pub dies_on_sigterm: bool,
    /// A failed fdatasync is retried and its success believed, unreported:
    /// FSYNC_FAILURE_TRUSTED.
    pub trusts_failed_fsync: bool,
    /// The request checkpoint swallows a failed flush and calls the model:
    /// DISPATCH_AFTER_FAILED_CHECKPOINT.
    pub ignores_failed_flush: bool,
    /// A resumed run (--resume) makes no request or tool checkpoint: caught
    /// by double-sigkill only.
    pub resume_skips_checkpoints: bool,
}

pub const NAMES: [&str; 9] = [
    "fsync-wrong-file", "no-tool-checkpoint", "repair-all-not-started", "cut-not-truncated",
    "no-writer-lock", "dies-on-sigterm", "trusts-failed-fsync", "ignores-failed-flush",
    "resume-skips-checkpoints",
];

impl Bugs {
    pub fn enable(&mut self, name: &str) -> bool {
        match name {
            "fsync-wrong-file" => self.fsync_wrong_file = true,
            "no-tool-checkpoint" => self.no_tool_checkpoint = true,
            "repair-all-not-started" => self.repair_all_not_started = true,
            "cut-not-truncated" => self.cut_not_truncated = true,
            "no-writer-lock" => self.no_writer_lock = true,
            "dies-on-sigterm" => self.dies_on_sigterm = true,
            "trusts-failed-fsync" => self.trusts_failed_fsync = true,
            "ignores-failed-flush" => self.ignores_failed_flush = true,
            "resume-skips-checkpoints" => self.resume_skips_checkpoints = true,
            _ => return false,
        }
        true
    }
}
