// Unit tests of context from the editor: selection items and their limits, chip labels,
// @path mentions, de-duplication, and the panel's attachments (attach, detach, sent with
// the prompt and cleared).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_CONTEXT_ITEMS, MAX_SELECTION_TEXT, contextLabel, mentionedPaths, mergeContext, selectionItem } from "../../out/test/context.mjs";
import { initialState, reduce, reduceAll } from "../../out/test/state.mjs";

const URI = "file:///w/src/calc%20v2.py";
const range = (l1, c1, l2, c2) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

describe("selection items", () => {
  it("carry the editor's text", () => {
    assert.deepEqual(selectionItem(URI, range(2, 0, 4, 5), "x = 1"), { type: "selection", uri: URI, range: range(2, 0, 4, 5), text: "x = 1" });
  });
  it("leave a text over the server's limit to the server (it cuts it, saying so)", () => {
    const item = selectionItem(URI, range(0, 0, 9000, 0), "y".repeat(MAX_SELECTION_TEXT + 1));
    assert.equal(item.text, undefined);
    assert.equal(selectionItem(URI, range(0, 0, 1, 0), "y".repeat(MAX_SELECTION_TEXT)).text.length, MAX_SELECTION_TEXT);
  });
});

describe("labels", () => {
  it("name the file (decoded) and the 1-based lines", () => {
    assert.equal(contextLabel({ type: "file", uri: URI }), "calc v2.py");
    assert.equal(contextLabel(selectionItem(URI, range(2, 0, 4, 5), "")), "calc v2.py:3-5");
    assert.equal(contextLabel(selectionItem(URI, range(2, 4, 2, 9), "")), "calc v2.py:3");
    // Ending at column 0 of line 5 does not include line 5.
    assert.equal(contextLabel(selectionItem(URI, range(2, 0, 4, 0), "")), "calc v2.py:3-4");
    assert.equal(contextLabel({ type: "image", mimeType: "image/png", data: "A".repeat(4096) }), "image/png, 3 KB");
  });
});

describe("@path mentions", () => {
  it("finds paths after @ at a word start, without trailing punctuation, once each", () => {
    assert.deepEqual(mentionedPaths("look at @src/calc.py and @README.md. Also (@a_b-c.txt), again @src/calc.py"), [
      "src/calc.py",
      "README.md",
      "a_b-c.txt",
    ]);
    assert.deepEqual(mentionedPaths('@"my file.py" please'), ["my file.py"]);
  });
  it("ignores e-mail addresses and a bare @", () => {
    assert.deepEqual(mentionedPaths("mail me@example.org or @ alone"), []);
  });
});

describe("merging context", () => {
  it("drops duplicates and keeps at most the server's limit", () => {
    const file = { type: "file", uri: URI };
    const sel = selectionItem(URI, range(1, 0, 2, 0), "a");
    assert.deepEqual(mergeContext([file, sel, { ...file }, { ...sel }]), [file, sel]);
    const many = Array.from({ length: 60 }, (_, i) => ({ type: "file", uri: `file:///w/${i}.py` }));
    assert.equal(mergeContext(many).length, MAX_CONTEXT_ITEMS);
  });
});

describe("attachments in the panel", () => {
  it("attach, ignore a duplicate, detach, and clear when the prompt is sent with their labels", () => {
    const sel = selectionItem(URI, range(2, 0, 4, 5), "x");
    let s = reduceAll(initialState(), [
      { type: "attach", item: sel },
      { type: "attach", item: { ...sel } },
      { type: "attach", item: { type: "file", uri: "file:///w/a.py" } },
    ]);
    assert.deepEqual(s.attachments.map((a) => a.label), ["calc v2.py:3-5", "a.py"]);
    s = reduce(s, { type: "detach", key: s.attachments[1].key });
    assert.deepEqual(s.attachments.map((a) => a.label), ["calc v2.py:3-5"]);
    s = reduce(s, { type: "prompt_sent", prompt: "explain", context: [sel] });
    assert.deepEqual(s.attachments, []);
    assert.deepEqual(s.turns[0].context, ["calc v2.py:3-5"]);
  });
  it("a request that never starts gives its context back to the chips", () => {
    const sel = selectionItem(URI, range(2, 0, 4, 5), "x");
    let s = reduceAll(initialState(), [{ type: "attach", item: sel }, { type: "prompt_sent", prompt: "explain", context: [sel] }]);
    s = reduce(s, { type: "request_failed", message: "params.context[0].range: past the end of the document", code: -32602 });
    assert.equal(s.turns[0].status, "failed");
    assert.deepEqual(s.attachments.map((a) => a.item), [sel]);
    // Cancelled before it started: nothing comes back (the person stopped it).
    let c = reduceAll(initialState(), [{ type: "prompt_sent", prompt: "explain", context: [sel] }]);
    c = reduce(c, { type: "request_failed", message: "cancelled", code: -32800 });
    assert.deepEqual(c.attachments, []);
  });
  it("a prompt without context leaves the turn without labels", () => {
    const s = reduce(initialState(), { type: "prompt_sent", prompt: "hi" });
    assert.equal(s.turns[0].context, undefined);
  });
});

describe("paths inside the workspace", async () => {
  const { isInsidePath } = await import("../../out/test/context.mjs");
  it("accepts relative paths and refuses escapes", () => {
    for (const ok of ["a.py", "src/a.py", "src\\a.py", "a..b.py", ".hidden/x"]) assert.equal(isInsidePath(ok), true, ok);
    for (const bad of ["", "/etc/passwd", "../x", "src/../../x", "src\\..\\x", "C:\\x", "c:x", "\\\\server\\share", "a\0b"]) {
      assert.equal(isInsidePath(bad), false, JSON.stringify(bad));
    }
  });
});

describe("dropped uri lists", async () => {
  const { parseUriList } = await import("../../out/test/context.mjs");
  it("skips comments and blank lines, keeps the order, at most 50", () => {
    assert.deepEqual(parseUriList("# from the explorer\r\nfile:///w/a.py\r\n\r\nfile:///w/b.py\n"), ["file:///w/a.py", "file:///w/b.py"]);
    assert.equal(parseUriList(Array.from({ length: 70 }, (_, i) => `file:///w/${i}`).join("\n")).length, 50);
  });
});
