// Runs the MaxKernel extension inside a real VS Code (code-server) driven by headless Chromium:
//   1. the extension's own tests (editors/vscode/src/test/suite.ts) inside the real extension host,
//      loaded with the smoke-test-driver payload (extensionDevelopmentPath + extensionTestsPath);
//      a test may ask for a user's action in the UI (ui_actions.mjs: tick and apply the refactor
//      preview), which this runner does with playwright while the test waits;
//   2. a UI smoke test of the packaged .vsix, installed like a user would: a squiggle and a
//      Problems panel row for a bad kernel, with a screenshot.
// Both talk to the real maxkernel-lsp; Test runs a real JAX worker. Prints `N passed, N failed`.
// Usage (through run.sh, which builds the extension and puts Node 24 on PATH):
//   [MAXKERNEL_LSP=PATH] node run.mjs [--python PATH] [--only TEXT] [--skip-ui] [--keep]
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { answerUiRequest, uiRequestPrefix } from "./ui_actions.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..", "..");
const extensionDir = path.join(root, "editors", "vscode");
const codeServerEntry = path.join(here, "node_modules", "code-server", "out", "node", "entry.js");
const outDir = path.join(here, "out");

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const serverPath = path.resolve(process.env.MAXKERNEL_LSP ?? path.join(root, "build", "bin", "maxkernel-lsp"));
const python = path.resolve(option("--python", path.join(root, ".venv", "bin", "python")));
const only = option("--only", "");
const skipUi = process.argv.includes("--skip-ui");
const keep = process.argv.includes("--keep");
const vsix = path.join(extensionDir, "dist", "maxkernel.vsix");

for (const [what, file] of [["maxkernel-lsp", serverPath], ["python", python], ["code-server", codeServerEntry], ["chromium", "/usr/bin/chromium"], ["the .vsix", vsix]]) {
  if (!fs.existsSync(file)) {
    console.error(`vscode tests: ${what} not found at ${file} (scripts/setup_vscode.sh, scripts/build.sh, run.sh build it)`);
    process.exit(2);
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mk-vscode-"));
const dirs = Object.fromEntries(
  ["user", "extensions", "workspace", "chromium", "xdg-config", "xdg-data", "xdg-cache", "xdg-runtime"].map((d) => {
    const p = path.join(tmp, d);
    fs.mkdirSync(p, { recursive: true, mode: 0o700 });
    return [d, p];
  }),
);
fs.mkdirSync(outDir, { recursive: true });

// The LLM of the step-by-step test: the replay server (agents/replay) on loopback, serving the
// recorded planner and implementer answers for tasks/scale_add.py as an OpenAI-compatible
// endpoint; maxkernel.llm points at it and the test reads its request log.
const replayFixture = path.join(root, "tests", "optimize", "fixtures", "hitl_scale_add_openai.json");
function startReplay() {
  const child = spawn(python, [path.join(root, "agents", "replay", "replay_server.py"), replayFixture], {
    stdio: ["ignore", "pipe", fs.openSync(path.join(outDir, "replay-server.log"), "w")],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the replay server did not start within 30 s")), 30000);
    let seen = "";
    child.stdout.on("data", (chunk) => {
      seen += chunk.toString();
      const m = /^PORT (\d+)$/m.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${m[1]}` });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the replay server exited with ${code} (see out/replay-server.log)`));
    });
  });
}
const replay = await startReplay();

// The workspace the editor opens: copies, so nothing in the checkout changes.
function layWorkspace() {
  const ws = dirs.workspace;
  const copy = (from, ...to) => {
    fs.mkdirSync(path.join(ws, ...to.slice(0, -1)), { recursive: true });
    fs.copyFileSync(path.join(root, from), path.join(ws, ...to));
  };
  for (const f of fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".py"))) copy(`examples/${f}`, "examples", f);
  copy("tests/corpus/bad/mk001_matmul_block_tiling.py", "bad", "mk001_matmul_block_tiling.py");
  copy("tests/worker/tasks/infile/scale_add.py", "tasks", "scale_add.py");
  // A reference with no kernel yet, for the "Write a Pallas kernel for this" code action.
  copy("tests/editors/vscode/fixtures/scale_bias.py", "write", "scale_bias.py");
  fs.mkdirSync(path.join(ws, ".vscode"), { recursive: true });
  fs.writeFileSync(
    path.join(ws, ".vscode", "settings.json"),
    JSON.stringify(
      {
        "maxkernel.serverPath": serverPath,
        "maxkernel.python": python,
        "maxkernel.lowerOnSave": false,
        // maxkernel/test/clientRequest lets the tests make the real server send HITL requests.
        "maxkernel.server.extraArgs": ["--enable-test-methods"],
        // Step by step plans and implements with this LLM (the key comes from the test).
        "maxkernel.llm.provider": "openai",
        "maxkernel.llm.model": "gpt-4o-mini",
        "maxkernel.llm.baseUrl": `${replay.url}/v1`,
      },
      null,
      2,
    ),
  );
  fs.mkdirSync(path.join(dirs.user, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(dirs.user, "User", "settings.json"),
    JSON.stringify(
      {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "security.workspace.trust.enabled": false,
        "extensions.ignoreRecommendations": true,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "chat.disableAIFeatures": true,
        "python.languageServer": "None",
        "maxkernel.trace.server": "verbose", // params in the trace: the API key must still be masked
      },
      null,
      2,
    ),
  );
}

const env = {
  ...process.env,
  XDG_CONFIG_HOME: dirs["xdg-config"],
  XDG_DATA_HOME: dirs["xdg-data"],
  XDG_CACHE_HOME: dirs["xdg-cache"],
  XDG_RUNTIME_DIR: dirs["xdg-runtime"],
  MAXKERNEL_STORE: path.join(tmp, "store.sqlite"), // a fresh evaluation cache: no "(cached)" verdicts
  MAXKERNEL_VSCODE_RESULTS: path.join(tmp, "extension-results.json"),
  MAXKERNEL_VSCODE_REPLAY: replay.url,
  MAXKERNEL_VSCODE_REPLAY_FIXTURE: replayFixture,
  ...(only ? { MAXKERNEL_VSCODE_ONLY: only } : {}),
};

const codeServerArgs = [
  "--user-data-dir", dirs.user,
  "--extensions-dir", dirs.extensions,
  "--disable-telemetry",
  "--disable-update-check",
  "--disable-workspace-trust",
];

// Starts code-server on a free loopback port; resolves once it says it listens.
function startCodeServer(label) {
  const config = path.join(tmp, `code-server-${label}.yaml`);
  fs.writeFileSync(config, "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
  const args = [codeServerEntry, "--config", config, ...codeServerArgs, "--reconnection-grace-time", "5",
    "--vscode-option", "enable-smoke-test-driver", dirs.workspace];
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const log = fs.createWriteStream(path.join(outDir, `code-server-${label}.log`));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("code-server did not start within 60 s")), 60000);
    const onData = (chunk) => {
      log.write(chunk);
      const m = /HTTP server listening on (http:\/\/[\d.]+:\d+)/.exec(chunk.toString());
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${code} (see ${path.join(outDir, `code-server-${label}.log`)})`));
    });
  });
}

function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 10000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function launchBrowser(profile) {
  return chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

// Phase 1: the extension's tests in the real extension host.
async function runExtensionTests() {
  const { child, url } = await startCodeServer("extension-tests");
  const browser = await launchBrowser(path.join(dirs.chromium, "tests"));
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const hostLog = fs.createWriteStream(path.join(outDir, "extension-host.log"));
    let resolveExit;
    const exited = new Promise((r) => (resolveExit = r));
    await page.exposeFunction("codeAutomationLog", (type, args) => {
      const text = (Array.isArray(args) ? args : [args]).map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
      hostLog.write(`${text}\n`);
      if (/^(ok|not ok|skip) - /.test(text)) console.log(`  ${text}`);
      // A test asks for a user's action in the UI (editors/vscode/src/test/uiDriver.ts).
      if (text.startsWith(uiRequestPrefix)) {
        const answersDir = path.join(path.dirname(env.MAXKERNEL_VSCODE_RESULTS), "ui-answers");
        void answerUiRequest(page, text, { answersDir, outDir, log: (l) => hostLog.write(`${l}\n`) });
      }
    });
    await page.exposeFunction("codeAutomationExit", (code) => resolveExit(code));
    const remote = (p) => `vscode-remote://remote${p}`;
    const payload = JSON.stringify([
      ["extensionDevelopmentPath", remote(extensionDir)],
      ["extensionTestsPath", remote(path.join(extensionDir, "dist", "test", "suite.js"))],
    ]);
    await page.goto(`${url}/?folder=${encodeURIComponent(dirs.workspace)}&payload=${encodeURIComponent(payload)}`);
    const timeout = new Promise((r) => setTimeout(() => r("timeout"), 270000));
    const code = await Promise.race([exited, timeout]);
    if (code === "timeout") console.log("  extension tests did not finish within 270 s");
    await page.screenshot({ path: path.join(outDir, "extension-tests.png") }).catch(() => undefined);
    const file = env.MAXKERNEL_VSCODE_RESULTS;
    const outcomes = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : [];
    if (outcomes.length === 0) outcomes.push({ name: "extension tests ran", status: "failed", message: `exit ${code}, no results written` });
    return outcomes;
  } finally {
    await browser.close().catch(() => undefined);
    await stopProcess(child);
  }
}

function filesUnder(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p) : e.isFile() ? [p] : [];
  });
}

// After phase 1: the key the tests set appears in no log of the session, and the verbose trace
// shows the maxkernel/setApiKey notification with the key masked.
function checkApiKeyNotLogged() {
  const name = "the API key is in no log; the verbose trace shows maxkernel/setApiKey masked";
  const probe = path.join(path.dirname(env.MAXKERNEL_VSCODE_RESULTS), "secret-probe.txt");
  if (!fs.existsSync(probe)) return { name, status: "failed", message: "the API key test did not run" };
  const key = fs.readFileSync(probe, "utf8");
  // The step-by-step test plants its key too (secret-probe-hitl.txt); the store must not hold it.
  const hitlProbe = path.join(path.dirname(env.MAXKERNEL_VSCODE_RESULTS), "secret-probe-hitl.txt");
  const keys = [key, ...(fs.existsSync(hitlProbe) ? [fs.readFileSync(hitlProbe, "utf8")] : [])];
  const logs = [...filesUnder(path.join(dirs.user, "logs")), ...filesUnder(outDir).filter((f) => f.endsWith(".log")),
    ...fs.readdirSync(tmp).filter((f) => f.startsWith("store.sqlite")).map((f) => path.join(tmp, f)),
    ...filesUnder(path.join(tmp, "sessions"))];
  const leaks = logs.filter((f) => keys.some((k) => fs.readFileSync(f).includes(k)));
  const traced = logs.filter((f) => {
    const text = fs.readFileSync(f, "utf8");
    return text.includes("maxkernel/setApiKey") && text.includes("«api key»");
  });
  if (leaks.length > 0) return { name, status: "failed", message: `the key is in ${leaks.join(", ")}` };
  if (traced.length === 0) return { name, status: "failed", message: `no masked setApiKey in the ${logs.length} logs` };
  return { name, status: "passed", message: undefined, seconds: 0 };
}

// Phase 2: the packaged extension, installed from the .vsix; a bad kernel in the real UI.
async function runUiSmokeTest() {
  const started = Date.now();
  const name = "UI: the installed .vsix shows a squiggle and a Problems row for a bad kernel";
  const install = spawnSync(process.execPath, [codeServerEntry, ...codeServerArgs, "--install-extension", vsix], { env, encoding: "utf8" });
  if (install.status !== 0 || !/was successfully installed/.test(install.stdout + install.stderr)) {
    return { name, status: "failed", message: `installing the .vsix failed: ${install.stdout}${install.stderr}`, seconds: 0 };
  }
  // No serverPath: the installed extension must find the maxkernel-lsp bundled in the .vsix.
  fs.writeFileSync(
    path.join(dirs.workspace, ".vscode", "settings.json"),
    JSON.stringify({ "maxkernel.python": python, "maxkernel.lowerOnSave": false }, null, 2),
  );
  const { child, url } = await startCodeServer("ui");
  const browser = await launchBrowser(path.join(dirs.chromium, "ui"));
  const shot = path.join(outDir, "ui-problems.png");
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(`${url}/?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
    // Quick Open the bad kernel, as a user would.
    await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } }).catch(() => undefined);
    await page.keyboard.press("Control+P");
    await page.waitForSelector(".quick-input-widget input", { state: "visible", timeout: 20000 });
    await page.keyboard.type("mk001_matmul_block_tiling.py");
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 20000 });
    await page.keyboard.press("Enter");
    await page.waitForSelector(".squiggly-error", { timeout: 60000 });
    await page.keyboard.press("Control+Shift+M");
    // A marker row (the file's row above it has "mk001" only in lower case).
    const row = page.locator(".markers-panel .monaco-list-row", { hasText: /MK001/ }).first();
    await row.waitFor({ timeout: 30000 });
    const text = await row.innerText();
    await page.screenshot({ path: shot });
    if (!/MK001/.test(text) || !/maxkernel/.test(text)) throw new Error(`the Problems row says: ${text}`);
    return { name, status: "passed", seconds: (Date.now() - started) / 1000 };
  } catch (e) {
    const page = browser.pages()[0];
    if (page) await page.screenshot({ path: shot }).catch(() => undefined);
    return { name, status: "failed", message: `${e.message.split("\n")[0]} (screenshot ${shot})`, seconds: (Date.now() - started) / 1000 };
  } finally {
    await browser.close().catch(() => undefined);
    await stopProcess(child);
  }
}

const t0 = Date.now();
let outcomes = [];
try {
  layWorkspace();
  outcomes = await runExtensionTests();
  if (!only) outcomes.push(checkApiKeyNotLogged());
  if (!skipUi && !only) {
    const ui = await runUiSmokeTest();
    console.log(`${ui.status === "passed" ? "ok" : "not ok"} - ${ui.name}${ui.message ? `: ${ui.message}` : ""}`);
    outcomes.push(ui);
  }
} catch (e) {
  outcomes.push({ name: "vscode test harness", status: "failed", message: e.stack ?? String(e) });
} finally {
  await stopProcess(replay.child);
  if (!keep) fs.rmSync(tmp, { recursive: true, force: true });
}
// A skip is a failure unless the test declared why it may skip on this kind of machine (its
// message starts with "declared: ", as in tests/skip_policy.py); declared ones go to the skip log.
for (const o of outcomes) {
  if (o.status !== "skipped") continue;
  if (String(o.message ?? "").startsWith("declared: ")) {
    if (process.env.MAXKERNEL_SKIP_LOG) fs.appendFileSync(process.env.MAXKERNEL_SKIP_LOG, `vscode: declared skip: ${o.name}: ${o.message}\n`);
  } else {
    o.status = "failed";
    o.message = `undeclared skip: ${o.message ?? ""}`;
  }
}
console.log("");
for (const o of outcomes) {
  const mark = o.status === "passed" ? "PASS" : o.status === "skipped" ? "SKIP" : "FAIL";
  console.log(`${mark} ${o.name}${o.seconds !== undefined ? ` (${o.seconds.toFixed(1)} s)` : ""}${o.message ? `\n     ${o.message}` : ""}`);
}
const passed = outcomes.filter((o) => o.status === "passed").length;
const failed = outcomes.filter((o) => o.status === "failed").length;
const skipped = outcomes.filter((o) => o.status === "skipped").length;
console.log(`vscode: ${skipped} skipped; total ${((Date.now() - t0) / 1000).toFixed(0)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
