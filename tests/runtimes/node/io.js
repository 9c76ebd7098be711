// The two ways this runtime does file I/O, behind one small set of
// operations (--io sync | async):
//
//  sync   fs.*Sync on the main thread: the log opened with fs.openSync(path,
//         'a') and written with fs.writeSync(fd, data, 0, n, position), which
//         Node issues as pwrite64 on an O_APPEND descriptor (Linux appends
//         whatever the offset); fs.fsyncSync on the file and on its directory.
//  async  fs.promises (the log) and fs callbacks (the world ledger): libuv's
//         thread pool makes the system calls, so writes and fsyncs come from
//         other threads than the one reporting to the probe.
//
// Code that does I/O is written once, as generators that `yield` each
// operation (`drive` below): a sync operation returns its value and the
// generator goes on at once, so a sync flush is one uninterrupted run of
// the event loop, like a blocking write; an async operation returns a
// promise and the generator resumes when it settles.  While an async
// operation is in flight `gate.inFlight` is set: the runtime reports no
// boundary then (agent.js asserts it), so each system call sits in the
// strace stream between the reports it belongs between.
'use strict';

const fs = require('fs');
const fsp = fs.promises;
const { promisify } = require('util');

const gate = {
  inFlight: false, // an async system call is running on the thread pool
  busy: 0, // I/O sections requested or running (flushes, ledger records)
  waiters: [],
  // Resolves once no I/O section is pending (at once when none is).
  idle() {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve)).then(() => this.idle());
  },
  enter() {
    this.busy += 1;
  },
  leave() {
    this.busy -= 1;
    if (this.busy === 0) {
      const waiting = this.waiters;
      this.waiters = [];
      for (const resolve of waiting) resolve();
    }
  },
};

// Run a generator of I/O operations: synchronously while they return values,
// asynchronously from the first one that returns a promise.
function drive(generator, input, failure) {
  for (;;) {
    let step;
    step = failure === undefined ? generator.next(input) : generator.throw(failure);
    failure = undefined;
    if (step.done) return step.value;
    const value = step.value;
    if (value instanceof Promise) {
      gate.inFlight = true;
      return value.then(
        (result) => {
          gate.inFlight = false;
          return drive(generator, result);
        },
        (error) => {
          gate.inFlight = false;
          return drive(generator, undefined, error);
        },
      );
    }
    input = value;
  }
}

const syncIo = {
  mode: 'sync',
  openAppend: (path) => fs.openSync(path, 'a'),
  openNew: (path) => fs.openSync(path, 'w'), // O_CREAT | O_TRUNC
  openExclusive: (path) => fs.openSync(path, 'wx'), // O_CREAT | O_EXCL
  writeAt(fd, data, position) {
    let done = 0;
    while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done, position + done);
    return done;
  },
  writeAll(fd, data) {
    let done = 0;
    while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done);
    return done;
  },
  fsync: (fd) => fs.fsyncSync(fd),
  truncate: (fd, size) => fs.ftruncateSync(fd, size),
  close: (fd) => fs.closeSync(fd),
  dirsync(dir) {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
  link: (from, to) => fs.linkSync(from, to),
  unlink: (path) => fs.unlinkSync(path),
  readFile: (path) => fs.readFileSync(path),
  size: (fd) => fs.fstatSync(fd).size,
};

const cb = {
  open: promisify(fs.open),
  write: promisify(fs.write),
  fsync: promisify(fs.fsync),
  close: promisify(fs.close),
  fstat: promisify(fs.fstat),
};

// Handles are FileHandle objects for the log (fs.promises) and plain fds for
// the ledger (callbacks): both kinds are accepted where it matters.
const asyncIo = {
  mode: 'async',
  openAppend: (path) => fsp.open(path, 'a'),
  openNew: (path) => fsp.open(path, 'w'),
  openExclusive: (path) => fsp.open(path, 'wx'),
  async writeAt(handle, data, position) {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
      done += bytesWritten;
    }
    return done;
  },
  async writeAll(handle, data) {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await handle.write(data, done, data.length - done, null);
      done += bytesWritten;
    }
    return done;
  },
  fsync: (handle) => handle.sync(),
  truncate: (handle, size) => handle.truncate(size),
  close: (handle) => handle.close(),
  async dirsync(dir) {
    const handle = await fsp.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  link: (from, to) => fsp.link(from, to),
  unlink: (path) => fsp.unlink(path),
  readFile: (path) => fsp.readFile(path),
  size: async (handle) => (await handle.stat()).size,
  // The ledger's callback flavour: plain fds.
  cbOpenAppend: (path) => cb.open(path, 'a'),
  async cbWriteAll(fd, data) {
    let done = 0;
    while (done < data.length) done += await cb.write(fd, data, done, data.length - done, null);
    return done;
  },
  cbFsync: (fd) => cb.fsync(fd),
};
syncIo.cbOpenAppend = syncIo.openAppend;
syncIo.cbWriteAll = syncIo.writeAll;
syncIo.cbFsync = syncIo.fsync;

function ioFor(mode) {
  return mode === 'async' ? asyncIo : syncIo;
}

module.exports = { drive, gate, ioFor };
