// MaxKernel for VS Code: a thin client over maxkernel-lsp (docs/vscode.md).
import * as vscode from "vscode";
import {
  CancellationToken,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  ShowMessageRequest,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { Commands, kernelAt } from "./commands";
import { EditSync } from "./editSync";
import { Hitl } from "./hitl";
import { ReportPanels } from "./report";
import { ApiKeys, Redactor, currentProvider, promptForApiKey, redactingChannel } from "./secrets";
import { locateServer } from "./serverPath";
import { completeSection, interpreterOf, pythonExtensionApi, serverSettings } from "./settings";
import { StatusModel, configuredHost } from "./status";

// What the tests (and other extensions) can reach.
export interface MaxKernelApi {
  client(): LanguageClient | undefined;
  status: StatusModel;
  reports: ReportPanels;
  apiKeys: ApiKeys;
  commands: Commands;
  hitl: Hitl;
  // Fires once a key change was handed to the running server (maxkernel/setApiKey).
  onDidSendApiKey: vscode.Event<{ provider: string; set: boolean }>;
  traceChannel: vscode.LogOutputChannel;
  kernelAt: typeof kernelAt;
  started(): Promise<void>;
}

export async function activate(context: vscode.ExtensionContext): Promise<MaxKernelApi> {
  const redactor = new Redactor();
  // Both channels mask API keys: the trace shows params verbatim, the output carries server stderr.
  const output = redactingChannel(vscode.window.createOutputChannel("MaxKernel", { log: true }), redactor);
  const trace = redactingChannel(vscode.window.createOutputChannel("MaxKernel Trace", { log: true }), redactor);
  const status = new StatusModel();
  const reports = new ReportPanels();
  const apiKeys = new ApiKeys(context.secrets, redactor);
  const hitl = new Hitl();
  const keySent = new vscode.EventEmitter<{ provider: string; set: boolean }>();
  let client: LanguageClient | undefined;
  const commands = new Commands(() => client, status, reports);
  const documentSelector = [{ language: "python" }];
  const editSync = new EditSync((doc) => vscode.languages.match(documentSelector, doc) > 0, output);
  let editSyncTracking: vscode.Disposable | undefined;
  context.subscriptions.push(output, trace, status, commands, keySent, editSync);

  async function start(): Promise<void> {
    const setting = vscode.workspace.getConfiguration("maxkernel").get<string>("serverPath", "");
    const found = locateServer(setting, context.extensionPath);
    if (!found.path) {
      const message = `MaxKernel: cannot find maxkernel-lsp (looked at ${found.tried.join(", ")}). Set maxkernel.serverPath.`;
      output.error(message);
      status.setServer("failed", "maxkernel-lsp not found");
      void vscode.window.showErrorMessage(message);
      return;
    }
    output.info(`starting ${found.path}`);
    const provider = currentProvider();
    const apiKey = provider === "none" ? undefined : await apiKeys.get(provider);
    const pythonApi = await pythonExtensionApi();
    const interpreter = () => interpreterOf(pythonApi, vscode.workspace.workspaceFolders?.[0]?.uri);
    if (interpreter()) output.info(`the Python extension's interpreter: ${interpreter()}`);
    const extraArgs = vscode.workspace.getConfiguration("maxkernel").get<string[]>("server.extraArgs", []);
    const serverOptions: ServerOptions = {
      command: found.path,
      args: ["--stdio", ...extraArgs.filter((a) => typeof a === "string")],
      transport: TransportKind.stdio,
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector,
      outputChannel: output,
      traceOutputChannel: trace,
      initializationOptions: {
        maxkernel: serverSettings(interpreter()),
        ...(apiKey ? { secrets: { llm: { provider, apiKey } } } : {}),
      },
      synchronize: { configurationSection: "maxkernel" },
      middleware: {
        executeCommand: (command, args, next) => commands.execute(command, args, async (c, a) => next(c, a)),
        workspace: {
          // The server pulls the section: the interpreter and the workspace's trust go in too.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return result.map((value, i) =>
              params.items[i]?.section === "maxkernel" && value && typeof value === "object"
                ? completeSection(value as Record<string, unknown>, interpreter())
                : value,
            );
          },
          // The server reads the document as the accepted edit: its didChange goes out first.
          handleApplyEdit: (params, next) => editSync.applyEdit(c, params, async (p) => next(p, CancellationToken.None)),
        },
        handleWorkDoneProgress: (token, params, next) => {
          status.progress(JSON.stringify(token), params);
          next(token, params);
        },
        window: {
          // An HTML report goes into the CSP-locked webview; everything else (the HITL plan
          // document, source files) opens as usual.
          showDocument: async (params, token, next) => {
            if (/\.html?$/i.test(params.uri) && !params.external) {
              try {
                await reports.show({ uri: vscode.Uri.parse(params.uri) });
                return { success: true };
              } catch (e) {
                output.warn(`cannot show the report ${params.uri}: ${(e as Error).message}`);
                return { success: false };
              }
            }
            return next(params, token);
          },
        },
      },
    };
    const c = new LanguageClient("maxkernel", "MaxKernel", serverOptions, clientOptions);
    client = c;
    // A new interpreter or trust: the server pulls the section again.
    const pull = () => {
      if (c.isRunning()) void c.sendNotification("workspace/didChangeConfiguration", { settings: null });
    };
    const changed = pythonApi?.environments?.onDidChangeActiveEnvironmentPath?.(pull);
    if (changed) context.subscriptions.push(changed);
    context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(pull));
    editSyncTracking?.dispose();
    editSyncTracking = editSync.track(c);
    // Replaces the client's default (a message with buttons) with the HITL answer contract.
    c.onRequest(ShowMessageRequest.type, (params) => hitl.answer(params));
    c.onDidChangeState((e) => {
      if (e.newState === State.Running) status.setServer("running", `${found.path}`);
      else if (e.newState === State.Stopped) status.setServer("stopped");
      else status.setServer("starting");
      commands.onServerState(e.newState);
    });
    status.setServer("starting");
    try {
      await c.start();
      commands.onServerState(State.Running); // the state event may have fired before the client was set
    } catch (e) {
      output.error(`the server did not start: ${(e as Error).message}`);
      status.setServer("failed", (e as Error).message);
    }
  }

  async function stop(): Promise<void> {
    const c = client;
    client = undefined;
    if (c) await c.stop().catch((e: Error) => output.warn(`stopping the server: ${e.message}`));
  }

  context.subscriptions.push(
    vscode.commands.registerCommand("maxkernel.showOutput", () => output.show(true)),
    vscode.commands.registerCommand("maxkernel.restartServer", async () => {
      await stop();
      await start();
    }),
    vscode.commands.registerCommand("maxkernel.setApiKey", () => promptForApiKey(apiKeys)),
    vscode.commands.registerCommand("maxkernel.clearApiKey", () => apiKeys.clear(currentProvider())),
    // The key travels to a running server by notification, never through settings.
    apiKeys.onDidChange(async (provider) => {
      const key = await apiKeys.get(provider);
      if (client?.isRunning()) {
        await client.sendNotification("maxkernel/setApiKey", { provider, apiKey: key ?? null });
        keySent.fire({ provider, set: key !== undefined });
      }
      output.info(`API key for ${provider} ${key ? "set" : "cleared"}`);
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("maxkernel.host")) status.setHostName(configuredHost());
      if (e.affectsConfiguration("maxkernel.serverPath") || e.affectsConfiguration("maxkernel.server.extraArgs")) {
        await stop();
        await start();
      }
    }),
    { dispose: () => void stop() },
  );

  const startup = start();
  await startup;
  return {
    client: () => client,
    status,
    reports,
    apiKeys,
    commands,
    hitl,
    onDidSendApiKey: keySent.event,
    traceChannel: trace,
    kernelAt,
    started: () => startup,
  };
}

export function deactivate(): void {
  // The client is stopped through context.subscriptions.
}
