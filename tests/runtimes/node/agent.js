// The agent loop: a turn is steps; a step logs its request, passes the
// request checkpoint, streams the scripted model, records the assistant
// message, dispatches its tool calls, and passes the post-step checkpoint;
// the loop goes on while the model asks for tools.  The turn's own flush of
// turn/end closes it.  Checkpoint policy `semantic` flushes at each of those
// points; `turn-only` only at turn/end.  A SIGTERM/SIGINT cancels the turn:
// streaming stops between chunks, calls not yet started are aborted, bodies
// already running finish, and the real step/end and turn/end {cancelled}
// are written.
'use strict';

const { gate } = require('./io');
const { history, digest, chooseContent, chunksOf, toolCalls } = require('./model');
const { Dispatcher } = require('./tools');

const immediate = () => new Promise((resolve) => setImmediate(resolve));

class Cancel {
  constructor() {
    this.cancelled = false;
    this.wakers = new Set();
  }

  cancel() {
    this.cancelled = true;
    for (const wake of this.wakers) wake();
    this.wakers.clear();
  }
}

class Agent {
  constructor({ scenario, store, probe, ledger, policy, bugs }) {
    this.scenario = scenario;
    this.store = store;
    this.probe = probe;
    this.ledger = ledger;
    this.policy = policy;
    this.bugs = bugs;
    this.cancel = new Cancel();
    this.dispatcher = new Dispatcher(this);
    this.failedCheckpoint = false;
  }

  reach(name, facts) {
    if (gate.inFlight) {
      // A report while a thread-pool write or fsync runs would land anywhere
      // among the system calls: the I/O sections must keep the loop quiet.
      throw new Error(`internal: ${name} reached while file I/O is in flight`);
    }
    this.probe.reach(name, facts);
  }

  async checkpoint() {
    if (this.policy === 'turn-only') return true;
    const ok = await this.store.flush();
    if (!ok) this.failedCheckpoint = true;
    return ok;
  }

  // Right before a dispatch: its checkpoint passed, but if a flush has failed
  // since (a sibling call's), nothing is dispatched until one succeeds
  // (docs/probe-protocol.md section 4, io-error), so try once more.
  async stillDurable() {
    return this.store.healthy || this.checkpoint();
  }

  // Two turns of the event loop: a signal that arrived while the runtime was
  // busy (or parked) has had its poll phase, so its handler has run.  Then
  // wait out any I/O another task started meanwhile.
  async letSignalsIn() {
    await immediate();
    await immediate();
    await gate.idle();
  }

  async sleep(ms, { cancellable }) {
    if (ms > 0 && !(cancellable && this.cancel.cancelled)) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        if (cancellable) {
          this.cancel.wakers.add(() => {
            clearTimeout(timer);
            resolve();
          });
        }
      });
    }
    await gate.idle();
  }

  // -> {reason, durable}
  async runTurn(turn, scriptTurn, scriptStep, userText) {
    const { store } = this;
    store.append('turn/start', { turn, scriptTurn, scriptStep });
    store.append('user/message', { turn, message: userText });
    this.reach('turn/started', { turn });
    const steps = this.scenario.turns[scriptTurn].steps;
    let reason = { kind: 'completed' };
    for (let step = 0, k = scriptStep; k < steps.length; step += 1, k += 1) {
      await this.letSignalsIn();
      if (this.cancel.cancelled) {
        reason = { kind: 'cancelled' };
        break;
      }
      const outcome = await this.runStep(turn, step, scriptTurn, k);
      if (outcome === 'final') break;
      if (outcome !== 'more') {
        reason = outcome === 'cancelled' ? { kind: 'cancelled' } : { kind: 'error', message: store.lastError };
        break;
      }
    }
    store.append('turn/end', { turn, reason });
    this.reach('turn/logged', { turn, reason: reason.kind });
    const durable = await store.flush(); // the loop's own flush, under every policy
    if (durable) this.reach('turn/durable', { turn });
    return { reason, durable };
  }

  // -> 'more' (the model asked for tools), 'final', 'cancelled' or 'error'
  async runStep(turn, step, scriptTurn, k) {
    const { store } = this;
    store.append('step/start', { turn, step });
    const messages = history(store.events);
    const requestId = `req-t${turn}-s${step}`;
    const sent = digest(messages);
    const envelope = {
      model: 'faultlab-node-scripted',
      params: { scriptTurn, scriptStep: k },
      tools: Object.keys(this.scenario.tools),
      messageCount: messages.length,
      digest: sent,
    };
    const header = store.append('request/header', { turn, step, requestId, envelope });
    this.reach('request/logged', { requestId, seq: header.seq, digest: sent });
    if (!this.bugs.has('no-request-checkpoint')) {
      const ok = (await this.checkpoint()) && (await this.stillDurable());
      if (!ok && !this.bugs.has('ignore-failed-flush')) {
        store.append('step/end', { turn, step });
        return 'error';
      }
    }
    this.reach('request/durable', { requestId, digest: sent, messageCount: messages.length });

    const spec = this.scenario.turns[scriptTurn].steps[k];
    const content = chooseContent(spec, messages);
    await this.sleep(spec.delayMs, { cancellable: true });
    let index = 0;
    for (const delta of this.cancel.cancelled ? [] : chunksOf(content)) {
      if (index > 0) await this.sleep(spec.chunkDelayMs, { cancellable: true });
      if (this.cancel.cancelled) break;
      store.append('assistant/chunk', { turn, step, index, delta });
      this.reach('model/chunk', { requestId, index });
      index += 1;
    }
    const complete = !this.cancel.cancelled;
    let blocks = [];
    if (complete) {
      blocks = content.toolCalls.map((c, i) => ({
        type: 'tool-call', id: `call-t${turn}-s${step}-${i}`, name: c.tool, arguments: c.arguments,
      }));
      const text = content.text.repeat(content.repeat);
      const message = { role: 'assistant', content: [...(text ? [{ type: 'text', text }] : []), ...blocks] };
      const recorded = store.append('assistant/message', { turn, step, message });
      this.reach('assistant/recorded', { requestId, seq: recorded.seq, callIds: blocks.map((b) => b.id) });
      if (blocks.length > 0) await this.dispatcher.runStep(turn, step, recorded.seq, blocks);
    }
    store.append('step/end', { turn, step });
    this.reach('step/logged', { turn, step });
    if (!(await this.checkpoint())) return 'error';
    this.reach('step/durable', { turn, step });
    if (this.failedCheckpoint) return 'error'; // a tool checkpoint failed: no further request
    if (!complete || (this.cancel.cancelled && blocks.length > 0)) return 'cancelled';
    return toolCalls({ content: blocks }).length > 0 ? 'more' : 'final';
  }
}

module.exports = { Agent };
