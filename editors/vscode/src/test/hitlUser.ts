// A scripted user for the step-by-step (HITL) tests: it stands in for the notification buttons
// (api.hitl.ui) and lets the test answer each question the server asks when it chooses to, the way
// a user reads the plan first. Also reads the session the server saved in its SQLite store.
import { execFileSync } from "child_process";
import * as vscode from "vscode";
import type { MessageActionItem, MessageType } from "vscode-languageclient/node";
import type { HitlUi } from "../hitl";

export interface Question {
  message: string;
  titles: string[];
  answer(title: string | undefined, feedback?: string): void;
}

export class ScriptedHitlUser implements HitlUi {
  private readonly pending: Question[] = [];
  private readonly asked = new vscode.EventEmitter<void>();
  private feedbackText: string | undefined;

  choose(_type: MessageType, message: string, actions: MessageActionItem[]): Promise<MessageActionItem | undefined> {
    return new Promise((resolve) => {
      this.pending.push({
        message,
        titles: actions.map((a) => a.title),
        answer: (title, feedback) => {
          this.feedbackText = feedback;
          const action = actions.find((a) => a.title === title);
          if (title !== undefined && !action) throw new Error(`no action "${title}" in ${actions.map((a) => a.title)}`);
          resolve(action);
        },
      });
      this.asked.fire();
    });
  }

  feedback(): Promise<string | undefined> {
    return Promise.resolve(this.feedbackText);
  }

  // The oldest question not yet taken; waits for the server to ask one.
  nextQuestion(timeoutMs: number): Promise<Question> {
    return new Promise<Question>((resolve, reject) => {
      const take = () => {
        const q = this.pending.shift();
        if (!q) return false;
        clearTimeout(timer);
        sub.dispose();
        resolve(q);
        return true;
      };
      const sub = this.asked.event(take);
      const timer = setTimeout(() => {
        sub.dispose();
        reject(new Error(`no question from the server within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      take();
    });
  }

  dispose(): void {
    for (const q of this.pending.splice(0)) q.answer(undefined); // dismissed: the session pauses
    this.asked.dispose();
  }
}

export interface StoredSession {
  phase: string;
  status: string;
  code: string;
  history: { phase: string; event: string; text: string }[];
}

// The session row as the server saved it (docs/hitl.md: table hitl_sessions of $MAXKERNEL_STORE).
export function storedSession(python: string, store: string, id: string): StoredSession {
  const script = [
    "import json, sqlite3, sys",
    "db = sqlite3.connect(sys.argv[1])",
    "row = db.execute('SELECT phase, status, code, history_json FROM hitl_sessions WHERE id = ?', (sys.argv[2],)).fetchone()",
    "print(json.dumps(row and {'phase': row[0], 'status': row[1], 'code': row[2], 'history': json.loads(row[3])}))",
  ].join("\n");
  const row = JSON.parse(execFileSync(python, ["-c", script, store, id], { encoding: "utf8" })) as StoredSession | null;
  if (!row) throw new Error(`session ${id} is not in ${store}`);
  return row;
}
