// HITL questions from the server arrive as window/showMessageRequest (the contract the Neovim
// plugin shares, docs/neovim.md): the user picks an action; an action with `"feedback": true` asks
// for text and answers that action with `feedback` set to it; a dismissed question answers null.
import * as vscode from "vscode";
import { MessageActionItem, MessageType, ShowMessageRequestParams } from "vscode-languageclient/node";

export interface HitlUi {
  choose(type: MessageType, message: string, actions: MessageActionItem[]): Promise<MessageActionItem | undefined>;
  feedback(prompt: string): Promise<string | undefined>;
}

export const editorUi: HitlUi = {
  async choose(type, message, actions) {
    const show =
      type === MessageType.Error
        ? vscode.window.showErrorMessage
        : type === MessageType.Warning
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    return show(message, ...actions);
  },
  feedback(prompt) {
    return Promise.resolve(vscode.window.showInputBox({ title: "MaxKernel", prompt, ignoreFocusOut: true }));
  },
};

export class Hitl {
  ui: HitlUi = editorUi; // tests swap in a scripted UI

  async answer(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
    const actions = params.actions ?? [];
    const picked = await this.ui.choose(params.type, params.message, actions);
    if (!picked) return null;
    if ((picked as { feedback?: unknown }).feedback === true) {
      const text = await this.ui.feedback(`${picked.title}: ${params.message}`);
      if (text === undefined) return null;
      return { ...picked, feedback: text };
    }
    return picked;
  }
}
