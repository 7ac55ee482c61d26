// The MCP TypeScript SDK's client (@modelcontextprotocol/sdk, from npm: the one the MCP
// Inspector and most desktop assistants use) against `spade-memory mcp`, over stdio or
// streamable HTTP. It lists the tools and calls them with good and bad arguments; the
// SDK checks every result's structured content against the tool's output schema and
// throws when it does not match. Prints one JSON object. Used by
// tests/interop/test_mcp_typescript.py.
//
//   node mcp_client.mjs stdio PYTHON PORT JID     (password in SPADE_MEMORY_AGENT_PASSWORD)
//   node mcp_client.mjs http URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [how, ...rest] = process.argv.slice(2);
const CALLS = [
  ["store_memory", { category: "fact", content: "typescript clients are served" }],
  ["search_memories", { query: "typescript clients" }],
  ["search_memories", { query: "typescript", limit: 500 }],
  ["store_memory", { category: "facts", content: "not a category" }],
  ["get_memory", { id: "no-such-memory" }],
  ["list_memories", { category: "fact" }],
];

function transport() {
  if (how === "stdio") {
    const [python, port, jid] = rest;
    return new StdioClientTransport({
      command: python,
      args: ["-m", "spade_memory", "mcp", "--jid", jid, "--port", port],
      env: { ...process.env },
      stderr: "inherit",
    });
  }
  const [url, token] = rest;
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
const report = { tools: [], calls: [] };
try {
  await client.connect(transport());
  report.tools = (await client.listTools()).tools.map((tool) => tool.name);
  for (const [name, args] of CALLS) {
    try {
      const result = await client.callTool({ name, arguments: args });
      report.calls.push({
        name, isError: Boolean(result.isError), structured: result.structuredContent ?? null,
        text: result.content?.[0]?.text ?? "",
      });
    } catch (error) {
      report.calls.push({ name, threw: String(error) });
    }
  }
} catch (error) {
  report.error = String(error);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(report.error ? 1 : 0);
