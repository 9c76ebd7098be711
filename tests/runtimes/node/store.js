// The session log on disk (docs/log-format.md sections 6 and 7.3): the writer
// lock, atomic creation, opening (cutting a torn tail or damage into a cut
// file first), and the flush: one batch per flush, written at the file's end
// and fsynced, rolled back to the last fsync when the write or the fsync
// fails.  Flushes are serialized; a flush asked for while one runs waits
// for it and then writes everything appended meanwhile (coalesced).  Every
// file fact is reported to the probe right after its system call.
'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { encode, readLog } = require('./format');
const { drive, gate } = require('./io');

const LOG = 'session.jsonl';

class Locked extends Error {}

// Node has no flock(2).  flock(1) (util-linux) locks the descriptor it is
// given, and a flock belongs to the open file description, which this
// process keeps open after the helper exits: the lock is ours until we die.
function takeLock(dir) {
  const lockPath = path.join(dir, `${LOG}.lock`);
  const fd = fs.openSync(lockPath, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
  const done = spawnSync('flock', ['--exclusive', '--nonblock', '--conflict-exit-code', '75', '3'], {
    stdio: ['ignore', 'ignore', 'pipe', fd],
  });
  if (done.error) throw new Error(`cannot run flock(1) to lock ${lockPath}: ${done.error.message}`);
  if (done.status === 75) {
    const holder = fs.readFileSync(lockPath, 'utf8').trim() || '?';
    fs.closeSync(fd);
    throw new Locked(
      `${path.join(dir, LOG)}: session is locked by another live writer (pid ${holder}); refusing to open a second writer`,
    );
  }
  if (done.status !== 0) throw new Error(`flock(1) on ${lockPath} failed: ${String(done.stderr).trim()}`);
  fs.ftruncateSync(fd, 0);
  fs.writeSync(fd, `${process.pid}\n`, 0);
  return fd; // never closed: closing it would release the lock
}

function injected(op, errno) {
  const text = errno === 'ENOSPC' ? 'No space left on device' : 'Input/output error';
  const error = new Error(`[Errno ${errno}] ${text} (injected)`);
  error.code = errno;
  error.op = op;
  return error;
}

const nextTick = () => new Promise((resolve) => setImmediate(resolve));

class Store {
  constructor({ io, dir, probe, bugs }) {
    this.io = io;
    this.dir = dir;
    this.path = path.join(dir, LOG);
    this.probe = probe;
    this.bugs = bugs;
    this.events = [];
    this.durable = 0; // events[0..durable) are on disk and fsynced
    this.size = 0; // bytes in the file
    this.synced = 0; // bytes fsynced
    this.failure = null; // {op, errno}: the lab's fail-next-flush
    this.healthy = true; // false from a failed flush until one succeeds
    this.running = null;
    this.queued = null;
  }

  exists() {
    return fs.existsSync(this.path);
  }

  arm(op, errno) {
    if (op !== 'write' && op !== 'sync') throw new Error(`fail-next-flush: unknown op ${JSON.stringify(op)}`);
    this.failure = { op, errno: errno === 'ENOSPC' ? 'ENOSPC' : 'EIO' };
  }

  append(type, data) {
    const event = { seq: this.events.length, type, time: Date.now() / 1000, data };
    this.events.push(event);
    return event;
  }

  // -- creating and opening ---------------------------------------------------

  *create(id) {
    const { io, probe } = this;
    const header = Buffer.from(JSON.stringify({ type: 'session', format: 1, id, createdAt: Date.now() / 1000 }) + '\n');
    const temp = path.join(this.dir, `.${LOG}.${process.pid}.tmp`);
    const fd = yield io.openNew(temp);
    yield io.writeAll(fd, header);
    if (!this.bugs.has('no-log-fsync')) yield io.fsync(fd);
    yield io.close(fd);
    yield io.link(temp, this.path);
    yield io.unlink(temp);
    probe.fact('create', { file: this.path, size: header.length });
    yield io.dirsync(this.dir);
    probe.fact('dirsync', { dir: this.dir });
    this.handle = yield io.openAppend(this.path);
    this.size = this.synced = header.length;
  }

  *open() {
    const { io } = this;
    this.handle = yield io.openAppend(this.path);
    const bytes = yield io.readFile(this.path);
    const loaded = readLog(bytes, this.path); // throws CorruptLog
    this.events = loaded.events;
    this.durable = this.events.length;
    this.size = this.synced = bytes.length;
    if (loaded.cutBytes > 0 && !this.bugs.has('keep-torn-tail')) {
      yield* this.cut(bytes, loaded.validSize);
    }
    return loaded.note;
  }

  // Keep the bytes to cut in a new cut file, durable, before the log loses them.
  *cut(bytes, validSize) {
    const { io, probe } = this;
    let keptIn = null;
    if (!this.bugs.has('cut-not-kept')) {
      let fd;
      for (let k = 0; fd === undefined; k += 1) {
        if (k > 999) throw new Error(`${this.path}: too many cut files at offset ${validSize}`);
        keptIn = `${this.path}.cut-${validSize}${k === 0 ? '' : `.${k}`}`;
        try {
          fd = yield io.openExclusive(keptIn);
        } catch (error) {
          if (error.code !== 'EEXIST') throw error;
        }
      }
      yield io.writeAll(fd, bytes.subarray(validSize));
      yield io.fsync(fd);
      yield io.close(fd);
      yield io.dirsync(this.dir);
      probe.fact('dirsync', { dir: this.dir });
    }
    yield io.truncate(this.handle, validSize);
    this.size = validSize;
    probe.fact('cut', { file: this.path, size: validSize, keptIn });
    yield io.fsync(this.handle);
    this.synced = validSize;
    probe.fact('fsync', { file: this.path, size: validSize });
  }

  // -- flushing -----------------------------------------------------------------

  // Resolves true when every event appended before the call is durable.
  flush() {
    if (this.running !== null) {
      if (this.queued === null) {
        this.queued = this.running.then(() => {
          this.queued = null;
          return this.flush();
        });
      }
      return this.queued;
    }
    gate.enter();
    if (this.io.mode === 'sync') {
      try {
        return Promise.resolve(drive(this.write()));
      } finally {
        gate.leave();
      }
    }
    // Async: let whatever runs now (sibling tool calls starting together)
    // append and report first, then write all of it as one batch.
    this.running = nextTick()
      .then(() => drive(this.write()))
      .finally(() => {
        this.running = null;
        gate.leave();
      });
    return this.running;
  }

  *write() {
    const { io, probe } = this;
    const first = this.durable;
    const last = this.events.length - 1;
    if (first > last) {
      this.healthy = true;
      return true;
    }
    const batch = encode(this.events.slice(first));
    const failure = this.failure;
    this.failure = null;
    try {
      if (failure?.op === 'write') throw injected('write', failure.errno);
      const offset = this.size;
      yield io.writeAt(this.handle, batch, offset);
      this.size += batch.length;
      probe.fact('write', { file: this.path, offset, bytes: batch.length });
      probe.reach('flush/written', { file: this.path, size: this.size });
      if (failure?.op === 'sync') throw injected('sync', failure.errno);
      if (!this.bugs.has('no-log-fsync')) yield io.fsync(this.handle);
      this.synced = this.size;
      probe.fact('fsync', { file: this.path, size: this.size });
    } catch (error) {
      if (error.op === 'sync' || error.syscall === 'fsync') {
        probe.fact('fsync-failed', { file: this.path, size: this.size, error: error.message });
      }
      // Never trust the page cache after a failure: back to the last fsync;
      // the events stay and the next flush writes them again, once.
      yield io.truncate(this.handle, this.synced);
      this.size = this.synced;
      probe.fact('truncate', { file: this.path, size: this.size });
      probe.fact('flush', { ok: false, first, last, error: error.message });
      this.lastError = error.message;
      this.healthy = false;
      return false;
    }
    this.durable = last + 1;
    this.healthy = true;
    probe.fact('flush', { ok: true, first, last });
    return true;
  }
}

module.exports = { Store, Locked, takeLock, LOG };
