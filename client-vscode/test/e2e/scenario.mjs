// The steps a person takes in the TunaCode panel, each recorded in the summary with a
// screenshot: ask (streamed answer + completed tool card), open a file link and a tool's
// full output, prompt history, a setting changed mid-request (applied live), stop with the
// keybinding from the editor, restore after a window reload, resume, restart, and a broken
// server command with a clear message.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ANSWER_TEXT,
  ASK_PROMPT,
  FILE_LINK_TEXT,
  SLOW_PROMPT,
  STORY_LENGTH,
  UNSAFE_HTML,
  APPROVAL_PROMPT,
  approvalThenAnswer,
  slowAnswer,
  toolThenAnswer,
} from "./scripts.mjs";
import { scenarioKit, waitFor } from "./kit.mjs";

export async function runScenario({ workspace, context, url, extensionId, modelRoot, artifacts, summary, log, readSettings, writeMachineSettings, serverCommand, brokenPython }) {
  const kit = await scenarioKit({ context, extensionId, modelRoot, artifacts, summary, log });
  const { page, shot, setScript, step, runCommand, openPanel, send, newSession } = kit;
  const modelRequests = async () => (await kit.modelRequests()).length;

  let panel;
  await step("open the TunaCode panel", async () => {
    await page.goto(url);
    panel = await openPanel();
  });

  let firstSessionId;
  await step("ask: streamed answer and a completed tool card", async () => {
    await setScript(toolThenAnswer);
    const turn = await send(ASK_PROMPT);
    await turn.locator(".user-prompt-text", { hasText: ASK_PROMPT }).waitFor();
    const card = turn.locator('.tool-card[data-tool="list_files"]');
    await card.locator('xpath=self::*[@data-status="completed"]').waitFor();
    await turn.locator(".answer strong", { hasText: "hello.txt" }).waitFor();
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor();
    const answer = (await turn.locator(".answer").first().innerText()).trim();
    if (!answer.includes(ANSWER_TEXT.replace(/\*\*/g, ""))) throw new Error(`unexpected answer: ${answer}`);
    await turn.locator(".code-block .copy-code").first().waitFor();
    await turn.locator(".code-block .insert-code").first().waitFor();
    // The sh block is highlighted (highlight.js spans, coloured from the theme).
    await turn.locator('.code-block code span[class^="hljs-"]').first().waitFor();
    if (!answer.includes(UNSAFE_HTML)) throw new Error("raw HTML in the answer was not shown as text");
    const unsafe = await turn.locator(".answer img, .answer script").count();
    const pwned = await turn.evaluate(() => window.__pwned ?? null);
    if (unsafe !== 0 || pwned !== null) throw new Error(`raw HTML in the answer became elements (${unsafe}) or ran (${pwned})`);
    await card.locator("summary").click(); // expand the result
    const result = await card.locator(".tool-result").innerText();
    if (!result.includes("hello.txt")) throw new Error(`list_files result does not name hello.txt: ${result}`);
    firstSessionId = await panel.locator("#title").getAttribute("data-session-id");
    if (!firstSessionId) throw new Error("the panel shows no session id after the request");
    // Transcript CSS: a fenced block is one container (no inline-code box per line), task
    // lists are checkboxes, a blockquote has a left border.
    const look = await turn.locator(".answer").first().evaluate((answer) => {
      const code = answer.querySelector("pre code");
      const quote = answer.querySelector("blockquote");
      const cs = (e) => (e ? getComputedStyle(e) : undefined);
      return {
        codeBackground: cs(code)?.backgroundColor,
        codePadding: cs(code)?.paddingLeft,
        quoteBorder: cs(quote)?.borderLeftWidth,
        boxes: [...answer.querySelectorAll(".task-box")].map((b) => b.getAttribute("aria-checked")),
        literal: answer.innerText.includes("[x]"),
      };
    });
    if (look.codeBackground !== "rgba(0, 0, 0, 0)" || look.codePadding !== "0px") throw new Error(`a code block's code has its own box: ${JSON.stringify(look)}`);
    if (look.quoteBorder !== "3px" || look.boxes.join() !== "true,false" || look.literal) throw new Error(`markdown extras: ${JSON.stringify(look)}`);
    const footer = await panel.locator("#footer").innerText();
    await shot("01-answer-and-tool-card");
    return { sessionId: firstSessionId, modelRequests: await modelRequests(), footer };
  });

  const editorTab = (name) => page.locator(".tabs-container .tab", { hasText: name });

  /** Edits the user settings as a person would: settings.json in the editor, saved. */
  const writeSettings = async (changes) => {
    const next = JSON.stringify({ ...readSettings(), ...changes }, null, 2);
    await runCommand("Preferences: Open User Settings (JSON)");
    // It opens as a tab or, in newer VS Code, a modal editor.
    // Any visible line names a tunacode setting (the editor renders only the lines in view).
    const editor = page.locator(".monaco-editor", { hasText: '"tunacode.' }).first();
    await editor.waitFor();
    await editor.locator(".view-lines").click();
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(next);
    // Drop what auto-closing added after the cursor (a closing brace).
    await page.keyboard.press("Control+Shift+End");
    await page.keyboard.press("Delete");
    await page.keyboard.press("Control+S");
    // Saved: the file on disk has the change (polled, up to 10 s).
    const deadline = Date.now() + 10_000;
    const matches = () => {
      try {
        const now = readSettings();
        return Object.entries(changes).every(([k, v]) => JSON.stringify(now[k]) === JSON.stringify(v));
      } catch {
        return false; // not valid JSON (yet)
      }
    };
    while (!matches()) {
      if (Date.now() > deadline) throw new Error("settings.json was not saved");
      await page.waitForTimeout(100);
    }
    // Close the settings editor when it is a modal (it would cover the panel).
    const modal = page.locator(".monaco-modal-editor-block");
    if ((await modal.count()) > 0) {
      await editor.locator(".view-lines").click();
      await page.keyboard.press("Escape");
      const closed = await modal.first().waitFor({ state: "detached", timeout: 3_000 }).then(() => true, () => false);
      if (!closed) await modal.locator('.codicon-close, [aria-label^="Close"]').first().click();
      await modal.first().waitFor({ state: "detached" });
    }
    const saved = readSettings();
    for (const [key, value] of Object.entries(changes)) {
      if (JSON.stringify(saved[key]) !== JSON.stringify(value)) throw new Error(`settings.json did not save ${key}: ${JSON.stringify(saved[key])}`);
    }
  };

  await step("the model menu: real models with the one in use first, written to user settings only", async () => {
    await panel.locator("#model").click();
    const rows = page.locator(".quick-input-list .monaco-list-row");
    await rows.first().waitFor();
    const first = await rows.first().innerText();
    const all = await page.locator(".quick-input-list").innerText();
    if (/server default/i.test(all)) throw new Error(`the model menu has a "Server default" row: ${all}`);
    if (!first.includes("openai-compatible:scripted")) throw new Error(`the model in use is not first: ${first}`);
    await shot("01b-model-menu");
    await rows.first().click();
    await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
    const deadline = Date.now() + 5_000;
    while (readSettings()["tunacode.model"] !== "openai-compatible:scripted") {
      if (Date.now() > deadline) throw new Error("the chosen model is not in the user settings");
      await page.waitForTimeout(100);
    }
    if (fs.existsSync(path.join(workspace, ".vscode", "settings.json"))) throw new Error("the model menu wrote .vscode/settings.json into the workspace");
    return { first };
  });

  await step("a file link in the answer opens the file at the line", async () => {
    const link = panel.locator("article.turn").last().locator(".answer a", { hasText: FILE_LINK_TEXT });
    await link.click();
    await editorTab("hello.txt").first().waitFor();
    await page.locator(".monaco-editor .view-lines", { hasText: "hello from the e2e workspace" }).first().waitFor();
    const browserTabs = context.pages().length;
    if (browserTabs !== 1) throw new Error(`the link opened ${browserTabs - 1} browser tab(s)`);
    await shot("05-file-link-opened");
  });

  await step("show a tool's full output in an editor tab", async () => {
    const card = panel.locator("article.turn").last().locator('.tool-card[data-tool="list_files"]');
    await card.locator(".tool-full-output").click();
    await page.locator(".monaco-editor .view-lines", { hasText: "hello.txt" }).first().waitFor();
    // A read-only document of the extension (never an Untitled one that asks to be saved).
    await editorTab("list_files output").first().waitFor();
    if ((await editorTab("Untitled").count()) !== 0) throw new Error("the full output opened as an Untitled document");
    await shot("06-full-output");
  });

  await step("Up in the prompt recalls the last prompt", async () => {
    const prompt = panel.locator("#prompt");
    await prompt.click();
    await prompt.fill("");
    await prompt.press("ArrowUp");
    const recalled = await prompt.inputValue();
    if (recalled !== ASK_PROMPT) throw new Error(`ArrowUp recalled ${JSON.stringify(recalled)}`);
    await prompt.press("ArrowDown");
    if ((await prompt.inputValue()) !== "") throw new Error("ArrowDown did not return to the empty draft");
  });

  await step("a setting changed mid-request applies live; stop with the keybinding from the editor", async () => {
    await newSession();
    await setScript(slowAnswer);
    const turn = await send(SLOW_PROMPT);
    await turn.locator(".answer").waitFor();
    // Change agent settings while the request runs (the setting is for new sessions: the
    // session keeps its model, and the footer keeps saying so)...
    await writeSettings({ "tunacode.model": "openai-compatible:scripted-live", "tunacode.maxTurns": 12 });
    // ...and the request keeps streaming on the same server.
    const before = (await turn.locator(".answer").innerText()).length;
    await turn.locator(".answer").evaluate(
      (el, n) =>
        new Promise((resolve) => {
          const check = () => (el.textContent.length > n + 20 ? resolve(true) : setTimeout(check, 50));
          check();
        }),
      before,
    );
    const status = await turn.getAttribute("data-status");
    const server = await panel.locator("body").getAttribute("data-server");
    if (status !== "running" || server !== "running") throw new Error(`after the change: turn ${status}, server ${server}`);
    const footerModel = (await panel.locator("#model").innerText()).trim();
    if (footerModel !== "openai-compatible:scripted") throw new Error(`the footer claims ${footerModel}, not the session's model`);
    // Stop from the editor with the keybinding (the panel does not have focus).
    await editorTab("hello.txt").first().click();
    await page.locator(".monaco-editor textarea").first().focus();
    await page.keyboard.press("Control+Alt+S");
    await turn.locator('xpath=self::*[@data-status="cancelled"]').waitFor({ timeout: 5_000 });
    await shot("07-setting-live-and-keybinding-stop");
    await writeSettings({ "tunacode.model": "openai-compatible:scripted", "tunacode.maxTurns": 40 });
    await panel.locator("#model", { hasText: /scripted$/ }).waitFor();
    return { charsBeforeChange: before };
  });

  await step("an approval waits in the card; the status bar shows it; deny shows denied", async () => {
    await writeSettings({ "tunacode.approval": "ask" });
    await newSession();
    await setScript(approvalThenAnswer);
    const turn = await send(APPROVAL_PROMPT);
    const card = turn.locator('.tool-card[data-tool="bash"]');
    await card.locator('xpath=self::*[@data-status="awaiting_approval"]').waitFor();
    await card.locator(".tool-state", { hasText: "waiting for approval" }).waitFor();
    // The question takes the keyboard: Allow has the focus (not 6-9 Tabs away).
    const focused = () => panel.locator("body").evaluate(() => document.activeElement?.className || document.activeElement?.id || "");
    const allowFocus = await waitFor(async () => ((await focused()).includes("approve-allow") ? true : undefined), 5_000);
    if (!allowFocus) throw new Error(`Allow is not focused when the approval appears: ${await focused()}`);
    // The status bar says it waits; clicking it shows the card and does not stop the request.
    const statusItem = page.locator(".statusbar-item", { hasText: "waiting for approval" }).first();
    await statusItem.waitFor();
    await statusItem.click();
    await card.locator('xpath=self::*[@open]').waitFor();
    if ((await turn.getAttribute("data-status")) !== "running") throw new Error("clicking the status bar stopped the request");
    await shot("10-approval-waiting");
    // The server asks with tunacode/approve (the extension advertises it): Deny in the card,
    // which shows the whole command.
    await card.locator(".approve-deny").waitFor();
    await card.locator(".approve-deny").click();
    await card.locator('xpath=self::*[@data-status="denied"]').waitFor();
    await card.locator(".tool-state", { hasText: "denied" }).waitFor();
    // Answered: the keyboard is back in the prompt, not on the page's body.
    const promptFocus = await panel.locator("body").evaluate(() => document.activeElement?.id);
    if (promptFocus !== "prompt") throw new Error(`the focus after answering is ${promptFocus}, not the prompt`);
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor();
    await statusItem.waitFor({ state: "hidden" });
    await shot("11-approval-denied");
    await writeSettings({ "tunacode.approval": "auto" });
  });

  await step("after a window reload the panel restores the last session", async () => {
    await page.reload();
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    // The panel was open before the reload and comes back by itself; clicking the activity
    // bar while its state still settles could hide it again. If it does not come back, open it.
    const back = await panel.locator("#prompt").waitFor({ timeout: 20_000 }).then(() => true, () => false);
    if (!back) panel = await openPanel();
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60_000 });
    const replayed = panel.locator('article.turn[data-replayed="true"]');
    await replayed.first().locator(".user-prompt-text", { hasText: APPROVAL_PROMPT }).waitFor();
    // its request is known again (session.get's requests): Changes and Rewind are offered
    await replayed.first().locator(".turn-rewind").waitFor();
    await replayed.first().locator(".turn-review").click();
    await replayed.first().locator(".change-list .change-empty", { hasText: "No changes recorded" }).waitFor();
    await shot("08-restored-after-reload");
  });

  await step("stop a slow answer: cancelled within a second", async () => {
    await newSession();
    await setScript(slowAnswer);
    const turn = await send(SLOW_PROMPT);
    await turn.locator(".answer").waitFor(); // the first words have streamed in
    const statusItem = page.locator(".statusbar-item", { hasText: "TunaCode" });
    await statusItem.first().waitFor(); // the status-bar item shows while the request runs
    // Record in the page the moment the turn shows "cancelled".
    await turn.evaluate((el) => {
      const observer = new MutationObserver(() => {
        if (el.dataset.status === "cancelled") {
          window.__cancelledAt = Date.now();
          observer.disconnect();
        }
      });
      observer.observe(el, { attributes: true, attributeFilter: ["data-status"] });
    });
    const stopButton = panel.locator("#stop");
    await stopButton.waitFor();
    const clickedAt = Date.now();
    await stopButton.click();
    await turn.locator('xpath=self::*[@data-status="cancelled"]').waitFor({ timeout: 5_000 });
    const cancelledAt = await turn.evaluate(() => window.__cancelledAt);
    const stopToCancelledMs = cancelledAt - clickedAt;
    summary.stopToCancelledMs = stopToCancelledMs;
    const partial = (await turn.locator(".answer").innerText()).trim();
    await shot("02-stopped-slow-answer");
    if (!(stopToCancelledMs >= 0 && stopToCancelledMs < 1000)) {
      throw new Error(`the answer was marked cancelled ${stopToCancelledMs} ms after Stop (limit 1000 ms)`);
    }
    if (partial.length === 0 || partial.length >= STORY_LENGTH) {
      throw new Error(`expected a partial answer, got ${partial.length} of ${STORY_LENGTH} characters`);
    }
    await panel.locator("#stop").waitFor({ state: "hidden" }); // Stop goes, Steer is Send again
    await panel.locator("#send", { hasText: "Send" }).waitFor();
    await statusItem.first().waitFor({ state: "hidden" });
    return { stopToCancelledMs, partialChars: partial.length };
  });

  await step("resume the earlier session and see its history", async () => {
    await newSession();
    await panel.locator("#toggle-sessions").click();
    const rows = panel.locator(".session-row");
    await rows.nth(1).waitFor(); // both sessions are listed
    const sessions = await rows.count();
    const row = panel.locator(`.session-row[data-session-id="${firstSessionId}"]`);
    await row.locator(".session-resume").click();
    const replayed = panel.locator('article.turn[data-replayed="true"]');
    await replayed.first().locator(".user-prompt-text", { hasText: ASK_PROMPT }).waitFor();
    await replayed.first().locator('.tool-card[data-tool="list_files"][data-status="completed"]').waitFor();
    await replayed.first().locator(".answer strong", { hasText: "hello.txt" }).waitFor();
    const title = await panel.locator("#title").getAttribute("data-session-id");
    if (title !== firstSessionId) throw new Error(`resumed ${title}, expected ${firstSessionId}`);
    await shot("03-resumed-session");
    return { sessionsListed: sessions, replayedTurns: await replayed.count() };
  });

  /** Waits for the panel to show the server going down and coming back. */
  const serverRestarts = async () => {
    const body = panel.locator("body");
    await body.locator('xpath=self::*[@data-server!="running"]').waitFor({ timeout: 10_000 });
    await body.locator('xpath=self::*[@data-server="running"]').waitFor({ timeout: 30_000 });
    await panel.locator("#send:not([disabled])").waitFor();
  };

  await step("restart the server from the command palette", async () => {
    await runCommand("TunaCode: Restart Server");
    await serverRestarts();
  });

  await step("a broken server command: one clear message with Retry, the prompt kept", async () => {
    const prompt = panel.locator("#prompt");
    await prompt.fill("a prompt typed before the failure");
    // A Python without the server package: the cause comes from the server's stderr.
    // tunacode.server.command is machine-scoped: code-server reads it from the machine's settings.
    writeMachineSettings({ "tunacode.server.command": [brokenPython, "-m", "tunacode_lsp"] });
    const banner = panel.locator("#banner");
    await banner.locator(".banner-text", { hasText: "No module named tunacode_lsp" }).waitFor({ timeout: 30_000 });
    await banner.locator("button", { hasText: "Retry" }).waitFor();
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "No module named tunacode_lsp" });
    await toast.first().waitFor();
    const toasts = await page.locator(".notifications-toasts .notification-toast", { hasText: "TunaCode" }).count();
    if (toasts !== 1) throw new Error(`${toasts} TunaCode toasts, expected one`);
    await shot("09-broken-server-command");
    await prompt.press("Enter"); // refused while the server is down: the text stays
    const kept = await prompt.inputValue();
    if (kept !== "a prompt typed before the failure") throw new Error(`the prompt was not kept: ${JSON.stringify(kept)}`);
    writeMachineSettings({ "tunacode.server.command": [serverCommand] });
    await panel.locator('body[data-server="running"]').waitFor({ timeout: 30_000 });
    await panel.locator("#send:not([disabled])").waitFor();
    // The restarted server still serves this workspace's sessions.
    await panel.locator("#toggle-sessions").click();
    await panel.locator(".session-row").nth(1).waitFor();
    await shot("04-after-restarts");
    return { tunaToasts: toasts };
  });
}
