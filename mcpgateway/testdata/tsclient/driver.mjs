// driver.mjs: @modelcontextprotocol/sdk's TypeScript client, driven by
// mcpgateway's TestTSClient. The Go test is the one place that knows
// cards, decisions and upstream calls; this script only speaks MCP.
//
// It reads one JSON command a line on stdin and writes one JSON line on
// stdout per answer, tagged with the command's id. Commands run at once,
// concurrently (a call waiting for a person does not block the next
// command). Each names its client ("main" unless said), connected on first
// use with the SDK's Client and StreamableHTTPClientTransport to
// MCP_URL with "Authorization: Bearer $MCP_KEY".
//
//   {"id":"1","op":"list"}                     -> {"id":"1","tools":[…]}
//   {"id":"2","op":"call","name":"…","arguments":{…},"meta":{…}}
//                                              -> {"id":"2","result":{…},"progress":N}
//                                                 or {"id":"2","error":{"code":…,"message":"…"}}
//   {"id":"3","op":"abort","target":"2"}       aborts call 2 (its AbortSignal)
//                                              -> {"id":"3","aborted":"2"}
//   {"id":"4","op":"close","client":"other"}   closes that client's transport
//                                              -> {"id":"4","closed":"other"}
//
// Errors that are not an answer to a command go to stderr.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.MCP_URL ?? '');
const key = process.env.MCP_KEY ?? '';

/** @type {Map<string, Promise<Client>>} */
const clients = new Map();
/** @type {Map<string, AbortController>} */
const calls = new Map();

function client(name) {
  let c = clients.get(name);
  if (!c) {
    c = (async () => {
      const cl = new Client({ name: 'ts-agent', version: '4.5.6' });
      const transport = new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      });
      await cl.connect(transport);
      return cl;
    })();
    clients.set(name, c);
  }
  return c;
}

function out(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

function errorOf(err) {
  return { code: err?.code ?? null, message: String(err?.message ?? err) };
}

async function run(cmd) {
  const cl = await client(cmd.client ?? 'main');
  switch (cmd.op) {
    case 'list': {
      const res = await cl.listTools();
      return { tools: res.tools };
    }
    case 'call': {
      const ac = new AbortController();
      calls.set(cmd.id, ac);
      let progress = 0;
      try {
        const params = { name: cmd.name, arguments: cmd.arguments ?? {} };
        if (cmd.meta) params._meta = cmd.meta;
        const result = await cl.callTool(params, undefined, {
          signal: ac.signal,
          onprogress: () => {
            progress++;
          },
          resetTimeoutOnProgress: true,
        });
        return { result, progress };
      } finally {
        calls.delete(cmd.id);
      }
    }
    case 'abort': {
      const ac = calls.get(cmd.target);
      if (!ac) throw new Error(`no call ${cmd.target} in progress`);
      ac.abort('the agent gave up');
      return { aborted: cmd.target };
    }
    case 'close': {
      await cl.close();
      clients.delete(cmd.client ?? 'main');
      return { closed: cmd.client ?? 'main' };
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

const lines = createInterface({ input: process.stdin });
const pending = new Set();
lines.on('line', (line) => {
  if (!line.trim()) return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (err) {
    out({ id: null, error: errorOf(err) });
    return;
  }
  const p = run(cmd).then(
    (res) => out({ id: cmd.id, ...res }),
    (err) => out({ id: cmd.id, error: errorOf(err) }),
  );
  pending.add(p);
  p.finally(() => pending.delete(p));
});
lines.on('close', async () => {
  await Promise.allSettled([...pending]);
  for (const c of clients.values()) {
    await (await c).close().catch((err) => console.error(`close: ${err}`));
  }
  process.exit(0);
});
