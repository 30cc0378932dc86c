/**
 * GitHub task lists for markdown-it: a list item starting with `[ ]` or `[x]` gets a
 * checkbox (a span with role="checkbox", since the sanitizer forbids inputs) instead of the
 * literal brackets.
 */

import type MarkdownIt from "markdown-it";

type Md = ReturnType<typeof MarkdownIt>;
type CoreRule = Parameters<Md["core"]["ruler"]["after"]>[2];
type CoreState = Parameters<CoreRule>[0];

const TASK = /^\[([ xX])\]\s+/;

export const taskLists = (md: Md): void => {
  md.core.ruler.after("inline", "task-lists", (state: CoreState) => {
    const tokens = state.tokens;
    for (let i = 2; i < tokens.length; i++) {
      const inline = tokens[i];
      if (inline.type !== "inline" || tokens[i - 1].type !== "paragraph_open" || tokens[i - 2].type !== "list_item_open") continue;
      const match = TASK.exec(inline.content);
      const first = inline.children?.[0];
      if (!match || !first || first.type !== "text" || !TASK.test(first.content)) continue;
      const checked = match[1] !== " ";
      first.content = first.content.replace(TASK, "");
      inline.content = inline.content.replace(TASK, "");
      const box = new state.Token("html_inline", "", 0);
      box.content = `<span class="task-box" role="checkbox" aria-checked="${checked}" aria-disabled="true">${checked ? "☑" : "☐"}</span> `;
      inline.children?.unshift(box);
      tokens[i - 2].attrJoin("class", "task-item");
    }
  });
};
