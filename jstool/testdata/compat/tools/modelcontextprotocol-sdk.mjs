import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { z } from "zod";

// An MCP server and client in one process, over the SDK's in-memory transport.
export async function execute() {
  const server = new McpServer({ name: "calc", version: "1.0.0" });
  server.registerTool("add", { description: "Add two numbers", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
  server.registerResource("greeting", "greeting://hello", { mimeType: "text/plain" }, async (uri) => ({ contents: [{ uri: uri.href, text: "hello" }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test-client", version: "1.0.0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  const tools = await client.listTools();
  const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
  const bad = await client.callTool({ name: "add", arguments: { a: "x" } });
  const resource = await client.readResource({ uri: "greeting://hello" });
  await client.close();
  return { server: client.getServerVersion(), tools: tools.tools, sum, bad, resource };
}
