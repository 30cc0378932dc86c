// The failed turn's one error component: the server's error kind (v3 ErrorInfo.kind) picks
// its hint and its buttons (Open Settings / Set API Key for a refused key, Retry for what may pass).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorButtons, initialState, reduceAll } from "../../out/test/state.mjs";

const failed = (error) =>
  reduceAll(initialState(), [
    { type: "prompt_sent", prompt: "hi" },
    { type: "event", event: { sessionId: "s", requestId: "r", seq: 1, type: "request_start", prompt: "hi" } },
    { type: "event", event: { sessionId: "s", requestId: "r", seq: 2, type: "request_end", stopReason: "error", error } },
  ]).turns[0];

describe("a failed turn's error by kind", () => {
  it("keeps the server's kind and says what to do about it", () => {
    const auth = failed({ message: "HTTP 401: Incorrect API key provided", kind: "auth" });
    assert.equal(auth.error.kind, "auth");
    assert.match(auth.error.hint, /API key/);
    assert.match(failed({ message: "HTTP 429: slow down", kind: "rate_limit" }).error.hint, /rate limit/);
  });

  it("offers the buttons that can help: no Retry for a refused key, Retry for a 5xx", () => {
    assert.deepEqual(errorButtons("auth"), ["openSettings", "setApiKey", "chooseModel", "showLogs"]);
    assert.equal(errorButtons("auth").includes("retry"), false);
    assert.equal(errorButtons("server")[0], "retry");
    assert.equal(errorButtons("rate_limit")[0], "retry");
    assert.deepEqual(errorButtons(undefined), ["retry", "chooseModel", "openSettings", "showLogs"]);
  });

  it("an error without a kind (an older server) keeps the generic hint", () => {
    const turn = failed({ message: "boom" });
    assert.equal(turn.error.kind, undefined);
    assert.match(turn.error.hint, /Retry, Choose model, or Open Settings/);
  });
});
