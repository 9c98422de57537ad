// The LLM API key: kept in ExtensionContext.secrets (never in settings), handed to the server in
// initializationOptions and by the `maxkernel/setApiKey` notification, and masked in every log line.
import * as vscode from "vscode";

const SECRET_PREFIX = "maxkernel.llm.apiKey.";
export const MASK = "«api key»";

export function secretName(provider: string): string {
  return SECRET_PREFIX + provider;
}

export function currentProvider(): string {
  return vscode.workspace.getConfiguration("maxkernel").get<string>("llm.provider", "none");
}

// Replaces every occurrence of each secret (and its JSON-escaped form) with a mask.
export class Redactor {
  private secrets = new Set<string>();

  add(secret: string | undefined): void {
    if (secret && secret.length >= 4) this.secrets.add(secret);
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) {
      for (const form of new Set([s, JSON.stringify(s).slice(1, -1)])) out = out.split(form).join(MASK);
    }
    return out;
  }
}

// A LogOutputChannel whose text passes through the redactor first (the protocol trace shows
// initializationOptions and notification params verbatim).
export function redactingChannel(inner: vscode.LogOutputChannel, redactor: Redactor): vscode.LogOutputChannel {
  const wrap = (value: unknown): unknown => (typeof value === "string" ? redactor.redact(value) : value);
  const logMethods = new Set(["append", "appendLine", "replace", "trace", "debug", "info", "warn", "error"]);
  return new Proxy(inner, {
    get(target, property) {
      const value = Reflect.get(target, property); // getters run on the real channel
      if (typeof value !== "function") return value;
      if (typeof property === "string" && logMethods.has(property)) {
        return (...args: unknown[]) => value.apply(target, args.map(wrap));
      }
      return value.bind(target);
    },
  });
}

export class ApiKeys {
  constructor(
    private readonly secrets: vscode.SecretStorage,
    readonly redactor: Redactor,
  ) {}

  async get(provider = currentProvider()): Promise<string | undefined> {
    const key = await this.secrets.get(secretName(provider));
    this.redactor.add(key);
    return key;
  }

  async set(provider: string, key: string): Promise<void> {
    this.redactor.add(key);
    await this.secrets.store(secretName(provider), key);
  }

  async clear(provider: string): Promise<void> {
    await this.secrets.delete(secretName(provider));
  }

  onDidChange(listener: (provider: string) => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key.startsWith(SECRET_PREFIX)) listener(e.key.slice(SECRET_PREFIX.length));
    });
  }
}

export async function promptForApiKey(keys: ApiKeys): Promise<boolean> {
  const provider = currentProvider();
  if (provider === "none") {
    void vscode.window.showInformationMessage("MaxKernel: choose an LLM provider first (maxkernel.llm.provider).");
    return false;
  }
  const key = await vscode.window.showInputBox({
    title: `MaxKernel: API key for ${provider}`,
    prompt: "Stored in the editor's secret storage; never written to settings or logs.",
    password: true,
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim().length < 8 ? "That is too short to be an API key." : undefined),
  });
  if (key === undefined) return false;
  await keys.set(provider, key.trim());
  return true;
}
