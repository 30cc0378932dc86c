// The transcript's markdown: task lists as checkboxes (src/webview/taskList.ts), and the CSS
// that makes a fenced block one container and gives blockquotes a border (media/panel.css).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import MarkdownIt from "markdown-it";
import { taskLists } from "../../out/test/taskList.mjs";

const md = new MarkdownIt({ html: false }).use(taskLists);
const css = readFileSync(new URL("../../media/panel.css", import.meta.url), "utf8");

describe("task lists", () => {
  it("renders [ ] and [x] as checkboxes, not literal brackets", () => {
    const html = md.render("- [x] done\n- [ ] todo\n- plain [x] item\n");
    assert.match(html, /<li class="task-item"><span class="task-box" role="checkbox" aria-checked="true"[^>]*>☑<\/span> done<\/li>/);
    assert.match(html, /aria-checked="false"[^>]*>☐<\/span> todo/);
    assert.match(html, /<li>plain \[x\] item<\/li>/);
    assert.ok(!html.includes("[x] done"));
  });

  it("still escapes raw HTML a model writes in a task", () => {
    assert.ok(!md.render("- [ ] <img src=x onerror=alert(1)>").includes("<img"));
  });
});

describe("panel.css", () => {
  const rule = (selector) => {
    const i = css.indexOf(`${selector} {`);
    assert.ok(i >= 0, selector);
    return css.slice(i, css.indexOf("}", i));
  };
  it("gives a fenced block one container and no per-line inline-code boxes", () => {
    assert.match(rule(".markdown pre code"), /background: transparent/);
    assert.match(rule(".markdown pre code"), /padding: 0/);
    assert.match(rule(".markdown pre"), /border: 1px solid/);
  });
  it("gives a blockquote a left border instead of 40 px indents on both sides", () => {
    assert.match(rule(".markdown blockquote"), /border-left: 3px solid/);
    assert.match(rule(".markdown blockquote"), /margin: 0\.5em 0/);
  });
});
