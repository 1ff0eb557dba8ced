// Generates src/bzrk/kql/catalog/builtins.json from Kusto.Language (npm @kusto/language-service-next,
// MIT). Run outside the repo where the package is installed:
//   mkdir -p /work/scratch/kql-oracle && cd /work/scratch/kql-oracle
//   npm install @kusto/language-service-next@12.4.1
//   NODE_PATH=$PWD/node_modules node /path/to/repo/scripts/gen_kql_catalog.js > /path/to/repo/src/bzrk/kql/catalog/builtins.json
// Record shape (compact): {"functions"|"aggregates"|"plugins": [[name, result_name_kind, result_prefix,
//   hidden, [[return_kind, return_type, probed_type, [[param, type_kind, [types], arg_kind, min, max, optional]...]]...]]...]}
// `probed_type` is the oracle's answer for `print f(sample args)` when the return kind is computed.
require('@kusto/language-service-next/bridge.js');
require('@kusto/language-service-next/Kusto.Language.Bridge.js');
const K = global.Kusto.Language;
const S = K.Symbols;
const G = K.GlobalState.Default;
function arr(x) { if (!x) return []; if (Array.isArray(x)) return x; const r = []; for (let i = 0; i < x.Count; i++) r.push(x.getItem(i)); return r; }
const RK = S.ReturnTypeKind.$names, PK = S.ParameterTypeKind.$names, AK = S.ArgumentKind.$names;
const RNK = ['None', 'NameAndFirstArgument', 'NameAndOnlyArgument', 'PrefixAndFirstArgument', 'PrefixAndOnlyArgument', 'FirstArgumentValueIfColumn', 'PrefixOnly', 'FirstArgument', 'OnlyArgument'];
const SAMPLE = { bool: 'true', int: 'int(1)', long: 'long(1)', real: 'real(1.5)', decimal: 'decimal(1.5)', string: '"a"', datetime: 'datetime(2020-01-01)', timespan: '1h', guid: 'guid(00000000-0000-0000-0000-000000000000)', dynamic: 'dynamic([1,2])' };
const KIND_SAMPLE = { Integer: 'long(1)', RealOrDecimal: 'real(1.5)', StringOrDynamic: '"a"', StringOrArray: '"a"', IntegerOrArray: 'long(1)', DynamicArray: 'dynamic([1,2])', DynamicBag: 'dynamic({"a":1})', Number: 'long(1)', NumberOrBool: 'long(1)', Summable: 'long(1)', Orderable: 'long(1)', NotRealOrBool: 'long(1)', NotDynamic: 'long(1)', NotBool: 'long(1)', Scalar: 'long(1)', Any: 'long(1)', CommonScalar: 'long(1)', CommonNumber: 'long(1)', CommonSummable: 'long(1)', CommonOrderable: 'long(1)', CommonScalarOrDynamic: 'long(1)', Parameter0: 'long(1)', Parameter1: 'long(1)', Parameter2: 'long(1)' };
function probe(name, sig, isAgg) {
  const args = [];
  for (const p of arr(sig.Parameters)) {
    if (p.MinOccurring === 0) break;
    const tk = PK[p.TypeKind];
    let v = tk === 'Declared' ? SAMPLE[arr(p.DeclaredTypes)[0] && arr(p.DeclaredTypes)[0].Name] : KIND_SAMPLE[tk];
    if (p.ArgumentKind === 2 || p.ArgumentKind === 3 && !v) v = '*';
    if (!v) return null;
    if (AK[p.ArgumentKind] === 'Column' || AK[p.ArgumentKind].startsWith('Column_')) v = 'x';
    for (let i = 0; i < p.MinOccurring; i++) args.push(v);
  }
  const q = isAgg ? `datatable(x:long)[1] | summarize r=${name}(${args.join(',')})` : `print r=${name}(${args.join(',')})`;
  try {
    const code = K.KustoCode.ParseAndAnalyze(q);
    const d = arr(code.GetDiagnostics()).filter(x => x.Severity === 'Error');
    if (d.length) return null;
    const cols = arr(code.ResultType && code.ResultType.Columns);
    return cols.length ? cols[0].Type.Name : null;
  } catch (e) { return null; }
}
function dump(list, isAgg, isPlugin) {
  return arr(list).map(f => [f.Name, RNK[f.ResultNameKind] || 'None', f.ResultNamePrefix || '', f.IsHidden ? 1 : 0,
    arr(f.Signatures).map(s => {
      const rk = RK[s.ReturnKind];
      const rt = s.ReturnType || s._returnType;
      const probed = (!isPlugin && (rk === 'Computed' || rk === 'Custom')) ? probe(f.Name, s, isAgg) : null;
      return [rk, rt && rt.Name ? rt.Name : null, probed, arr(s.Parameters).map(p => [p.Name, PK[p.TypeKind], arr(p.DeclaredTypes).map(t => t.Name), AK[p.ArgumentKind], p.MinOccurring, p.MaxOccurring, p.IsOptional ? 1 : 0])];
    })]);
}
const out = { source: '@kusto/language-service-next 12.4.1 (Kusto.Language, MIT)', functions: dump(G.Functions, false, false), aggregates: dump(G.Aggregates, true, false), plugins: dump(G.PlugIns, false, true) };
process.stdout.write('{\n' + Object.keys(out).map(k => JSON.stringify(k) + ': ' + (Array.isArray(out[k]) ? '[\n' + out[k].map(r => JSON.stringify(r)).join(',\n') + '\n]' : JSON.stringify(out[k]))).join(',\n') + '\n}\n');
