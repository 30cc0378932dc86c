// Unit tests of the panel's Changes list state (tunacode.changes per request, Undo marks)
// and the MCP status line (tunacode.status's mcpServers).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { initialState, mcpServersFrom, mcpSummary, reduce, reduceAll } from "../../out/test/state.mjs";

const SID = "s-1";
const RID = "r-1";
const ev = (seq, spec) => ({ type: "event", event: { sessionId: SID, requestId: RID, seq, ...spec } });
const DIFF = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2";

function ended() {
  return reduceAll(initialState(), [
    { type: "prompt_sent", prompt: "fix calc" },
    ev(1, { type: "request_start", prompt: "fix calc" }),
    ev(2, { type: "request_end", stopReason: "end_turn" }),
    { type: "request_done", result: { sessionId: SID, requestId: RID, stopReason: "end_turn", text: "", changedFiles: ["calc.py", "new.py"] } },
  ]);
}

describe("changes of a request", () => {
  it("keeps changedFiles from the result, and the listed changes on that turn", () => {
    let s = ended();
    assert.deepEqual(s.turns[0].changedFiles, ["calc.py", "new.py"]);
    assert.equal(s.turns[0].changes, undefined);
    s = reduce(s, {
      type: "changes",
      requestId: RID,
      truncated: false,
      files: [
        { path: "calc.py", status: "modified", diff: DIFF },
        { path: "new.py", status: "added", diff: "+x" },
        { path: 5, status: "modified", diff: "" }, // malformed: dropped
      ],
    });
    assert.deepEqual(
      s.turns[0].changes.files.map((f) => [f.path, f.status]),
      [
        ["calc.py", "modified"],
        ["new.py", "added"],
      ],
    );
  });

  it("changes of an unknown request change nothing", () => {
    const s = ended();
    assert.equal(reduce(s, { type: "changes", requestId: "other", files: [], truncated: false }), s);
  });

  it("an undone file is marked, the others not", () => {
    let s = reduce(ended(), {
      type: "changes",
      requestId: RID,
      truncated: true,
      files: [
        { path: "calc.py", status: "modified", diff: DIFF },
        { path: "new.py", status: "added", diff: "+x" },
      ],
    });
    s = reduce(s, { type: "file_undone", requestId: RID, path: "calc.py" });
    assert.equal(s.turns[0].changes.files[0].undone, true);
    assert.equal(s.turns[0].changes.files[1].undone, undefined);
    assert.equal(s.turns[0].changes.truncated, true);
  });

  it("an undone hunk is marked on its file, once", () => {
    let s = reduce(ended(), {
      type: "changes",
      requestId: RID,
      truncated: false,
      files: [
        { path: "calc.py", status: "modified", diff: DIFF },
        { path: "new.py", status: "added", diff: "+x" },
      ],
    });
    s = reduce(s, { type: "hunk_undone", requestId: RID, path: "calc.py", index: 1 });
    s = reduce(s, { type: "hunk_undone", requestId: RID, path: "calc.py", index: 1 });
    s = reduce(s, { type: "hunk_undone", requestId: RID, path: "calc.py", index: 0 });
    assert.deepEqual(s.turns[0].changes.files[0].undoneHunks, [1, 0]);
    assert.equal(s.turns[0].changes.files[0].undone, undefined);
    assert.equal(s.turns[0].changes.files[1].undoneHunks, undefined);
  });

  it("a failed listing keeps its message", () => {
    const s = reduce(ended(), { type: "changes_failed", requestId: RID, message: "checkpoints are off" });
    assert.equal(s.turns[0].changes.error, "checkpoints are off");
    assert.deepEqual(s.turns[0].changes.files, []);
  });
});

describe("MCP servers from tunacode.status", () => {
  it("checks the rows: unknown states and malformed rows are dropped", () => {
    assert.equal(mcpServersFrom(undefined), undefined);
    assert.deepEqual(
      mcpServersFrom([
        { name: "time", state: "ready", tools: 2 },
        { name: "db", state: "failed", tools: 0, error: "exited with code 1" },
        { name: "x", state: "exploded", tools: 1 },
        { state: "ready" },
        null,
        { name: "slow", state: "starting", tools: "3" },
      ]),
      [
        { name: "time", state: "ready", tools: 2 },
        { name: "db", state: "failed", tools: 0, error: "exited with code 1" },
        { name: "slow", state: "starting", tools: 0 },
      ],
    );
  });

  it("summarises per state, a failure as an error level, with details per server", () => {
    const s = reduce(initialState(), {
      type: "mcp_servers",
      servers: [
        { name: "time", state: "ready", tools: 2 },
        { name: "db", state: "failed", tools: 0, error: "exited with code 1" },
        { name: "web", state: "not_allowed", tools: 0 },
      ],
    });
    const summary = mcpSummary(s.mcpServers);
    assert.equal(summary.text, "MCP: 1 ready · 1 failed · 1 not allowed");
    assert.equal(summary.level, "error");
    assert.equal(summary.detail, "time: ready, 2 tools\ndb: failed (exited with code 1)\nweb: not allowed");
  });

  it("all ready is ok; one starting is busy; none configured shows nothing", () => {
    assert.equal(mcpSummary([{ name: "a", state: "ready", tools: 1 }]).level, "ok");
    assert.equal(mcpSummary([{ name: "a", state: "ready", tools: 1 }]).detail, "a: ready, 1 tool");
    assert.equal(mcpSummary([{ name: "a", state: "starting", tools: 0 }]).level, "busy");
    assert.equal(mcpSummary([]), undefined);
    assert.equal(mcpSummary(undefined), undefined);
  });
});

describe("a reloaded session keeps its requests (session.get's requests)", () => {
  const replay = (requestId, prompt, text) => [
    { sessionId: "s-1", requestId, seq: 1, type: "request_start", prompt },
    { sessionId: "s-1", requestId, seq: 2, type: "text_delta", text },
    { sessionId: "s-1", requestId, seq: 3, type: "request_end", stopReason: "end_turn" },
  ];
  const events = [...replay("r-a", "fix it", "done"), ...replay("r-b", "thanks", "welcome")];
  const session = { sessionId: "s-1", title: "t", cwd: "/w", projectId: "p", model: "m", createdAt: "", modifiedAt: "",
    messageCount: 4, usage: {}, busy: false };

  it("gives each replayed turn its request when the server has its checkpoints", () => {
    const state = reduce(initialState(), { type: "session_loaded", session, events,
      requests: [{ requestId: "r-a", firstMessage: 0 }, { requestId: "r-b", firstMessage: 2 }] });
    assert.deepEqual(state.turns.map((t) => [t.prompt, t.requestId]), [["fix it", "r-a"], ["thanks", "r-b"]]);
  });

  it("leaves turns without checkpoints (or from an older server) without one", () => {
    const state = reduce(initialState(), { type: "session_loaded", session, events, requests: [{ requestId: "r-b", firstMessage: 2 }] });
    assert.deepEqual(state.turns.map((t) => t.requestId), [undefined, "r-b"]);
    const old = reduce(initialState(), { type: "session_loaded", session, events });
    assert.deepEqual(old.turns.map((t) => t.requestId), [undefined, undefined]);
  });
});
