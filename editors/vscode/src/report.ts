// The server's HTML run report, shown in a webview under a strict Content-Security-Policy:
// nothing loads from anywhere; <style> elements get a nonce; scripts never run (no script nonce is
// handed out and the webview has scripts disabled).
import * as crypto from "crypto";
import * as fs from "fs";
import * as vscode from "vscode";

export function makeNonce(): string {
  return crypto.randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `img-src ${cspSource} data:`,
    "script-src 'none'",
    "form-action 'none'",
    "frame-src 'none'",
  ].join("; ");
}

// Inline style attributes (status badges) are blocked by a nonce-only style-src: each becomes a
// data attribute with a rule in one nonce'd <style>, so the report keeps its colours.
function hoistStyleAttributes(html: string, nonce: string): { html: string; style: string } {
  const rules: string[] = [];
  const out = html.replace(/(<[a-zA-Z][^>]*?)\sstyle\s*=\s*("([^"]*)"|'([^']*)')/g, (_m, tag: string, _q, dq, sq) => {
    const declarations = String(dq ?? sq ?? "").replace(/<\//g, "<\\/");
    rules.push(`[data-mk-style="${rules.length}"]{${declarations}}`);
    return `${tag} data-mk-style="${rules.length - 1}"`;
  });
  return { html: out, style: rules.length ? `<style nonce="${nonce}">${rules.join("\n")}</style>` : "" };
}

// Puts the policy first in <head>, nonces the report's own <style> elements and strips any nonce
// or CSP meta the document brought, so the document cannot loosen the policy.
export function secureReportHtml(html: string, cspSource: string, nonce: string): string {
  const hoisted = hoistStyleAttributes(
    html
      .replace(/<meta[^>]+http-equiv\s*=\s*["']?content-security-policy["']?[^>]*>/gi, "")
      .replace(/\snonce\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/gi, "")
      .replace(/<style(\s|>)/gi, `<style nonce="${nonce}"$1`),
    nonce,
  );
  let body = hoisted.html;
  const head = `<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(cspSource, nonce)}">${hoisted.style}`;
  if (/<head[^>]*>/i.test(body)) {
    body = body.replace(/<head[^>]*>/i, (h) => `${h}\n${head}`);
  } else {
    body = `<!DOCTYPE html><html><head>${head}</head><body>${body}</body></html>`;
  }
  return body;
}

export class ReportPanels {
  private panel?: vscode.WebviewPanel;

  // `source` is the HTML itself or a file:// URI / path of an .html file.
  async show(source: { html?: string; uri?: vscode.Uri; title?: string }): Promise<vscode.WebviewPanel> {
    let html = source.html;
    if (html === undefined && source.uri) html = await fs.promises.readFile(source.uri.fsPath, "utf8");
    if (html === undefined) throw new Error("the report has neither HTML nor a file");
    const title = source.title ?? "MaxKernel report";
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("maxkernel.report", title, vscode.ViewColumn.Beside, {
        enableScripts: false,
        enableForms: false,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = title;
    this.panel.webview.html = secureReportHtml(html, this.panel.webview.cspSource, makeNonce());
    this.panel.reveal(undefined, true);
    return this.panel;
  }

  get current(): vscode.WebviewPanel | undefined {
    return this.panel;
  }
}
