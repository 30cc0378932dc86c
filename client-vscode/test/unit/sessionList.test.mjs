// The sessions list at 300 px and the composer's `@` completion (issue 31, items 14-15).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { filterSessions, relativeTime } from "../../out/test/sessionList.mjs";
import { completeMention, mentionAt, rankFiles } from "../../out/test/mentions.mjs";
import { initialState, reduceAll } from "../../out/test/state.mjs";

const NOW = Date.parse("2026-11-27T12:00:00Z");

describe("a session's age", () => {
  it("is short words that never wrap", () => {
    assert.equal(relativeTime("2026-11-27T11:59:30Z", NOW), "just now");
    assert.equal(relativeTime("2026-11-27T11:55:00Z", NOW), "5 min ago");
    assert.equal(relativeTime("2026-11-27T09:00:00Z", NOW), "3 h ago");
    assert.equal(relativeTime("2026-11-26T10:00:00Z", NOW), "yesterday");
    assert.equal(relativeTime("2026-11-23T12:00:00Z", NOW), "4 d ago");
    assert.equal(relativeTime("2026-01-31T12:00:00Z", NOW), "2026-01-31");
    assert.equal(relativeTime(undefined, NOW), "");
  });
});

describe("the sessions' search box", () => {
  const sessions = [
    { sessionId: "a1", title: "Fix the parser's error messages", model: "openai:gpt-4.1", messageCount: 3 },
    { sessionId: "b2", title: "Add tests for calc", model: "openai:gpt-4.1", messageCount: 5 },
  ];
  it("keeps the sessions with every word of the query", () => {
    assert.deepEqual(filterSessions(sessions, "parser error").map((s) => s.sessionId), ["a1"]);
    assert.deepEqual(filterSessions(sessions, "CALC").map((s) => s.sessionId), ["b2"]);
    assert.deepEqual(filterSessions(sessions, "  ").map((s) => s.sessionId), ["a1", "b2"]);
    assert.deepEqual(filterSessions(sessions, "nothing"), []);
  });
});

describe("@ file completion", () => {
  it("finds the @partial before the cursor, not an e-mail address", () => {
    assert.deepEqual(mentionAt("look at @src/ca", 15), { start: 8, query: "src/ca" });
    assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
    assert.equal(mentionAt("mail me@example.com", 19), undefined);
    assert.equal(mentionAt("@done and more", 14), undefined);
  });
  it("replaces it with the chosen path and a blank, quoted when the path has blanks", () => {
    assert.deepEqual(completeMention("look at @ca please", 8, 11, "src/calc.py"), { text: "look at @src/calc.py  please", cursor: 21 });
    assert.equal(completeMention("@my", 0, 3, "my file.py").text, '@"my file.py" ');
  });
  it("offers the matching files, file names starting with it first, bounded", () => {
    const files = ["src/calc.py", "tests/test_calc.py", "calc.py", "README.md", "docs/calculus.md"];
    assert.deepEqual(rankFiles(files, "calc"), ["calc.py", "src/calc.py", "docs/calculus.md", "tests/test_calc.py"]);
    assert.deepEqual(rankFiles(files, "CALC", 2), ["calc.py", "src/calc.py"]);
    assert.equal(rankFiles(Array.from({ length: 500 }, (_, i) => `f${i}.py`), "f").length, 20);
  });
});

describe("the context meter", () => {
  it("keeps its last value after a stop (a cancelled turn_end without tokens)", () => {
    const ev = (seq, spec) => ({ type: "event", event: { sessionId: "s", requestId: "r", seq, ...spec } });
    const s = reduceAll(initialState(), [
      { type: "prompt_sent", prompt: "hi" },
      ev(1, { type: "request_start", prompt: "hi" }),
      ev(2, { type: "turn_end", turn: 1, contextTokens: 5000, contextWindow: 100000 }),
      ev(3, { type: "turn_end", turn: 2, contextTokens: 0, contextWindow: 100000 }),
      ev(4, { type: "request_end", stopReason: "cancelled" }),
    ]);
    assert.deepEqual(s.context, { tokens: 5000, window: 100000 });
  });
});
