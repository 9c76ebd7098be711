// The scenario file (docs/scenario-format.md) as this runtime uses it: the
// defaults filled in and the mistakes that would make the run meaningless
// refused with the field's path.  faultlab validates scenarios fully before
// it runs a target; this checks only what the runtime relies on.
'use strict';

const fs = require('fs');
const { parseToml, TomlError } = require('./toml');

class ScenarioError extends Error {}

const TOOL_DEFAULTS = {
  read_only: false,
  idempotent: false,
  parallel_safe: false,
  accepts_idempotency_key: false,
  effect: 'none',
  latency_ms: 0,
  result: 'ok',
  fails: false,
  observes: null,
  calls: [],
};

function check(condition, path, message) {
  if (!condition) throw new ScenarioError(`${path}: ${message}`);
}

function content(raw, path) {
  const out = {
    text: raw.text ?? '',
    repeat: raw.repeat ?? 1,
    chunks: raw.chunks ?? null,
    chunkSize: raw.chunk_size ?? null,
    toolCalls: (raw.tool_calls ?? []).map((call, i) => {
      check(typeof call.tool === 'string', `${path}.tool_calls[${i}].tool`, 'must be a string');
      return { tool: call.tool, arguments: call.arguments ?? {} };
    }),
  };
  check(typeof out.text === 'string', `${path}.text`, 'must be a string');
  check(Number.isInteger(out.repeat) && out.repeat >= 1, `${path}.repeat`, 'must be an integer >= 1');
  return out;
}

function readScenario(file) {
  let raw;
  try {
    raw = parseToml(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    if (error instanceof TomlError) throw new ScenarioError(`${file}:${error.line}: ${error.reason}`);
    throw new ScenarioError(`${file}: ${error.message}`);
  }
  const where = (path) => `${file}: ${path}`;
  check((raw.format ?? 1) === 1, where('format'), 'this runtime reads format 1');
  const tools = {};
  for (const [name, spec] of Object.entries(raw.tools ?? {})) {
    tools[name] = { name, ...TOOL_DEFAULTS, ...spec };
    tools[name].calls = (spec.calls ?? []).map((c) => ({ tool: c.tool, arguments: c.arguments ?? {} }));
  }
  for (const tool of Object.values(tools)) {
    for (const [i, nested] of tool.calls.entries()) {
      check(nested.tool in tools, where(`tools.${tool.name}.calls[${i}].tool`), `unknown tool '${nested.tool}'`);
    }
  }
  check(Array.isArray(raw.turns) && raw.turns.length > 0, where('turns'), 'at least one turn is required');
  const turns = raw.turns.map((turn, t) => {
    check(typeof turn.user === 'string', where(`turns[${t}].user`), 'must be a string');
    check(Array.isArray(turn.steps) && turn.steps.length > 0, where(`turns[${t}].steps`), 'at least one step');
    return {
      user: turn.user,
      steps: turn.steps.map((step, s) => {
        const path = `turns[${t}].steps[${s}]`;
        return {
          ...content(step, where(path)),
          delayMs: step.delay_ms ?? 0,
          chunkDelayMs: step.chunk_delay_ms ?? 0,
          branches: (step.branches ?? []).map((branch, b) => ({
            when: branch.when,
            tool: branch.tool ?? null,
            ...content(branch, where(`${path}.branches[${b}]`)),
          })),
        };
      }),
    };
  });
  const maxParallel = raw.max_parallel_tools ?? 4;
  check(Number.isInteger(maxParallel) && maxParallel >= 1, where('max_parallel_tools'), 'must be >= 1');
  return {
    name: raw.name,
    policy: raw.policy ?? 'semantic',
    backend: raw.backend ?? 'jsonl',
    maxParallel,
    resumePrompt: raw.resume_prompt ?? 'Continue.',
    tools,
    turns,
  };
}

module.exports = { readScenario, ScenarioError };
