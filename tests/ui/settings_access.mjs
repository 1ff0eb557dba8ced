// Settings → Access and Audit log in headless Chromium (Debian's chromium via playwright-core):
// grant a service principal editor on a database, see its token mint an ingest token, revoke
// the grant from the table and see the mint refused, then find both changes in the audit log.
// Env: BZRK_GATEWAY, BZRK_USER, BZRK_PASSWORD, BZRK_ARTIFACTS, BZRK_CHROMIUM, BZRK_UI_WEB,
// BZRK_SP_ID, BZRK_SP_TOKEN. Prints one JSON line with what it saw.
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const env = process.env;
const require = createRequire(path.join(env.BZRK_UI_WEB, 'package.json'));
const { chromium } = require('playwright-core');
const gateway = env.BZRK_GATEWAY;
const artifacts = env.BZRK_ARTIFACTS;
await mkdir(artifacts, { recursive: true });
const report = { steps: [] };
const principal = `sp:${env.BZRK_SP_ID}`;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function mint() {
  const r = await fetch(`${gateway}/api/v1/admin/ingest-tokens`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.BZRK_SP_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `ui-access-${Date.now()}`, database: 'default', table: 'default' }),
  });
  return r.status;
}

const browser = await chromium.launch({
  executablePath: env.BZRK_CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1400, height: 1200 } })).newPage();
page.setDefaultTimeout(60_000);
page.on('dialog', (dialog) => dialog.accept());
try {
  await page.goto(`${gateway}/login`);
  await page.fill('#username', env.BZRK_USER);
  await page.fill('#password', env.BZRK_PASSWORD);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('nav a[href="/settings"]');
  await page.click('nav a[href="/settings"]');
  await page.waitForSelector(`#access-title ~ table tr[data-principal="${principal}"]`);
  report.rows_before = await page.locator(`tr[data-principal="${principal}"]`).allTextContents();
  report.mint_before = await mint();

  await page.selectOption('select[aria-label="Principal"]', principal);
  await page.selectOption('select[aria-label="Relation"]', 'editor');
  await page.selectOption('select[aria-label="Database"]', 'default');
  await page.click('#access-title ~ form button[type=submit]');
  await page.waitForFunction((p) => [...document.querySelectorAll(`tr[data-principal="${p}"]`)].some((tr) => tr.textContent.includes('editor')), principal);
  report.rows_granted = await page.locator(`tr[data-principal="${principal}"]`).allTextContents();
  report.mint_granted = await mint();
  await page.screenshot({ path: path.join(artifacts, 'access-granted.png'), fullPage: true });
  report.steps.push('access-granted');

  await page.click(`tr[data-principal="${principal}"] button[aria-label^="Revoke editor"]`);
  await page.waitForFunction((p) => ![...document.querySelectorAll(`tr[data-principal="${p}"]`)].some((tr) => tr.textContent.includes('editor')), principal);
  report.mint_revoked = await mint();

  await page.reload();
  await page.waitForSelector('#audit-title ~ table tr[data-event="grant_removed"]');
  report.audit_events = await page.locator('#audit-title ~ table tbody tr').evaluateAll((rows) => rows.slice(0, 20).map((r) => r.dataset.event));
  await page.locator('#audit-title').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(artifacts, 'audit-log.png'), fullPage: true });
  report.steps.push('audit-log');
  report.ok = true;
} catch (e) {
  report.ok = false;
  report.error = String(e && e.stack ? e.stack : e);
  await page.screenshot({ path: path.join(artifacts, 'access-failure.png') }).catch(() => undefined);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);
