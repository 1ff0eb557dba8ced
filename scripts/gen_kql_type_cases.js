// Generates tests/kql/data/function_types.json: for every scalar function and aggregate
// signature, a sample call and the result type Kusto.Language (npm @kusto/language-service-next,
// MIT) infers for it. tests/kql/test_catalog.py binds the same calls and compares.
//   cd /work/scratch/kql-oracle && NODE_PATH=$PWD/node_modules node <repo>/scripts/gen_kql_type_cases.js > <repo>/tests/kql/data/function_types.json
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
const S = K.Symbols;
function arr(x) { if (!x) return []; if (Array.isArray(x)) return x; const r = []; for (let i = 0; i < x.Count; i++) r.push(x.getItem(i)); return r; }
const PK = S.ParameterTypeKind.$names, AK = S.ArgumentKind.$names;
const COLS = { bool: 'b', int: 'i', long: 'l', real: 'r', decimal: 'm', string: 's', datetime: 'dt', timespan: 'ts', guid: 'g', dynamic: 'd' };
const KIND = { Integer: ['i', 'l'], RealOrDecimal: ['r', 'm'], StringOrDynamic: ['s', 'd'], StringOrArray: ['s'], IntegerOrArray: ['l'], DynamicArray: ['d'], DynamicBag: ['d'], Number: ['i', 'l', 'r'], NumberOrBool: ['l', 'b'], Summable: ['l', 'r', 'ts'], Orderable: ['l', 's', 'dt'], NotRealOrBool: ['l', 's'], NotDynamic: ['l', 's'], NotBool: ['l'], Scalar: ['l', 's'], Any: ['l'], CommonScalar: ['i', 'l', 'r'], CommonNumber: ['i', 'r'], CommonSummable: ['l', 'ts'], CommonOrderable: ['l', 'dt'], CommonScalarOrDynamic: ['l', 's'], Parameter0: ['l'], Parameter1: ['l'], Parameter2: ['l'] };
const SCHEMA = 'datatable(b:bool, i:int, l:long, r:real, m:decimal, s:string, dt:datetime, ts:timespan, g:guid, d:dynamic)[]';
const out = [];
function run(q) {
  try {
    const code = K.KustoCode.ParseAndAnalyze(q);
    if (arr(code.GetDiagnostics()).some(d => d.Severity === 'Error')) return null;
    const cols = arr(code.ResultType && code.ResultType.Columns);
    return cols.length === 1 ? cols[0].Type.Name : null;
  } catch (e) { return null; }
}
for (const [list, agg] of [[K.GlobalState.Default.Functions, false], [K.GlobalState.Default.Aggregates, true]]) {
  for (const f of arr(list)) {
    if (f.IsHidden) continue;
    for (const sig of arr(f.Signatures)) {
      const ps = arr(sig.Parameters).filter(p => p.MinOccurring > 0);
      let variants = [[]];
      let ok = true;
      for (const p of ps) {
        const tk = PK[p.TypeKind];
        let opts = tk === 'Declared' ? arr(p.DeclaredTypes).map(t => COLS[t.Name]).filter(Boolean) : KIND[tk];
        if (AK[p.ArgumentKind] === 'StarOnly') opts = ['*'];
        if (!opts || !opts.length) { ok = false; break; }
        if (AK[p.ArgumentKind] === 'Constant' || AK[p.ArgumentKind].startsWith('Literal')) {
          const lit = { i: 'int(1)', l: '1', r: '1.5', m: 'decimal(1)', s: '"a"', dt: 'datetime(2020-01-01)', ts: '1h', b: 'true', d: 'dynamic([1])', g: 'guid(00000000-0000-0000-0000-000000000000)' };
          opts = opts.map(o => lit[o] || o);
        }
        const next = [];
        for (const v of variants) for (const o of opts.slice(0, 2)) for (let k = 0; k < 1; k++) next.push(v.concat(Array(p.MinOccurring).fill(o)));
        variants = next.slice(0, 4);
      }
      if (!ok) continue;
      for (const args of variants) {
        const call = `${f.Name}(${args.join(', ')})`;
        const q = agg ? `${SCHEMA} | summarize r = ${call}` : `${SCHEMA} | project r = ${call}`;
        const t = run(q);
        if (t) out.push([q, t]);
      }
    }
  }
}
process.stdout.write('[\n' + out.map(r => JSON.stringify(r)).join(',\n') + '\n]\n');
