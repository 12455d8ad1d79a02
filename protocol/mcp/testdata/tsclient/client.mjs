// client.mjs drives a wasmgate MCP server with the official TypeScript SDK
// client, as an MCP host written in TypeScript would, and checks what it
// sees: the handshake, tools/list, a valid call, an invalid one, a limit
// hit, and a cancelled call after which the server still answers.
//
// Usage:
//   node client.mjs stdio [--long-tool NAME] COMMAND [ARG...]
//   node client.mjs http  [--long-tool NAME] URL [KEY]
//
// stdio starts COMMAND ARG... (e.g. wasmgate mcp --config registry.json)
// as the SDK's stdio transport does, with this process's environment and
// its stderr passed through; http connects to URL (a streamable HTTP
// endpoint, e.g. http://127.0.0.1:8080/mcp), sending KEY as a Bearer token
// when given. --long-tool names a tool that runs until it is cancelled
// (default test.loop); it is called with {} and aborted after 500 ms.
//
// It prints one JSON line on stdout, the summary of every step (what the
// Go test cmd/wasmgate/mcp_ts_test.go asserts on), and exits 0 when every
// check passed, 1 when one did not (each named in the summary's failures
// and on stderr), 2 on a usage error. Each call carries a W3C traceparent
// in its _meta, so the summary's trace_id finds its audit record.

import { randomBytes } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

const usage = `usage: node client.mjs stdio [--long-tool NAME] COMMAND [ARG...]
       node client.mjs http  [--long-tool NAME] URL [KEY]`;

// cancelAfterMs is how long the long-running call runs before it is
// aborted: long enough that it is surely running in the executor.
const cancelAfterMs = 500;

const summary = { transport: '', failures: [] };

function fail(step, message) {
  summary.failures.push(`${step}: ${message}`);
  process.stderr.write(`tsclient: FAIL ${step}: ${message}\n`);
}

function check(step, ok, message) {
  if (!ok) {
    fail(step, message);
  }
  return ok;
}

const show = (v) => JSON.stringify(v);

// traceparent is a fresh W3C traceparent and the trace id wasmgate records
// for it (the UUID form of its trace-id).
function traceparent() {
  const h = randomBytes(16).toString('hex');
  return {
    header: `00-${h}-${randomBytes(8).toString('hex')}-01`,
    traceID: `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`,
  };
}

// call makes one tools/call and returns what the summary keeps of it: the
// result's flag, first text, structured content and wasmgate's verdict.
async function call(client, name, args, options) {
  const tp = traceparent();
  const res = await client.callTool({ name, arguments: args, _meta: { traceparent: tp.header } }, undefined, options);
  const verdict = res._meta?.['wasmgate/result'] ?? {};
  const text = res.content?.find((c) => c.type === 'text')?.text ?? '';
  return {
    isError: res.isError === true,
    text,
    structuredContent: res.structuredContent ?? null,
    status: verdict.status ?? '',
    reason_codes: verdict.reason_codes ?? null,
    trace_id: verdict.trace_id ?? '',
    sent_trace_id: tp.traceID,
  };
}

function parseArgs(argv) {
  const [mode, ...rest] = argv;
  let longTool = 'test.loop';
  if (rest[0] === '--long-tool') {
    if (rest.length < 2) {
      return null;
    }
    longTool = rest[1];
    rest.splice(0, 2);
  }
  switch (mode) {
    case 'stdio':
      return rest.length >= 1 ? { mode, longTool, command: rest[0], args: rest.slice(1) } : null;
    case 'http':
      return rest.length === 1 || rest.length === 2 ? { mode, longTool, url: rest[0], key: rest[1] ?? '' } : null;
    default:
      return null;
  }
}

function transportFor(opts) {
  if (opts.mode === 'stdio') {
    // The whole environment, not the SDK's default subset: wasmgate reads
    // WASMGATE_CACHE_DIR and the like from it.
    return new StdioClientTransport({ command: opts.command, args: opts.args, env: { ...process.env }, stderr: 'inherit' });
  }
  const headers = opts.key ? { Authorization: `Bearer ${opts.key}` } : {};
  return new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
}

async function session(client, opts) {
  // initialize: connect performs the handshake.
  await client.connect(transportFor(opts));
  const info = client.getServerVersion();
  summary.server = { name: info?.name ?? '', version: info?.version ?? '' };
  check('initialize', summary.server.name === 'wasmgate', `serverInfo.name is ${show(summary.server.name)}, want "wasmgate"`);

  // tools/list: every action, each announced as pure.
  const { tools } = await client.listTools();
  summary.tools = tools.map((t) => t.name);
  const sum = tools.find((t) => t.name === 'math.sum');
  if (check('tools/list', sum !== undefined, `no math.sum among ${show(summary.tools)}`)) {
    summary.sum_tool = { inputSchema: sum.inputSchema, annotations: sum.annotations ?? null };
    check('tools/list', sum.inputSchema?.type === 'object', `math.sum's inputSchema is ${show(sum.inputSchema)}, want an object schema`);
    check('tools/list', sum.annotations?.readOnlyHint === true, `math.sum's readOnlyHint is ${show(sum.annotations?.readOnlyHint)}, want true`);
    check('tools/list', sum.annotations?.openWorldHint === false, `math.sum's openWorldHint is ${show(sum.annotations?.openWorldHint)}, want false`);
  }
  check('tools/list', summary.tools.includes(opts.longTool), `no ${opts.longTool} (--long-tool) among ${show(summary.tools)}`);

  // A valid call: the output as structuredContent, and as text.
  const valid = (summary.valid = await call(client, 'math.sum', { numbers: [1, 2, 39] }));
  check('valid call', !valid.isError, `isError with ${show(valid.text)}`);
  check('valid call', show(valid.structuredContent) === '{"sum":42}', `structuredContent is ${show(valid.structuredContent)}, want {"sum":42}`);
  check('valid call', valid.trace_id === valid.sent_trace_id, `trace_id ${show(valid.trace_id)}, want the traceparent's ${valid.sent_trace_id}`);

  // Invalid arguments: refused by the input schema, naming the pointer.
  const invalid = (summary.invalid = await call(client, 'math.sum', { numbers: [1, 'x'] }));
  check('invalid input', invalid.isError, `not isError: ${show(invalid.text)}`);
  check('invalid input', invalid.text.startsWith('BLOCKED INPUT_SCHEMA_INVALID:') && invalid.text.includes('/numbers/1'),
    `text is ${show(invalid.text)}, want "BLOCKED INPUT_SCHEMA_INVALID: ..." naming /numbers/1`);

  // A limit hit: math.sum's manifest admits 1000 list items.
  const limit = (summary.limit = await call(client, 'math.sum', { numbers: new Array(1001).fill(1) }));
  check('limit hit', limit.isError, `not isError: ${show(limit.text)}`);
  check('limit hit', limit.text.startsWith('BLOCKED LIMIT_EXCEEDED, LIST_TOO_LONG:'),
    `text is ${show(limit.text)}, want "BLOCKED LIMIT_EXCEEDED, LIST_TOO_LONG: ..."`);

  // Cancellation: the SDK sends notifications/cancelled and rejects the
  // call with its abort error; the server stays up.
  const tp = traceparent();
  const ac = new AbortController();
  const started = Date.now();
  const timer = setTimeout(() => ac.abort(), cancelAfterMs);
  summary.cancel = { trace_id: tp.traceID };
  try {
    const res = await client.callTool({ name: opts.longTool, arguments: {}, _meta: { traceparent: tp.header } }, undefined,
      { signal: ac.signal, timeout: 120_000 });
    fail('cancel', `the call returned instead of being aborted: ${show(res.content)}`);
  } catch (err) {
    summary.cancel.error = err instanceof McpError ? 'McpError' : err?.name ?? String(err);
    summary.cancel.code = err?.code ?? null;
    summary.cancel.message = err?.message ?? String(err);
    check('cancel', ac.signal.aborted, `the call failed before it was aborted: ${summary.cancel.message}`);
    check('cancel', err instanceof McpError && err.code === ErrorCode.RequestTimeout && /AbortError/.test(err.message),
      `error is ${summary.cancel.error} ${show(summary.cancel.code)} ${show(summary.cancel.message)}, want the SDK's abort error (McpError ${ErrorCode.RequestTimeout}, AbortError)`);
  } finally {
    clearTimeout(timer);
  }
  summary.cancel.after_ms = Date.now() - started;

  // Still alive: the next call is answered.
  const alive = (summary.alive = await call(client, 'math.sum', { numbers: [1, 2] }));
  check('alive after cancel', !alive.isError && show(alive.structuredContent) === '{"sum":3}',
    `got isError ${alive.isError}, ${show(alive.text)}; want structuredContent {"sum":3}`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts === null) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  summary.transport = opts.mode;
  const client = new Client({ name: 'wasmgate-tsclient', version: '1.0.0' });
  try {
    await session(client, opts);
  } catch (err) {
    fail('session', err?.stack ?? String(err));
  } finally {
    if (opts.mode === 'http' && client.transport?.sessionId) {
      // End the session on the server (DELETE), as a host closing does.
      await client.transport.terminateSession().catch((err) => fail('close', String(err)));
    }
    await client.close().catch((err) => fail('close', String(err)));
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  return summary.failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();
