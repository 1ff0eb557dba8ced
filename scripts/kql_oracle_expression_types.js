// Asks Kusto.Language (npm @kusto/language-service-next, MIT) for the type of every expression of
// every self-contained corpus query; writes <out>.json ({case id: [[start, end, type], ...]}).
// Then `python scripts/kql_compare_expression_types.py <out>.json` compares with bzrk.kql.
//   cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules node <repo>/scripts/kql_oracle_expression_types.js
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
const fs = require('fs');
const out = {};
for (const f of ['docs-emulator.jsonl', 'docs-tables.jsonl', 'loco.jsonl']) {
  for (const line of fs.readFileSync((process.env.BZRK_SHARED_DIR || '../shared') + '/kql-conformance/' + f, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if ((r.flags.needs_tables || []).length) continue;
    try {
      const code = K.KustoCode.ParseAndAnalyze(r.kql);
      const rows = [];
      code.Syntax.WalkNodes(function (n) {
        let rt = null;
        try { rt = n.ResultType; } catch (e) {}
        if (rt && rt.Name && !rt.Name.startsWith('(')) rows.push([n.TextStart, n.End, rt.Name]);
      });
      out[r.id] = rows;
    } catch (e) {}
  }
}
fs.writeFileSync(process.argv[2] || 'exprtypes.json', JSON.stringify(out));
