// Tools: the world ledger (one fsynced JSON line per applied effect, keyed
// by call id; an idempotency key is applied at most once, across restarts),
// the scripted tool bodies, and the dispatcher: each top-level call logged,
// checkpointed (then the cancel token looked at again) and run; consecutive
// parallel-safe calls share a bounded pool, any other call runs alone;
// results appended in model order as soon as every earlier one is in;
// nested calls logged under their parent and covered by its checkpoint.
'use strict';

const fs = require('fs');
const path = require('path');
const { drive } = require('./io');

class Ledger {
  constructor(io, file) {
    this.io = io;
    this.file = file;
    this.fd = null;
    this.records = [];
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
    for (const line of text.split('\n')) {
      try {
        const record = JSON.parse(line);
        if (record !== null && typeof record === 'object') this.records.push(record);
      } catch {
        // a torn last line was never applied
      }
    }
  }

  count(tool) {
    return this.records.filter((r) => r.tool === tool).length;
  }

  // -> true when the effect was applied now, false when its key was before.
  apply(record) {
    return drive(this.write(record));
  }

  *write(record) {
    const { io } = this;
    if (record.key !== null && this.records.some((r) => r.key === record.key)) return false;
    if (this.fd === null) {
      const created = !fs.existsSync(this.file);
      this.fd = yield io.cbOpenAppend(this.file);
      if (created) yield io.dirsync(path.dirname(this.file));
    }
    yield io.cbWriteAll(this.fd, Buffer.from(JSON.stringify(record) + '\n'));
    yield io.cbFsync(this.fd);
    this.records.push(record);
    return true;
  }
}

class Semaphore {
  constructor(size) {
    this.free = size;
    this.queue = [];
  }

  // Runs `task` at once when a slot is free (synchronously), else in turn.
  run(task) {
    if (this.free > 0) {
      this.free -= 1;
      return this.finish(task());
    }
    return new Promise((resolve) => this.queue.push(resolve)).then(() => this.finish(task()));
  }

  finish(promise) {
    return promise.finally(() => {
      const next = this.queue.shift();
      if (next !== undefined) next();
      else this.free += 1;
    });
  }
}

function errorResult(code, text) {
  return { content: text, isError: true, error: { code, message: text } };
}

class Dispatcher {
  constructor(agent) {
    this.agent = agent;
    this.nestedCounts = new Map();
  }

  // Runs the calls of one assistant message; -> {checkpointFailed}.
  async runStep(turn, step, messageSeq, blocks) {
    const { agent } = this;
    const results = new Array(blocks.length);
    let next = 0;
    let checkpointFailed = false;
    const settle = (index, result) => {
      results[index] = result;
      while (next < blocks.length && results[next] !== undefined) {
        const r = results[next];
        const data = { turn, step, callId: blocks[next].id, content: r.content, isError: r.isError };
        if (r.error !== undefined) data.error = r.error;
        data.sourceEventSeqs = [r.source];
        agent.store.append('tool/result', data);
        next += 1;
      }
    };
    const one = (index) =>
      this.runTopLevel(turn, step, messageSeq, blocks[index]).then((r) => {
        if (r.error?.code === 'CHECKPOINT_FAILED') checkpointFailed = true;
        settle(index, r);
      });
    const tools = agent.scenario.tools;
    for (let i = 0; i < blocks.length; ) {
      if (tools[blocks[i].name]?.parallel_safe) {
        let end = i;
        while (end < blocks.length && tools[blocks[end].name]?.parallel_safe) end += 1;
        const pool = new Semaphore(agent.scenario.maxParallel);
        const group = [];
        for (let k = i; k < end; k += 1) group.push(pool.run(() => one(k)));
        await Promise.all(group);
        i = end;
      } else {
        await one(i);
        i += 1;
      }
    }
    return { checkpointFailed };
  }

  async runTopLevel(turn, step, messageSeq, block) {
    const { agent } = this;
    const { store, probe, cancel } = agent;
    const { id, name } = block;
    if (cancel.cancelled) {
      const text = `Tool call ${name} (${id}) was not started: the turn was cancelled before it was dispatched. It had no effect.`;
      return { ...errorResult('ABORTED_BEFORE_DISPATCH', text), source: messageSeq };
    }
    const call = store.append('tool/call', { turn, step, callId: id, name, arguments: block.arguments });
    agent.reach('tool/logged', { callId: id, seq: call.seq, parentCallId: null });
    let ok = await agent.checkpoint();
    await agent.letSignalsIn();
    if (ok) ok = await agent.stillDurable();
    if (!ok) {
      const text = `Tool call ${name} (${id}) was not started: the session could not be saved before running it (${store.lastError}). It had no effect.`;
      return { ...errorResult('CHECKPOINT_FAILED', text), source: call.seq };
    }
    if (cancel.cancelled && !agent.bugs.has('no-cancel-recheck')) {
      const text = `Tool call ${name} (${id}) was not started: the turn was cancelled before it was dispatched. It had no effect.`;
      return { ...errorResult('ABORTED_BEFORE_DISPATCH', text), source: call.seq };
    }
    agent.reach('tool/durable', { callId: id, seq: call.seq, parentCallId: null });
    const result = await this.body({ turn, step, callId: id, name, arguments: block.arguments, parentCallId: null });
    agent.reach('tool/returned', { callId: id, parentCallId: null, isError: result.isError });
    return { ...result, source: call.seq };
  }

  async runNested(parent, name, args) {
    const { agent } = this;
    const k = this.nestedCounts.get(parent.callId) ?? 0;
    this.nestedCounts.set(parent.callId, k + 1);
    const callId = `${parent.callId}.${k}`;
    const { turn, step } = parent;
    const call = agent.store.append('tool/call', {
      turn, step, callId, name, arguments: args, parentCallId: parent.callId,
    });
    agent.reach('tool/logged', { callId, seq: call.seq, parentCallId: parent.callId });
    agent.reach('tool/durable', { callId, seq: call.seq, parentCallId: parent.callId });
    const result = await this.body({ turn, step, callId, name, arguments: args, parentCallId: parent.callId });
    agent.reach('tool/returned', { callId, parentCallId: parent.callId, isError: result.isError });
    const data = { turn, step, callId, content: result.content, isError: result.isError };
    if (result.error !== undefined) data.error = result.error;
    Object.assign(data, { sourceEventSeqs: [call.seq], parentCallId: parent.callId });
    agent.store.append('tool/result', data);
    return result;
  }

  async body(call) {
    const { agent } = this;
    const tools = agent.scenario.tools;
    const spec = tools[call.name];
    if (spec === undefined) {
      return errorResult('TOOL_FAILED', `Tool '${call.name}' does not exist (tools: ${Object.keys(tools).join(', ')}).`);
    }
    if (spec.latency_ms > 0) await agent.sleep(spec.latency_ms, { cancellable: false });
    for (const nested of spec.calls) await this.runNested(call, nested.tool, nested.arguments);
    if (spec.effect === 'ledger') {
      const key = spec.accepts_idempotency_key ? call.callId : null;
      const record = { callId: call.callId, tool: spec.name, arguments: call.arguments, key };
      const applied = await agent.ledger.apply(record);
      agent.reach('tool/effect', { callId: call.callId, tool: spec.name, applied, parentCallId: call.parentCallId });
    }
    let content = spec.result;
    if (spec.observes !== null) content = `${content} (${agent.ledger.count(spec.observes)} ${spec.observes} effect(s) in the world ledger)`;
    return spec.fails ? errorResult('TOOL_FAILED', content) : { content, isError: false };
  }
}

module.exports = { Dispatcher, Ledger };
