// What the language status item shows: the server's state, the running jobs with their progress
// (from the server's $/progress), and whether the configured host was reachable on its last run.
import * as vscode from "vscode";

export type ServerState = "starting" | "running" | "stopped" | "failed";

export interface Job {
  token: string; // the progress token, as JSON text
  title: string;
  message?: string;
  percentage?: number;
  jobId?: string; // the server's job id, when a command we sent started it
}

export interface HostState {
  name: string;
  reachable?: boolean; // undefined: nothing has run there yet
  detail?: string;
}

export class StatusModel implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  readonly jobs = new Map<string, Job>();
  server: ServerState = "starting";
  serverDetail = "";
  host: HostState;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem("maxkernel.status", { language: "python" });
    this.item.name = "MaxKernel";
    this.item.command = { title: "Show output", command: "maxkernel.showOutput" };
    this.host = { name: configuredHost() };
    this.render();
  }

  setServer(state: ServerState, detail = ""): void {
    this.server = state;
    this.serverDetail = detail;
    if (state !== "running") this.jobs.clear();
    this.render();
  }

  setHostName(name: string): void {
    if (name !== this.host.name) this.host = { name };
    this.render();
  }

  // Work-done progress as the server reports it: begin adds a job, end removes it.
  progress(token: string, value: { kind: string; title?: string; message?: string; percentage?: number }): void {
    if (value.kind === "begin") {
      this.jobs.set(token, { token, title: value.title ?? "MaxKernel", message: value.message, percentage: value.percentage });
    } else if (value.kind === "report") {
      const job = this.jobs.get(token);
      if (job) {
        if (value.message !== undefined) job.message = value.message;
        if (value.percentage !== undefined) job.percentage = value.percentage;
      }
    } else if (value.kind === "end") {
      this.jobs.delete(token);
      if (value.message) this.noteHostOutcome(value.message);
    }
    this.render();
  }

  linkJob(token: string, jobId: string): void {
    const job = this.jobs.get(token) ?? { token, title: jobId };
    job.jobId = jobId;
    this.jobs.set(token, job);
    this.render();
  }

  // The server's end messages say "... did not run on HOST: ..." when the host failed.
  private noteHostOutcome(message: string): void {
    const failed = /did not run on ([^:]+):(.*)/.exec(message);
    if (failed) {
      if (/cancel/i.test(failed[2])) return;
      this.host = { name: failed[1].trim(), reachable: false, detail: failed[2].trim() };
    } else if (/ on ([\w.-]+)/.test(message)) {
      this.host = { name: this.host.name, reachable: true };
    }
  }

  get text(): string {
    return this.item.text;
  }
  get detail(): string {
    return this.item.detail ?? "";
  }

  private render(): void {
    const jobs = [...this.jobs.values()];
    let text = `MaxKernel: ${this.server}`;
    if (this.server === "running" && jobs.length > 0) text += ` · ${jobs.length} job${jobs.length > 1 ? "s" : ""}`;
    this.item.text = text;
    this.item.busy = this.server === "starting" || jobs.length > 0;
    this.item.severity =
      this.server === "failed" || this.server === "stopped"
        ? vscode.LanguageStatusSeverity.Error
        : this.host.reachable === false
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
    const parts: string[] = [];
    if (this.serverDetail) parts.push(this.serverDetail);
    for (const j of jobs) {
      const pct = j.percentage !== undefined ? ` ${j.percentage}%` : "";
      parts.push(`${j.title}${pct}${j.message ? `: ${j.message}` : ""}`);
    }
    const reach =
      this.host.reachable === undefined ? "not contacted yet" : this.host.reachable ? "reachable" : `unreachable (${this.host.detail ?? ""})`;
    parts.push(`host ${this.host.name}: ${reach}`);
    this.item.detail = parts.join(" · ");
    this.changed.fire();
  }

  dispose(): void {
    this.item.dispose();
    this.changed.dispose();
  }
}

export function configuredHost(): string {
  return vscode.workspace.getConfiguration("maxkernel").get<string>("host", "local") || "local";
}
