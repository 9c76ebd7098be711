#!/usr/bin/env node
// A small agent app of a team's own, the kind faultlab crash-tests through an
// adapter file (adapter.toml beside it; docs/agents.md, "Bring your own agent
// app"): MCP tools over stdio with the official TypeScript SDK, an
// OpenAI-compatible model with the `openai` client (Chat Completions,
// streamed), and a session of its own it can resume.
//
// The session is a JSONL file, one Chat Completions message per line, appended
// and fsynced one message at a time, in this order:
//   1. the user message, before the model is asked;
//   2. the assistant message with its tool calls, before any call is run;
//   3. each tool result, once its call returned;
//   4. the final answer, before the process exits 0.
// On --resume the file is read back (a torn last line, from a kill mid-write,
// is cut off), every call without a result is answered "outcome unknown" (the
// app cannot know whether it took effect), the new user text is appended, and
// the loop goes on.  faultlab reads the file with its `openai-chat-jsonl`
// reader.
//
//   node app.mjs --session FILE --mcp-config FILE [--resume] PROMPT
//   env: OPENAI_BASE_URL (ending in /v1), OPENAI_API_KEY, OPENAI_MODEL
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import OpenAI from "openai";

const MAX_STEPS = 20; // model calls per turn, a guard against a loop
const UNKNOWN = "The outcome of this call is unknown: the app stopped before the tool " +
  "returned. It may have taken effect; verify before retrying it.";

function options(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "base-url": { type: "string", default: process.env.OPENAI_BASE_URL },
      model: { type: "string", default: process.env.OPENAI_MODEL ?? "faultlab-model" },
      session: { type: "string" },
      "mcp-config": { type: "string" },
      "mcp-servers-json": { type: "string" },
      resume: { type: "boolean", default: false },
    },
  });
  if (!values["base-url"]) throw new Error("--base-url or OPENAI_BASE_URL is required");
  if (!values.session) throw new Error("--session FILE is required");
  if (positionals.length !== 1) throw new Error("give exactly one prompt");
  // MCP servers as {"name": {"command": ..., "args": [...]}}: inline, or the
  // standard {"mcpServers": {...}} config file.
  let servers = {};
  if (values["mcp-config"]) {
    servers = JSON.parse(fs.readFileSync(values["mcp-config"], "utf8")).mcpServers ?? {};
  }
  if (values["mcp-servers-json"]) servers = { ...servers, ...JSON.parse(values["mcp-servers-json"]) };
  return { ...values, servers, prompt: positionals[0] };
}

// ---- the session file: append + fsync, one message per line ----

class Session {
  constructor(file, { resume }) {
    this.file = file;
    this.messages = [];
    if (resume) {
      if (!fs.existsSync(file)) throw new Error(`no session to resume at ${file}`);
      this.load();
    } else {
      if (fs.existsSync(file) && fs.statSync(file).size > 0) {
        throw new Error(`${file} already holds a session (resume it with --resume)`);
      }
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.closeSync(fs.openSync(file, "a"));
      fsyncPath(path.dirname(file)); // the new file's name is durable too
    }
  }

  load() {
    const data = fs.readFileSync(this.file, "utf8");
    const end = data.lastIndexOf("\n") + 1;
    if (end < data.length) {
      // A line torn by a kill mid-write: cut it off, so the next append starts clean.
      fs.truncateSync(this.file, Buffer.byteLength(data.slice(0, end)));
      fsyncPath(this.file);
    }
    for (const line of data.slice(0, end).split("\n")) {
      if (line.trim()) this.messages.push(JSON.parse(line));
    }
  }

  append(message) {
    const fd = fs.openSync(this.file, "a");
    try {
      fs.writeSync(fd, JSON.stringify(message) + "\n");
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    this.messages.push(message);
  }

  // Every tool call the session holds without a result gets one: the app was
  // killed between recording the call and recording what it returned.
  repair() {
    const answered = new Set(this.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id));
    for (const message of [...this.messages]) {
      for (const call of message.role === "assistant" ? message.tool_calls ?? [] : []) {
        if (!answered.has(call.id)) this.append({ role: "tool", tool_call_id: call.id, content: UNKNOWN });
      }
    }
  }
}

function fsyncPath(where) {
  const fd = fs.openSync(where, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

// ---- MCP: every server's tools, offered to the model by name ----

async function connect(servers) {
  const clients = [];
  const tools = new Map(); // the model's name -> { client, name, tool }
  for (const [server, spec] of Object.entries(servers)) {
    const transport = new StdioClientTransport({
      command: spec.command,
      args: spec.args ?? [],
      env: { ...getDefaultEnvironment(), ...(spec.env ?? {}) },
      stderr: "inherit",
    });
    const client = new Client({ name: "faultlab-node-agent-app", version: "0.1.0" });
    await client.connect(transport);
    clients.push(client);
    for (const tool of (await client.listTools()).tools) {
      // A name two servers share is offered as SERVER__TOOL for the second.
      const offered = tools.has(tool.name) ? `${server}__${tool.name}` : tool.name;
      tools.set(offered, { client, name: tool.name, tool });
    }
  }
  return { clients, tools };
}

function toolSpecs(tools) {
  return [...tools].map(([offered, { tool }]) => ({
    type: "function",
    function: {
      name: offered,
      description: tool.description ?? "",
      parameters: tool.inputSchema ?? { type: "object", properties: {} },
    },
  }));
}

async function runTool(tools, call) {
  const entry = tools.get(call.function.name);
  if (!entry) return `error: no tool named ${call.function.name}`;
  let args;
  try {
    args = call.function.arguments ? JSON.parse(call.function.arguments) : {};
  } catch {
    return `error: the arguments are not JSON: ${call.function.arguments}`;
  }
  const result = await entry.client.callTool({ name: entry.name, arguments: args });
  const text = (result.content ?? []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
  return result.isError ? `error: ${text}` : text;
}

// ---- the model: one streamed Chat Completions request ----

async function ask(openai, model, messages, tools) {
  const stream = await openai.chat.completions.create({
    model,
    messages,
    stream: true,
    ...(tools.length ? { tools } : {}),
  });
  let content = "";
  const calls = [];
  for await (const chunk of stream) {
    const delta = chunk.choices?.[0]?.delta ?? {};
    if (delta.content) content += delta.content;
    for (const part of delta.tool_calls ?? []) {
      const call = (calls[part.index ?? 0] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
    }
  }
  const message = { role: "assistant", content };
  const made = calls.filter(Boolean);
  if (made.length) message.tool_calls = made;
  return message;
}

async function main() {
  const opts = options(process.argv.slice(2));
  const session = new Session(opts.session, { resume: opts.resume });
  if (opts.resume) session.repair();
  session.append({ role: "user", content: opts.prompt });
  // No retries: a request the server never answered must not be sent twice.
  const openai = new OpenAI({ baseURL: opts["base-url"], apiKey: process.env.OPENAI_API_KEY ?? "none", maxRetries: 0 });
  const { clients, tools } = await connect(opts.servers);
  try {
    const specs = toolSpecs(tools);
    for (let step = 0; step < MAX_STEPS; step++) {
      const message = await ask(openai, opts.model, session.messages, specs);
      session.append(message); // the calls are on disk before any runs
      if (!message.tool_calls) {
        process.stdout.write(message.content + "\n");
        return 0;
      }
      for (const call of message.tool_calls) {
        session.append({ role: "tool", tool_call_id: call.id, content: await runTool(tools, call) });
      }
    }
    throw new Error(`no final answer after ${MAX_STEPS} model calls`);
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`node-agent-app: ${error?.message ?? error}\n`);
    process.exit(1);
  },
);
