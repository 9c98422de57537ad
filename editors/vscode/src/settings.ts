// The `maxkernel` settings section as the server reads it (editors/settings.schema.json), with
// what the editor adds: the Python extension's interpreter when maxkernel.python is empty, and
// no lowering on save in an untrusted workspace (lowering runs the workspace's code).
import * as vscode from "vscode";

// The part of the Python extension's API (ms-python.python) read here: its newer environments
// API, else the older execution details.
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined;
  };
}

// The interpreter the Python extension has selected, from its API object.
export function interpreterOf(api: PythonExtensionApi | undefined, resource?: vscode.Uri): string | undefined {
  const active = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
  if (active && active !== "python") return active; // "python" is its placeholder for "none chosen"
  const command = api?.settings?.getExecutionDetails?.(resource)?.execCommand;
  return command && command.length > 0 && command[0] !== "python" ? command[0] : undefined;
}

export async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

// Fills in what the section leaves to the editor; `section` is the server's view of the settings.
export function completeSection(section: Record<string, unknown>, interpreter: string | undefined): Record<string, unknown> {
  const out = { ...section };
  if ((typeof out.python !== "string" || out.python === "") && interpreter) out.python = interpreter;
  if (!vscode.workspace.isTrusted) out.lowerOnSave = false;
  return out;
}

export function serverSettings(interpreter: string | undefined): Record<string, unknown> {
  const c = vscode.workspace.getConfiguration("maxkernel");
  return completeSection(
    {
      target: c.get("target"),
      host: c.get("host"),
      hosts: c.get("hosts"),
      python: c.get("python"),
      lowerOnSave: c.get("lowerOnSave"),
      autotuneConfigs: c.get("autotuneConfigs"),
      llm: { provider: c.get("llm.provider"), baseUrl: c.get("llm.baseUrl"), model: c.get("llm.model") },
      budget: {
        maxCostUsd: c.get("budget.maxCostUsd"),
        maxIterations: c.get("budget.maxIterations"),
        maxWallSeconds: c.get("budget.maxWallSeconds"),
        targetSpeedup: c.get("budget.targetSpeedup"),
      },
    },
    interpreter,
  );
}
