// Asks Kusto.Language (npm @kusto/language-service-next, MIT) which queries it rejects.
// Reads JSON lines {"id", "kql"} from argv[2]; writes JSON lines {"id", "errors": [[code, start,
// length, message], ...]} (errors only, syntax and semantic) to argv[3]. Then
// `python scripts/kql_compare_diagnostics.py` compares them with bzrk.kql.analyze().
//   cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules node <repo>/scripts/kql_oracle_diagnostics.js in.jsonl out.jsonl
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
const fs = require('fs');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n');
const out = [];
for (const line of lines) {
  if (!line.trim()) continue;
  const r = JSON.parse(line);
  let errors = [];
  try {
    const code = K.KustoCode.ParseAndAnalyze(r.kql);
    const diags = code.GetDiagnostics();
    for (let i = 0; i < diags.Count; i++) {
      const d = diags.getItem(i);
      if (String(d.Severity) !== 'Error') continue;
      errors.push([d.Code, d.Start, d.Length, d.Message]);
    }
  } catch (e) {
    errors = [['ORACLE', 0, 0, String(e)]];
  }
  out.push(JSON.stringify({ id: r.id, errors: errors }));
}
fs.writeFileSync(process.argv[3], out.join('\n') + '\n');
