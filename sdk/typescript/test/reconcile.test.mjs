// Reconciliation against a real Cortadel server: a run, its suggestions, approve, undo and a merge by hand.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CortadelClient, CortadelError } from "@cortadel/sdk";
import { startServer } from "./support.mjs";

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const FACTS = [
  "User's manager is Dana Lee.",
  "User's manager wants the report on Friday.",
  "Jonathan Reyes is User's dentist.",
  "Jonathon Reyes moved the appointment to Monday.",
];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("a run, its suggestions, approve, undo and a merge by hand", async () => {
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "ts-reconcile" });
  assert.deepEqual(await client.reconcileStatus(), { status: "idle", run: null });
  const ids = [];
  for (const text of FACTS) ids.push((await client.add(text)).id);
  for (let i = 0; ; i++) {
    const memories = await Promise.all(ids.map((id) => client.get(id)));
    if (memories.every((m) => m?.extractionStatus === "done")) break;
    assert.ok(i < 300, "enrichment did not finish");
    await sleep(100);
  }

  const run = await client.reconcile({ limit: 100, types: ["entities"] });
  assert.deepEqual([run.status, run.types, run.limit, run.suggested], ["queued", ["entities"], 100, 0]);
  let status;
  for (let i = 0; (status = await client.reconcileStatus(run.id)).status !== "completed"; i++) {
    assert.ok(i < 600, `run still ${status.status}`);
    await sleep(100);
  }
  assert.deepEqual([status.run.id, status.run.suggested, status.run.autoApproved, status.run.error], [run.id, 3, 2, null]);

  const pending = await client.listMergeSuggestions({ status: "pending" });
  assert.equal(pending.total, 1);
  const [merge] = pending.items;
  assert.deepEqual([merge.kind, merge.subject, merge.confidence, merge.runId, merge.decidedBy], [
    "merge_entities", { source: "jonathon reyes", target: "jonathan reyes" }, 0.85, run.id, null,
  ]);
  const approved = await client.approveSuggestion(merge.id);
  assert.deepEqual([approved.status, approved.decidedBy], ["approved", "hand"]);
  const undone = await client.undoSuggestion(merge.id);
  assert.equal(undone.status, "rejected");
  assert.ok(undone.undoneAt >= approved.decidedAt);
  assert.equal((await client.listMergeSuggestions({ status: "approved" })).total, 2);

  const byHand = await client.mergeEntities("jonathon reyes", "jonathan reyes");
  assert.deepEqual([byHand.id, byHand.status, byHand.confidence], [merge.id, "approved", 1]);
  await assert.rejects(client.rejectSuggestion(merge.id), (error) => {
    assert.ok(error instanceof CortadelError);
    assert.deepEqual([error.status, error.code, error.message], [409, "conflict", `Suggestion ${merge.id} is approved, not pending`]);
    return true;
  });
});

test("cancelReconcileRun: a finished run answers 409, an unknown or another user's run 404", async () => {
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "ts-reconcile-cancel" });
  const run = await client.reconcile();
  let status;
  for (let i = 0; (status = await client.reconcileStatus(run.id)).status !== "completed"; i++) {
    assert.ok(i < 300, `run still ${status.status}`); // nothing to look at: it ends at once
    await sleep(100);
  }
  await assert.rejects(client.cancelReconcileRun(run.id), (error) => {
    assert.ok(error instanceof CortadelError);
    assert.deepEqual([error.status, error.code, error.message], [
      409, "conflict", `Run ${run.id} is completed: only a queued or running run can be cancelled`,
    ]);
    return true;
  });
  const other = new CortadelClient({ baseUrl: server.baseUrl, userId: "ts-reconcile-other" });
  for (const [who, id] of [[client, "no-such-run"], [other, run.id]]) {
    await assert.rejects(who.cancelReconcileRun(id), (error) => {
      assert.deepEqual([error.status, error.code], [404, "not_found"]);
      return true;
    });
  }
});
