// The alerting UI in headless Chromium (Debian's chromium via playwright-core): sign in, run a
// query in Explore, "Alert on this" with a condition, see the alert on the Alerts page, open it,
// watch its history fill with evaluations (each with a run id), mute it, delete it.
// Env: BZRK_GATEWAY, BZRK_USER, BZRK_PASSWORD, BZRK_ARTIFACTS, BZRK_CHROMIUM, BZRK_UI_WEB, BZRK_ALERT.
// Prints one JSON line with what it saw; exits non-zero on the first failed step.
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const env = process.env;
const require = createRequire(path.join(env.BZRK_UI_WEB, 'package.json'));
const { chromium } = require('playwright-core');
const gateway = env.BZRK_GATEWAY;
const artifacts = env.BZRK_ARTIFACTS;
const alertName = env.BZRK_ALERT;
await mkdir(artifacts, { recursive: true });
const report = { steps: [] };

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const browser = await chromium.launch({
  executablePath: env.BZRK_CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
page.setDefaultTimeout(60_000);
page.on('dialog', (dialog) => dialog.accept());
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));

async function shot(name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`) });
  report.steps.push(name);
}

try {
  await page.goto(`${gateway}/`);
  await page.fill('#username', env.BZRK_USER);
  await page.fill('#password', env.BZRK_PASSWORD);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('.monaco-editor');
  const query = "default | where severity_text == 'ERROR' | summarize n = count()";
  await page.evaluate((t) => window.monaco.editor.getModels()[0].setValue(t), query);
  report.range = await page.inputValue('#time-range');
  await page.click('#alert-on-this');
  await page.waitForSelector('dialog.alert-dialog[open]');
  report.prefilled_query = await page.inputValue('dialog.alert-dialog textarea[name=query]');
  report.prefilled_since = await page.inputValue('dialog.alert-dialog input[name=since]');
  check(report.prefilled_query === query, `the form was not prefilled: ${report.prefilled_query}`);
  await page.fill('dialog.alert-dialog input[name=name]', alertName);
  await page.fill('dialog.alert-dialog input[name=condition]', 'n >>= 1');
  await page.fill('dialog.alert-dialog input[name=every]', '1s');
  await page.fill('dialog.alert-dialog input[name=since]', '1d ago');
  await page.click('dialog.alert-dialog button[type=submit]');
  await page.waitForFunction(() => document.querySelector('dialog.alert-dialog .error-text')?.textContent);
  report.bad_condition_message = await page.textContent('dialog.alert-dialog .error-text');
  await shot('alerts-01-invalid-condition');
  await page.fill('dialog.alert-dialog input[name=condition]', 'n >= 1');
  await page.click('dialog.alert-dialog button[type=submit]');
  await page.waitForSelector('dialog.alert-dialog', { state: 'detached' });

  await page.click('nav a[href="/alerts"]');
  await page.waitForSelector(`tr[data-alert="${alertName}"]`);
  await shot('alerts-02-list');
  await page.click(`tr[data-alert="${alertName}"] a`);
  await page.waitForSelector('.alert-details');
  // The scheduler evaluates every second: reload until the history shows a firing run and the
  // state badge says firing. The page reads the alert and then its history in two requests, so an
  // evaluation that lands between them shows in the history before the badge.
  for (let i = 0; i < 60; i++) {
    const firingRuns = await page.locator('table.history tr[data-status=firing]').count();
    const badge = await page.locator('.alert-details .alert-state').first().getAttribute('data-state');
    if (firingRuns && badge === 'firing') break;
    await page.waitForTimeout(1000);
    await page.reload();
    await page.waitForSelector('.alert-details');
  }
  report.history_rows = await page.locator('table.history tbody tr').count();
  report.first_run_id = (await page.locator('table.history tbody tr td:nth-child(4)').first().textContent()).trim();
  report.state = (await page.locator('.alert-details .alert-state').first().textContent()).trim();
  report.history = await page.locator('table.history tbody tr').evaluateAll((rows) => rows.slice(0, 5).map((r) => r.textContent.trim()));
  check(report.state.startsWith('firing'), `the alert is ${report.state}; history: ${JSON.stringify(report.history)}`);
  await shot('alerts-03-firing-history');
  await page.click('button:has-text("Mute 1 h")');
  await page.waitForSelector('button:has-text("Unmute")');
  report.muted_state = (await page.locator('.alert-details .alert-state').first().textContent()).trim();
  await shot('alerts-04-muted');
  await page.click('button.danger:has-text("Delete")');
  await page.waitForSelector('.alerts-head h2:has-text("Alerts")');
  report.listed_after_delete = await page.locator(`tr[data-alert="${alertName}"]`).count();
  report.console_errors = consoleErrors.slice(0, 10);
  report.ok = true;
} catch (e) {
  report.ok = false;
  report.error = String(e && e.stack ? e.stack : e);
  report.console_errors = consoleErrors.slice(0, 10);
  await page.screenshot({ path: path.join(artifacts, 'alerts-failure.png') }).catch(() => undefined);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);
