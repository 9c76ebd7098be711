// The child side of faultlab's probe protocol (docs/probe-protocol.md,
// sections 2-5 and 8): reports on FAULTLAB_PROBE_FDS's first fd, one JSON
// line each, written at once; the armed occurrence parks, reading replies
// from the second fd until "continue".
//
// Node has no blocking read off the main thread short of a worker, and a
// worker blocked in read() keeps process.exit() from returning (measured:
// the process hangs), so replies are read only while parked, on the main
// thread, with a blocking readSync.  A dead lab is noticed there (EOF) and
// at the next report (EPIPE: Node ignores SIGPIPE), so this runtime outlives
// its lab by at most the time to its next boundary.  A reply sent while the
// target is not parked stays in the pipe and releases the next park at once,
// as the protocol asks.
'use strict';

const fs = require('fs');

const BOUNDARIES = [
  'turn/started', 'request/logged', 'request/durable', 'model/chunk', 'assistant/recorded',
  'tool/logged', 'tool/durable', 'tool/effect', 'tool/returned', 'step/logged', 'step/durable',
  'turn/logged', 'turn/durable', 'flush/written', 'repair/logged', 'repair/durable',
];
const LAB_GONE = 70;

class UsageError extends Error {}

class Probe {
  constructor() {
    this.enabled = false;
    this.counts = new Map();
    this.armed = null;
    this.pending = Buffer.alloc(0);
    this.handlers = new Map();
  }

  attach(env) {
    const spec = env.FAULTLAB_PROBE_FDS ?? '';
    if (spec === '') return;
    const parts = spec.split(',');
    if (parts.length !== 2 || !parts.every((p) => /^[0-9]+$/.test(p))) {
      throw new UsageError(`FAULTLAB_PROBE_FDS=${JSON.stringify(spec)}: expected 'REPORT_FD,REPLY_FD'`);
    }
    [this.reportFd, this.replyFd] = parts.map(Number);
    const arm = env.FAULTLAB_ARM ?? '';
    if (arm !== '') {
      const [name, number, extra] = arm.split('#');
      const n = number === undefined ? 1 : /^[0-9]+$/.test(number) ? Number(number) : NaN;
      if (!BOUNDARIES.includes(name) || extra !== undefined || !(n >= 1)) {
        throw new UsageError(`FAULTLAB_ARM=${JSON.stringify(arm)}: expected a boundary name or name#n, n >= 1`);
      }
      this.armed = `${name}#${n}`;
    }
    this.enabled = true;
  }

  on(action, handler) {
    this.handlers.set(action, handler);
  }

  send(message) {
    let data = Buffer.from(JSON.stringify(message) + '\n');
    while (data.length > 0) {
      let written;
      try {
        written = fs.writeSync(this.reportFd, data);
      } catch (error) {
        if (error.code === 'EAGAIN' || error.code === 'EINTR') continue;
        process.exit(LAB_GONE); // EPIPE, EBADF: the lab is gone
      }
      data = data.subarray(written);
    }
  }

  reach(name, facts = {}) {
    if (!this.enabled) return;
    const n = (this.counts.get(name) ?? 0) + 1;
    this.counts.set(name, n);
    const parked = this.armed === `${name}#${n}`;
    this.send(parked ? { boundary: name, n, ...facts, parked: true } : { boundary: name, n, ...facts });
    if (parked) this.park();
  }

  fact(kind, facts) {
    if (this.enabled) this.send({ fact: kind, ...facts });
  }

  park() {
    for (;;) {
      const reply = this.nextReply();
      if (reply.action === 'continue') return;
      const handler = this.handlers.get(reply.action);
      if (handler !== undefined) handler(reply); // fail-next-flush: arm it, stay parked
    }
  }

  nextReply() {
    for (;;) {
      const newline = this.pending.indexOf(10);
      if (newline >= 0) {
        const line = this.pending.subarray(0, newline).toString('utf8');
        this.pending = this.pending.subarray(newline + 1);
        try {
          const value = JSON.parse(line);
          if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value;
        } catch {
          // not JSON: ignored, the target stays parked
        }
        continue;
      }
      const chunk = Buffer.alloc(65536);
      let got;
      try {
        got = fs.readSync(this.replyFd, chunk, 0, chunk.length, null);
      } catch (error) {
        if (error.code === 'EINTR' || error.code === 'EAGAIN') continue;
        process.exit(LAB_GONE);
      }
      if (got === 0) process.exit(LAB_GONE);
      this.pending = Buffer.concat([this.pending, chunk.subarray(0, got)]);
    }
  }
}

module.exports = { Probe, UsageError, BOUNDARIES };
