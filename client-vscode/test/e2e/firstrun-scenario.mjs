// First run in a real VS Code (issue 31 item 8): the model in use (FIRST_RUN_MODEL) has no key
// in the server's environment, so the empty panel is a first-run view ("Set up a model to
// start", naming the model and the missing variable) with Set API Key and Choose model, and
// Send is disabled. Set API Key (a quick pick of the variable, a password box) keeps the key in
// VS Code's SecretStorage and restarts the server with it: the first-run view goes and Send is
// enabled. Nothing is sent (the model is a real provider's: no request may leave the machine).
// The panel is 300 px wide; screenshots in both themes.
import { scenarioKit } from "./kit.mjs";

/** The model of this scenario (user settings): a real provider's, with no key anywhere. */
export const FIRST_RUN_MODEL = "openai:gpt-4.1";
const VARIABLE = "OPENAI_API_KEY";
const FAKE_KEY = "sk-e2e-not-a-real-key";

export async function runFirstRunScenario({ context, url, extensionId, artifacts, summary, log }) {
  const { page, step, openPanel, sidebarWidth, bothThemes } = await scenarioKit({ context, extensionId, artifacts, summary, log });

  let panel;
  await step("open the TunaCode panel at 300 px", async () => {
    await page.goto(url);
    // Send stays disabled here (no key for the model): the prompt is enough.
    panel = await openPanel({ serverReady: false });
    return { sidebarWidth: await sidebarWidth(300) };
  });

  await step("no key for the model: the first-run view names the model and the variable, Send is disabled", async () => {
    const view = panel.locator("#conversation .first-run");
    await view.waitFor({ timeout: 60_000 });
    await view.locator(".first-run-title", { hasText: "Set up a model to start" }).waitFor();
    const text = (await view.locator(".first-run-text").innerText()).trim();
    if (!text.includes(FIRST_RUN_MODEL) || !text.includes(VARIABLE)) throw new Error(`the first-run view says ${JSON.stringify(text)}`);
    await view.getByRole("button", { name: "Set API Key", exact: true }).waitFor();
    await view.getByRole("button", { name: "Choose model", exact: true }).waitFor();
    if (!(await panel.locator("#send").isDisabled())) throw new Error("Send is enabled with no key for the model");
    // Enter in the prompt sends nothing either.
    await panel.locator("#prompt").fill("hello");
    await panel.locator("#prompt").press("Enter");
    if ((await panel.locator("article.turn").count()) !== 0) throw new Error("a prompt was sent with no key for the model");
    await panel.locator("#prompt").fill("");
    await bothThemes("60-first-run-300px");
    return { text };
  });

  await step("Set API Key: the key goes to SecretStorage, the server restarts, Send is enabled", async () => {
    await panel.locator("#conversation .first-run").getByRole("button", { name: "Set API Key", exact: true }).click();
    // The variable: the model's own is offered first.
    const pick = page.locator(".quick-input-widget");
    const first = pick.locator(".quick-input-list .monaco-list-row").first();
    await first.waitFor();
    const offered = (await first.innerText()).trim();
    if (offered !== VARIABLE) throw new Error(`the first variable offered is ${JSON.stringify(offered)}`);
    await page.keyboard.press("Enter");
    // The key, typed into a password box.
    const box = page.locator(".quick-input-widget input[type=password]");
    await box.waitFor();
    await box.fill(FAKE_KEY);
    await page.keyboard.press("Enter");
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60_000 });
    await panel.locator("#conversation .first-run").waitFor({ state: "detached" });
    const empty = (await panel.locator("#conversation .empty").innerText()).trim();
    await bothThemes("61-first-run-key-set-300px");
    return { empty };
  });
}
