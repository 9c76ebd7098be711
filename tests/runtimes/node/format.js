// The session log's bytes (docs/log-format.md, sections 2-4 and 7): encoding
// events as lines, and reading a log back: the header, the good events, where
// the valid part ends, and what must be cut (a torn tail, damage after the
// last completed turn) or refused (a bad line before a later turn/end).
'use strict';

const TYPES = new Set([
  'turn/start', 'user/message', 'step/start', 'step/end', 'request/header', 'assistant/chunk',
  'assistant/message', 'tool/call', 'tool/result', 'turn/end',
]);

class CorruptLog extends Error {}

function encode(events) {
  return Buffer.from(events.map((e) => JSON.stringify(e) + '\n').join(''), 'utf8');
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function problemOf(value, expected) {
  if (!isObject(value)) return 'not a JSON object';
  if (!Number.isInteger(value.seq) || value.seq < 0) return "field 'seq' is missing or not a whole number";
  if (!TYPES.has(value.type)) return `unknown event type ${JSON.stringify(value.type)}`;
  if (typeof value.time !== 'number') return "field 'time' is not a number";
  if (!isObject(value.data)) return "field 'data' is not an object";
  if (value.seq > expected) return `seq gap: seq ${value.seq} where ${expected} was expected`;
  if (value.seq < expected) return `seq duplicate: seq ${value.seq} where ${expected} was expected`;
  return null;
}

function decode(line) {
  try {
    return JSON.parse(line.toString('utf8'));
  } catch (error) {
    return undefined;
  }
}

// -> {header, events, validSize, cutBytes, note}; throws CorruptLog.
function readLog(bytes, path) {
  const corrupt = (line, offset, problem) =>
    new CorruptLog(`${path}:${line}: corrupt session log at byte ${offset}: ${problem}`);
  const first = bytes.indexOf(10);
  if (first < 0) throw corrupt(1, 0, 'no complete session header line');
  const header = decode(bytes.subarray(0, first));
  if (header === undefined) throw corrupt(1, 0, 'header is not JSON');
  if (!isObject(header) || header.type !== 'session') throw corrupt(1, 0, 'first line is not a session header');
  if (header.format !== 1) throw corrupt(1, 0, `header field 'format' is ${JSON.stringify(header.format)}; this reader knows 1`);
  if (typeof header.id !== 'string') throw corrupt(1, 0, "header field 'id' is missing or not a string");
  const lines = []; // [offset, bytes]
  let at = first + 1;
  for (;;) {
    const end = bytes.indexOf(10, at);
    if (end < 0) break;
    lines.push([at, bytes.subarray(at, end)]);
    at = end + 1;
  }
  const events = [];
  for (let i = 0; i < lines.length; i += 1) {
    const [offset, line] = lines[i];
    const value = decode(line);
    const problem = value === undefined ? 'not JSON' : problemOf(value, events.length);
    if (problem === null) {
      events.push(value);
      continue;
    }
    const laterTurnEnd = lines.slice(i + 1).some(([, later]) => {
      const v = decode(later);
      return isObject(v) && v.type === 'turn/end';
    });
    if (laterTurnEnd) throw corrupt(i + 2, offset, problem);
    return {
      header, events, validSize: offset, cutBytes: bytes.length - offset,
      note: `line ${i + 2} (byte ${offset}) is damaged after the last completed turn and was cut with everything after it: ${problem}`,
    };
  }
  const tail = bytes.length - at;
  return {
    header, events, validSize: at, cutBytes: tail,
    note: tail > 0 ? `torn last line of ${tail} bytes at byte ${at} was cut` : null,
  };
}

module.exports = { encode, readLog, CorruptLog, TYPES };
