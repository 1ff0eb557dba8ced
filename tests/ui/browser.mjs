// Shared pieces of the browser flows: Debian's Chromium through playwright-core (never a
// downloaded browser), sign-in, screenshots, the editor, running a query, and the API with the
// dev server's service-principal token (to check what the UI shows against the data).
// Env: BZRK_GATEWAY, BZRK_USER, BZRK_PASSWORD, BZRK_TOKEN, BZRK_ARTIFACTS, BZRK_CHROMIUM, BZRK_UI_WEB.
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export const env = process.env;
const require = createRequire(path.join(env.BZRK_UI_WEB, 'package.json'));
const { chromium } = require('playwright-core');
export const gateway = env.BZRK_GATEWAY;
export const artifacts = env.BZRK_ARTIFACTS;
export const STEP_TIMEOUT = 60_000;
// The flags tests/ui has always used for headless Debian Chromium.
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

export async function open(report) {
  await mkdir(artifacts, { recursive: true });
  const browser = await chromium.launch({ executablePath: env.BZRK_CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  page.on('dialog', (dialog) => dialog.accept());
  report.console_errors = [];
  page.on('pageerror', (e) => report.console_errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && !m.text().includes('401') && report.console_errors.push(m.text()));
  return { browser, context, page };
}

export async function shot(page, report, name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`) });
  report.steps.push(name);
}

export async function signIn(page) {
  await page.goto(`${gateway}/login`);
  await page.fill('#username', env.BZRK_USER);
  await page.fill('#password', env.BZRK_PASSWORD);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('.monaco-editor');
  await page.waitForFunction(() => document.querySelector('.explore')?.dataset.schemaLoaded);
}

export async function setQuery(page, text) {
  // Through Monaco's model (typing would trigger auto-closing brackets and completions).
  await page.evaluate((t) => window.monaco.editor.getModels()[0].setValue(t), text);
}

export async function waitDone(page, timeout = 120_000) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('.results')?.dataset.state) && !document.querySelector('#run').disabled, null, { timeout });
  return page.evaluate(() => ({ state: document.querySelector('.results').dataset.state, status: document.querySelector('.progress-text').textContent }));
}

/** Runs the editor's query with Ctrl+Enter from the editor and waits for the end. */
export async function run(page, text) {
  if (text !== undefined) await setQuery(page, text);
  await page.locator('.monaco-editor textarea').first().focus();
  await page.keyboard.press('Control+Enter');
  await page.waitForFunction(() => document.querySelector('.results')?.dataset.state === 'running' || document.querySelector('#run').disabled, null, { timeout: 10_000 }).catch(() => undefined);
  return waitDone(page);
}

/** The final answer of a query over the API (non-streamed), as row objects. */
export async function query(kql, since = '1d ago') {
  const answer = await fetch(`${gateway}/query`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.BZRK_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: kql, database: 'default', since }),
  });
  const body = await answer.json();
  if (!answer.ok) return { error: body, rows: [] };
  const table = body.Tables[0];
  return { rows: table.rows.map((r) => Object.fromEntries(table.columns.map((c, i) => [c.column_name, r[i]]))) };
}

/** Sends log records through the real OTLP/HTTP ingest path (JSON encoding). */
export async function ingestLogs(service, records) {
  const body = {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeLogs: [
          {
            scope: { name: 'bzrk.ui-test' },
            logRecords: records.map((r) => ({
              timeUnixNano: String(BigInt(r.timeMs) * 1_000_000n),
              observedTimeUnixNano: String(BigInt(r.timeMs) * 1_000_000n),
              severityText: r.severity,
              severityNumber: { ERROR: 17, WARN: 13, INFO: 9, DEBUG: 5 }[r.severity] ?? 9,
              body: { stringValue: r.body },
            })),
          },
        ],
      },
    ],
  };
  const answer = await fetch(`${env.BZRK_OTLP_HTTP}/v1/logs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.BZRK_INGEST_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  check(answer.ok, `OTLP ingest answered ${answer.status}: ${await answer.text()}`);
}

/** In the Tracing tab's builder: `{ service == "checkout" } >> { status == "ERROR" }`. */
export async function buildCheckoutError(page) {
  await page.click('[data-testid=tb-add-condition-0]');
  const first = page.locator('.tb-spanset[data-step="0"] .tb-predicate').first();
  await first.locator('select[aria-label=field]').selectOption('service');
  await first.locator('input[aria-label=value]').fill('checkout');
  await page.click('[data-testid=tb-add-step]');
  await page.locator('select[aria-label="relation 1"]').selectOption('>>');
}

/** Expected depth of each span: the same tree rule as the waterfall (a missing parent is a root). */
export function expectedDepths(spans) {
  const ids = new Set(spans.map((s) => s.span_id));
  const parent = new Map(spans.map((s) => [s.span_id, s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : '']));
  const depth = new Map();
  const of = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const p = parent.get(id);
    const d = p ? of(p, seen) + 1 : 0;
    depth.set(id, d);
    return d;
  };
  for (const s of spans) of(s.span_id);
  return { depth, parent };
}

export async function finish(report, browser, page, body) {
  try {
    await body();
    report.ok = true;
  } catch (e) {
    report.ok = false;
    report.error = String(e && e.stack ? e.stack : e);
    await page.screenshot({ path: path.join(artifacts, `failure-${report.flow}.png`) }).catch(() => undefined);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(report));
  process.exit(report.ok ? 0 : 1);
}
