// Runs a pure module of the web UI (no DOM) under Node: transpiles src/<module>.ts with the
// project's TypeScript, imports it, and calls `fn` with the JSON arguments read from stdin.
// Usage: node run_ts.mjs <module> <function>  (stdin: a JSON list of argument lists)
// Prints a JSON list of results ({"ok": value} or {"error": message}).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const web = process.env.BZRK_UI_WEB;
const require = createRequire(path.join(web, 'package.json'));
const ts = require('typescript');
const [moduleName, fnName] = process.argv.slice(2);
const source = readFileSync(path.join(web, 'src', `${moduleName}.ts`), 'utf8');
const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
const mod = await import(`data:text/javascript;base64,${Buffer.from(js).toString('base64')}`);
const calls = JSON.parse(readFileSync(0, 'utf8'));
const out = calls.map((args) => {
  try {
    return { ok: mod[fnName](...args) };
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
});
console.log(JSON.stringify(out));
