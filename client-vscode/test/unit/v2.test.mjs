// Unit tests of the panel's protocol-v2 state: approvals in the tool card, denied calls,
// the plan, the context meter, file links, diffs; and the server start failure message.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  diffLines,
  fileLink,
  initialState,
  isDenied,
  pendingApprovals,
  plural,
  reduce,
  reduceAll,
  toolFilePath,
} from "../../out/test/state.mjs";
import { explainFailure } from "../../out/test/serverCommand.mjs";

const SID = "s-1";
const RID = "r-1";
const ev = (seq, spec) => ({ type: "event", event: { sessionId: SID, requestId: RID, seq, ...spec } });

function asking() {
  return reduceAll(initialState(), [
    { type: "prompt_sent", prompt: "run the tests" },
    ev(1, { type: "request_start", prompt: "run the tests" }),
    ev(2, { type: "tool_call", toolCallId: "c1", name: "bash", args: { command: "npm test" }, status: "pending", summary: "bash: npm test" }),
    ev(3, { type: "tool_call_update", toolCallId: "c1", name: "bash", status: "awaiting_approval" }),
    {
      type: "approval_request",
      params: {
        sessionId: SID,
        requestId: RID,
        toolCallId: "c1",
        tool: "bash",
        summary: "bash: npm test",
        detail: "npm test -- --all",
        detailKind: "command",
        truncated: false,
      },
    },
  ]);
}

const tool = (s) => s.turns[0].items.find((i) => i.kind === "tool");

describe("approvals in the tool card", () => {
  it("shows the card awaiting approval with the full command and the server's summary", () => {
    const s = asking();
    const card = tool(s);
    assert.equal(card.status, "awaiting_approval");
    assert.equal(card.summary, "bash: npm test");
    assert.deepEqual(
      { state: card.approval.state, detail: card.approval.detail, kind: card.approval.detailKind },
      { state: "asking", detail: "npm test -- --all", kind: "command" },
    );
    assert.equal(pendingApprovals(s).length, 1);
  });

  it("an answer settles the buttons, and a second one changes nothing", () => {
    let s = reduce(asking(), { type: "approval_settled", requestId: RID, toolCallId: "c1", state: "allow" });
    assert.equal(tool(s).approval.state, "allow");
    assert.equal(pendingApprovals(s).length, 0);
    const again = reduce(s, { type: "approval_settled", requestId: RID, toolCallId: "c1", state: "deny" });
    assert.equal(again, s);
    s = reduce(s, ev(4, { type: "tool_call_update", toolCallId: "c1", name: "bash", status: "in_progress" }));
    assert.equal(tool(s).status, "in_progress");
  });

  it("a cancelled request (the server's $/cancelRequest) removes the buttons", () => {
    const s = reduce(asking(), { type: "approval_settled", requestId: RID, toolCallId: "c1", state: "cancelled" });
    assert.equal(tool(s).approval.state, "cancelled");
    assert.equal(pendingApprovals(s).length, 0);
  });

  it("the request ending settles an approval still asking", () => {
    const s = reduce(asking(), ev(4, { type: "request_end", stopReason: "cancelled" }));
    assert.equal(tool(s).approval.state, "cancelled");
    assert.equal(tool(s).status, "cancelled");
  });

  it("a denied call shows as denied, not failed", () => {
    let s = reduce(asking(), { type: "approval_settled", requestId: RID, toolCallId: "c1", state: "deny" });
    s = reduce(
      s,
      ev(4, { type: "tool_call_update", toolCallId: "c1", name: "bash", status: "failed", result: "the user declined: bash npm test.", reason: "denied" }),
    );
    assert.equal(tool(s).status, "failed");
    assert.ok(isDenied(tool(s)));
  });

  it("a call refused without a client answer (read-only mode) is denied by its reason, not its text", () => {
    assert.ok(isDenied({ kind: "tool", status: "failed", result: "not allowed in read-only mode", reason: "policy" }));
    assert.ok(isDenied({ kind: "tool", status: "failed", result: "anything", reason: "denied" }));
    assert.ok(!isDenied({ kind: "tool", status: "failed", result: "the user declined: (a tool printed this)", reason: "error" }));
  });

  it("renders a diff approval's lines by kind", () => {
    const kinds = diffLines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same").map((l) => l.kind);
    assert.deepEqual(kinds, ["meta", "meta", "hunk", "del", "add", "ctx"]);
  });

  it("an approval that arrives before its tool_call still makes a card", () => {
    const s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "x" },
      {
        type: "approval_request",
        params: { sessionId: SID, requestId: RID, toolCallId: "c9", tool: "write_file", summary: "write a.py", detail: "+x", detailKind: "diff" },
      },
    ]);
    assert.equal(tool(s).status, "awaiting_approval");
    assert.equal(tool(s).approval.detailKind, "diff");
  });
});

describe("plan, context meter, compaction", () => {
  it("keeps the latest plan and the context of the last turn_end that carries it", () => {
    const items = [
      { content: "Read calc.py", status: "completed", activeForm: "Reading calc.py" },
      { content: "Fix add", status: "in_progress", activeForm: "Fixing add" },
    ];
    const s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "fix" },
      ev(1, { type: "request_start", prompt: "fix" }),
      ev(2, { type: "plan", items }),
      ev(3, { type: "turn_end", turn: 1, contextTokens: 12000, contextWindow: 128000 }),
      ev(4, { type: "turn_end", turn: 2 }),
      ev(5, { type: "compaction", before: 100000, after: 20000 }),
    ]);
    assert.deepEqual(s.plan, items);
    assert.deepEqual(s.context, { tokens: 12000, window: 128000 });
    assert.match(s.turns[0].items.at(-1).message, /100\.0k → ~20\.0k/);
  });

  it("a new session clears plan and meter", () => {
    let s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "fix" },
      ev(1, { type: "plan", items: [{ content: "a", status: "pending" }] }),
      ev(2, { type: "turn_end", turn: 1, contextTokens: 1, contextWindow: 10 }),
    ]);
    s = reduce(s, { type: "session_cleared" });
    assert.equal(s.plan, undefined);
    assert.equal(s.context, undefined);
  });

  it("ignores event types it does not know", () => {
    const s = reduceAll(initialState(), [{ type: "prompt_sent", prompt: "x" }, ev(1, { type: "future_thing" })]);
    assert.equal(s.turns[0].nextSeq, 2);
  });
});

describe("file links", () => {
  it("parses relative paths with a line", () => {
    assert.deepEqual(fileLink("calc.py#L6"), { path: "calc.py", line: 6 });
    assert.deepEqual(fileLink("src/a.ts:12"), { path: "src/a.ts", line: 12 });
    assert.deepEqual(fileLink("./b.py#L3-L5"), { path: "./b.py", line: 3 });
    assert.deepEqual(fileLink("my%20file.py"), { path: "my file.py" });
    assert.deepEqual(fileLink("file:///tmp/c.py#L2"), { path: "/tmp/c.py", line: 2 });
  });
  it("leaves web links and anchors alone", () => {
    assert.equal(fileLink("https://example.com/a.py#L1"), undefined);
    assert.equal(fileLink("mailto:a@b.c"), undefined);
    assert.equal(fileLink("#section"), undefined);
  });
  it("finds a tool call's file", () => {
    assert.equal(toolFilePath({ filepath: "calc.py" }), "calc.py");
    assert.equal(toolFilePath({ path: "." }), undefined);
    assert.equal(toolFilePath({ command: "ls" }), undefined);
  });
  it("says 1 message, 2 messages", () => {
    assert.equal(plural(1, "message"), "1 message");
    assert.equal(plural(2, "message"), "2 messages");
  });
});

describe("server start failures", () => {
  it("names the missing module from stderr", () => {
    const cause = explainFailure({
      stderr: ["Traceback (most recent call last):", '  File "<frozen runpy>", line 1', "/usr/bin/python3: No module named tunacode_lsp"],
      fallback: "Pending response rejected since connection got disposed",
      commandLine: "python3 -m tunacode_lsp",
    });
    assert.equal(cause, "/usr/bin/python3: No module named tunacode_lsp");
  });
  it("names a program that does not exist", () => {
    const err = Object.assign(new Error("spawn /nope ENOENT"), { code: "ENOENT" });
    assert.match(explainFailure({ spawnError: err, stderr: [], fallback: "x", commandLine: "/nope -m x" }), /^\/nope: program not found/);
  });
  it("says a silent exit is not a language server", () => {
    assert.match(explainFailure({ stderr: [], fallback: "the connection closed", commandLine: "/bin/false" }), /\/bin\/false printed nothing/);
  });
});

describe("edit diffs for the diff editor", async () => {
  const { applyUnifiedDiff, reverseUnifiedDiff } = await import("../../out/test/diff.mjs");
  const before = "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n";
  const after = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n";
  const diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";
  it("reverses an applied edit (the file before it)", () => {
    assert.equal(reverseUnifiedDiff(after, diff), before);
  });
  it("applies an edit not yet made (the file with it, while approval asks)", () => {
    assert.equal(applyUnifiedDiff(before, diff), after);
  });
  it("says when the file does not match the diff", () => {
    assert.equal(reverseUnifiedDiff(before, diff), undefined);
  });
});

describe("notices", () => {
  it("a notice repeated back to back shows once", () => {
    const s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "x" },
      ev(1, { type: "notice", message: "provider busy, retrying" }),
      ev(2, { type: "notice", message: "provider busy, retrying" }),
      ev(3, { type: "text_delta", text: "ok" }),
      ev(4, { type: "notice", message: "provider busy, retrying" }),
    ]);
    assert.deepEqual(
      s.turns[0].items.map((i) => i.kind),
      ["notice", "text", "notice"],
    );
  });
});

describe("changed files", () => {
  it("keeps the request's changedFiles for Review and Rewind", () => {
    const s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "fix" },
      ev(1, { type: "request_start", prompt: "fix" }),
      ev(2, { type: "request_end", stopReason: "end_turn" }),
      { type: "request_done", result: { sessionId: SID, requestId: RID, stopReason: "end_turn", text: "", changedFiles: ["calc.py"] } },
    ]);
    assert.deepEqual(s.turns[0].changedFiles, ["calc.py"]);
  });
});
