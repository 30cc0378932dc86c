// The approval flow of the extension host (src/approvals.ts, with a stub `vscode`): the card
// and the notification stay in sync, and the server's cancel removes both.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Approvals, approveResult } from "../../out/test/approvals.mjs";
import { CancellationTokenSource, shown } from "../stub/vscode.mjs";

const params = (toolCallId = "c1") => ({
  sessionId: "s",
  requestId: "r",
  toolCallId,
  tool: "bash",
  summary: "bash: npm test",
  detail: "npm test",
  detailKind: "command",
  truncated: false,
});
const log = { info() {}, warn() {}, debug() {} };
const tick = () => new Promise((r) => setImmediate(r));

function setup() {
  const actions = [];
  const approvals = new Approvals({ dispatch: (a) => actions.push(a) }, log);
  return { approvals, actions };
}

describe("approvals", () => {
  it("an answer in the card resolves the request and closes the notification", async () => {
    const { approvals, actions } = setup();
    const before = shown.length;
    const answer = approvals.ask(params(), new CancellationTokenSource().token);
    await tick();
    const toast = shown[before];
    assert.match(toast.options.title, /bash: npm test/);
    assert.match(toast.messages[0], /command:tunacode\.approval\.answer/);
    assert.equal(approvals.waiting.length, 1);
    assert.ok(approvals.answer("r", "c1", "allow_session"));
    assert.deepEqual(await answer, { decision: "allow_session" });
    await tick();
    assert.equal(toast.closed, true);
    assert.equal(approvals.waiting.length, 0);
    assert.deepEqual(actions.map((a) => a.type), ["approval_request", "approval_settled"]);
    assert.equal(actions[1].state, "allow_session");
    assert.equal(approvals.answer("r", "c1", "deny"), false, "a late answer is ignored");
  });

  it("closing the notification (Cancel) denies, and the card settles", async () => {
    const { approvals, actions } = setup();
    const before = shown.length;
    const answer = approvals.ask(params("c2"), new CancellationTokenSource().token);
    await tick();
    shown[before].cancel();
    assert.deepEqual(await answer, { decision: "deny" });
    assert.equal(actions.at(-1).state, "deny");
  });

  it("the server's $/cancelRequest removes both and answers deny", async () => {
    const { approvals, actions } = setup();
    const before = shown.length;
    const source = new CancellationTokenSource();
    const answer = approvals.ask(params("c3"), source.token);
    await tick();
    source.cancel();
    assert.deepEqual(await answer, { decision: "deny" });
    await tick();
    assert.equal(shown[before].closed, true);
    assert.equal(actions.at(-1).state, "cancelled");
    assert.equal(approvals.answer("r", "c3", "allow"), false);
  });
});

describe("Always allow", () => {
  it("answers allow_always with the settings file's scope", () => {
    assert.deepEqual(approveResult("allow_always_user"), { decision: "allow_always", scope: "user" });
    assert.deepEqual(approveResult("allow_always_project"), { decision: "allow_always", scope: "project" });
    assert.deepEqual(approveResult("cancelled"), { decision: "deny" });
    assert.deepEqual(approveResult("allow_session"), { decision: "allow_session" });
  });

  it("the server's answer for the Always allow button of an asking card", async () => {
    const dispatched = [];
    const approvals = new Approvals({ dispatch: (a) => dispatched.push(a) }, { info() {}, warn() {}, error() {}, debug() {} });
    const token = new CancellationTokenSource().token;
    const answer = approvals.ask({ ...params("c9"), alwaysAllow: ["bash(npm test*)"] }, token);
    assert.equal(dispatched[0].params.alwaysAllow[0], "bash(npm test*)");
    approvals.answer("r", "c9", "allow_always_project");
    assert.deepEqual(await answer, { decision: "allow_always", scope: "project" });
  });
});
