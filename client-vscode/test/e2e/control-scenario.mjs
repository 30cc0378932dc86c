// Conversation control and the panel's follow-ups of issue 31 in a real VS Code: typing while
// the agent works (Enter steers, the steer shows in the turn when the model saw it; Alt+Enter
// and Queue queue, a queued prompt is a removable pending row, then runs), Edit and resend (a
// rewind that puts the prompt back), an agent edit of a buffer with unsaved changes shown and
// undone through read-only documents (no Untitled, no false toast), the full output read-only,
// and a refused API key's error with its own buttons. Screenshots in both themes at 300 px.
import * as fs from "node:fs";
import * as path from "node:path";
import { scenarioKit } from "./kit.mjs";

export const CONTROL_FILES = {
  "calc.py": "def add(a, b):\n    return a - b\n",
  "notes.md": "# Notes\n\nstatus: draft\n",
};

/** Machine settings of this scenario: these calls ask even under approval "auto". */
export const CONTROL_PERMISSIONS = { ask: ["bash(python3 -m pytest*)", "edit_file(notes.md)"] };

const STEER_PROMPT = "List the files, then tell me.";
const STEER_TEXT = "Use tabs, please.";
const steerScript = {
  turns: [
    {
      steps: [
        { text: "Looking at the files first. ".repeat(3), chunks: 30, delay: 0.1 },
        { tool_call: { name: "list_files", arguments: { path: "." } } },
        { finish: "tool_calls" },
      ],
    },
    { steps: [{ text: "Noted: tabs it is.", chunks: 1 }, { finish: "stop" }] },
  ],
};

const SLOW_PROMPT = "Take your time.";
const QUEUED_PROMPT = "Then answer this queued one.";
const REMOVED_PROMPT = "This one is removed before it runs.";
const QUEUED_ANSWER = "The queued prompt's answer.";
const queueScript = {
  turns: [
    { steps: [{ text: "slow ".repeat(80), chunks: 80, delay: 0.1 }, { finish: "stop" }] },
    { steps: [{ text: QUEUED_ANSWER, chunks: 1 }, { finish: "stop" }] },
  ],
};

const BUFFER_PROMPT = "Fix add().";
const CALC_AGENT = "def add(a, b):\n    return a + b\n";
const editBuffer = {
  turns: [
    { steps: [{ tool_call: { name: "edit_file", arguments: { filepath: "calc.py", old_text: "return a - b", new_text: "return a + b" } } }, { finish: "tool_calls" }] },
    { steps: [{ text: "Fixed add().", chunks: 1 }, { finish: "stop" }] },
  ],
};

const KEY_PROMPT = "Hello?";
const refusedKey = { turns: [{ error: { status: 401, body: { error: { message: "Incorrect API key provided" } } } }] };

const APPROVE_PROMPT = "Plan it, run the tests, then update the notes.";
const LONG_COMMAND = "python3 -m pytest tests/test_calc.py --maxfail=1 -q -k 'add and not slow' --durations=5 --color=no --strict-markers";
const approvals = {
  turns: [
    {
      steps: [
        { tool_call: { name: "todo_write", arguments: { todos: [{ content: "Run the tests", status: "in_progress", activeForm: "Running the tests" }, { content: "Update the notes", status: "pending", activeForm: "Updating the notes" }] } } },
        { finish: "tool_calls" },
      ],
    },
    { steps: [{ tool_call: { name: "bash", arguments: { command: LONG_COMMAND } } }, { finish: "tool_calls" }] },
    { steps: [{ tool_call: { name: "edit_file", arguments: { filepath: "notes.md", old_text: "status: draft", new_text: "status: final" } } }, { finish: "tool_calls" }] },
    { steps: [{ text: "Updated the notes.", chunks: 1 }, { finish: "stop" }] },
  ],
};

export async function runControlScenario({ context, url, extensionId, modelRoot, artifacts, summary, log, workspace }) {
  const { page, shot, setScript, modelRequests, step, openPanel, send, sidebarWidth, typeUnsavedLine, dialogButton, bothThemes } =
    await scenarioKit({ context, extensionId, modelRoot, artifacts, summary, log });
  const read = (name) => fs.readFileSync(path.join(workspace, name), "utf8");

  let panel;
  let prompt;
  let compareHeader;
  await step("open the TunaCode panel at 300 px", async () => {
    await page.goto(url);
    panel = await openPanel();
    prompt = panel.locator("#prompt");
    // Drag the side bar's edge so the panel is 300 px wide (the narrow case).
    return { sidebarWidth: await sidebarWidth(300) };
  });

  await step("typing while the agent works: Enter steers; the steer shows in the turn when the model saw it", async () => {
    await setScript(steerScript);
    const turn = await send(STEER_PROMPT);
    await turn.locator('xpath=self::*[@data-status="running"]').waitFor();
    // The composer stays usable: Send says Steer, and Queue is offered.
    await panel.locator("#send:not([disabled])", { hasText: "Steer" }).waitFor();
    await panel.locator("#queue-send:not([hidden])").waitFor();
    await prompt.fill(STEER_TEXT);
    await prompt.press("Enter");
    if ((await prompt.inputValue()) !== "") throw new Error("the steer stayed in the prompt box");
    await turn.locator(".user-steer", { hasText: STEER_TEXT }).waitFor({ timeout: 30_000 });
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    await turn.locator(".answer", { hasText: "Noted: tabs it is." }).waitFor();
    // The model's second call had the steer as a user message after the tool result.
    const requests = await modelRequests();
    const last = requests[requests.length - 1].messages;
    const i = last.findIndex((m) => m.role === "user" && JSON.stringify(m.content).includes(STEER_TEXT));
    if (i < 0 || last[i - 1]?.role !== "tool") throw new Error(`the model did not get the steer after the tool result: ${JSON.stringify(last.map((m) => m.role))}`);
    if ((await panel.locator("#queue .steer-pending").count()) !== 0) throw new Error("the steer is still shown as pending");
    await bothThemes("40-steer-in-turn");
  });

  await step("Alt+Enter and Queue queue prompts as pending rows; one is removed; the other runs next", async () => {
    await setScript(queueScript);
    const before = (await modelRequests()).length;
    const slow = await send(SLOW_PROMPT);
    await slow.locator('xpath=self::*[@data-status="running"]').waitFor();
    await prompt.fill(QUEUED_PROMPT);
    await prompt.press("Alt+Enter");
    const queued = panel.locator("#queue .queue-row.queued", { hasText: QUEUED_PROMPT });
    await queued.waitFor();
    await prompt.fill(REMOVED_PROMPT);
    await panel.locator("#queue-send").click();
    const removed = panel.locator("#queue .queue-row.queued", { hasText: REMOVED_PROMPT });
    await removed.waitFor();
    // Both rows know their request (request_queued came) before the removal.
    await panel.locator("#queue .queue-row.queued[data-request-id]").nth(1).waitFor();
    await shot("41-queued-rows");
    await removed.locator(".queue-remove").click();
    await removed.waitFor({ state: "detached" });
    // The other one still waits for the running request (shown in both themes).
    if ((await slow.getAttribute("data-status")) !== "running") throw new Error("the slow request ended before the removal was checked");
    await bothThemes("41-queued-row-left");
    await slow.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    const next = panel.locator("article.turn", { hasText: QUEUED_PROMPT });
    await next.locator(".answer", { hasText: QUEUED_ANSWER }).waitFor({ timeout: 30_000 });
    await next.locator('xpath=self::*[@data-status="end_turn"]').waitFor();
    await queued.waitFor({ state: "detached" });
    if ((await panel.locator("article.turn", { hasText: REMOVED_PROMPT }).count()) !== 0) throw new Error("the removed prompt became a turn");
    const calls = (await modelRequests()).length - before;
    if (calls !== 2) throw new Error(`the model was called ${calls} times, not 2 (the removed prompt ran?)`);
    return { modelCalls: calls };
  });

  await step("Edit and resend: the rewind cuts back to before the prompt and puts it in the box", async () => {
    const target = panel.locator("article.turn", { hasText: QUEUED_PROMPT });
    await target.locator(".turn-edit").click();
    await dialogButton("Rewind").click();
    await target.waitFor({ state: "detached", timeout: 15_000 });
    await panel.locator("article.turn", { hasText: SLOW_PROMPT }).waitFor();
    const text = await prompt.inputValue();
    if (text !== QUEUED_PROMPT) throw new Error(`the prompt box has ${JSON.stringify(text)}`);
    await shot("42-edit-and-resend");
    await prompt.fill("");
  });

  await step("an agent edit of a buffer with unsaved changes: diff and full output read-only, Undo in the buffer", async () => {
    const editor = await typeUnsavedLine("calc.py", "def add", "return a - b");
    await setScript(editBuffer);
    const turn = await send(BUFFER_PROMPT);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    await editor.locator(".view-lines", { hasText: "return a + b" }).waitFor();
    await turn.locator(".turn-changes-text").waitFor();  // the result re-renders the row: click after it
    await turn.locator(".turn-review").click();
    const row = turn.locator('.change-row[data-path="calc.py"]');
    await row.locator(".change-unsaved").waitFor();
    await row.locator(".change-diff").click();
    const diffEditor = page.locator(".monaco-diff-editor").first();
    await diffEditor.waitFor();
    await page.locator(".tabs-container .tab", { hasText: "calc.py (before ↔ after this request)" }).first().waitFor();
    await diffEditor.locator(".editor.original .view-lines", { hasText: "return a - b" }).waitFor();
    await diffEditor.locator(".editor.modified .view-lines", { hasText: "return a + b" }).waitFor();
    const toasts = await page.locator(".notifications-toasts .notification-toast", { hasText: "changed since this diff was recorded" }).count();
    if (toasts !== 0) throw new Error("a false 'changed since this diff was recorded' toast");
    if ((await page.locator(".tabs-container .tab", { hasText: "Untitled" }).count()) !== 0) throw new Error("the diff opened as an Untitled document");
    await shot("43-unsaved-buffer-diff");
    // The turn's checkpoint row (Cline's Compare / Restore): Compare opens the request's files
    // in one multi-file diff editor, before ↔ now.
    const links = (await turn.locator(".turn-changes > button").allInnerTexts()).map((t) => t.trim());
    if (links.join("|") !== "Compare|Changes|Restore") throw new Error(`the turn's checkpoint row is ${JSON.stringify(links)}`);
    await turn.locator(".turn-compare").click();
    await page.locator(".tabs-container .tab", { hasText: "Changes of this request" }).first().waitFor();
    const compared = page.locator(".multiDiffEditor .multiDiffEntry", { hasText: "calc.py" }).first();
    await compared.locator(".editor.original .view-lines", { hasText: "return a - b" }).first().waitFor();
    await compared.locator(".editor.modified .view-lines", { hasText: "return a + b" }).first().waitFor();
    if ((await page.locator(".notifications-toasts .notification-toast", { hasText: "changed since" }).count()) !== 0) throw new Error("Compare says the buffer changed since");
    const header = (await compared.locator(".header").first().innerText()).replace(/\s+/g, " ").trim();
    compareHeader = header; // kept in the summary: the file's row (a rename would show "R")
    await bothThemes("43b-compare-request");
    // Show full output of the edit's card: a read-only tab, not an Untitled document.
    const card = turn.locator(".tool-card").first();
    await card.locator("summary").click();
    await card.locator(".tool-full-output").click();
    await page.locator(".tabs-container .tab", { hasText: "output" }).first().waitFor();
    if ((await page.locator(".tabs-container .tab", { hasText: "Untitled" }).count()) !== 0) throw new Error("the full output opened as an Untitled document");
    if ((await page.locator(".tabs-container .tab.dirty", { hasText: "output" }).count()) !== 0) throw new Error("the full output tab is dirty");
    // Undo of the file: the agent's edit leaves the buffer, the user's line stays unsaved, disk untouched.
    await row.locator(".change-undo").click();
    await row.locator('xpath=self::*[@data-undone="true"]').waitFor();
    await page.locator(".tabs-container .tab", { hasText: /^calc\.py$/ }).first().click().catch(() => undefined);
    if (read("calc.py") !== CONTROL_FILES["calc.py"]) throw new Error(`the disk changed: ${JSON.stringify(read("calc.py"))}`);
    const refused = await page.locator(".notifications-toasts .notification-toast", { hasText: "cannot be undone" }).count();
    if (refused !== 0) throw new Error("Undo refused the unsaved buffer");
    const buffer = await page.evaluate(() => Array.from(document.querySelectorAll(".tabs-container .tab.dirty")).map((t) => t.textContent));
    if (!buffer.some((t) => t.includes("calc.py"))) throw new Error(`calc.py is no longer unsaved: ${JSON.stringify(buffer)}`);
    await shot("44-unsaved-buffer-undone");
    if (read("calc.py") === CALC_AGENT) throw new Error("the agent's edit was saved");
    return { compareHeader };
  });

  await step("a refused API key: the error says so, with Open Settings and Set API Key and no Retry", async () => {
    await setScript(refusedKey);
    const turn = await send(KEY_PROMPT);
    await turn.locator('xpath=self::*[@data-status="error"]').waitFor({ timeout: 30_000 });
    const actions = turn.locator('.turn-error-actions[data-kind="auth"]');
    await actions.waitFor();
    const labels = (await actions.locator("button").allInnerTexts()).map((t) => t.trim());
    if (labels.join("|") !== "Open Settings|Set API Key|Choose model|Show Logs") throw new Error(`the buttons are ${JSON.stringify(labels)}`);
    await turn.locator(".turn-error-hint", { hasText: "refused the API key" }).waitFor();
    await bothThemes("45-auth-error");
    return { buttons: labels };
  });

  await step("approvals at 300 px: the command wraps at spaces and is not repeated, the diff has no headers, answered cards close, no todo_write card", async () => {
    await setScript(approvals);
    const turn = await send(APPROVE_PROMPT);
    const bash = turn.locator('.tool-card[data-approval="asking"]', { has: panel.locator(".approval-command") });
    await bash.waitFor({ timeout: 30_000 });
    const question = (await bash.locator(".approval-question").innerText()).trim();
    if (question !== "Allow this command?") throw new Error(`the question is ${JSON.stringify(question)}`);
    const command = bash.locator(".approval-command");
    if ((await command.innerText()).trim() !== LONG_COMMAND) throw new Error(`the command shows as ${JSON.stringify(await command.innerText())}`);
    const style = await command.evaluate((node) => ({ wordBreak: getComputedStyle(node).wordBreak, overflowWrap: getComputedStyle(node).overflowWrap }));
    if (style.wordBreak !== "normal" || style.overflowWrap !== "anywhere") throw new Error(`the command wraps with ${JSON.stringify(style)}`);
    // Wrapped at blanks: no word of the command is split over two lines.
    const cut = await command.evaluate((node) => {
      const cuts = [];
      const width = node.clientWidth;
      for (const word of node.querySelectorAll(".cmd-word")) {
        const range = document.createRange();
        range.selectNodeContents(word);
        const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
        if (lines.size > 1 && word.scrollWidth < width) cuts.push(word.textContent);
      }
      if (node.querySelectorAll(".cmd-word").length === 0) cuts.push("(no words)");
      return cuts;
    });
    if (cut.length > 0) throw new Error(`the command wraps mid-word at ${JSON.stringify(cut)}`);
    const note = (await bash.locator(".approval-note").first().innerText()).trim();
    if (!note.startsWith("Asked by the ask rule bash(python3 -m pytest*)") || note.includes("`")) throw new Error(`the rule note says ${JSON.stringify(note)}`);
    const rowText = (await bash.locator(".tool-summary").innerText()).trim();
    if (/^bash\b/.test(rowText)) throw new Error(`the row shows the raw tool name: ${JSON.stringify(rowText)}`);
    if ((await turn.locator('.tool-card[data-tool="todo_write"]').count()) !== 0) throw new Error("a todo_write card repeats the plan");
    await panel.locator("#plan:not([hidden])", { hasText: "Running the tests" }).waitFor();
    await bothThemes("46-command-approval");
    const bashId = await bash.getAttribute("data-tool-call-id");
    await bash.locator(".approve-deny").click();
    const edit = turn.locator('.tool-card[data-approval="asking"]', { has: panel.locator(".approval-diff") });
    await edit.waitFor({ timeout: 30_000 });
    const bashCard = turn.locator(`.tool-card[data-tool-call-id="${bashId}"]`);
    if (await bashCard.evaluate((node) => node.open)) throw new Error("the answered command's card stayed open");
    const diffText = await edit.locator(".approval-diff").innerText();
    if (/^(---|\+\+\+|@@)/m.test(diffText)) throw new Error(`the approval diff shows raw headers: ${JSON.stringify(diffText)}`);
    await edit.locator(".approval-diff .diff-add", { hasText: "status: final" }).waitFor();
    await shot("47-diff-approval");
    const editId = await edit.getAttribute("data-tool-call-id");
    await edit.locator(".approve-allow").click();
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    const editCard = turn.locator(`.tool-card[data-tool-call-id="${editId}"]`);
    if (await editCard.evaluate((node) => node.open)) throw new Error("the answered edit's card stayed open");
    // The applied diff keeps its colours (and no raw headers) when the card is opened again.
    await editCard.locator("summary").click();
    await editCard.locator(".tool-result.tool-diff .diff-add", { hasText: "status: final" }).waitFor();
    await editCard.locator(".tool-result.tool-diff .diff-del", { hasText: "status: draft" }).waitFor();
    await shot("48-applied-diff");
    return { question, row: rowText };
  });

  await step("↓ Latest at 300 px: scrolled up, it sits below the conversation over no row, and jumps to the bottom", async () => {
    const conversation = panel.locator("#conversation");
    const jump = panel.locator("#jump-bottom");
    const scrollable = await conversation.evaluate((node) => node.scrollHeight - node.clientHeight);
    if (scrollable < 80) throw new Error(`the conversation does not scroll (${scrollable} px to spare)`);
    // Up by a little: the last tool rows are just above the bottom edge, where the button shows.
    await conversation.evaluate((node) => { node.scrollTop = node.scrollHeight - node.clientHeight - 60; });
    await jump.waitFor({ state: "visible" });
    const box = await jump.boundingBox();
    const area = await conversation.boundingBox();
    if (box.y < area.y + area.height - 0.5) throw new Error(`the button (top ${box.y}) overlaps the conversation (bottom ${area.y + area.height})`);
    const covered = await conversation.evaluate((node, b) => {
      const hits = [];
      for (const row of node.querySelectorAll(".tool-card, .turn-text, .turn-changes, .turn-prompt")) {
        const r = row.getBoundingClientRect();
        const shown = r.bottom > node.getBoundingClientRect().top && r.top < node.getBoundingClientRect().bottom;
        if (shown && r.bottom > b.y && r.top < b.y + b.height && r.right > b.x && r.left < b.x + b.width) hits.push(row.className);
      }
      return hits;
    }, box);
    if (covered.length > 0) throw new Error(`the button covers ${JSON.stringify(covered)}`);
    await bothThemes("48b-jump-to-latest");
    await jump.click();
    await jump.waitFor({ state: "hidden" });
    const left = await conversation.evaluate((node) => node.scrollHeight - node.scrollTop - node.clientHeight);
    if (left > 2) throw new Error(`after the jump ${left} px are still below`);
    return { gap: Math.round(box.y - (area.y + area.height)) };
  });

  await step("sessions at 300 px: two-line titles, ages that do not wrap, a search box, one ⋯ menu per row; delete names the session", async () => {
    await panel.locator("#toggle-sessions").click();
    const rows = panel.locator(".session-row");
    await rows.first().waitFor();
    if ((await panel.locator(".session-row button:not(.secondary)").count()) !== (await rows.count())) throw new Error("a row has more than its one open button");
    const meta = (await rows.first().locator(".session-meta").innerText()).trim();
    if (!/^(just now|\d+ min ago)/.test(meta)) throw new Error(`the age is ${JSON.stringify(meta)}`);
    const metaLines = await rows.first().locator(".session-meta").evaluate((node) => Math.round(node.getBoundingClientRect().height / parseFloat(getComputedStyle(node).lineHeight || "16")));
    if (metaLines > 1) throw new Error(`the age wraps over ${metaLines} lines`);
    const title = rows.first().locator(".session-title");
    const titleStyle = await title.evaluate((node) => getComputedStyle(node).webkitLineClamp);
    if (String(titleStyle) !== "2") throw new Error(`the title is clamped to ${titleStyle} lines`);
    await bothThemes("49-sessions-300px");
    await panel.locator(".session-search").fill("no such session at all");
    await panel.locator(".session-empty", { hasText: "No session matches." }).waitFor();
    await panel.locator(".session-search").fill("");
    const name = (await title.innerText()).trim();
    await rows.first().locator(".session-menu").click();
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Delete" }).first().click();
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor();
    const said = await dialog.innerText();
    if (!said.includes(name.slice(0, 20))) throw new Error(`the delete dialog does not name ${JSON.stringify(name)}: ${JSON.stringify(said)}`);
    await shot("50-delete-names-the-session");
    await dialogButton("Cancel").click();
    await panel.locator("#toggle-sessions").click();
    return { age: meta, deleteDialog: said.replace(/\s+/g, " ").trim().slice(0, 300) };
  });

  await step("@ offers the workspace's files; Tab takes one", async () => {
    await prompt.fill("");
    await prompt.pressSequentially("compare @cal");
    const item = panel.locator("#mentions .slash-item", { hasText: "calc.py" });
    await item.waitFor();
    await shot("51-at-file-completion");
    await prompt.press("Tab");
    const text = await prompt.inputValue();
    if (text !== "compare @calc.py ") throw new Error(`the prompt is ${JSON.stringify(text)}`);
    await prompt.fill("");
    return { prompt: text };
  });
}
