// The bridge's cost per call, with the official TypeScript SDK's client (installed with
// server-everything by `cargo xtask bridge-server`): server-everything's `echo` called directly
// (over stdio, and over streamable HTTP), then as `everything__echo` through reactor-mcp-server
// bridging the same server (over stdio, and over HTTP); CALLS sequential calls each, after a
// warm-up. Also the time from starting a host to the answer of its first bridged call on a cold
// stdio server (nothing cached).
//
// node bench/scripts/bridge.mjs HOST_BINARY [CALLS]
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const root = resolve(import.meta.dirname, "../..");
const modules = join(root, ".tools/bridge/node_modules");
const sdk = (p) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", p)));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const [host, callsArg] = process.argv.slice(2);
const calls = Number(callsArg ?? 2000);
const node = process.execPath;
const everything = join(modules, "@modelcontextprotocol/server-everything/dist/index.js");

/** p50 latency and calls per second of CALLS sequential calls of `tool`. */
async function measure(client, tool) {
  await client.callTool({ name: tool, arguments: { message: "warm" } });
  const latencies = [];
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    const sent = performance.now();
    await client.callTool({ name: tool, arguments: { message: "hello" } });
    latencies.push(performance.now() - sent);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50_ms: latencies[Math.floor(latencies.length / 2)].toFixed(3), calls_per_s: Math.round(calls / seconds) };
}

async function connected(transport) {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  return client;
}

const http = (url) => new StreamableHTTPClientTransport(new URL(url));

/** Runs `command args` until `pattern` shows in its output; resolves to the match and the process. */
function started(command, args, pattern, env = process.env) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env });
  return new Promise((ok, fail) => {
    let seen = "";
    const read = (chunk) => {
      seen += chunk;
      const found = seen.match(pattern);
      if (found) ok([found[0], child]);
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("exit", () => fail(new Error(`${command} exited: ${seen}`)));
  });
}

/** A fresh plugin folder declaring `servers`, and the options naming it and its cache. */
function folderOf(servers) {
  const dir = mkdtempSync(join(tmpdir(), "bridge-bench-"));
  writeFileSync(join(dir, "mcp.json"), JSON.stringify({ mcpServers: servers }));
  return ["--plugin-dir", dir, "--cache-dir", join(dir, "cache")];
}

/** A host serving `servers` over HTTP. */
function hostOf(servers) {
  return started(host, ["serve", "--port", "0", ...folderOf(servers)], /http:\/\/127\.0\.0\.1:\d+/);
}

const freePort = () => new Promise((ok) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => ok(port));
  });
});

const results = {};

const direct = await connected(new StdioClientTransport({ command: node, args: [everything] }));
results["direct, stdio"] = await measure(direct, "echo");
await direct.close();

const overStdio = await connected(new StdioClientTransport({
  command: host,
  args: ["stdio", "--toolsets", "everything", ...folderOf({ everything: { command: node, args: [everything] } })],
  stderr: "ignore",
}));
results["bridged, stdio client and upstream (host stdio)"] = await measure(overStdio, "everything__echo");
await overStdio.close();

const coldStart = performance.now();
const [stdioUrl, stdioHost] = await hostOf({ everything: { command: node, args: [everything] } });
const viaStdio = await connected(http(`${stdioUrl}/mcp?toolsets=everything`));
await viaStdio.callTool({ name: "everything__echo", arguments: { message: "first" } });
results["host start to first bridged call (cold stdio server)"] = `${Math.round(performance.now() - coldStart)} ms`;
results["bridged, stdio upstream"] = await measure(viaStdio, "everything__echo");
await viaStdio.close();
stdioHost.kill("SIGTERM");

const port = await freePort();
const [, upstream] = await started(node, [everything, "streamableHttp"], /listening|port/i,
  { ...process.env, PORT: String(port) });
const upstreamUrl = `http://127.0.0.1:${port}/mcp`;
const directHttp = await connected(http(upstreamUrl));
results["direct, streamable HTTP"] = await measure(directHttp, "echo");
await directHttp.close();
const [httpUrl, httpHost] = await hostOf({ everything: { type: "http", url: upstreamUrl } });
const viaHttp = await connected(http(`${httpUrl}/mcp?toolsets=everything`));
results["bridged, HTTP upstream"] = await measure(viaHttp, "everything__echo");
await viaHttp.close();
httpHost.kill("SIGTERM");
upstream.kill("SIGTERM");

console.log(JSON.stringify(results, null, 2));
