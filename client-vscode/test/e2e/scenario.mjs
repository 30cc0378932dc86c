// The steps a person takes in the TunaCode panel, each recorded in the summary with a
// screenshot: ask (streamed answer + completed tool card), stop a slow answer, resume.
import * as path from "node:path";
import { ANSWER_TEXT, ASK_PROMPT, SLOW_PROMPT, STORY_LENGTH, UNSAFE_HTML, slowAnswer, toolThenAnswer } from "./scripts.mjs";

const PANEL_TITLE = "TunaCode";

export async function runScenario({ context, url, extensionId, modelRoot, artifacts, summary, log }) {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  const shot = async (name) => {
    const file = path.join(artifacts, `${name}.png`);
    await page.screenshot({ path: file });
    summary.screenshots.push(file);
  };
  const setScript = async (script) => {
    const res = await fetch(`${modelRoot}/_scripted/script`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(script),
    });
    if (!res.ok) throw new Error(`setting the model's script failed: ${res.status} ${await res.text()}`);
  };
  const modelRequests = async () => (await (await fetch(`${modelRoot}/_scripted/requests`)).json()).length;

  /** Runs one step; a failure is recorded (with a screenshot) and stops the scenario. */
  const step = async (name, fn) => {
    const t0 = Date.now();
    log(`step: ${name}`);
    try {
      const detail = await fn();
      summary.steps.push({ name, ok: true, ms: Date.now() - t0, ...(detail ?? {}) });
    } catch (err) {
      summary.steps.push({ name, ok: false, ms: Date.now() - t0, error: err instanceof Error ? err.message.split("\n")[0] : String(err) });
      await shot(`failure-${summary.steps.length}-${name.replace(/\W+/g, "-")}`).catch(() => undefined);
      throw err;
    }
  };

  let panel;
  await step("open the TunaCode panel", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    const entry = page.locator(`.activitybar a.action-label[aria-label^="${PANEL_TITLE}"]`);
    await entry.waitFor({ timeout: 60_000 });
    const item = entry.locator("xpath=ancestor::li[contains(@class, 'action-item')][1]");
    if (!((await item.getAttribute("class")) ?? "").includes("checked")) await entry.click();
    panel = page.frameLocator(`iframe.webview[src*="extensionId=${extensionId}"]`).frameLocator("#active-frame");
    await panel.locator("#prompt").waitFor({ timeout: 60_000 });
    // Send is enabled once the language server is running.
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60_000 });
  });

  let firstSessionId;
  await step("ask: streamed answer and a completed tool card", async () => {
    await setScript(toolThenAnswer);
    const prompt = panel.locator("#prompt");
    await prompt.fill(ASK_PROMPT);
    await prompt.press("Enter");
    const turn = panel.locator("article.turn").last();
    await turn.locator(".user-prompt-text", { hasText: ASK_PROMPT }).waitFor();
    const card = turn.locator('.tool-card[data-tool="list_files"]');
    await card.locator('xpath=self::*[@data-status="completed"]').waitFor();
    await turn.locator(".answer strong", { hasText: "hello.txt" }).waitFor();
    await turn.locator('xpath=self::*[@data-status="end_turn"]').waitFor();
    const answer = (await turn.locator(".answer").first().innerText()).trim();
    if (!answer.includes(ANSWER_TEXT.replace(/\*\*/g, ""))) throw new Error(`unexpected answer: ${answer}`);
    await turn.locator(".code-block .copy-code").first().waitFor();
    if (!answer.includes(UNSAFE_HTML)) throw new Error("raw HTML in the answer was not shown as text");
    const unsafe = await turn.locator(".answer img, .answer script").count();
    const pwned = await turn.evaluate(() => window.__pwned ?? null);
    if (unsafe !== 0 || pwned !== null) throw new Error(`raw HTML in the answer became elements (${unsafe}) or ran (${pwned})`);
    await card.locator("summary").click(); // expand the result
    const result = await card.locator(".tool-result").innerText();
    if (!result.includes("hello.txt")) throw new Error(`list_files result does not name hello.txt: ${result}`);
    firstSessionId = await panel.locator("#title").getAttribute("title");
    if (!firstSessionId) throw new Error("the panel shows no session id after the request");
    const footer = await panel.locator("#footer").innerText();
    await shot("01-answer-and-tool-card");
    return { sessionId: firstSessionId, modelRequests: await modelRequests(), footer };
  });

  await step("stop a slow answer: cancelled within a second", async () => {
    await panel.locator("#new-session").click();
    await panel.locator("article.turn").first().waitFor({ state: "detached" });
    await setScript(slowAnswer);
    const prompt = panel.locator("#prompt");
    await prompt.fill(SLOW_PROMPT);
    await prompt.press("Enter");
    const turn = panel.locator("article.turn").last();
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
    await panel.locator("#send").waitFor(); // Stop gives way to Send again
    await statusItem.first().waitFor({ state: "hidden" });
    return { stopToCancelledMs, partialChars: partial.length };
  });

  await step("resume the earlier session and see its history", async () => {
    await panel.locator("#new-session").click();
    await panel.locator("article.turn").first().waitFor({ state: "detached" });
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
    const title = await panel.locator("#title").getAttribute("title");
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
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.fill(">TunaCode: Restart Server");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "TunaCode: Restart Server" }).first().waitFor();
    await input.press("Enter");
    await serverRestarts();
  });

  await step("a changed server setting restarts the server", async () => {
    // Through the Settings editor, as a person would.
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.fill(">Preferences: Open User Settings");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: /^Preferences: Open User Settings$/ }).first().waitFor();
    await page.locator(".quick-input-list .monaco-list-row", { hasText: /^Preferences: Open User Settings$/ }).first().click();
    await page.locator(".settings-editor .settings-header .monaco-editor").first().click(); // the search box
    await page.keyboard.type("tunacode.maxTurns");
    const field = page.locator(".settings-editor .setting-item-contents", { hasText: "Max Turns" }).locator("input").first();
    await field.click();
    await page.keyboard.press("Control+A");
    await page.keyboard.type("12");
    await serverRestarts();
    await page.keyboard.press("Escape"); // close the Settings dialog
    // The restarted server still serves this workspace's sessions.
    await panel.locator("#toggle-sessions").click();
    await panel.locator(".session-row").nth(1).waitFor();
    await shot("04-after-restarts");
  });
}
