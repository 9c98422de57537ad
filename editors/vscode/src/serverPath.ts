// Where maxkernel-lsp lives: the setting, else the binary bundled in the extension, else a
// development checkout's build/bin or build-main/bin (the extension folder is editors/vscode),
// else PATH.
import * as fs from "fs";
import * as path from "path";

export interface ServerLocation {
  path?: string;
  tried: string[]; // every candidate looked at, for the error message
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function locateServer(setting: string, extensionPath: string, envPath = process.env.PATH ?? ""): ServerLocation {
  const tried: string[] = [];
  if (setting.trim() !== "") {
    // An explicit setting is the user's choice: never fall back silently to another binary.
    const file = path.resolve(setting.trim());
    tried.push(`maxkernel.serverPath: ${file}`);
    return { path: isExecutable(file) ? file : undefined, tried };
  }
  // A .vsix may not keep the executable bit of its bundled binary; restore it.
  const bundled = path.join(extensionPath, "bin", "maxkernel-lsp");
  try {
    if (fs.statSync(bundled).isFile() && !isExecutable(bundled)) fs.chmodSync(bundled, 0o755);
  } catch {
    // not bundled: a development checkout
  }
  const candidates = [
    bundled,
    path.resolve(extensionPath, "..", "..", "build", "bin", "maxkernel-lsp"),
    // scripts/demo.sh builds the programs alone into build-main/
    path.resolve(extensionPath, "..", "..", "build-main", "bin", "maxkernel-lsp"),
    ...envPath.split(path.delimiter).filter((d) => d !== "").map((d) => path.join(d, "maxkernel-lsp")),
  ];
  for (const file of candidates) {
    tried.push(file);
    if (isExecutable(file)) return { path: file, tried };
  }
  return { tried };
}
