// Answers a workspace/applyEdit only after the didChange of each document it changed has gone to
// the server. vscode-languageclient answers as soon as VS Code applied the edit and its didChange
// can follow the answer on the wire; the server takes the document's text when it reads
// `applied: true` (the accepted HITL candidate, docs/hitl.md), and would take the old text.
import * as vscode from "vscode";
import {
  ApplyWorkspaceEditParams,
  ApplyWorkspaceEditResult,
  DidChangeTextDocumentNotification,
  LanguageClient,
  ResponseError,
  TextDocumentEdit,
} from "vscode-languageclient/node";

// Waits at most this long for a didChange: an answer must never hang on a document the client
// does not synchronise.
const flushTimeoutMs = 5000;

export class EditSync {
  private readonly sent = new Map<string, number>(); // uri -> version of the last didChange sent
  private readonly onSent = new vscode.EventEmitter<void>();

  // synced: whether the client sends didChange for a document (its document selector).
  constructor(
    private readonly synced: (doc: vscode.TextDocument) => boolean,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  // Follows the didChange notifications of a (new) client.
  track(client: LanguageClient): vscode.Disposable {
    this.sent.clear();
    return client.getFeature(DidChangeTextDocumentNotification.method).onNotificationSent((e) => {
      this.sent.set(e.textDocument.uri.toString(), e.params.textDocument.version);
      this.onSent.fire();
    });
  }

  // The middleware: applies the edit (next), then waits for the didChange of every changed document.
  async applyEdit(
    client: LanguageClient,
    params: ApplyWorkspaceEditParams,
    next: (p: ApplyWorkspaceEditParams) => Promise<ApplyWorkspaceEditResult | ResponseError<void>>,
  ): Promise<ApplyWorkspaceEditResult | ResponseError<void>> {
    const uris = editedUris(client, params);
    const versionBefore = new Map(uris.map((u) => [u, openDocument(u)?.version]));
    const result = await next(params);
    if (result instanceof ResponseError || !result.applied) return result;
    const pending = uris.filter((u) => {
      const doc = openDocument(u);
      return doc !== undefined && this.synced(doc) && doc.version !== versionBefore.get(u) && (this.sent.get(u) ?? -1) < doc.version;
    });
    if (pending.length > 0 && !(await this.flushed(pending))) {
      this.log.warn(`applyEdit: answered before the didChange of ${pending.join(", ")} was sent`);
    }
    return result;
  }

  private flushed(uris: string[]): Promise<boolean> {
    const done = () => uris.every((u) => (this.sent.get(u) ?? -1) >= (openDocument(u)?.version ?? -1));
    return new Promise<boolean>((resolve) => {
      if (done()) return resolve(true);
      const timer = setTimeout(() => {
        sub.dispose();
        resolve(false);
      }, flushTimeoutMs);
      const sub = this.onSent.event(() => {
        if (!done()) return;
        clearTimeout(timer);
        sub.dispose();
        resolve(true);
      });
    });
  }

  dispose(): void {
    this.onSent.dispose();
  }
}

function openDocument(uri: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
}

// The documents a workspace edit changes, as vscode.Uri strings.
function editedUris(client: LanguageClient, params: ApplyWorkspaceEditParams): string[] {
  const asUri = (u: string) => client.protocol2CodeConverter.asUri(u).toString();
  const uris = new Set<string>();
  for (const change of params.edit.documentChanges ?? []) {
    if (TextDocumentEdit.is(change)) uris.add(asUri(change.textDocument.uri));
  }
  for (const u of Object.keys(params.edit.changes ?? {})) uris.add(asUri(u));
  return [...uris];
}
