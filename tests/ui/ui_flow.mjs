// End-to-end UI flow in headless Chromium (Debian's /usr/bin/chromium via playwright-core):
// sign in, run a progressive query and watch snapshots replace each other, render a timechart,
// open an error with its highlighted span, create and revoke a service principal.
// Env: see browser.mjs.
// Prints one JSON line with what it measured; exits non-zero on the first failed step.
import { check, finish, gateway, open, shot as shotOf, setQuery as setQueryOf } from './browser.mjs';

const env = process.env;
const report = { flow: 'ui', steps: [] };
const { browser, page } = await open(report);
const consoleErrors = report.console_errors;
const shot = (name) => shotOf(page, report, name);
const setQuery = (text) => setQueryOf(page, text);

/** Runs the query and records every snapshot count the results pane shows until done. */
async function runAndWatch(text) {
  await setQuery(text);
  await page.evaluate(() => {
    const results = document.querySelector('.results');
    window.__snapshots = [];
    window.__observer?.disconnect();
    window.__observer = new MutationObserver(() => window.__snapshots.push([results.dataset.snapshots, results.dataset.iteration]));
    window.__observer.observe(results, { attributes: true, attributeFilter: ['data-snapshots'] });
  });
  await page.locator('.monaco-editor textarea').first().focus();
  await page.keyboard.press('Control+Enter');
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('.results').dataset.state) && !document.querySelector('#run').disabled, null, { timeout: 120_000 });
  return page.evaluate(() => ({
    state: document.querySelector('.results').dataset.state,
    snapshots: Number(document.querySelector('.results').dataset.snapshots),
    seen: window.__snapshots,
    status: document.querySelector('.progress-text').textContent,
    stats: document.querySelector('[data-testid=stats]').textContent,
  }));
}

await finish(report, browser, page, async () => {
  // 1. sign in
  await page.goto(`${gateway}/`);
  await page.waitForSelector('form.login');
  await shot('01-login');
  await page.fill('#username', 'nobody');
  await page.fill('#password', 'wrong');
  await page.click('form.login button[type=submit]');
  await page.waitForFunction(() => document.querySelector('.error-text').textContent.length > 0);
  report.bad_login_message = await page.textContent('.error-text');
  await page.fill('#username', env.BZRK_USER);
  await page.fill('#password', env.BZRK_PASSWORD);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('.monaco-editor');
  await page.waitForFunction(() => document.querySelector('.explore')?.dataset.schemaLoaded);
  check(new URL(page.url()).pathname === '/explore', `after sign-in at ${page.url()}`);
  report.user_shown = await page.textContent('[data-testid=who]');

  // Completion knows the schema: the table name of the demo database is offered.
  await setQuery('');
  await page.locator('.monaco-editor textarea').first().focus();
  await page.keyboard.type('def');
  await page.keyboard.press('Control+Space');
  await page.waitForSelector('.suggest-widget .monaco-list-row', { timeout: 30_000 });
  report.completions = await page.locator('.suggest-widget .monaco-list-row').allTextContents();
  check(report.completions.some((c) => c.includes('default')), `no 'default' table in completions: ${report.completions}`);
  await shot('02-explore-completion');
  await page.keyboard.press('Escape');

  // Schema sidebar: the table's declared columns, then fields discovered in its rows.
  // The `default` table by name: other tests' servers may share the store and add tables (an
  // empty `cli_…` table sorts first and has no fields to discover).
  await page.locator('.sidebar .tree-node').filter({ hasText: /^\S+ default$/ }).click();
  await page.waitForSelector('.sidebar .fields li.sub');
  report.sidebar_fields = await page.locator('.sidebar .fields .field-name').count();
  check(report.sidebar_fields > 10, `sidebar lists ${report.sidebar_fields} fields`);

  // 2. a progressive query over the demo data: at least two snapshots replace each other
  const table = await runAndWatch('default\n| summarize count() by bin(timestamp, 1h)\n| order by timestamp asc');
  check(table.state === 'done', `table query ended in ${table.state}: ${table.status}`);
  report.table_query = table;
  const iterations = new Set(table.seen.map((s) => s[1]));
  check(table.snapshots >= 2 && iterations.size >= 2, `expected >= 2 snapshots, saw ${JSON.stringify(table.seen)}`);
  report.grid_rows = Number(await page.getAttribute('.pane:not([hidden]) .grid', 'data-rows'));
  check(report.grid_rows > 0, 'the grid shows no rows');
  await page.click('.pane:not([hidden]) .grid-head >> nth=1'); // sort by count_
  await page.locator('.pane:not([hidden]) .grid-row .grid-cell >> nth=2').click();
  await shot('03-progressive-results');

  // 2b. 100 k rows: the grid stays virtual (few DOM rows), scrolls to the end, sorts, expands dynamics
  const t0 = Date.now();
  const big = await runAndWatch('range x from 1 to 100000 step 1\n| extend s = strcat("row", x), d = pack("x", x, "even", x % 2 == 0)');
  report.big_query_ms = Date.now() - t0;
  check(big.state === 'done', `100k query ended in ${big.state}: ${big.status}`);
  const grid = '.pane:not([hidden]) .grid';
  report.big_rows = Number(await page.getAttribute(grid, 'data-rows'));
  check(report.big_rows === 100000, `grid holds ${report.big_rows} rows`);
  report.big_dom_rows = await page.locator(`${grid} .grid-row`).count();
  check(report.big_dom_rows < 200, `${report.big_dom_rows} rows in the DOM: not virtualized`);
  const t1 = Date.now();
  await page.evaluate((g) => { const v = document.querySelector(`${g} .grid-viewport`); v.scrollTop = v.scrollHeight; }, grid);
  await page.waitForFunction((g) => [...document.querySelectorAll(`${g} .grid-rownum`)].some((c) => c.textContent === '100000'), grid);
  report.scroll_to_end_ms = Date.now() - t1;
  const t2 = Date.now();
  await page.click(`${grid} .grid-head >> nth=0`);
  await page.click(`${grid} .grid-head >> nth=0`); // descending
  await page.evaluate((g) => (document.querySelector(`${g} .grid-viewport`).scrollTop = 0), grid);
  await page.waitForFunction((g) => document.querySelector(`${g} .grid-row .grid-cell:nth-child(2)`)?.textContent === '100000', grid);
  report.sort_desc_ms = Date.now() - t2;
  await page.locator(`${grid} .grid-row .grid-cell[data-kind=dynamic]`).first().click();
  report.dynamic_details = (await page.textContent('[data-testid=cell-details]')).replace(/\s+/g, ' ');
  check(report.dynamic_details.includes('"even": true'), `details show ${report.dynamic_details}`);
  await shot('03b-100k-rows-sorted-dynamic');

  // 2c. Cancel stops a long query (the stream is closed; the UI says so and can run again)
  await setQuery('range x from 1 to 5000000 step 1\n| extend s = strcat("row", x)');
  await page.click('#run');
  await page.waitForFunction(() => !document.querySelector('#cancel').disabled);
  await page.waitForTimeout(500);
  await page.click('#cancel');
  await page.waitForFunction(() => document.querySelector('.results').dataset.state === 'cancelled' && !document.querySelector('#run').disabled);
  report.cancelled_status = await page.textContent('.progress-text');

  // 2d. several result tables become tabs
  const multi = await runAndWatch('print a = 1; print b = "x"');
  check(multi.state === 'done', `multi-table query ended in ${multi.state}`);
  report.multi_tabs = await page.locator('.tabs .tab').allTextContents();
  check(report.multi_tabs.join() === 'PrimaryResult,Table_1', `tabs: ${report.multi_tabs}`);
  await page.click('.tabs .tab >> nth=-1');
  report.second_tab_cell = await page.textContent('.pane:not([hidden]) .grid-row .grid-cell:nth-child(2)');
  check(report.second_tab_cell === 'x', `second table shows ${report.second_tab_cell}`);

  // 3. a timechart
  const chart = await runAndWatch('default\n| summarize count() by bin(timestamp, 30m), kind = tostring(metric_type)\n| render timechart');
  check(chart.state === 'done', `chart query ended in ${chart.state}: ${chart.status}`);
  await page.waitForSelector('[data-testid=chart][data-kind=timechart] canvas');
  report.chart_points = Number(await page.getAttribute('[data-testid=chart]', 'data-points'));
  check(report.chart_points > 0, 'the chart has no points');
  report.tabs = await page.locator('.tabs .tab').allTextContents();
  await page.waitForTimeout(500);
  await shot('04-timechart');

  // 3b. run history and the query library (save the chart query into a folder, find it again)
  await page.click('.sidebar-tabs button[data-mode=history]');
  await page.waitForSelector('.history-item');
  report.history_items = await page.locator('.history-item').count();
  check(report.history_items >= 4, `history shows ${report.history_items} runs`);
  await page.click('button:has-text("Save…")');
  await page.fill('#save-name', 'service kinds');
  await page.fill('#save-folder', 'ui-test/charts');
  await page.click('[data-testid=save-submit]');
  await page.waitForSelector('dialog.save-dialog', { state: 'detached' });
  await page.click('.sidebar-tabs button[data-mode=library]');
  await page.waitForSelector('.sidebar-body .folder:has-text("ui-test/charts")');
  report.library_entry = await page.textContent('.sidebar-body .library-name:has-text("service kinds")');
  await shot('04b-history-library');

  // 4. an error, its span highlighted in the editor
  const failed = await runAndWatch('default\n| where timestamp > ago(1h)\n| summarize count() by bogus_fn(body)');
  check(failed.state === 'error', `error query ended in ${failed.state}`);
  report.error_text = await page.textContent('.error-box');
  await page.waitForSelector('.monaco-editor .kql-error-span');
  report.error_span = await page.locator('.monaco-editor .kql-error-span').first().textContent();
  check(report.error_span.trim().length > 0, 'the highlighted error span is empty');
  await shot('05-error-highlight');

  // 5. settings: create a service principal (token shown once), revoke its token, delete it
  await page.click('nav a[href="/settings"]');
  await page.waitForSelector('#sp-title');
  const name = `ui-test-${Date.now()}`;
  await page.fill('input[aria-label="Service principal name"]', name);
  await page.click('#sp-title ~ form button[type=submit]');
  await page.waitForSelector('[data-testid=secret] .secret-value');
  const token = (await page.textContent('[data-testid=secret] .secret-value')).trim();
  check(token.startsWith('bzrk_sp_'), `token shown is ${token.slice(0, 12)}`);
  report.sp_token_prefix = token.slice(0, 12);
  // The token works as a bearer token on the API until revoked.
  const before = await fetch(`${gateway}/api/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
  report.token_status_before_revoke = before.status;
  await page.waitForSelector(`tr[data-sp="${name}"] .token-chip`);
  await shot('06-service-principal-created');
  await page.click(`tr[data-sp="${name}"] .token-chip button`);
  await page.waitForFunction((n) => document.querySelector(`tr[data-sp="${n}"] .tokens`)?.textContent.includes('none'), name);
  const after = await fetch(`${gateway}/api/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
  report.token_status_after_revoke = after.status;
  check(before.status === 200 && after.status === 401, `token status ${before.status} then ${after.status}`);
  await page.click(`tr[data-sp="${name}"] button.danger`);
  await page.waitForFunction((n) => !document.querySelector(`tr[data-sp="${n}"]`), name);
  await shot('07-service-principal-revoked');

  // 5b. an ingest token for a table (shown once, then revoked) and a user with a generated password
  const ingestName = `ui-ingest-${Date.now()}`;
  await page.fill('input[aria-label="Ingest token name"]', ingestName);
  await page.click('#ingest-title ~ form button[type=submit]');
  await page.waitForSelector('#ingest-title ~ [data-testid=secret] .secret-value');
  report.ingest_token_prefix = (await page.textContent('#ingest-title ~ [data-testid=secret] .secret-value')).trim().slice(0, 8);
  check(report.ingest_token_prefix.startsWith('ing_'), `ingest token shown is ${report.ingest_token_prefix}`);
  await page.click(`tr:has(td:text-is("${ingestName}")) button.danger`);
  await page.waitForFunction((n) => ![...document.querySelectorAll('td')].some((td) => td.textContent === n), ingestName);
  const userName = `ui-user-${Date.now()}`;
  await page.fill('input[aria-label="Username"]', userName);
  await page.click('#users-title ~ form button[type=submit]');
  await page.waitForSelector('#users-title ~ [data-testid=secret] .secret-value');
  const generated = (await page.textContent('#users-title ~ [data-testid=secret] .secret-value')).trim();
  const login = await fetch(`${gateway}/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: userName, password: generated }) });
  report.new_user_login_status = login.status;
  check(login.status === 200, `the new user cannot sign in: ${login.status}`);
  await shot('07b-ingest-token-and-user');

  // 6. light theme and sign-out
  await page.click('button[aria-label="Toggle theme"]');
  await page.click('nav a[href="/explore"]');
  await page.waitForSelector('.monaco-editor');
  await page.waitForTimeout(300);
  await shot('08-light-theme');
  await page.click('#logout');
  await page.waitForSelector('form.login');
  const me = await page.evaluate(() => fetch('/api/v1/me').then((r) => r.status));
  check(me === 401, `after sign-out /api/v1/me answers ${me}`);
});
