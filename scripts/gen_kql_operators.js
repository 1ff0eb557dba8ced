// Generates src/bzrk/kql/catalog/operators.json: the result type of each arithmetic operator for
// every pair of scalar operand types, asked of Kusto.Language (npm @kusto/language-service-next, MIT)
// with `print r = <a> <op> <b>`. Pairs the oracle rejects are absent (a type error).
//   cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules node <repo>/scripts/gen_kql_operators.js > <repo>/src/bzrk/kql/catalog/operators.json
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
function arr(x) { if (!x) return []; if (Array.isArray(x)) return x; const r = []; for (let i = 0; i < x.Count; i++) r.push(x.getItem(i)); return r; }
const SAMPLE = { bool: 'true', int: 'int(1)', long: 'long(1)', real: 'real(1.5)', decimal: 'decimal(1.5)', string: '"a"', datetime: 'datetime(2020-01-01)', timespan: '1h', guid: 'guid(00000000-0000-0000-0000-000000000000)', dynamic: 'dynamic(1)' };
const out = {};
for (const op of ['+', '-', '*', '/', '%']) {
  out[op] = {};
  for (const a of Object.keys(SAMPLE)) for (const b of Object.keys(SAMPLE)) {
    const code = K.KustoCode.ParseAndAnalyze(`print r = ${SAMPLE[a]} ${op} ${SAMPLE[b]}`);
    if (arr(code.GetDiagnostics()).some(d => d.Severity === 'Error')) continue;
    out[op][a + ',' + b] = arr(code.ResultType.Columns)[0].Type.Name;
  }
}
process.stdout.write(JSON.stringify(out, null, 0).replace(/\},/g, '},\n') + '\n');
