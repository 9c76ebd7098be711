// A TOML reader for the subset faultlab's scenario files use (README.md of
// this folder lists it): comments, bare/quoted/dotted keys, basic and
// literal one-line strings, integers, floats, booleans, arrays (over several
// lines, trailing comma allowed), inline tables, [tables] and [[arrays of
// tables]].  Anything else is refused with the line it is on, never guessed.
'use strict';

class TomlError extends Error {
  constructor(line, reason) {
    super(`line ${line}: ${reason}`);
    this.line = line;
    this.reason = reason;
  }
}

const BARE = /[A-Za-z0-9_-]/;
const ESCAPES = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };

class Reader {
  constructor(text) {
    this.text = text;
    this.at = 0;
    this.line = 1;
  }

  fail(message) {
    throw new TomlError(this.line, message);
  }

  peek() {
    return this.text[this.at];
  }

  next() {
    const c = this.text[this.at++];
    if (c === '\n') this.line += 1;
    return c;
  }

  // Spaces and tabs only (a value or key never spans a newline outside arrays).
  blanks() {
    while (this.peek() === ' ' || this.peek() === '\t') this.at += 1;
  }

  // Blanks, newlines and comments: inside arrays, and between statements.
  gaps() {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n') this.next();
      else if (c === '#') while (this.at < this.text.length && this.peek() !== '\n') this.next();
      else return;
    }
  }

  endOfLine() {
    this.blanks();
    if (this.peek() === '#') while (this.at < this.text.length && this.peek() !== '\n') this.next();
    if (this.peek() === '\r') this.next();
    if (this.at < this.text.length && this.next() !== '\n') this.fail('expected the end of the line');
  }

  key() {
    const parts = [];
    for (;;) {
      this.blanks();
      const c = this.peek();
      if (c === '"') parts.push(this.basicString());
      else if (c === "'") parts.push(this.literalString());
      else {
        const start = this.at;
        while (this.at < this.text.length && BARE.test(this.peek())) this.at += 1;
        if (this.at === start) this.fail(`expected a key, found ${JSON.stringify(c ?? 'end of file')}`);
        parts.push(this.text.slice(start, this.at));
      }
      this.blanks();
      if (this.peek() !== '.') return parts;
      this.at += 1;
    }
  }

  basicString() {
    this.next(); // "
    if (this.text.startsWith('""', this.at)) this.fail('multi-line strings are not supported');
    let out = '';
    for (;;) {
      const c = this.next();
      if (c === undefined || c === '\n') this.fail('unterminated string');
      if (c === '"') return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.next();
      if (e in ESCAPES) out += ESCAPES[e];
      else if (e === 'u' || e === 'U') {
        const digits = this.text.slice(this.at, this.at + (e === 'u' ? 4 : 8));
        if (!/^[0-9A-Fa-f]+$/.test(digits) || digits.length !== (e === 'u' ? 4 : 8)) {
          this.fail(`bad \\${e} escape`);
        }
        this.at += digits.length;
        out += String.fromCodePoint(parseInt(digits, 16));
      } else this.fail(`unknown escape \\${e}`);
    }
  }

  literalString() {
    this.next(); // '
    if (this.text.startsWith("''", this.at)) this.fail('multi-line strings are not supported');
    const end = this.text.indexOf("'", this.at);
    const newline = this.text.indexOf('\n', this.at);
    if (end < 0 || (newline >= 0 && newline < end)) this.fail('unterminated string');
    const out = this.text.slice(this.at, end);
    this.at = end + 1;
    return out;
  }

  value() {
    this.blanks();
    const c = this.peek();
    if (c === '"') return this.basicString();
    if (c === "'") return this.literalString();
    if (c === '[') return this.array();
    if (c === '{') return this.inlineTable();
    const start = this.at;
    while (this.at < this.text.length && /[A-Za-z0-9_+\-.:]/.test(this.peek())) this.at += 1;
    const word = this.text.slice(start, this.at);
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (/^[+-]?(0|[1-9](_?[0-9])*)$/.test(word)) {
      const n = Number(word.replace(/_/g, ''));
      if (!Number.isSafeInteger(n)) this.fail(`integer ${word} is out of range`);
      return n;
    }
    if (/^[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?$/.test(word)) {
      return Number(word.replace(/_/g, ''));
    }
    this.fail(`unsupported value ${JSON.stringify(word || c || 'end of file')}`);
  }

  array() {
    this.next(); // [
    const out = [];
    for (;;) {
      this.gaps();
      if (this.peek() === ']') {
        this.next();
        return out;
      }
      out.push(this.value());
      this.gaps();
      const c = this.next();
      if (c === ']') return out;
      if (c !== ',') this.fail("expected ',' or ']' in an array");
    }
  }

  inlineTable() {
    this.next(); // {
    const out = {};
    this.blanks();
    if (this.peek() === '}') {
      this.next();
      return out;
    }
    for (;;) {
      const key = this.key();
      if (this.next() !== '=') this.fail("expected '=' after a key");
      assign(this, out, key, this.value());
      this.blanks();
      const c = this.next();
      if (c === '}') return out;
      if (c !== ',') this.fail("expected ',' or '}' in an inline table");
    }
  }
}

function isTable(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function assign(reader, table, key, value) {
  let here = table;
  for (const part of key.slice(0, -1)) {
    if (!(part in here)) here[part] = {};
    if (!isTable(here[part])) reader.fail(`key ${key.join('.')} redefines a value`);
    here = here[part];
  }
  const last = key[key.length - 1];
  if (Object.prototype.hasOwnProperty.call(here, last)) reader.fail(`duplicate key ${key.join('.')}`);
  here[last] = value;
}

// Walk a header path: an array of tables along the way means its last element.
function descend(reader, root, path) {
  let here = root;
  for (const part of path) {
    if (!(part in here)) here[part] = {};
    let next = here[part];
    if (Array.isArray(next)) next = next[next.length - 1];
    if (!isTable(next)) reader.fail(`[${path.join('.')}] is not a table`);
    here = next;
  }
  return here;
}

function parseToml(text) {
  const reader = new Reader(text);
  const root = {};
  let current = root;
  for (;;) {
    reader.gaps();
    if (reader.at >= text.length) return root;
    if (reader.peek() === '[') {
      reader.next();
      const many = reader.peek() === '[';
      if (many) reader.next();
      const path = reader.key();
      if (reader.next() !== ']' || (many && reader.next() !== ']')) reader.fail('bad table header');
      const parent = descend(reader, root, path.slice(0, -1));
      const last = path[path.length - 1];
      if (many) {
        if (!(last in parent)) parent[last] = [];
        if (!Array.isArray(parent[last])) reader.fail(`[[${path.join('.')}]] is not an array of tables`);
        current = {};
        parent[last].push(current);
      } else {
        if (!(last in parent)) parent[last] = {};
        if (!isTable(parent[last])) reader.fail(`[${path.join('.')}] is not a table`);
        current = parent[last];
      }
      reader.endOfLine();
      continue;
    }
    const key = reader.key();
    if (reader.next() !== '=') reader.fail("expected '=' after a key");
    assign(reader, current, key, reader.value());
    reader.endOfLine();
  }
}

module.exports = { parseToml, TomlError };
