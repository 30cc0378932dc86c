// The Changes view in a real VS Code: the agent edits two files through the scripted model;
// the turn lists them; the Changes list shows a file's diff in VS Code's diff editor; Undo
// puts one file's bytes back; someone else edits the other; "Rewind to before this prompt"
// names that file in a conflict, Overwrite restores every file to its exact bytes, and the
// conversation is cut back. Every file check reads the bytes on disk.
import * as fs from "node:fs";
import * as path from "node:path";
import { scenarioKit } from "./kit.mjs";

/** Lines `nNN = NN` (c.py: far apart edits give a diff of two hunks). */
function numbered(n) {
  return Array.from({ length: n }, (_, i) => `n${String(i + 1).padStart(2, "0")} = ${i + 1}\n`);
}

/** The workspace's files before the request (b.py has no final newline on purpose). */
export const CHANGES_FILES = {
  "a.py": "def add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n",
  "b.py": "VALUE = 1\nOTHER = 2",
  "c.py": numbered(20).join(""),
};
const A_AFTER = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n";
const B_AFTER = "VALUE = 10\nOTHER = 2";
const EDIT_PROMPT = "Fix add() and raise VALUE.";

const editTwoFiles = {
  turns: [
    {
      steps: [
        { tool_call: { name: "edit_file", arguments: { filepath: "a.py", old_text: "return a - b", new_text: "return a + b" } } },
        { finish: "tool_calls" },
      ],
    },
    {
      steps: [
        { tool_call: { name: "edit_file", arguments: { filepath: "b.py", old_text: "VALUE = 1\n", new_text: "VALUE = 10\n" } } },
        { finish: "tool_calls" },
      ],
    },
    { steps: [{ text: "Fixed `add` and raised `VALUE`.", chunks: 2 }, { finish: "stop" }] },
  ],
};

const CONTEXT_PROMPT = "What does this do? Compare with @b.py";
const explain = { turns: [{ steps: [{ text: "It adds two numbers: see [a.py line 2](a.py#L2).", chunks: 1 }, { finish: "stop" }] }] };

const BUFFER_PROMPT = "Raise OTHER.";
const editOpenBuffer = {
  turns: [
    { steps: [{ tool_call: { name: "edit_file", arguments: { filepath: "b.py", old_text: "OTHER = 2", new_text: "OTHER = 3" } } }, { finish: "tool_calls" }] },
    { steps: [{ text: "Raised OTHER.", chunks: 1 }, { finish: "stop" }] },
  ],
};

const HUNKS_PROMPT = "Change n02 and n18.";
const editTwoHunks = {
  turns: [
    { steps: [{ tool_call: { name: "edit_file", arguments: { filepath: "c.py", old_text: "n02 = 2\n", new_text: "n02 = 200\n" } } }, { finish: "tool_calls" }] },
    { steps: [{ tool_call: { name: "edit_file", arguments: { filepath: "c.py", old_text: "n18 = 18\n", new_text: "n18 = 1800\nn18b = 0\n" } } }, { finish: "tool_calls" }] },
    { steps: [{ text: "Changed both.", chunks: 1 }, { finish: "stop" }] },
  ],
};
/** c.py with the second hunk undone: the first hunk's change stays. */
const C_FIRST_ONLY = CHANGES_FILES["c.py"].replace("n02 = 2\n", "n02 = 200\n");

export async function runChangesScenario({ context, url, extensionId, modelRoot, artifacts, summary, log, workspace }) {
  const { page, shot, setScript, modelRequests, step, openPanel, send, runCommand, quickOpen, typeUnsavedLine, dialogButton } =
    await scenarioKit({ context, extensionId, modelRoot, artifacts, summary, log });
  const file = (name) => path.join(workspace, name);
  const read = (name) => (fs.existsSync(file(name)) ? fs.readFileSync(file(name), "utf8") : null);
  /** Polls the bytes on disk (the extension host writes them, not this process). */
  const waitForBytes = async (name, expected, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (read(name) !== expected) {
      if (Date.now() > deadline) throw new Error(`${name} on disk is ${JSON.stringify(read(name))}, expected ${JSON.stringify(expected)}`);
      await page.waitForTimeout(100);
    }
  };

  let panel;
  await step("open the TunaCode panel", async () => {
    await page.goto(url);
    panel = await openPanel();
  });

  let turn;
  await step("an agent edit of two files: the turn says 2 files changed", async () => {
    await setScript(editTwoFiles);
    turn = await send(EDIT_PROMPT);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    await turn.locator(".turn-changes-text", { hasText: "2 files changed" }).waitFor();
    await waitForBytes("a.py", A_AFTER);
    await waitForBytes("b.py", B_AFTER);
  });

  await step("the Changes list shows a file's diff in VS Code's diff editor", async () => {
    await turn.locator(".turn-review").click();
    const row = turn.locator('.change-row[data-path="a.py"][data-status="modified"]');
    await row.waitFor();
    await turn.locator('.change-row[data-path="b.py"][data-status="modified"]').waitFor();
    await row.locator(".change-diff").click();
    const diffEditor = page.locator(".monaco-diff-editor").first();
    await diffEditor.waitFor();
    await page.locator(".tabs-container .tab", { hasText: "a.py (before ↔ after this request)" }).first().waitFor();
    await diffEditor.locator(".editor.original .view-lines", { hasText: "return a - b" }).waitFor();
    await diffEditor.locator(".editor.modified .view-lines", { hasText: "return a + b" }).waitFor();
    await shot("20-changes-list-and-diff");
  });

  await step("Undo of one file puts its exact bytes back; the other keeps the edit", async () => {
    const row = turn.locator('.change-row[data-path="a.py"]');
    await row.locator(".change-undo").click();
    await row.locator('xpath=self::*[@data-undone="true"]').waitFor();
    await waitForBytes("a.py", CHANGES_FILES["a.py"]);
    if (read("b.py") !== B_AFTER) throw new Error(`b.py changed too: ${JSON.stringify(read("b.py"))}`);
    await shot("21-undo-one-file");
  });

  await step("Rewind to before this prompt: a conflict names the file, Overwrite restores every byte", async () => {
    // Someone else edits b.py after the request: the rewind must ask before overwriting it.
    fs.writeFileSync(file("b.py"), `${B_AFTER}\n# edited by hand\n`);
    await turn.locator(".turn-rewind").click();
    await dialogButton("Rewind").click();
    const conflict = page.locator(".monaco-dialog-box", { hasText: "b.py" });
    await conflict.waitFor({ timeout: 15_000 });
    const conflictText = (await conflict.innerText()).replace(/\s+/g, " ");
    await shot("22-rewind-conflict");
    await dialogButton("Overwrite").click();
    await waitForBytes("a.py", CHANGES_FILES["a.py"]);
    await waitForBytes("b.py", CHANGES_FILES["b.py"]);
    // The history is cut back to before the prompt: the turn is gone.
    await panel.locator("article.turn").first().waitFor({ state: "detached", timeout: 15_000 });
    await page.locator(".notifications-toasts .notification-toast", { hasText: "rewound to before the prompt" }).first().waitFor();
    // The rewound prompt is back in the box, to edit and send again.
    const restored = await panel.locator("#prompt").inputValue();
    if (restored !== EDIT_PROMPT) throw new Error(`the prompt box holds ${JSON.stringify(restored)} after the rewind`);
    await shot("23-rewound");
    return { conflictText: conflictText.slice(0, 300) };
  });

  await step("Ask about Selection from the editor's context menu sends the selection and an @file mention", async () => {
    // Close the diff editor, open a.py and select its first two lines.
    await runCommand("View: Close All Editors");
    await page.locator(".monaco-diff-editor").first().waitFor({ state: "detached" });
    await quickOpen("a.py");
    const editor = page.locator(".editor-instance .monaco-editor", { hasText: "def add" }).first();
    await editor.locator(".view-lines", { hasText: "def add" }).waitFor();
    await editor.locator(".view-line", { hasText: "def add" }).click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+End");
    await editor.locator(".view-line", { hasText: "return a - b" }).click({ button: "right", position: { x: 20, y: 5 } });
    const item = page.getByRole("menuitem", { name: /Ask about Selection/ });
    await item.waitFor();
    await item.hover();
    await item.click();
    await page.locator(".context-view .monaco-menu").waitFor({ state: "detached" });
    const chip = panel.locator("#attachments .attachment", { hasText: "a.py:1-2" });
    await chip.waitFor();
    await setScript(explain);
    const before = (await modelRequests()).length;
    const turn = await send(CONTEXT_PROMPT);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    await turn.locator(".prompt-context-item", { hasText: "a.py:1-2" }).waitFor();
    await turn.locator(".prompt-context-item", { hasText: "b.py" }).waitFor();
    if ((await panel.locator("#attachments .attachment").count()) !== 0) throw new Error("the chips stayed after sending");
    const requests = await modelRequests();
    if (requests.length !== before + 1) throw new Error(`${requests.length - before} model requests, expected 1`);
    const sent = JSON.stringify(requests[requests.length - 1].messages);
    for (const expected of ["Context from the editor:", "Selection in a.py, lines 1-2", "def add(a, b):", "File b.py", "OTHER = 2", CONTEXT_PROMPT]) {
      if (!sent.includes(JSON.stringify(expected).slice(1, -1))) throw new Error(`the model did not get ${JSON.stringify(expected)}: ${sent.slice(0, 600)}`);
    }
    await shot("24-ask-about-selection");
  });

  await step("the lightbulb's TunaCode: Explain puts the prompt and the selection in the panel to edit", async () => {
    const editor = page.locator(".editor-instance .monaco-editor", { hasText: "def add" }).first();
    await editor.locator(".view-line", { hasText: "return a - b" }).click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+End");
    await page.keyboard.press("Control+.");
    await page.getByText("TunaCode: Explain", { exact: true }).first().click();
    await panel.locator("#attachments .attachment", { hasText: "a.py:1-2" }).waitFor();
    const prompt = panel.locator("#prompt");
    const deadline = Date.now() + 10_000;
    while (!(await prompt.inputValue()).startsWith("Explain")) {
      if (Date.now() > deadline) throw new Error(`the prompt is ${JSON.stringify(await prompt.inputValue())}`);
      await page.waitForTimeout(100);
    }
    const turns = await panel.locator("article.turn").count();
    if (turns !== 1) throw new Error(`a request started by itself: ${turns} turns`);
    await shot("25-code-action-explain");
    return { prompt: await prompt.inputValue() };
  });

  await step("Tab from the panel's top reaches the prompt before any link of the conversation; a pasted image and a dropped file become chips", async () => {
    await panel.locator("#new-session").focus();
    const walked = [];
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press("Tab");
      const where = await panel.locator("body").evaluate(() => {
        const a = document.activeElement;
        return { id: a?.id ?? "", inConversation: !!a?.closest("#conversation"), text: (a?.textContent ?? "").slice(0, 30) };
      });
      walked.push(where.id || where.text);
      if (where.inConversation) throw new Error(`Tab reached the conversation before the prompt: ${JSON.stringify(walked)}`);
      if (where.id === "prompt") break;
    }
    if (walked[walked.length - 1] !== "prompt") throw new Error(`Tab never reached the prompt: ${JSON.stringify(walked)}`);
    // Paste a PNG into the prompt (a real ClipboardEvent with a File in its DataTransfer).
    await panel.locator("#prompt").evaluate((box) => {
      const png = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([png], "dot.png", { type: "image/png" }));
      box.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    });
    const chip = panel.locator('#attachments .attachment[data-type="image"]', { hasText: "image/png" });
    await chip.waitFor();
    // Drop a workspace file and a file outside it (a text/uri-list, as VS Code's explorer
    // gives with Shift+drag): the first becomes a chip, the second is left out, saying so.
    const inside = `file://${file("b.py")}`;
    await panel.locator("#prompt").evaluate((box, uris) => {
      const data = new DataTransfer();
      data.setData("text/uri-list", uris.join("\r\n"));
      box.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    }, [inside, "file:///etc/hostname"]);
    const dropped = panel.locator('#attachments .attachment[data-type="file"]', { hasText: "b.py" });
    await dropped.waitFor();
    await page.locator(".notifications-toasts .notification-toast", { hasText: "1 left out" }).first().waitFor();
    await shot("26-tab-order-pasted-image-dropped-file");
    for (const c of [chip, dropped]) {
      await c.locator(".attachment-remove").click();
      await c.waitFor({ state: "detached" });
    }
    return { tabOrder: walked };
  });

  await step("an edit of a buffer with unsaved changes: Changes says unsaved, Rewind gives the buffer its text back", async () => {
    for (let n = await panel.locator("#attachments .attachment").count(); n > 0; n--) {
      await panel.locator("#attachments .attachment-remove").first().click();
    }
    const editor = await typeUnsavedLine("b.py", "OTHER", "OTHER = 2");
    await setScript(editOpenBuffer);
    const turn = await send(BUFFER_PROMPT);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    await turn.locator(".turn-changes-text", { hasText: "1 file changed" }).waitFor();
    await editor.locator(".view-lines", { hasText: "OTHER = 3" }).waitFor();
    await editor.locator(".view-lines", { hasText: "# mine" }).waitFor();
    if (read("b.py") !== CHANGES_FILES["b.py"]) throw new Error(`the disk changed behind the unsaved buffer: ${JSON.stringify(read("b.py"))}`);
    await turn.locator(".turn-review").click();
    await turn.locator('.change-row[data-path="b.py"] .change-unsaved').waitFor();
    await shot("27-buffer-only-change");
    await turn.locator(".turn-rewind").click();
    await dialogButton("Rewind").click();
    await editor.locator(".view-lines", { hasText: "OTHER = 2" }).waitFor({ timeout: 15_000 });
    await editor.locator(".view-lines", { hasText: "# mine" }).waitFor();
    await panel.locator("article.turn", { hasText: BUFFER_PROMPT }).waitFor({ state: "detached", timeout: 15_000 });
    if (read("b.py") !== CHANGES_FILES["b.py"]) throw new Error(`the rewind changed the disk: ${JSON.stringify(read("b.py"))}`);
    if ((await page.locator(".tabs-container .tab.dirty", { hasText: "b.py" }).count()) !== 1) throw new Error("the user's unsaved change was saved or lost");
    await shot("28-buffer-rewound");
  });

  await step("the footer shows the MCP servers' state from tunacode.status, why one failed, and lists them when clicked", async () => {
    const mcp = panel.locator("#mcp");
    await mcp.locator('xpath=self::*[@data-level="error"]').waitFor({ timeout: 30_000 });
    const text = (await mcp.innerText()).trim();
    const detail = (await mcp.getAttribute("title")) ?? "";
    if (text !== "MCP: 1 ready · 1 failed") throw new Error(`the MCP line says ${JSON.stringify(text)}`);
    if (!/^demo: ready, \d+ tools$/m.test(detail) || !/^broken: failed/m.test(detail)) throw new Error(`the MCP details say ${JSON.stringify(detail)}`);
    // Why it failed is in the panel, not only the tooltip; the line opens the servers' list.
    const reason = (await panel.locator("#mcp-reason").innerText()).trim();
    if (!reason.startsWith("broken: ")) throw new Error(`the MCP reason line says ${JSON.stringify(reason)}`);
    await shot("29-mcp-status");
    await mcp.click();
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "broken" }).first();
    await row.waitFor();
    if (!/failed/.test(await row.innerText())) throw new Error(`the MCP list's row says ${JSON.stringify(await row.innerText())}`);
    await page.keyboard.press("Escape");
    return { mcp: text, mcpDetail: detail, mcpReason: reason };
  });

  await step("Undo of one hunk: its old lines back, the file's other change kept; a hunk edited since is refused", async () => {
    await setScript(editTwoHunks);
    const turn = await send(HUNKS_PROMPT);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor({ timeout: 30_000 });
    // the result (its changed files) re-renders the row after request_end: click once it is there
    await turn.locator(".turn-changes-text").waitFor();
    await turn.locator(".turn-review").click();
    await turn.locator('.turn-review[aria-expanded="true"]').waitFor();
    const row = turn.locator('.change-row[data-path="c.py"][data-status="modified"]');
    await row.locator(".hunk-row").nth(1).waitFor();
    const hunks = await row.locator(".hunk-row").count();
    if (hunks !== 2) throw new Error(`c.py lists ${hunks} hunks, expected 2`);
    const labels = await row.locator(".hunk-label").allInnerTexts();
    await row.locator('.hunk-row[data-index="1"] .hunk-undo').click();
    await row.locator('.hunk-row[data-index="1"][data-undone="true"]').waitFor();
    await waitForBytes("c.py", C_FIRST_ONLY);
    await shot("2a-undo-one-hunk");
    // Someone edits the first hunk's new line: its Undo must refuse, not guess.
    await quickOpen("c.py");
    const editor = page.locator(".editor-instance .monaco-editor", { hasText: "n01" }).first();
    await editor.locator(".view-lines", { hasText: "n02 = 200" }).waitFor();
    const edited = C_FIRST_ONLY.replace("n02 = 200\n", "n02 = 201\n");
    fs.writeFileSync(file("c.py"), edited);
    await editor.locator(".view-lines", { hasText: "n02 = 201" }).waitFor({ timeout: 15_000 });
    await row.locator('.hunk-row[data-index="0"] .hunk-undo').click();
    await page.locator(".notifications-toasts .notification-toast", { hasText: "c.py no longer has the lines of this change" }).first().waitFor();
    if (read("c.py") !== edited) throw new Error(`the refused Undo changed c.py: ${JSON.stringify(read("c.py"))}`);
    if ((await row.locator('.hunk-row[data-index="0"][data-undone="true"]').count()) !== 0) throw new Error("the refused hunk is marked undone");
    await shot("2b-undo-hunk-refused");
    return { hunkLabels: labels };
  });
}
