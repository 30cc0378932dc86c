// Unit tests of the panel's pure state logic: `tunacode/event` streams -> view state.
// Runs on the ESM build of src/webview/state.ts (npm test builds it first).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MAX_EARLY_EVENTS,
  activeTurn,
  hintForError,
  initialState,
  isRunning,
  reduce,
  reduceAll,
  sessionUsage,
} from "../../out/test/state.mjs";

const SID = "s-1";
const RID = "r-1";

/** Builds a request's events with seq 1..n, as the server sends them. */
function events(specs, { sessionId = SID, requestId = RID, firstSeq = 1 } = {}) {
  return specs.map((spec, i) => ({ sessionId, requestId, seq: firstSeq + i, ...spec }));
}

const usage = (input, output, cost = 0) => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  totalTokens: input + output,
  cost,
});

const toolRun = [
  { type: "request_start", prompt: "list the files", model: "openai-compatible:scripted" },
  { type: "thinking_delta", text: "I should " },
  { type: "thinking_delta", text: "list them." },
  { type: "tool_call", toolCallId: "c1", name: "list_files", args: { path: "." }, status: "pending" },
  { type: "tool_call_update", toolCallId: "c1", name: "list_files", status: "in_progress" },
  { type: "tool_call_update", toolCallId: "c1", name: "list_files", status: "completed", result: "a.txt\nb.txt", durationMs: 12 },
  { type: "turn_end", turn: 1, usage: usage(10, 5, 0.001) },
  { type: "text_delta", text: "There are " },
  { type: "text_delta", text: "**two** files." },
  { type: "turn_end", turn: 2, usage: usage(20, 6, 0.002) },
  { type: "request_end", stopReason: "end_turn", usage: usage(30, 11, 0.003) },
];

const feed = (state, evs) => reduceAll(state, evs.map((event) => ({ type: "event", event })));

function sent(prompt = "list the files") {
  return reduce(initialState(), { type: "prompt_sent", prompt });
}

describe("a request's event stream", () => {
  it("builds thinking, a completed tool card and the streamed answer in order", () => {
    const s = feed(sent(), events(toolRun));
    assert.equal(s.turns.length, 1);
    const [turn] = s.turns;
    assert.equal(turn.status, "end_turn");
    assert.equal(turn.requestId, RID);
    assert.equal(s.sessionId, SID);
    assert.equal(s.model, "openai-compatible:scripted");
    assert.deepEqual(
      turn.items.map((i) => i.kind),
      ["thinking", "tool", "text"],
    );
    assert.equal(turn.items[0].text, "I should list them.");
    assert.equal(turn.items[1].status, "completed");
    assert.equal(turn.items[1].result, "a.txt\nb.txt");
    assert.equal(turn.items[1].durationMs, 12);
    assert.equal(turn.items[2].text, "There are **two** files.");
    assert.equal(turn.missedEvents, 0);
    assert.equal(isRunning(s), false);
  });

  it("names a new session after its first prompt", () => {
    const s = reduce(initialState(), { type: "prompt_sent", prompt: "Fix the bug\nin parser.py" });
    assert.equal(s.title, "Fix the bug");
    const again = reduce(feed(s, events(toolRun)), { type: "prompt_sent", prompt: "second" });
    assert.equal(again.title, "Fix the bug");
  });

  it("is running from the prompt until request_end", () => {
    let s = sent();
    assert.equal(activeTurn(s).status, "sending");
    s = feed(s, events(toolRun.slice(0, 5)));
    assert.equal(activeTurn(s).status, "running");
    assert.equal(activeTurn(s).items[1].status, "in_progress");
    s = feed(s, events(toolRun.slice(5), { firstSeq: 6 }));
    assert.equal(isRunning(s), false);
  });

  it("takes request_end's usage as the request's total and adds it to the session", () => {
    let s = feed(sent(), events(toolRun.slice(0, 7)));
    assert.equal(s.turns[0].usage.inputTokens, 10); // turn 1 so far
    s = feed(s, events(toolRun.slice(7), { firstSeq: 8 }));
    assert.equal(s.turns[0].usage.totalTokens, 41);
    assert.equal(sessionUsage(s).cost, 0.003);
  });

  it("keeps unchanged items identical so the renderer can skip them", () => {
    const before = feed(sent(), events(toolRun.slice(0, 8)));
    const after = feed(before, events([{ type: "text_delta", text: "!" }], { firstSeq: 9 }));
    assert.equal(after.turns[0].items[0], before.turns[0].items[0]);
    assert.equal(after.turns[0].items[1], before.turns[0].items[1]);
    assert.notEqual(after.turns[0].items[2], before.turns[0].items[2]);
  });
});

describe("out-of-order and missing seq", () => {
  it("holds an early event until the gap fills, then applies both in order", () => {
    const evs = events(toolRun);
    let s = feed(sent(), evs.slice(0, 7));
    s = feed(s, [evs[8]]); // "**two** files." before "There are "
    assert.equal(s.turns[0].items.filter((i) => i.kind === "text").length, 0);
    assert.equal(s.turns[0].early.length, 1);
    s = feed(s, [evs[7]]);
    assert.equal(s.turns[0].items[2].text, "There are **two** files.");
    assert.equal(s.turns[0].early.length, 0);
    assert.equal(s.turns[0].missedEvents, 0);
  });

  it("ends the same whatever order the events arrive in", () => {
    const evs = events(toolRun);
    const inOrder = feed(sent(), evs);
    const shuffled = [evs[0], evs[3], evs[2], evs[1], evs[6], evs[5], evs[4], evs[9], evs[8], evs[7], evs[10]];
    const reordered = feed(sent(), shuffled);
    const strip = (turn) => turn.items.map(({ key, ...rest }) => rest);
    assert.deepEqual(strip(reordered.turns[0]), strip(inOrder.turns[0]));
    assert.equal(reordered.turns[0].status, "end_turn");
  });

  it("ignores a duplicated event", () => {
    const evs = events(toolRun);
    const s = feed(sent(), [...evs.slice(0, 9), evs[8], evs[7], ...evs.slice(9)]);
    assert.equal(s.turns[0].items[2].text, "There are **two** files.");
  });

  it("fills a lost stretch from the request result and counts what was missed", () => {
    const evs = events(toolRun);
    // seq 8 ("There are ") never arrives; request_end waits behind the gap.
    let s = feed(sent(), [...evs.slice(0, 7), ...evs.slice(8)]);
    assert.equal(s.turns[0].status, "running");
    s = reduce(s, {
      type: "request_done",
      result: {
        sessionId: SID,
        requestId: RID,
        stopReason: "end_turn",
        text: "There are **two** files.",
        usage: usage(30, 11, 0.003),
        turns: 2,
        toolCalls: [{ toolCallId: "c1", name: "list_files", status: "completed", durationMs: 12 }],
      },
    });
    const [turn] = s.turns;
    assert.equal(turn.status, "end_turn");
    assert.equal(turn.missedEvents, 1);
    assert.equal(turn.items.find((i) => i.kind === "text").text, "There are **two** files.");
    assert.equal(isRunning(s), false);
  });

  it("adds tool cards whose events were all lost, from the result", () => {
    let s = feed(sent(), events([toolRun[0]]));
    s = reduce(s, {
      type: "request_done",
      result: {
        sessionId: SID, requestId: RID, stopReason: "end_turn", text: "done", usage: usage(1, 1), turns: 1,
        toolCalls: [{ toolCallId: "c9", name: "bash", status: "failed", durationMs: 40 }],
      },
    });
    const tool = s.turns[0].items.find((i) => i.kind === "tool");
    assert.equal(tool.toolCallId, "c9");
    assert.equal(tool.status, "failed");
    assert.equal(s.turns[0].items.find((i) => i.kind === "text").text, "done");
  });

  it("gives up on a gap once too many events wait behind it", () => {
    const start = events([toolRun[0]]);
    const deltas = Array.from({ length: MAX_EARLY_EVENTS + 1 }, () => ({ type: "text_delta", text: "x" }));
    const s = feed(sent(), [...start, ...events(deltas, { firstSeq: 3 })]); // seq 2 lost
    assert.equal(s.turns[0].missedEvents, 1);
    assert.equal(s.turns[0].items[0].text.length, MAX_EARLY_EVENTS + 1);
    assert.equal(s.turns[0].early.length, 0);
  });

  it("lets a tool card's status only move forward", () => {
    const evs = events(toolRun.slice(0, 6));
    // the completed update arrives, after a gap, before in_progress and the tool_call
    const s = feed(sent(), [evs[0], evs[1], evs[2], evs[5], evs[4], evs[3]]);
    const tool = s.turns[0].items.find((i) => i.kind === "tool");
    assert.equal(tool.status, "completed");
    assert.deepEqual(tool.args, { path: "." });
  });
});

describe("stopping", () => {
  const slow = [
    { type: "request_start", prompt: "slow", model: "m" },
    { type: "text_delta", text: "Once upon" },
    { type: "tool_call", toolCallId: "c1", name: "bash", args: { command: "sleep 30" }, status: "pending" },
    { type: "tool_call_update", toolCallId: "c1", name: "bash", status: "in_progress" },
  ];

  it("shows stopping, then cancelled with the tool card cancelled", () => {
    let s = feed(sent("slow"), events(slow));
    s = reduce(s, { type: "stop_requested" });
    assert.equal(s.turns[0].status, "stopping");
    assert.equal(isRunning(s), true);
    s = feed(s, events([
      { type: "tool_call_update", toolCallId: "c1", name: "bash", status: "cancelled", durationMs: 300 },
      { type: "request_end", stopReason: "cancelled", usage: usage(3, 2) },
    ], { firstSeq: 5 }));
    assert.equal(s.turns[0].status, "cancelled");
    assert.equal(s.turns[0].items[1].status, "cancelled");
    assert.equal(s.turns[0].items[0].text, "Once upon");
    assert.equal(isRunning(s), false);
  });

  it("ignores a request_end and late deltas after the request was already cancelled", () => {
    let s = feed(sent("slow"), events(slow));
    s = reduce(s, { type: "stop_requested" });
    s = reduce(s, {
      type: "request_done",
      result: { sessionId: SID, requestId: RID, stopReason: "cancelled", text: "Once upon", usage: usage(3, 2), turns: 1, toolCalls: [] },
    });
    assert.equal(s.turns[0].status, "cancelled");
    assert.equal(s.turns[0].items[1].status, "cancelled", "an open tool is settled when the request ends");
    const after = feed(s, events([
      { type: "text_delta", text: " a time" },
      { type: "request_end", stopReason: "end_turn", usage: usage(9, 9) },
    ], { firstSeq: 5 }));
    assert.equal(after.turns[0].status, "cancelled");
    assert.equal(after.turns[0].items[0].text, "Once upon");
    assert.equal(after, s, "nothing changed");
  });

  it("marks a request cancelled before any event (a $/cancelRequest answer)", () => {
    let s = reduce(sent("slow"), { type: "stop_requested" });
    s = reduce(s, { type: "request_failed", message: "Request cancelled", code: -32800 });
    assert.equal(s.turns[0].status, "cancelled");
    assert.equal(isRunning(s), false);
  });
});

describe("errors", () => {
  it("shows a request that never started with a hint of what to do", () => {
    const s = reduce(sent("hi"), { type: "request_failed", message: "model not usable: set baseUrl", code: -32003 });
    assert.equal(s.turns[0].status, "failed");
    assert.match(s.turns[0].error.message, /baseUrl/);
    assert.match(s.turns[0].error.hint, /tunacode\.model/);
  });

  it("keeps a provider error in place with a hint", () => {
    const s = feed(sent("hi"), events([
      { type: "request_start", prompt: "hi", model: "m" },
      { type: "request_end", stopReason: "error", usage: usage(0, 0), error: { message: "HTTP 500 from provider" } },
    ]));
    assert.equal(s.turns[0].status, "error");
    assert.equal(s.turns[0].error.message, "HTTP 500 from provider");
    assert.ok(s.turns[0].error.hint);
  });

  it("shows a server that failed to start as a banner with an action", () => {
    const s = reduce(initialState(), { type: "server_state", state: "failed", message: "not found", action: "openSettings" });
    assert.deepEqual(s.banner, { kind: "error", message: "not found", action: "openSettings" });
    assert.equal(reduce(s, { type: "server_state", state: "running" }).banner, undefined);
  });
});

describe("sessions", () => {
  const session = {
    sessionId: "old", title: "read a file", cwd: "/w", projectId: "p", model: "openai:gpt-4.1",
    createdAt: "2026-01-01T00:00:00Z", modifiedAt: "2026-01-01T00:01:00Z", messageCount: 5,
    usage: usage(100, 50, 0.02), busy: false,
  };
  // The server's projection of the stored session (tunacode.session.get {events: true}).
  const history = [
    ...events([
      { type: "request_start", prompt: "read a.txt", model: "openai:gpt-4.1" },
      { type: "thinking_delta", text: "use read_file" },
      { type: "tool_call", toolCallId: "t1", name: "read_file", args: { filepath: "a.txt" }, status: "pending", kind: "read", title: "Read a.txt" },
      { type: "tool_call_update", toolCallId: "t1", name: "read_file", status: "in_progress" },
      { type: "tool_call_update", toolCallId: "t1", name: "read_file", status: "completed", result: "1:ab|hello" },
      { type: "turn_end", turn: 1, usage: usage(10, 5) },
      { type: "text_delta", text: "It says hello." },
      { type: "turn_end", turn: 2, usage: usage(10, 5) },
      { type: "request_end", stopReason: "end_turn", usage: usage(20, 10) },
    ], { sessionId: "old", requestId: "r-old-1" }),
    ...events([
      { type: "request_start", prompt: "now run it", model: "openai:gpt-4.1" },
      { type: "text_delta", text: "Running" },
      { type: "tool_call", toolCallId: "t2", name: "bash", args: { command: "./a" }, status: "pending", kind: "execute", title: "Run ./a" },
      { type: "tool_call_update", toolCallId: "t2", name: "bash", status: "in_progress" },
      { type: "tool_call_update", toolCallId: "t2", name: "bash", status: "cancelled", result: "cancelled", reason: "aborted" },
      { type: "request_end", stopReason: "cancelled", usage: usage(0, 0) },
    ], { sessionId: "old", requestId: "r-old-2" }),
  ];

  it("replays a stored session's events as finished turns", () => {
    const s = reduce(sent("something else"), { type: "session_loaded", session, events: history });
    assert.equal(s.sessionId, "old");
    assert.equal(s.title, "read a file");
    assert.equal(s.model, "openai:gpt-4.1");
    assert.equal(s.turns.length, 2);
    const [first, second] = s.turns;
    assert.equal(first.prompt, "read a.txt");
    assert.ok(first.replayed);
    assert.equal(first.status, "end_turn");
    assert.deepEqual(first.items.map((i) => i.kind), ["thinking", "tool", "text"]);
    assert.equal(first.items[1].status, "completed");
    assert.equal(first.items[1].title, "Read a.txt");
    assert.equal(first.items[1].result, "1:ab|hello");
    assert.equal(first.items[2].text, "It says hello.");
    assert.equal(second.prompt, "now run it");
    assert.equal(second.status, "cancelled");
    assert.equal(second.items[0].text, "Running");
    assert.equal(second.items[1].status, "cancelled");
    assert.equal(second.items[1].reason, "aborted");
    assert.equal(isRunning(s), false);
  });

  it("counts the stored usage once and adds new requests to it", () => {
    let s = reduce(initialState(), { type: "session_loaded", session, events: history });
    assert.equal(sessionUsage(s).totalTokens, 150);
    s = reduce(s, { type: "prompt_sent", prompt: "more" });
    s = feed(s, events([
      { type: "request_start", prompt: "more", model: "m" },
      { type: "request_end", stopReason: "end_turn", usage: usage(10, 5, 0.01) },
    ], { sessionId: "old", requestId: "r-2" }));
    assert.equal(sessionUsage(s).totalTokens, 165);
    assert.equal(s.turns.length, 3);
    assert.equal(s.turns[2].status, "end_turn");
  });

  it("settles a replayed request whose end is missing", () => {
    const s = reduce(initialState(), { type: "session_loaded", session, events: events([
      { type: "request_start", prompt: "go" },
      { type: "tool_call", toolCallId: "x", name: "bash", args: { command: "ls" }, status: "pending" },
    ], { sessionId: "old" }) });
    assert.equal(s.turns[0].items[0].status, "cancelled");
    assert.equal(isRunning(s), false);
  });

  it("skips malformed events instead of failing", () => {
    const s = reduce(initialState(), { type: "session_loaded", session, events: [null, 3, { seq: 1 }, ...events([{ type: "request_start", prompt: "" }], { sessionId: "old" })] });
    assert.equal(s.turns.length, 1);
    assert.equal(s.turns[0].prompt, "");
  });

  it("ignores events of another session", () => {
    let s = reduce(initialState(), { type: "session_loaded", session, events: history });
    const before = s;
    s = feed(s, events([{ type: "request_start", prompt: "x", model: "m" }], { sessionId: "other" }));
    assert.equal(s, before);
  });

  it("clears the view for a new session and when the current one is deleted", () => {
    let s = reduce(initialState(), { type: "session_loaded", session, events: history });
    s = reduce(s, { type: "sessions", sessions: [session] });
    const deleted = reduce(s, { type: "session_deleted", sessionId: "old" });
    assert.equal(deleted.sessionId, undefined);
    assert.equal(deleted.turns.length, 0);
    assert.equal(deleted.sessions.length, 0);
    assert.equal(sessionUsage(deleted).totalTokens, 0);
    const cleared = reduce(s, { type: "session_cleared" });
    assert.equal(cleared.turns.length, 0);
    assert.equal(cleared.sessions.length, 1);
  });
});

describe("the plan box", () => {
  const planned = events([
    { type: "request_start", prompt: "plan it", model: "m" },
    { type: "plan", items: [{ content: "step one", status: "in_progress" }] },
  ]);
  const other = { sessionId: "other", title: "t", cwd: "/w", createdAt: "", modifiedAt: "", messageCount: 1 };

  it("is cleared by a session switch and a new session", () => {
    const s = feed(sent("plan it"), planned);
    assert.equal(s.plan.length, 1);
    assert.equal(reduce(s, { type: "session_loaded", session: other, events: [] }).plan, undefined);
    assert.equal(reduce(s, { type: "session_cleared" }).plan, undefined);
  });

  it("is rebuilt from the kept turns after a rewind (a rewound turn's plan is gone)", () => {
    const s = feed(sent("plan it"), planned);
    const kept = events([{ type: "request_start", prompt: "first" }, { type: "request_end", stopReason: "end_turn" }], { requestId: "r-0" });
    const rewound = reduce(s, { type: "session_loaded", session: { ...other, sessionId: SID }, events: kept });
    assert.equal(rewound.plan, undefined);
  });

  it("after a switch, is the loaded session's own plan as the server replays it", () => {
    const s = feed(sent("plan it"), planned);
    const theirs = events(
      [
        { type: "request_start", prompt: "theirs" },
        { type: "plan", items: [{ content: "their step", status: "pending" }] },
        { type: "request_end", stopReason: "end_turn" },
      ],
      { requestId: "r-9" },
    );
    const switched = reduce(s, { type: "session_loaded", session: other, events: theirs.map((e) => ({ ...e, sessionId: "other" })) });
    assert.deepEqual(switched.plan.map((i) => i.content), ["their step"]);
  });
});

describe("one error-and-retry line", () => {
  const retry = (n) => ({ type: "notice", message: `Model request failed (HTTP 500); retrying in 1.0 s (retry ${n} of 3)` });

  it("updates one retry line in place instead of stacking notices", () => {
    const s = feed(sent("hi"), events([{ type: "request_start", prompt: "hi" }, retry(1), retry(2), retry(3)]));
    const notices = activeTurn(s).items.filter((i) => i.kind === "notice");
    assert.equal(notices.length, 1);
    assert.match(notices[0].message, /retry 3 of 3/);
    assert.equal(notices[0].retry, true);
  });

  it("hints carry no literal backticks and a timeout says it was not a stop", () => {
    assert.ok(!hintForError(-32003, "").includes("`"));
    const s = feed(sent("hi"), events([{ type: "request_start", prompt: "hi" }, { type: "request_end", stopReason: "timeout", error: { message: "request timed out" } }]));
    const turn = s.turns.at(-1);
    assert.equal(turn.status, "timeout");
    assert.match(turn.error.hint, /not stopped by you/);
    assert.ok(!turn.error.hint.includes("`"));
  });
});

describe("approvals with Always allow", () => {
  it("keeps the rules Always allow would save and the rule that asked", () => {
    let s = feed(sent("run"), events([
      { type: "request_start", prompt: "run" },
      { type: "tool_call", toolCallId: "b1", name: "bash", args: { command: "npm test" }, status: "pending" },
    ]));
    s = reduce(s, { type: "approval_request", params: { sessionId: SID, requestId: RID, toolCallId: "b1", tool: "bash", summary: "npm test", detail: "npm test", detailKind: "command", alwaysAllow: ["bash(npm test*)"], rule: "ask rule `bash(npm*)` (user settings)" } });
    const card = s.turns.at(-1).items.find((i) => i.kind === "tool");
    assert.deepEqual(card.approval.alwaysAllow, ["bash(npm test*)"]);
    assert.match(card.approval.rule, /ask rule/);
  });
});

describe("first run without a key", () => {
  it("holds the model and variable, and clears when the model has a key", () => {
    const s = reduce(initialState(), { type: "key_missing", model: "openai:gpt-4.1", variable: "OPENAI_API_KEY" });
    assert.deepEqual(s.keyMissing, { model: "openai:gpt-4.1", variable: "OPENAI_API_KEY" });
    assert.equal(reduce(s, { type: "key_missing" }).keyMissing, undefined);
  });
});
