// Builds `{ service == checkout } >> { status == ERROR }` in the Tracing tab's builder, runs it,
// and reports what the result grid shows (row count, the trace ids in view, the preview text),
// and the trace list the tab opened with (id, service, root span of the first rows).
import { buildCheckoutError, check, finish, open, shot, signIn } from './browser.mjs';

const report = { flow: 'tracefind', steps: [] };
const { browser, page } = await open(report);

await finish(report, browser, page, async () => {
  await signIn(page);
  await page.click('nav a[href="/tracing"]');
  await page.waitForSelector('[data-testid=trace-list][data-state=done]');
  // The trace list as shown: each trace's id, service and root span name.
  report.listed = await page.$$eval('[data-testid=trace-list] table.traces tr[data-trace]', (rows) =>
    rows.slice(0, 25).map((r) => ({ trace: r.dataset.trace, service: r.children[1].textContent, root: r.children[2].textContent })),
  );
  await buildCheckoutError(page);
  report.kql = await page.textContent('[data-testid=tracefind-preview]');
  await page.click('[data-testid=tracefind-run]');
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('[data-testid=trace-list]')?.dataset.state), null, { timeout: 120_000 });
  report.state = await page.getAttribute('[data-testid=trace-list]', 'data-state');
  check(report.state === 'done', `trace-find failed in the UI: ${await page.textContent('[data-testid=trace-list]')}`);
  report.rows = Number(await page.getAttribute('[data-testid=tracefind-result]', 'data-rows'));
  report.trace_ids = await page.$$eval('[data-testid=tracefind-result] a.trace-link', (els) => els.map((e) => e.textContent));
  await shot(page, report, '22-tracefind-results');
});
