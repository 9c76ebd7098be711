// Crash repair (docs/log-format.md section 8), a pure function of the log
// and of the tools' retry safety: the events that close an open last turn.
'use strict';

const TEXTS = {
  notStarted: (name, id) =>
    `Tool call ${name} (${id}) was never started: the session stopped before it was dispatched, so it had no effect. Call it again if it is still needed.`,
  unknownSafe: (name, id) =>
    `The outcome of tool call ${name} (${id}) is unknown: the session stopped after it was dispatched and before its result was recorded. The tool is read-only or idempotent, so it is safe to call it again.`,
  unknownVerify: (name, id) =>
    `The outcome of tool call ${name} (${id}) is unknown: the session stopped after it was dispatched and before its result was recorded. It may have taken effect. Do not retry it blindly: retry only if the operation is read-only or idempotent; otherwise verify the external state first or ask the user.`,
};

function safeToRetry(tools, name) {
  const spec = tools[name];
  return spec !== undefined && (spec.read_only || spec.idempotent);
}

// -> [{type, data}] to append, in order (empty: nothing to repair).
function planRepair(events, tools, bugs = new Set()) {
  let start = -1;
  for (let i = events.length - 1; i >= 0; i -= 1) {
    if (events[i].type === 'turn/start') {
      start = i;
      break;
    }
  }
  if (start < 0) return [];
  const turn = events.slice(start);
  if (turn.some((e) => e.type === 'turn/end')) return [];
  const turnNo = turn[0].data.turn;
  const answered = new Set(turn.filter((e) => e.type === 'tool/result').map((e) => e.data.callId));
  const calls = new Map(); // top-level tool/call by call id
  const children = new Map(); // parent call id -> nested tool/call events, log order
  for (const e of turn.filter((e) => e.type === 'tool/call')) {
    const parent = e.data.parentCallId;
    if (parent === undefined || parent === null) calls.set(e.data.callId, e);
    else children.set(parent, [...(children.get(parent) ?? []), e]);
  }
  const out = [];
  const result = (call, code, seq, text, retry, parentCallId) => {
    const data = {
      turn: call.turn, step: call.step, callId: call.callId, content: text, isError: true,
      error: { code, message: text, retry }, sourceEventSeqs: [seq], synthetic: true,
    };
    if (parentCallId) data.parentCallId = parentCallId;
    out.push({ type: 'tool/result', data });
  };
  const unknown = (callEvent) => {
    const { name, callId, parentCallId } = callEvent.data;
    const safe = safeToRetry(tools, name) || bugs.has('unknown-says-safe');
    const text = safe ? TEXTS.unknownSafe(name, callId) : TEXTS.unknownVerify(name, callId);
    result(callEvent.data, 'TOOL_OUTCOME_UNKNOWN', callEvent.seq, text, safe ? 'safe' : 'verify', parentCallId);
  };
  const nested = (callId) => {
    for (const child of children.get(callId) ?? []) {
      nested(child.data.callId);
      if (!answered.has(child.data.callId)) unknown(child);
    }
  };
  for (const message of turn.filter((e) => e.type === 'assistant/message')) {
    for (const block of message.data.message.content ?? []) {
      if (block.type !== 'tool-call' || answered.has(block.id)) continue;
      const call = calls.get(block.id);
      if (call === undefined) {
        const where = { turn: message.data.turn, step: message.data.step, callId: block.id };
        result(where, 'TOOL_NOT_STARTED', message.seq, TEXTS.notStarted(block.name, block.id), 'safe');
      } else {
        nested(block.id);
        unknown(call);
      }
    }
  }
  const starts = turn.filter((e) => e.type === 'step/start');
  const lastStart = starts[starts.length - 1];
  if (lastStart !== undefined && !turn.some((e) => e.type === 'step/end' && e.seq > lastStart.seq)) {
    out.push({ type: 'step/end', data: { turn: lastStart.data.turn, step: lastStart.data.step } });
  }
  out.push({ type: 'turn/end', data: { turn: turnNo, reason: { kind: 'interrupted' } } });
  return out;
}

module.exports = { planRepair };
