// Drives the npm azure-kusto-data client against a bzrk ADX endpoint; prints one JSON report.
// Usage: node client.mjs <cluster-url> <token> <database>
import { Client, KustoConnectionStringBuilder, ClientRequestProperties } from "azure-kusto-data";

const [url, token, db] = process.argv.slice(2);
const client = new Client(KustoConnectionStringBuilder.withAccessToken(url, token));
const report = {};

function rowsOf(table) {
  return [...table.rows()].map((row) => row.toJSON());
}

async function attempt(name, fn) {
  try {
    report[name] = { ok: true, value: await fn() };
  } catch (err) {
    report[name] = {
      ok: false,
      type: err?.constructor?.name,
      message: String(err?.message ?? err),
      status: err?.response?.status ?? null,
      body: err?.response?.data ?? null,
    };
  }
}

const queries = JSON.parse(process.env.BZRK_JS_QUERIES || "{}");
for (const [name, spec] of Object.entries(queries)) {
  await attempt(name, async () => {
    let props;
    if (spec.options) {
      props = new ClientRequestProperties();
      for (const [k, v] of Object.entries(spec.options)) props.setOption(k, v);
    }
    const method = spec.method || "executeQuery";
    const result = await client[method](spec.db ?? db, spec.csl, props);
    return {
      primary: result.primaryResults.map((t) => ({
        name: t.name,
        columns: t.columns.map((c) => [c.name, c.type]),
        rows: rowsOf(t),
      })),
      tableKinds: result.tables.map((t) => t.kind),
    };
  });
}
process.stdout.write(JSON.stringify(report));
