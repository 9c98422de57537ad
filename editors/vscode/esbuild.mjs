// Bundles the extension (and its in-editor tests) into dist/ with esbuild; `vscode` stays external.
//   node esbuild.mjs [--production]
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
};
await esbuild.build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js" });
if (!production) {
  // The tests run inside the real extension host (tests/editors/vscode); never packaged.
  await esbuild.build({ ...common, entryPoints: ["src/test/suite.ts"], outfile: "dist/test/suite.js" });
}
