// Puts the server into the extension, so the linux-x64 .vsix runs without a checkout or Debian 12's
// libraries. From a package folder (scripts/package.sh: stripped programs, lib/maxkernel with every
// library but glibc's, share/maxkernel with the worker and the diagnostics page) it copies
// bin/maxkernel-lsp, lib/maxkernel and share/maxkernel as they are: the server's RUNPATH
// ($ORIGIN/../lib/maxkernel) and its search for share/maxkernel/tpu/worker upwards from bin/ hold
// inside the extension too. From a bare server binary (a development shortcut) it copies the
// binary, stripped, and the worker; that .vsix needs the build machine's libraries.
//   node bundle-server.mjs [PACKAGE_DIR | SERVER]   (default $MAXKERNEL_LSP, ../../build/bin)
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const from = path.resolve(process.argv[2] ?? process.env.MAXKERNEL_LSP ?? path.join(root, "build", "bin", "maxkernel-lsp"));
if (!fs.existsSync(from)) {
  console.error(`bundle-server: nothing at ${from}; build (scripts/build.sh) and package (scripts/package.sh), or pass a path`);
  process.exit(1);
}
for (const dir of ["bin", "lib", "share", "tpu"]) fs.rmSync(path.join(here, dir), { recursive: true, force: true });
const target = path.join(here, "bin", "maxkernel-lsp");
fs.mkdirSync(path.dirname(target), { recursive: true });

if (fs.statSync(from).isDirectory()) {
  fs.copyFileSync(path.join(from, "bin", "maxkernel-lsp"), target);
  fs.cpSync(path.join(from, "lib", "maxkernel"), path.join(here, "lib", "maxkernel"), { recursive: true });
  const share = path.join(from, "share", "maxkernel");
  const editors = path.join(share, "editors"); // the Neovim plugin has no use here
  fs.cpSync(share, path.join(here, "share", "maxkernel"), { recursive: true, filter: (f) => !f.startsWith(editors) });
} else {
  const strip = spawnSync("strip", ["--strip-debug", "-o", target, from], { encoding: "utf8" });
  if (strip.status !== 0) fs.copyFileSync(from, target); // no binutils: ship it as built
  const workerFrom = path.join(root, "tpu", "worker");
  const workerTo = path.join(here, "share", "maxkernel", "tpu", "worker");
  // The worker is a package with subpackages: every .py below tpu/worker, caches left out.
  const copyPython = (from, to) => {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
      if (e.isDirectory() && e.name !== "__pycache__" && !e.name.startsWith(".")) {
        copyPython(path.join(from, e.name), path.join(to, e.name));
      } else if (e.isFile() && e.name.endsWith(".py")) {
        fs.copyFileSync(path.join(from, e.name), path.join(to, e.name));
      }
    }
  };
  copyPython(workerFrom, workerTo);
}
fs.chmodSync(target, 0o755);
console.log(`bundle-server: ${from} -> bin/maxkernel-lsp (${(fs.statSync(target).size / 1e6).toFixed(1)} MB), lib/, share/`);
