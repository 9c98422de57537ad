// Lets a test in the extension host ask the runner (tests/editors/vscode/run.mjs), which drives the
// workbench page with playwright, to do something in the real UI the way a user would (click a
// checkbox, press a button). The request goes out as a log line, which reaches the runner through
// the smoke-test driver's codeAutomationLog; the runner answers with a JSON file beside the results
// file. The extension API has no way to tick an edit in the refactor preview, hence this.
import * as fs from "fs";
import * as path from "path";

export interface UiAnswer {
  ok: boolean;
  error?: string;
  [key: string]: unknown;
}

export const uiRequestPrefix = "mk-ui-request ";
let serial = 0;

export function uiAnswersDir(): string {
  const results = process.env.MAXKERNEL_VSCODE_RESULTS;
  if (!results) throw new Error("UI requests need the runner (tests/editors/vscode/run.mjs): MAXKERNEL_VSCODE_RESULTS is not set");
  return path.join(path.dirname(results), "ui-answers");
}

// Resolves with the runner's answer; rejects when it reports an error or does not answer in time.
export function uiRequest(action: string, timeoutMs: number): Promise<UiAnswer> {
  const dir = uiAnswersDir();
  fs.mkdirSync(dir, { recursive: true });
  const id = `${process.pid}-${++serial}`;
  const file = path.join(dir, `${id}.json`); // the runner writes it whole (rename)
  return new Promise<UiAnswer>((resolve, reject) => {
    let done = false;
    const finish = (error?: Error, answer?: UiAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      watcher.close();
      if (error) reject(error);
      else resolve(answer as UiAnswer);
    };
    const check = () => {
      if (!fs.existsSync(file)) return;
      let answer: UiAnswer;
      try {
        answer = JSON.parse(fs.readFileSync(file, "utf8")) as UiAnswer;
      } catch (e) {
        return finish(new Error(`unreadable answer ${file}: ${(e as Error).message}`));
      }
      if (answer.ok) finish(undefined, answer);
      else finish(new Error(`the runner could not ${action}: ${answer.error ?? "no reason given"}`));
    };
    const watcher = fs.watch(dir, check);
    const timer = setTimeout(() => finish(new Error(`the runner did not answer "${action}" within ${timeoutMs / 1000} s`)), timeoutMs);
    console.log(`${uiRequestPrefix}${JSON.stringify({ id, action })}`);
    check();
  });
}
