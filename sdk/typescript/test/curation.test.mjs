// addMedia and communities against a real Cortadel server (server extensions).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CortadelClient } from "@cortadel/sdk";
import { recordingFetch, startServer } from "./support.mjs";

const PNG = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "base64",
  ),
);

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

test("addMedia stores a document's passages and an image by its caption", async () => {
  const recorder = recordingFetch();
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "media-user", fetch: recorder.fetch });
  const notes = await client.addMedia("notes.md", { text: "# Notes\n\nThe staging database is rebuilt every Sunday." });
  assert.equal(notes.mediaType, "text/markdown");
  assert.deepEqual(
    [notes.kind, notes.pages, notes.passages, notes.caption, notes.captionedBy],
    ["document", null, 1, null, null],
  );
  assert.deepEqual(notes.results, [
    { id: notes.results[0].id, memory: "The staging database is rebuilt every Sunday.", event: "ADD", error: null, page: null, offset: 9 },
  ]);
  const image = await client.addMedia("board.png", { data: PNG, caption: "The sprint board shows four open tickets.", tags: ["sprint"] });
  assert.deepEqual(recorder.last().body, {
    user_id: "media-user",
    name: "board.png",
    data: Buffer.from(PNG).toString("base64"),
    caption: "The sprint board shows four open tickets.",
    tags: ["sprint"],
  });
  assert.deepEqual(
    [image.kind, image.mediaType, image.captionedBy, image.results.map((r) => r.memory)],
    ["image", "image/png", "caller", ["The sprint board shows four open tickets."]],
  );
  const stored = await client.get(image.results[0].id);
  assert.equal(stored.metadata.media.id, image.mediaId);
  await assert.rejects(client.addMedia("board.png", { data: PNG }), (error) => {
    assert.equal(error.status, 400);
    assert.match(error.message, /CORTADEL_VISION_MODEL/);
    return true;
  });
});

test("communities lists both levels", async () => {
  const client = new CortadelClient({ baseUrl: server.baseUrl, userId: "communities-user" });
  assert.deepEqual(await client.communities(), []);
  const ids = [];
  for (const text of ["Dana works at Acme in Berlin.", "Dana and Omar review the Acme budget.", "Omar lives in Berlin."]) {
    ids.push((await client.add(text)).id);
  }
  const deadline = Date.now() + 30_000;
  while ((await Promise.all(ids.map((id) => client.get(id)))).some((m) => m.extractionStatus !== "done")) {
    assert.ok(Date.now() < deadline, "enrichment did not finish");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const found = await client.communities();
  const top = found.at(-1);
  assert.deepEqual(
    found.map((c) => [c.level, c.entities, c.parentId]),
    [[0, ["acme"], top.id], [0, ["berlin"], top.id], [0, ["omar"], top.id], [1, ["acme", "berlin", "omar"], null]],
  );
  assert.deepEqual([top.title, top.summarizedBy, top.memoryIds, top.childIds], [
    "Acme, Berlin, Omar", "extractive", ids, found.slice(0, 3).map((c) => c.id),
  ]);
  assert.deepEqual(await client.communities(1), [top]);
});
