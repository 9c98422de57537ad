// What a test in the extension host may ask the runner to do in the real workbench UI (see
// editors/vscode/src/test/uiDriver.ts): each action drives the page with playwright like a user and
// returns a JSON-able result; the answer goes to <answers dir>/<id>.json (written whole, by rename).
import fs from "node:fs";
import path from "node:path";

const panelRows = ".bulk-edit-panel .monaco-list-row";
const untickedBoxes = `${panelRows} .edit-checkbox[aria-checked="false"]`;

async function rowsOf(page) {
  return page.locator(panelRows).evaluateAll((rows) =>
    rows.map((r) => ({
      text: r.innerText.replace(/\s+/g, " ").trim(),
      checked: r.querySelector(".edit-checkbox")?.getAttribute("aria-checked") ?? null,
    })),
  );
}

// Ticks every unticked edit in the Refactor Preview panel by clicking its checkbox (ticking a file
// row ticks its edits), then saves a screenshot of the preview with the ticked edit.
async function tickRefactorPreview(page, { outDir }) {
  await page.locator(`${panelRows} .edit-checkbox`).first().waitFor({ timeout: 30000 });
  let ticked = 0;
  for (let left = await page.locator(untickedBoxes).count(); left > 0; ) {
    if (ticked >= 20) throw new Error(`checkboxes do not stay ticked: ${JSON.stringify(await rowsOf(page))}`);
    await page.locator(untickedBoxes).first().click();
    ticked += 1;
    await page.waitForFunction((n) => document.querySelectorAll(n.selector).length < n.left, { selector: untickedBoxes, left }, { timeout: 10000 });
    left = await page.locator(untickedBoxes).count();
  }
  const rows = await rowsOf(page);
  if (ticked === 0) throw new Error(`nothing to tick in the Refactor Preview: ${JSON.stringify(rows)}`);
  const screenshot = path.join(outDir, "refactor-preview-ticked.png");
  await page.screenshot({ path: screenshot });
  return { ticked, rows, screenshot };
}

// Presses the Refactor Preview panel's Apply button.
async function applyRefactorPreview(page) {
  const apply = page.locator(".bulk-edit-panel .buttons .monaco-button", { hasText: /^Apply$/ });
  await apply.waitFor({ timeout: 10000 });
  await apply.click();
  await page.locator(panelRows).first().waitFor({ state: "detached", timeout: 20000 });
  return {};
}

const actions = {
  "tick-refactor-preview": tickRefactorPreview,
  "apply-refactor-preview": applyRefactorPreview,
};

export const uiRequestPrefix = "mk-ui-request ";

// Runs the request in a log line `mk-ui-request {"id", "action"}` and writes the answer file.
export async function answerUiRequest(page, line, { answersDir, outDir, log }) {
  const { id, action } = JSON.parse(line.slice(uiRequestPrefix.length));
  let answer;
  try {
    const run = actions[action];
    if (!run) throw new Error(`unknown UI action "${action}"`);
    answer = { ok: true, ...(await run(page, { outDir })) };
  } catch (e) {
    answer = { ok: false, error: e.message.split("\n")[0] };
    await page.screenshot({ path: path.join(outDir, `ui-${action}-failed.png`) }).catch(() => undefined);
  }
  log(`ui ${action}: ${JSON.stringify(answer)}`);
  fs.mkdirSync(answersDir, { recursive: true });
  const file = path.join(answersDir, `${id}.json`);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(answer));
  fs.renameSync(`${file}.tmp`, file);
}
