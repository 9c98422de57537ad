// The recorded LLM of the step-by-step test: what the fixture (tests/optimize/fixtures/
// hitl_scale_add_openai.json, made by make_hitl_chain.py) streams, and what the replay server
// that serves it (started by tests/editors/vscode/run.mjs) was asked.
import * as fs from "fs";
import * as http from "http";

interface FixtureEntry {
  match?: { purpose?: string };
  chunks: string[];
}

// The whole text the fixture streams for the first answer of this purpose.
export function recordedAnswer(fixture: string, purpose: string): string {
  const doc = JSON.parse(fs.readFileSync(fixture, "utf8")) as { entries: FixtureEntry[] };
  const entry = doc.entries.find((e) => e.match?.purpose === purpose);
  if (!entry) throw new Error(`no ${purpose} answer in ${fixture}`);
  let text = "";
  for (const chunk of entry.chunks) {
    const data = chunk.replace(/^data: /, "").trim();
    if (data === "[DONE]") continue;
    const event = JSON.parse(data) as { choices: { delta: { content?: string } }[] };
    for (const c of event.choices) text += c.delta.content ?? "";
  }
  return text;
}

export function recordedKernel(fixture: string): string {
  const m = /```python\n([\s\S]*?)```/.exec(recordedAnswer(fixture, "implementer"));
  if (!m) throw new Error("the recorded implementer answer has no python block");
  return m[1];
}

export function recordedStrategies(fixture: string): { name: string; why: string }[] {
  const text = recordedAnswer(fixture, "planner");
  const json = text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1);
  return (JSON.parse(json) as { strategies: { name: string; why: string }[] }).strategies;
}

export interface ReplayRequest {
  purpose: string;
  headers: Record<string, string>;
  body: string;
}

// GET /_log of the replay server: every request it answered, in order.
export function replayLog(url: string): Promise<ReplayRequest[]> {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}/_log`, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => {
          try {
            resolve(JSON.parse(body) as ReplayRequest[]);
          } catch (e) {
            reject(e);
          }
        });
      })
      .on("error", reject);
  });
}
