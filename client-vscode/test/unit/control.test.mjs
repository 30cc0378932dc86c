// Unit tests of the panel's conversation control (issue 30, protocol v3 section 5):
// a queued prompt is a pending row until its request starts, then a turn; a removed one
// leaves no turn; a steer is pending until the server's `user_message` shows it in the turn.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { initialState, isRunning, reduce, reduceAll } from "../../out/test/state.mjs";

const SID = "s-1";
const ev = (requestId, seq, spec) => ({ type: "event", event: { sessionId: SID, requestId, seq, ...spec } });

function running() {
  return reduceAll(initialState(), [
    { type: "prompt_sent", prompt: "first" },
    ev("r-1", 1, { type: "request_start", prompt: "first", model: "m" }),
    ev("r-1", 2, { type: "text_delta", text: "working" }),
  ]);
}

describe("a prompt queued behind a running request", () => {
  it("is a pending row (no turn) until its request_start, then a turn with its prompt", () => {
    let s = reduceAll(running(), [
      { type: "prompt_queued", key: "q1", prompt: "second" },
      { type: "queue_assigned", key: "q1", requestId: "r-2" },
      ev("r-2", 1, { type: "request_queued", position: 1 }),
    ]);
    assert.equal(s.turns.length, 1);
    assert.deepEqual(s.queued.map((q) => [q.prompt, q.requestId, q.position]), [["second", "r-2", 1]]);
    s = reduceAll(s, [
      ev("r-1", 3, { type: "request_end", stopReason: "end_turn" }),
      ev("r-2", 2, { type: "request_start", prompt: "second", model: "m" }),
      ev("r-2", 3, { type: "text_delta", text: "done" }),
    ]);
    assert.deepEqual(s.queued, []);
    assert.equal(s.turns.length, 2);
    assert.equal(s.turns[1].prompt, "second");
    assert.equal(s.turns[1].requestId, "r-2");
    assert.equal(s.turns[1].items[0].text, "done", "events after request_start apply in order");
    assert.equal(isRunning(s), true);
  });

  it("removed before it starts: its request_end and result leave no turn", () => {
    let s = reduceAll(running(), [
      { type: "prompt_queued", key: "q1", prompt: "second" },
      { type: "queue_assigned", key: "q1", requestId: "r-2" },
      ev("r-2", 1, { type: "request_queued", position: 1 }),
      ev("r-2", 2, { type: "request_end", stopReason: "cancelled" }),
    ]);
    assert.deepEqual(s.queued, []);
    assert.equal(s.turns.length, 1);
    // The host answers a request dropped before it started with queue_removed, not request_done.
    s = reduce(s, { type: "queue_removed", key: "q1" });
    assert.equal(s.turns.length, 1);
    assert.equal(s.banner, undefined, "a removal is no error");
  });

  it("a refused queue request removes the row and says why", () => {
    const s = reduceAll(running(), [
      { type: "prompt_queued", key: "q1", prompt: "second" },
      { type: "queue_removed", key: "q1", message: "Could not queue the prompt: too many" },
    ]);
    assert.deepEqual(s.queued, []);
    assert.match(s.banner.message, /too many/);
  });

  it("takes the composer's context chips with it", () => {
    const s0 = reduce(running(), { type: "attach", item: { type: "file", uri: "file:///w/a.py" } });
    const s = reduce(s0, { type: "prompt_queued", key: "q1", prompt: "second", context: [{ type: "file", uri: "file:///w/a.py" }] });
    assert.deepEqual(s.attachments, []);
    assert.deepEqual(s.queued[0].context, ["a.py"]);
  });
});

describe("a steer", () => {
  it("is pending until the server's user_message shows it in the running turn", () => {
    let s = reduce(running(), { type: "steer_sent", text: "use tabs" });
    assert.deepEqual(s.steers, ["use tabs"]);
    s = reduceAll(s, [
      ev("r-1", 3, { type: "turn_end", turn: 1 }),
      ev("r-1", 4, { type: "user_message", text: "use tabs" }),
    ]);
    assert.deepEqual(s.steers, []);
    const items = s.turns[0].items;
    assert.deepEqual(items[items.length - 1], { kind: "user", key: items[items.length - 1].key, text: "use tabs" });
  });

  it("never seen (the request ended first): the pending row goes", () => {
    const s = reduceAll(running(), [
      { type: "steer_sent", text: "too late" },
      ev("r-1", 3, { type: "request_end", stopReason: "cancelled" }),
    ]);
    assert.deepEqual(s.steers, []);
  });

  it("replays from a stored session as a user message in its turn", () => {
    const s = reduce(initialState(), {
      type: "session_loaded",
      session: { sessionId: SID, title: "t", messageCount: 4 },
      events: [
        { sessionId: SID, requestId: "r-1", seq: 1, type: "request_start", prompt: "first" },
        { sessionId: SID, requestId: "r-1", seq: 2, type: "user_message", text: "and also this" },
        { sessionId: SID, requestId: "r-1", seq: 3, type: "request_end", stopReason: "end_turn" },
      ],
      requests: [{ requestId: "r-1", firstMessage: 0 }],
    });
    assert.equal(s.turns[0].items[0].kind, "user");
    assert.equal(s.turns[0].items[0].text, "and also this");
  });
});
