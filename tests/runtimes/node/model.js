// The model side: the model-visible history derived from the log
// (docs/log-format.md section 10), the request digest, and the scripted
// model (docs/scenario-format.md): which content a step answers with (its
// own or a branch's) and how its text streams in chunks.
'use strict';

const crypto = require('crypto');

function history(events) {
  const messages = [];
  for (const { type, data } of events) {
    if (type === 'user/message') messages.push({ role: 'user', content: [{ type: 'text', text: data.message }] });
    else if (type === 'assistant/message') messages.push(data.message);
    else if (type === 'tool/result' && (data.parentCallId === undefined || data.parentCallId === null)) {
      const block = { type: 'tool-result', callId: data.callId, content: data.content, isError: data.isError };
      if (data.error !== undefined) block.error = data.error;
      const last = messages[messages.length - 1];
      if (last !== undefined && last.role === 'tool') last.content.push(block);
      else messages.push({ role: 'tool', content: [block] });
    }
  }
  return messages;
}

// JSON with sorted keys and no whitespace: the same messages, the same digest.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function digest(messages) {
  return crypto.createHash('sha256').update(canonical(messages), 'utf8').digest('hex');
}

const toolCalls = (message) => (message.content ?? []).filter((b) => b.type === 'tool-call');

// The step's own content, or its first branch whose code is among the latest
// batch of tool results (those answering the last assistant message that
// called tools), restricted to the branch's tool when it names one.
function chooseContent(step, messages) {
  if (step.branches.length === 0) return step;
  let asked = -1;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i].role === 'assistant' && toolCalls(messages[i]).length > 0) {
      asked = i;
      break;
    }
  }
  const answers = asked >= 0 && messages[asked + 1]?.role === 'tool' ? messages[asked + 1].content : [];
  const names = new Map(asked >= 0 ? toolCalls(messages[asked]).map((b) => [b.id, b.name]) : []);
  for (const branch of step.branches) {
    for (const result of answers) {
      if (result.error?.code === branch.when && (branch.tool === null || names.get(result.callId) === branch.tool)) {
        return branch;
      }
    }
  }
  return step;
}

function chunksOf(content) {
  const text = content.text.repeat(content.repeat);
  if (text === '') return [];
  const points = Array.from(text);
  if (content.chunkSize !== null) {
    const out = [];
    for (let i = 0; i < points.length; i += content.chunkSize) out.push(points.slice(i, i + content.chunkSize).join(''));
    return out;
  }
  if (content.chunks !== null) {
    const n = Math.min(content.chunks, points.length);
    const base = Math.floor(points.length / n);
    const extra = points.length % n;
    const out = [];
    for (let i = 0, at = 0; i < n; i += 1) {
      const size = base + (i < extra ? 1 : 0);
      out.push(points.slice(at, at + size).join(''));
      at += size;
    }
    return out;
  }
  return text.match(/\S*\s+|\S+/g);
}

module.exports = { history, digest, chooseContent, chunksOf, toolCalls };
