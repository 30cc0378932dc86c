// Unit tests of what the server receives as initializationOptions (src/options.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { initializationOptions, parseAgentSettings } from "../../out/test/options.mjs";

describe("initializationOptions", () => {
  it("sends what is set and leaves empty settings out", () => {
    const agent = parseAgentSettings({ model: " openai-compatible:scripted ", baseUrl: "http://127.0.0.1:9/v1/chat/completions", approval: "auto", maxTurns: 12, requestTimeout: 0, sessionStore: "" });
    assert.deepEqual(initializationOptions(agent), {
      model: "openai-compatible:scripted",
      baseUrl: "http://127.0.0.1:9/v1/chat/completions",
      approval: "auto",
      maxTurns: 12,
      requestTimeout: 0,
    });
  });

  it("falls back to the defaults for values of the wrong type or range", () => {
    const agent = parseAgentSettings({ model: 42, approval: "sometimes", maxTurns: 0.5, requestTimeout: -1 });
    assert.deepEqual(initializationOptions(agent), { approval: "ask", maxTurns: 40, requestTimeout: 600 });
  });
});
