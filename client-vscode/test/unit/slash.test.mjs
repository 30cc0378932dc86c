// Unit tests of the composer's `/` completion (src/webview/slash.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { completeSlash, parseCommands, slashCompletions, slashLabel } from "../../out/test/slash.mjs";

const commands = [
  { name: "review", description: "Review a file", argumentHint: "<file>", source: "project" },
  { name: "release", description: "", argumentHint: "", source: "user" },
  { name: "prerelease", description: "", argumentHint: "", source: "user" },
];

describe("slashCompletions", () => {
  it("offers the commands whose name starts with what was typed, then those containing it", () => {
    assert.deepEqual(slashCompletions("/re", commands).map((c) => c.name), ["review", "release", "prerelease"]);
    assert.deepEqual(slashCompletions("/rel", commands).map((c) => c.name), ["release", "prerelease"]);
    assert.equal(slashCompletions("/", commands).length, 3);
  });

  it("offers nothing once the name is followed by a blank, or without a leading slash", () => {
    assert.deepEqual(slashCompletions("/review a.py", commands), []);
    assert.deepEqual(slashCompletions("review", commands), []);
    assert.deepEqual(slashCompletions(" /review", commands), []);
  });

  it("completes to the name and a blank, and labels with the hint, description and source", () => {
    assert.equal(completeSlash(commands[0]), "/review ");
    assert.equal(slashLabel(commands[0]), "/review <file> — Review a file (project)");
    assert.equal(slashLabel(commands[1]), "/release (user)");
  });

  it("keeps only well-formed commands from the server's answer", () => {
    assert.deepEqual(parseCommands({ commands: [{ name: "x", description: 5 }, { nope: 1 }, null] }), [
      { name: "x", description: "", argumentHint: "", source: "" },
    ]);
    assert.deepEqual(parseCommands(null), []);
  });
});
