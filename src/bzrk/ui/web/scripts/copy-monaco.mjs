// Copies Monaco's AMD build and monaco-kusto's AMD build (with its web worker) into the
// built UI: static/monaco/vs/... The Kusto language service is a Bridge.NET script that
// expects a classic global scope, which the AMD worker gives it without bundler tricks.
import { cp, mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.resolve(here, '../../static/monaco/vs');
const monacoVs = path.dirname(require.resolve('monaco-editor/min/vs/loader.js'));
const kustoMin = path.join(path.dirname(require.resolve('@kusto/monaco-kusto/package.json')), 'release/min');

await mkdir(path.join(target, 'language/kusto'), { recursive: true });
await cp(monacoVs, target, {
  recursive: true,
  force: true,
  // Other languages' workers and grammars are not needed: we edit KQL only.
  filter: (source) => !source.includes(`${path.sep}basic-languages`) && !source.includes(`${path.sep}language${path.sep}`),
});
await cp(kustoMin, path.join(target, 'language/kusto'), {
  recursive: true,
  force: true,
  filter: (source) => !source.endsWith('.d.ts'),
});
console.log(`copied Monaco + monaco-kusto AMD files to ${target}`);
