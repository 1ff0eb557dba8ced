// Generates src/bzrk/kql/catalog/tuples.json: scalar functions whose result expands into several
// columns in extend/project (series_decompose_anomalies → <name>_ad_flag, _ad_score, _baseline ...),
// found by asking Kusto.Language (npm @kusto/language-service-next, MIT) for
// `datatable(y:dynamic)[] | project f(y, <sample args>)`. Output: {fn: [[suffix, type], ...]}.
//   cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules node <repo>/scripts/gen_kql_tuples.js > <repo>/src/bzrk/kql/catalog/tuples.json
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
const S = K.Symbols;
function arr(x) { if (!x) return []; if (Array.isArray(x)) return x; const r = []; for (let i = 0; i < x.Count; i++) r.push(x.getItem(i)); return r; }
const PK = S.ParameterTypeKind.$names;
const SAMPLE = { bool: 'true', int: 'int(1)', long: 'long(1)', real: 'real(1.5)', decimal: 'decimal(1.5)', string: '"a"', datetime: 'datetime(2020-01-01)', timespan: '1h', guid: 'guid(00000000-0000-0000-0000-000000000000)', dynamic: 'y' };
const out = {};
for (const f of arr(K.GlobalState.Default.Functions)) {
  for (const sig of arr(f.Signatures)) {
    const ps = arr(sig.Parameters);
    if (!ps.length) continue;
    const args = [];
    let ok = true;
    for (const p of ps) {
      if (p.MinOccurring === 0) break;
      const tk = PK[p.TypeKind];
      let v = tk === 'Declared' ? SAMPLE[arr(p.DeclaredTypes)[0] && arr(p.DeclaredTypes)[0].Name] : (tk.includes('Dynamic') || tk === 'Scalar' || tk === 'Any' ? 'y' : 'long(1)');
      if (!v) { ok = false; break; }
      for (let i = 0; i < p.MinOccurring; i++) args.push(args.length === 0 ? 'y' : v);
    }
    if (!ok) continue;
    try {
      const code = K.KustoCode.ParseAndAnalyze(`datatable(y:dynamic)[] | project ${f.Name}(${args.join(',')})`);
      if (arr(code.GetDiagnostics()).some(d => d.Severity === 'Error')) continue;
      const cols = arr(code.ResultType.Columns);
      if (cols.length > 1) {
        const prefix = `${f.Name}_y_`;
        out[f.Name] = cols.map(c => [c.Name.startsWith(prefix) ? c.Name.slice(prefix.length) : c.Name, c.Type.Name]);
      }
    } catch (e) { }
    if (out[f.Name]) break;
  }
}
process.stdout.write(JSON.stringify(out).replace(/\],"/g, '],\n"') + '\n');
