// Unit tests of what the server receives as initializationOptions (src/options.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configurationAnswer, initializationOptions, parseAgentSettings, setValue } from "../../out/test/options.mjs";

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

describe("configurationAnswer", () => {
  it("sends every server setting explicitly, null for one not set or cleared", () => {
    const agent = parseAgentSettings({ model: "", baseUrl: "  ", approval: "ask", imageInput: "on" });
    const answer = configurationAnswer(agent);
    assert.equal(answer.model, null);
    assert.equal(answer.baseUrl, null);
    assert.equal(answer.sessionStore, null);
    assert.equal(answer.imageInput, "on");
    assert.equal(answer.mcpServers, null);
    assert.ok("shellSandbox" in answer && "modelCost" in answer);
  });

  it("initializationOptions passes a set server setting such as imageInput", () => {
    const agent = parseAgentSettings({ imageInput: "on", shellSandbox: "required" });
    const options = initializationOptions(agent);
    assert.equal(options.imageInput, "on");
    assert.equal(options.shellSandbox, "required");
    assert.ok(!("mcpServers" in options));
  });

  it("setValue takes what the user set, never a default, and a user-only key from the user only", () => {
    assert.equal(setValue({ defaultValue: "auto" }, false), undefined);
    assert.equal(setValue({ defaultValue: "auto", workspaceValue: "on" }, false), "on");
    assert.equal(setValue({ workspaceValue: "off", globalValue: "required" }, true), "required");
    assert.equal(setValue({ workspaceValue: "off" }, true), undefined);
  });
});
