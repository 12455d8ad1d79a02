// codemode.mjs drives a wasmgate MCP server in Code Mode (--code-mode) with
// the official TypeScript SDK client, as a TypeScript MCP host would: it
// lists the tools and calls run_script three times, with a script that
// calls math.sum and text.upper, one with a type error and one that throws.
//
// Usage:
//   node codemode.mjs stdio COMMAND [ARG...]
//   node codemode.mjs http  URL [KEY]
//
// It prints one JSON line on stdout, what it saw (what the Go test
// cmd/wasmgate/codemode_ts_test.go asserts on), and exits 0, or 1 when the
// SDK itself failed (a thrown error, printed on stderr), 2 on a usage error.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const usage = `usage: node codemode.mjs stdio COMMAND [ARG...]
       node codemode.mjs http  URL [KEY]`;

const scripts = {
  ok: `import { tools } from "toolscript";
const { sum } = await tools.math.sum({ numbers: [3, 4, 5] });
console.log("sum is", sum);
const { text } = await tools.text.upper({ text: "total " + sum });
export default { sum, text };
`,
  typeError: `import { tools } from "toolscript";
const { sum } = await tools.math.sum({ numbers: "three" });
export default sum;
`,
  thrown: `throw new Error("no luck");
`,
};

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  let transport;
  if (mode === 'stdio' && rest.length >= 1) {
    transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' });
  } else if (mode === 'http' && rest.length >= 1) {
    const headers = rest[1] ? { Authorization: `Bearer ${rest[1]}` } : {};
    transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
  } else {
    process.stderr.write(usage + '\n');
    process.exit(2);
  }
  const client = new Client({ name: 'wasmgate-codemode-tsclient', version: '1.0.0' });
  await client.connect(transport);
  const summary = { transport: mode };
  const { tools } = await client.listTools();
  summary.tools = tools.map((t) => t.name);
  summary.description = tools[0]?.description ?? '';
  summary.outputSchema = tools[0]?.outputSchema ?? null;
  for (const [name, script] of Object.entries(scripts)) {
    const res = await client.callTool({ name: 'run_script', arguments: { script } });
    summary[name] = {
      isError: res.isError === true,
      text: res.content?.[0]?.text ?? '',
      structuredContent: res.structuredContent ?? null,
      calls: res._meta?.['wasmgate/script']?.calls ?? null,
    };
  }
  await client.close();
  process.stdout.write(JSON.stringify(summary) + '\n');
}

main().catch((err) => {
  process.stderr.write(`codemode.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
