// What every e2e scenario does the same way: the page (20 s default timeout), a screenshot
// into the artifacts, the scripted model's /_scripted endpoints, a step (timed, recorded in
// the summary, a screenshot on failure), the TunaCode panel opened from the activity bar
// (and the side bar dragged to a width), a prompt sent, a new session, the command palette,
// Quick Open, an unsaved line typed into a file, a dialog's button and the colour themes.
// Each scenario keeps its own steps and assertions.
import * as path from "node:path";

export const PANEL_TITLE = "TunaCode";
export const LIGHT = "Light Modern";
export const DARK = "Dark Modern";

/** Polls fn (about every 100 ms) until it returns a value other than undefined, or the timeout. */
export async function waitFor(fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The shared pieces for one scenario run. `kit.panel` is the panel's frame once `openPanel`
 * has found it (also its return value).
 */
export async function scenarioKit({ context, extensionId, modelRoot, artifacts, summary, log }) {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  const kit = { page, panel: undefined };

  kit.shot = async (name) => {
    const out = path.join(artifacts, `${name}.png`);
    await page.screenshot({ path: out });
    summary.screenshots.push(out);
  };

  /** The scripted model answers with `script` from now on. */
  kit.setScript = async (script) => {
    const res = await fetch(`${modelRoot}/_scripted/script`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(script),
    });
    if (!res.ok) throw new Error(`setting the model's script failed: ${res.status} ${await res.text()}`);
  };

  /** The requests the scripted model has received so far (oldest first). */
  kit.modelRequests = async () => (await fetch(`${modelRoot}/_scripted/requests`)).json();

  /** Runs one step; a failure is recorded (with a screenshot) and stops the scenario. */
  kit.step = async (name, fn) => {
    const t0 = Date.now();
    log(`step: ${name}`);
    try {
      const detail = await fn();
      summary.steps.push({ name, ok: true, ms: Date.now() - t0, ...(detail ?? {}) });
    } catch (err) {
      summary.steps.push({ name, ok: false, ms: Date.now() - t0, error: err instanceof Error ? err.message.split("\n")[0] : String(err) });
      await kit.shot(`failure-${summary.steps.length}-${name.replace(/\W+/g, "-")}`).catch(() => undefined);
      throw err;
    }
  };

  /**
   * Shows the TunaCode panel (clicking its activity bar entry unless it is already shown) and
   * waits for its prompt; with `serverReady`, also for Send to be enabled (the language
   * server is running).
   */
  kit.openPanel = async ({ serverReady = true } = {}) => {
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    const entry = page.locator(`.activitybar a.action-label[aria-label^="${PANEL_TITLE}"]`);
    await entry.waitFor({ timeout: 60_000 });
    const item = entry.locator("xpath=ancestor::li[contains(@class, 'action-item')][1]");
    if (!((await item.getAttribute("class")) ?? "").includes("checked")) await entry.click();
    kit.panel = page.frameLocator(`iframe.webview[src*="extensionId=${extensionId}"]`).frameLocator("#active-frame");
    await kit.panel.locator("#prompt").waitFor({ timeout: 60_000 });
    if (serverReady) await kit.panel.locator("#send:not([disabled])").waitFor({ timeout: 60_000 });
    return kit.panel;
  };

  /** Sends `text` from the panel's prompt (Enter); returns the turn it starts (the last one). */
  kit.send = async (text) => {
    const prompt = kit.panel.locator("#prompt");
    await prompt.fill(text);
    await prompt.press("Enter");
    return kit.panel.locator("article.turn").last();
  };

  /** Starts a new session from the panel's title bar: the conversation empties. */
  kit.newSession = async () => {
    await kit.panel.locator("#new-session").click();
    await kit.panel.locator("article.turn").first().waitFor({ state: "detached" });
  };

  /** Drags the side bar's edge so it is `width` px wide; returns the width it has then. */
  kit.sidebarWidth = async (width) => {
    const bar = await page.locator(".part.sidebar").boundingBox();
    const y = bar.y + bar.height / 2;
    await page.mouse.move(bar.x + bar.width - 1, y);
    await page.mouse.down();
    await page.mouse.move(bar.x + width, y, { steps: 8 });
    await page.mouse.up();
    const now = Math.round((await page.locator(".part.sidebar").boundingBox()).width);
    if (Math.abs(now - width) > 4) throw new Error(`the side bar is ${now} px wide, not ${width}`);
    return now;
  };

  /** Runs a command from the command palette (F1) by its title. */
  kit.runCommand = async (title) => {
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget input").fill(`>${title}`);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().click();
  };

  /** Opens a workspace file with Quick Open (Control+P). */
  kit.quickOpen = async (name) => {
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill(name);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
    await page.keyboard.press("Enter");
  };

  /**
   * Opens `name`, types a line at its end and leaves it unsaved: the buffer differs from the
   * disk. Returns the editor (found by `editorHas`, clicked at the line `line`).
   */
  kit.typeUnsavedLine = async (name, editorHas, line) => {
    await kit.quickOpen(name);
    const editor = page.locator(".editor-instance .monaco-editor", { hasText: editorHas }).first();
    await editor.locator(".view-line", { hasText: line }).click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("\n# mine");
    await page.locator(".tabs-container .tab.dirty", { hasText: name }).waitFor();
    return editor;
  };

  kit.dialogButton = (label) => page.locator(".monaco-dialog-box").getByRole("button", { name: label, exact: true });

  /** The colour theme, chosen as a person does: the palette's "Preferences: Color Theme". */
  kit.setTheme = async (theme, cls) => {
    await kit.runCommand("Preferences: Color Theme");
    await page.locator(".quick-input-widget input").fill(theme);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: theme }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(`.monaco-workbench.${cls}`).waitFor();
  };

  /** Both themes (dark first, then light, then dark again), each a screenshot. */
  kit.bothThemes = async (name) => {
    await kit.shot(`${name}-dark`);
    await kit.setTheme(LIGHT, "vs");
    await kit.shot(`${name}-light`);
    await kit.setTheme(DARK, "vs-dark");
  };

  return kit;
}
