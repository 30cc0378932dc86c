// The diff engine of the Changes view against real git diffs: for random pairs of texts
// (edits, added and deleted files, missing final newlines, CRLF lines), git's unified diff
// reversed onto "after" gives "before" exactly, and applied onto "before" gives "after".
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { applyUnifiedDiff, parseHunks, reverseUnifiedDiff } from "../../out/test/diff.mjs";

const hasGit = spawnSync("git", ["--version"]).status === 0;

/** git's diff of two texts, without its header lines (as the server sends it). */
function gitDiff(dir, before, after) {
  const a = path.join(dir, "a");
  const b = path.join(dir, "b");
  if (before === null) fs.rmSync(a, { force: true });
  else fs.writeFileSync(a, before);
  if (after === null) fs.rmSync(b, { force: true });
  else fs.writeFileSync(b, after);
  const args = ["-c", "core.autocrlf=false", "diff", "--no-index", "--no-color", "-U3", "--", before === null ? "/dev/null" : a, after === null ? "/dev/null" : b];
  const out = spawnSync("git", args, { encoding: "utf8" });
  return out.stdout
    .split("\n")
    .filter((l) => !/^(diff --git |index |new file mode |deleted file mode )/.test(l))
    .join("\n")
    .replace(/\n+$/, "");
}

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomText(rand) {
  const n = Math.floor(rand() * 12);
  const words = ["a", "b", "c", "", "  x", "@@ y", "-z", "+w", "q\r"];
  const lines = Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]);
  if (lines.length === 0) return "";
  return lines.join("\n") + (rand() < 0.8 ? "\n" : "");
}

function mutate(rand, text) {
  const lines = text.split("\n");
  const edits = 1 + Math.floor(rand() * 3);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rand() * (lines.length + 1));
    const r = rand();
    if (r < 0.33) lines.splice(at, 1);
    else if (r < 0.66) lines.splice(at, 0, `new${e}`);
    else lines[Math.min(at, lines.length - 1)] = `changed${e}`;
  }
  let out = lines.join("\n");
  if (rand() < 0.2) out = out.endsWith("\n") ? out.slice(0, -1) : `${out}\n`;
  return out;
}

describe("unified diffs both ways, against git", { skip: !hasGit && "git is not installed" }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuna-diff-"));

  it("modified files: 300 random pairs give the exact bytes back", () => {
    const rand = rng(42);
    let checked = 0;
    for (let n = 0; n < 300; n++) {
      const before = randomText(rand);
      const after = mutate(rand, before);
      if (before === after) continue;
      const diff = gitDiff(dir, before, after);
      assert.ok(parseHunks(diff), `no hunks for ${JSON.stringify([before, after])}:\n${diff}`);
      assert.equal(reverseUnifiedDiff(after, diff), before, `reverse of\n${diff}`);
      assert.equal(applyUnifiedDiff(before, diff), after, `apply of\n${diff}`);
      checked++;
    }
    assert.ok(checked > 200);
  });

  it("an added file reverses to empty; a deleted file comes back whole", () => {
    for (const text of ["one\ntwo\n", "no newline", "x\n\n\ny\n"]) {
      const added = gitDiff(dir, null, text);
      assert.match(added, /^--- \/dev\/null/);
      assert.equal(reverseUnifiedDiff(text, added), "");
      const deleted = gitDiff(dir, text, null);
      assert.equal(reverseUnifiedDiff("", deleted), text);
    }
  });

  it("a file changed since the diff is refused, not guessed", () => {
    const diff = gitDiff(dir, "a\nb\nc\n", "a\nB\nc\n");
    assert.equal(reverseUnifiedDiff("a\nB\nc\n", diff), "a\nb\nc\n");
    assert.equal(reverseUnifiedDiff("a\nX\nc\n", diff), undefined);
    assert.equal(reverseUnifiedDiff("a\nB\nc", diff), undefined); // its final newline went
  });

  it("a binary diff has no hunks", () => {
    assert.equal(parseHunks("Binary files a/x.png and b/x.png differ"), undefined);
    assert.equal(reverseUnifiedDiff("x", "Binary files a/x.png and b/x.png differ"), undefined);
  });
});

describe("a change that lives only in an editor buffer", async () => {
  const { isBufferOnly } = await import("../../out/test/state.mjs");
  const diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n(in the editor's buffer, not saved)";
  it("is marked, and its diff still reverses onto the buffer's text", () => {
    assert.equal(isBufferOnly(diff), true);
    assert.equal(isBufferOnly("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"), false);
    assert.equal(reverseUnifiedDiff("x = 1\ny = 3\n", diff), "x = 1\ny = 2\n");
  });
});
