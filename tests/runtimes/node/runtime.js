#!/usr/bin/env node
// A small agent runtime in plain Node.js (no npm packages), written from
// faultlab's documents to be crash-tested by it like any third-party target:
//
//   node runtime.js [--io sync|async] [--bug NAME]... SCENARIO --session-dir DIR
//        [--session-id ID] [--resume [--repair-only]] [--policy P] [--backend jsonl]
//
// README.md in this folder says what it implements, the I/O modes, the
// deliberate bugs (--bug) and the code faultlab must catch each with.
'use strict';

const fs = require('fs');
const path = require('path');
const { Agent } = require('./agent');
const { CorruptLog } = require('./format');
const { ioFor, drive } = require('./io');
const { Probe, UsageError } = require('./probe');
const { planRepair } = require('./repair');
const { readScenario, ScenarioError } = require('./scenario');
const { Store, Locked, takeLock } = require('./store');
const { Ledger } = require('./tools');

const BUGS = new Set([
  'no-log-fsync', 'no-request-checkpoint', 'keep-torn-tail', 'no-writer-lock', 'cut-not-kept',
  'ignore-failed-flush', 'no-cancel-recheck', 'unknown-says-safe',
]);
const EXIT = { ok: 0, usage: 2, internal: 3, corrupt: 4, locked: 5, failClosed: 6, stopped: 7 };

function fail(status, message) {
  process.stderr.write(`node-runtime: error: ${message}\n`);
  process.exit(status);
}

function parseArgs(argv) {
  const args = { io: 'sync', bugs: new Set(), resume: false, repairOnly: false, quiet: false, positional: [] };
  const valued = { '--io': 'io', '--session-dir': 'sessionDir', '--session-id': 'sessionId', '--policy': 'policy', '--backend': 'backend' };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg in valued) {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      args[valued[arg]] = argv[(i += 1)];
    } else if (arg === '--bug') {
      const bug = argv[(i += 1)];
      if (!BUGS.has(bug)) throw new UsageError(`--bug ${bug}: unknown (bugs: ${[...BUGS].join(', ')})`);
      args.bugs.add(bug);
    } else if (arg === '--resume') args.resume = true;
    else if (arg === '--repair-only') args.repairOnly = true;
    else if (arg === '--quiet') args.quiet = true;
    else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`);
    else args.positional.push(arg);
  }
  if (args.positional.length !== 1) throw new UsageError('expected exactly one SCENARIO');
  if (!args.sessionDir) throw new UsageError('--session-dir is required');
  if (args.io !== 'sync' && args.io !== 'async') throw new UsageError(`--io ${args.io}: expected sync or async`);
  if (args.repairOnly && !args.resume) throw new UsageError('--repair-only needs --resume');
  return args;
}

// Where the script goes on, from the (repaired) log: the next scripted step
// of the last turn (with the resume prompt), or the next scripted turn.
function nextCursor(events, scenario) {
  let start = -1;
  for (let i = events.length - 1; i >= 0 && start < 0; i -= 1) if (events[i].type === 'turn/start') start = i;
  const fresh = (t) => (t < scenario.turns.length ? { scriptTurn: t, scriptStep: 0, user: scenario.turns[t].user } : null);
  if (start < 0) return fresh(0);
  const turn = events.slice(start);
  const scriptTurn = turn[0].data.scriptTurn ?? 0;
  const answers = turn.filter((e) => e.type === 'assistant/message');
  const ended = turn.filter((e) => e.type === 'turn/end');
  const last = answers[answers.length - 1];
  const finalAnswer = last !== undefined && !last.data.message.content.some((b) => b.type === 'tool-call');
  if ((ended.length > 0 && ended[ended.length - 1].data.reason.kind === 'completed') || finalAnswer) {
    return fresh(scriptTurn + 1);
  }
  const step = (turn[0].data.scriptStep ?? 0) + answers.length;
  if (step >= scenario.turns[scriptTurn].steps.length) return fresh(scriptTurn + 1);
  return { scriptTurn, scriptStep: step, user: scenario.resumePrompt };
}

async function main() {
  const probe = new Probe();
  let args;
  let scenario;
  try {
    args = parseArgs(process.argv.slice(2));
    probe.attach(process.env);
    scenario = readScenario(args.positional[0]);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ScenarioError) fail(EXIT.usage, error.message);
    throw error;
  }
  const policy = args.policy ?? scenario.policy;
  if (policy !== 'semantic' && policy !== 'turn-only') fail(EXIT.usage, `policy ${policy}: this runtime implements semantic and turn-only`);
  const backend = args.backend ?? scenario.backend;
  if (backend !== 'jsonl') fail(EXIT.usage, `backend ${backend}: this runtime writes JSONL only`);

  const dir = args.sessionDir;
  fs.mkdirSync(dir, { recursive: true });
  try {
    if (!args.bugs.has('no-writer-lock')) takeLock(dir);
  } catch (error) {
    if (error instanceof Locked) fail(EXIT.locked, error.message);
    throw error;
  }
  const io = ioFor(args.io);
  const store = new Store({ io, dir, probe, bugs: args.bugs });
  probe.on('fail-next-flush', (reply) => store.arm(reply.op, reply.errno));
  const existed = store.exists();
  if (existed && !args.resume) fail(EXIT.usage, `${store.path}: a session already exists here (use --resume)`);
  if (!existed && args.repairOnly) fail(EXIT.usage, `${store.path}: no session log`);
  try {
    if (existed) {
      const note = await drive(store.open());
      if (note && !args.quiet) process.stderr.write(`node-runtime: ${note}\n`);
    } else {
      await drive(store.create(args.sessionId ?? require('crypto').randomBytes(16).toString('hex')));
    }
  } catch (error) {
    if (error instanceof CorruptLog) fail(EXIT.corrupt, error.message);
    throw error;
  }

  const ledger = new Ledger(io, path.join(dir, 'world-ledger.jsonl'));
  const agent = new Agent({ scenario, store, probe, ledger, policy, bugs: args.bugs });
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => agent.cancel.cancel());

  if (existed) {
    const plan = planRepair(store.events, scenario.tools, args.bugs);
    if (plan.length > 0) {
      const first = store.events.length;
      for (const { type, data } of plan) store.append(type, data);
      agent.reach('repair/logged', { first, count: plan.length });
      if (!(await store.flush())) fail(EXIT.failClosed, `the repair could not be made durable: ${store.lastError}`);
      agent.reach('repair/durable', { first, count: plan.length });
    }
    if (args.repairOnly) {
      process.stdout.write(`repaired: ${plan.length} event(s) appended, log ${store.path}\n`);
      return EXIT.ok;
    }
  }

  let cursor = nextCursor(store.events, scenario);
  let turn = store.events.filter((e) => e.type === 'turn/start').reduce((n, e) => Math.max(n, e.data.turn + 1), 0);
  while (cursor !== null) {
    if (agent.cancel.cancelled) return EXIT.stopped;
    const { reason, durable } = await agent.runTurn(turn, cursor.scriptTurn, cursor.scriptStep, cursor.user);
    if (!durable || reason.kind === 'error') {
      fail(EXIT.failClosed, `a checkpoint could not be made durable (${store.lastError}); stopped fail-closed`);
    }
    if (reason.kind === 'cancelled') return EXIT.stopped;
    turn += 1;
    cursor = nextCursor(store.events, scenario);
  }
  return EXIT.ok;
}

main().then(
  (status) => process.exit(status),
  (error) => {
    process.stderr.write(`node-runtime: internal error: ${error && error.stack ? error.stack : error}\n`);
    process.exit(error && error.syscall ? EXIT.failClosed : EXIT.internal);
  },
);
