// The MaxKernel commands. The server's own commands (workspace/executeCommand) are registered by
// vscode-languageclient from the server's capabilities; the middleware here fills in the kernel
// under the cursor when a command comes from the palette or the context menu, and follows up on
// the answer (job progress, reports). Commands this server does not offer get a client-side stand-in.
import * as vscode from "vscode";
import { CodeLensRequest, ExecuteCommandRequest, LanguageClient, State } from "vscode-languageclient/node";
import { ReportPanels } from "./report";
import { StatusModel } from "./status";

// Commands that act on one kernel: they take [{uri, kernel, name, version}] as the lenses send.
export const KERNEL_COMMANDS = [
  "maxkernel.test",
  "maxkernel.profile",
  "maxkernel.optimizeStepByStep",
  "maxkernel.optimizeAuto",
  "maxkernel.graphSearch",
  "maxkernel.applyBestVariant",
];
// Server commands every MaxKernel server will offer; stand-ins cover the ones an older one lacks.
export const SERVER_COMMANDS = [...KERNEL_COMMANDS, "maxkernel.cancelJob", "maxkernel.openReport"];

export interface KernelArgument {
  uri: string;
  kernel: number;
  name?: string;
  version?: number;
}

function contains(range: vscode.Range, position: vscode.Position): boolean {
  return range.start.isBeforeOrEqual(position) && range.end.isAfterOrEqual(position);
}

// The kernel under (or nearest to) the selection, from the server's own code lenses, which carry
// exactly the argument the server wants.
export async function kernelAt(
  client: LanguageClient,
  document: vscode.TextDocument,
  position: vscode.Position,
): Promise<KernelArgument | undefined> {
  const lenses = await client.sendRequest(CodeLensRequest.type, {
    textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
  });
  const kernels: { range: vscode.Range; arg: KernelArgument }[] = [];
  for (const lens of lenses ?? []) {
    const arg = lens.command?.arguments?.[0] as KernelArgument | undefined;
    if (!arg || typeof arg.kernel !== "number" || kernels.some((k) => k.arg.kernel === arg.kernel)) continue;
    kernels.push({ range: client.protocol2CodeConverter.asRange(lens.range), arg });
  }
  if (kernels.length === 0) return undefined;
  const inside = kernels.find((k) => contains(k.range, position));
  if (inside) return inside.arg;
  // Else the closest kernel call by line: selecting inside the kernel body just above its call works.
  const distance = (r: vscode.Range) =>
    position.line < r.start.line ? r.start.line - position.line : Math.max(0, position.line - r.end.line);
  kernels.sort((a, b) => distance(a.range) - distance(b.range));
  return kernels[0].arg;
}

export class Commands implements vscode.Disposable {
  private standIns: vscode.Disposable[] = [];
  private readonly permanent: vscode.Disposable[] = [];

  constructor(
    private readonly getClient: () => LanguageClient | undefined,
    private readonly status: StatusModel,
    private readonly reports: ReportPanels,
  ) {
    this.permanent.push(vscode.commands.registerCommand("maxkernel.showSessions", () => this.showSessions()));
  }

  // Completes a kernel command's arguments: a lens gives them; the palette gives nothing; the editor
  // context menu gives the document's URI.
  async completeArguments(command: string, args: unknown[]): Promise<unknown[] | undefined> {
    if (command === "maxkernel.cancelJob") return this.cancelArguments(args);
    if (!KERNEL_COMMANDS.includes(command)) return args;
    const first = args[0];
    if (first && typeof first === "object" && !(first instanceof vscode.Uri) && "uri" in first) return args;
    const client = this.getClient();
    const editor = vscode.window.activeTextEditor;
    if (!client || !editor || editor.document.languageId !== "python") {
      void vscode.window.showErrorMessage("MaxKernel: open a Python file with a pallas_call and put the cursor on it.");
      return undefined;
    }
    const arg = await kernelAt(client, editor.document, editor.selection.active);
    if (!arg) {
      void vscode.window.showErrorMessage("MaxKernel: there is no pallas_call kernel in this file.");
      return undefined;
    }
    return [arg];
  }

  // After the server answered: link a started job to its progress, show a report.
  async followUp(command: string, result: unknown): Promise<void> {
    if (!result || typeof result !== "object") return;
    const r = result as Record<string, unknown>;
    if (r.status === "started" && r.progressToken !== undefined && typeof r.job === "string") {
      this.status.linkJob(JSON.stringify(r.progressToken), r.job);
    }
    if (command === "maxkernel.openReport" || typeof r.html === "string" || typeof r.reportPath === "string") {
      const html = typeof r.html === "string" ? r.html : undefined;
      const file = typeof r.reportPath === "string" ? r.reportPath : typeof r.path === "string" ? r.path : undefined;
      if (html !== undefined || file !== undefined) {
        await this.reports.show({ html, uri: file ? vscode.Uri.file(file) : undefined, title: r.title as string | undefined });
      }
    }
  }

  // Middleware for the languageclient's command registrations.
  async execute(command: string, args: unknown[], next: (command: string, args: unknown[]) => Promise<unknown>): Promise<unknown> {
    const completed = await this.completeArguments(command, args);
    if (!completed) return undefined;
    const result = await next(command, completed);
    await this.followUp(command, result);
    return result;
  }

  // Called once the server runs: stand-ins for the server commands it did not announce.
  onServerState(state: State): void {
    for (const d of this.standIns) d.dispose();
    this.standIns = [];
    if (state !== State.Running) return;
    const client = this.getClient();
    const offered = new Set(client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? []);
    for (const command of SERVER_COMMANDS) {
      if (offered.has(command)) continue;
      const handler =
        command === "maxkernel.cancelJob"
          ? (...args: unknown[]) => this.cancelJobLocally(args)
          : (...args: unknown[]) =>
              this.execute(command, args, (c, a) => this.sendExecute(c, a));
      this.standIns.push(vscode.commands.registerCommand(command, handler));
    }
  }

  private async sendExecute(command: string, args: unknown[]): Promise<unknown> {
    const client = this.getClient();
    if (!client) throw new Error("the MaxKernel server is not running");
    try {
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    } catch (e) {
      void vscode.window.showErrorMessage(`MaxKernel: ${command}: ${(e as Error).message}`);
      return undefined;
    }
  }

  // The server's cancelJob wants {job}: the one given, the only one running, or the user's pick.
  // With nothing running the server is not asked at all.
  private async cancelArguments(args: unknown[]): Promise<unknown[] | undefined> {
    const given = args[0] as { job?: string } | undefined;
    if (given && typeof given.job === "string") return args;
    const running = [...this.status.jobs.values()];
    if (running.length === 0) {
      void vscode.window.showInformationMessage("MaxKernel: no job is running.");
      return undefined;
    }
    const jobs = running.filter((j) => j.jobId);
    if (jobs.length === 0) {
      // Jobs the server did not name (started elsewhere): cancel their progress instead.
      await this.cancelJobLocally(args);
      return undefined;
    }
    const job =
      jobs.length === 1
        ? jobs[0]
        : (
            await vscode.window.showQuickPick(
              jobs.map((j) => ({ label: j.title, description: j.message, job: j })),
              { title: "MaxKernel: cancel which job?" },
            )
          )?.job;
    return job ? [{ job: job.jobId }] : undefined;
  }

  // Without a server-side cancelJob, cancelling the job's work-done progress cancels the run.
  private async cancelJobLocally(args: unknown[]): Promise<void> {
    const client = this.getClient();
    const jobs = [...this.status.jobs.values()];
    const wanted = (args[0] as { job?: string } | undefined)?.job;
    let job = wanted ? jobs.find((j) => j.jobId === wanted) : undefined;
    if (!job) {
      if (jobs.length === 0) {
        void vscode.window.showInformationMessage("MaxKernel: no job is running.");
        return;
      }
      const pick = await vscode.window.showQuickPick(
        jobs.map((j) => ({ label: j.title, description: j.message, job: j })),
        { title: "MaxKernel: cancel which job?" },
      );
      job = pick?.job;
    }
    if (job && client) await client.sendNotification("window/workDoneProgress/cancel", { token: JSON.parse(job.token) });
  }

  async showSessions(): Promise<void> {
    const client = this.getClient();
    if (!client || !client.isRunning()) {
      void vscode.window.showErrorMessage("MaxKernel: the server is not running.");
      return;
    }
    let sessions: unknown;
    try {
      sessions = await client.sendRequest("maxkernel/sessions", {});
    } catch (e) {
      const code = (e as { code?: number }).code;
      void vscode.window.showWarningMessage(
        code === -32601 ? "MaxKernel: this server does not offer sessions yet." : `MaxKernel: sessions: ${(e as Error).message}`,
      );
      return;
    }
    const list = Array.isArray(sessions) ? sessions : ((sessions as { sessions?: unknown[] })?.sessions ?? []);
    if (list.length === 0) {
      void vscode.window.showInformationMessage("MaxKernel: no sessions yet.");
      return;
    }
    const items = list.map((s) => {
      const o = s as Record<string, unknown>;
      return {
        label: String(o.title ?? o.kernel ?? o.name ?? o.id ?? "session"),
        description: [o.kind, o.status ?? o.phase].filter((v) => v !== undefined).join(" · "),
        detail: o.detail !== undefined ? String(o.detail) : undefined,
        session: o,
      };
    });
    const pick = await vscode.window.showQuickPick(items, { title: "MaxKernel sessions", matchOnDescription: true });
    if (!pick) return;
    // A session still waiting for the user resumes (the same contract as the Neovim plugin);
    // any other opens its report.
    const s = pick.session;
    if (/paused|waiting|running/.test(String(s.status ?? s.phase ?? "")) && typeof s.uri === "string") {
      await vscode.commands.executeCommand("maxkernel.optimizeStepByStep", { session: s.id, uri: s.uri });
    } else {
      await vscode.commands.executeCommand("maxkernel.openReport", { session: s.id });
    }
  }

  dispose(): void {
    for (const d of [...this.standIns, ...this.permanent]) d.dispose();
  }
}
