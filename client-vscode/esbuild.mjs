// Builds the extension bundle (node, CommonJS, `vscode` external), the webview bundle
// (browser IIFE), and for unit tests the pure state module as ESM.
import * as esbuild from "esbuild";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");
const watch = args.has("--watch");
const testOnly = args.has("--test-only");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "info",
  target: "es2022",
};

const builds = [];
if (!testOnly) {
  builds.push(
    {
      ...common,
      entryPoints: ["src/extension.ts"],
      outfile: "dist/extension.js",
      platform: "node",
      format: "cjs",
      external: ["vscode"],
    },
    {
      ...common,
      entryPoints: ["src/webview/main.ts"],
      outfile: "dist/webview.js",
      platform: "browser",
      format: "iife",
    },
  );
}
builds.push({
  ...common,
  sourcemap: false,
  minify: false,
  logLevel: "warning",
  entryPoints: { approvals: "src/approvals.ts", settings: "src/settings.ts" },
  outdir: "out/test",
  outExtension: { ".js": ".mjs" },
  platform: "node",
  format: "esm",
  // The real `vscode` module exists only in the extension host.
  alias: { vscode: "./test/stub/vscode.mjs" },
});
builds.push({
  ...common,
  sourcemap: false,
  minify: false,
  logLevel: "warning",
  entryPoints: { state: "src/webview/state.ts", modelPick: "src/modelPick.ts", apiKeys: "src/apiKeys.ts", serverCommand: "src/serverCommand.ts", options: "src/options.ts", diff: "src/diff.ts", context: "src/context.ts", slash: "src/webview/slash.ts", taskList: "src/webview/taskList.ts", toolView: "src/webview/toolView.ts", sessionList: "src/webview/sessionList.ts", mentions: "src/webview/mentions.ts" },
  outdir: "out/test",
  outExtension: { ".js": ".mjs" },
  platform: "node",
  format: "esm",
});

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
