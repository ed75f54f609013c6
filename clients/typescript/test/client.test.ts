// The /v1 client and the callback verifier against a live slackbot.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import {
  CallbackError,
  HeaderSignature,
  HeaderTimestamp,
  SlackbotClient,
  SlackbotError,
  callbackSecret,
  signCallback,
  verifyCallback,
} from "../src/index.js";
import { apiKey, assertNoReceipt, assertReceipt, click, client, selfApproved, slackbotURL, uniqueId } from "./support/live.js";

function deletion(id: string, path = "/tmp/x") {
  return { approvals: [{ tool_name: "delete_file", args: { path }, tool_call_id: id }] };
}

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof SlackbotError, `got ${err}`);
    assert.equal(err.status, status);
    assert.equal(err.code, code);
    return true;
  });
}

describe("SlackbotClient", () => {
  test("create, wait, and the results of a click", async () => {
    const id = uniqueId("c");
    const a = await client.create(deletion(id), { requester: "ts client", context: "why", timeout: "10m" });
    assert.equal(a.status, "pending");
    assert.equal(a.calls[0].tool_call_id, id);
    await click(a.token, id, "approve");
    const done = await client.wait(a.token);
    assert.equal(done.status, "resolved");
    assert.deepEqual(done.results?.approvals, { [id]: true });
    const claims = await assertReceipt(a.token, id, { path: "/tmp/x" });
    assert.deepEqual([claims.sub, claims.tool, claims.by], [id, "delete_file", ["U0ALICE"]]);
  });

  test("errors carry slackbot's code and status", async () => {
    await rejects(new SlackbotClient(slackbotURL, "wrong-key").create(deletion("x")), 401, "unauthorized");
    await rejects(client.get("no-such-token"), 404, "not_found");
    await rejects(client.create({ approvals: [] }, { timeout: "forever" }), 400, "invalid_request");
    const id = uniqueId("c");
    // On a route where the key may answer its own approvals, so that the
    // answer is refused for naming a call that is not pending, not for who sent it.
    const a = await client.create(deletion(id), { route: selfApproved });
    await rejects(client.results(a.token, { approvals: { other: true } }), 400, "invalid_request");
    const cancelled = await client.cancel(a.token);
    assert.equal(cancelled.status, "cancelled");
    await assertNoReceipt(a.token, "x");
    await rejects(client.cancel(a.token), 409, "conflict");
  });

  test("the same idempotency key and body return the same token", async () => {
    const id = uniqueId("c");
    const key = uniqueId("idem");
    const a = await client.create(deletion(id), { idempotency_key: key });
    const b = await client.create(deletion(id), { idempotency_key: key });
    assert.equal(b.token, a.token);
    await rejects(client.create(deletion(id, "/other"), { idempotency_key: key }), 409, "conflict");
    await client.cancel(a.token);
  });
});

describe("verifyCallback", () => {
  test("accepts slackbot's signed callback and refuses a changed one", async () => {
    const got = new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve) => {
      const srv = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          res.end();
          srv.close();
          resolve({ headers: req.headers, body: Buffer.concat(chunks) });
        });
      });
      srv.listen(0, "127.0.0.1", () => {
        const port = (srv.address() as AddressInfo).port;
        const id = uniqueId("cb");
        client
          .create(deletion(id), { callback_url: `http://127.0.0.1:${port}/done` })
          .then((a) => client.cancel(a.token))
          .catch((err) => srv.emit("error", err));
      });
    });
    const { headers, body } = await got;
    const secret = await callbackSecret(apiKey);
    const a = await verifyCallback(secret, headers, new Uint8Array(body));
    assert.equal(a.status, "cancelled");

    const changed = Buffer.from(body.toString().replace("cancelled", "resolved"));
    await assert.rejects(verifyCallback(secret, headers, new Uint8Array(changed)), CallbackError);
    await assert.rejects(verifyCallback(await callbackSecret("another key"), headers, new Uint8Array(body)), CallbackError);
    const later = Number(headers[HeaderTimestamp.toLowerCase()]) * 1000 + 301_000;
    await assert.rejects(verifyCallback(secret, headers, new Uint8Array(body), { now: later }), /away from now/);
  });

  test("refuses missing or malformed headers", async () => {
    const secret = await callbackSecret(apiKey);
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = await signCallback(secret, ts, "{}");
    assert.deepEqual(await verifyCallback(secret, new Headers({ [HeaderTimestamp]: ts, [HeaderSignature]: sig }), "{}"), {});
    for (const h of [
      {},
      { [HeaderTimestamp]: ts },
      { [HeaderTimestamp]: "soon", [HeaderSignature]: sig },
      { [HeaderTimestamp]: ts, [HeaderSignature]: sig.toUpperCase() },
      { [HeaderTimestamp]: ts, [HeaderSignature]: sig.slice(0, -2) },
    ]) {
      await assert.rejects(verifyCallback(secret, h, "{}"), CallbackError, JSON.stringify(h));
    }
    const notJSON = await signCallback(secret, ts, "not json");
    await assert.rejects(verifyCallback(secret, { [HeaderTimestamp]: ts, [HeaderSignature]: notJSON }, "not json"), /not JSON/);
  });
});
