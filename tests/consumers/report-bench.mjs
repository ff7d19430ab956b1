// How fast pyrospy's html report is in Debian's Chromium (scripts/bench,
// section 11): RUNS fresh pages of REPORT.html, each timed from the
// navigation's start to the first graph drawn (the mark report.js sets
// once it has drawn, performance.mark('pyrospy-drawn'), and the next
// frame), then a search typed into the box: from the input to its share
// shown and the next frame.  Prints one JSON object: every run's numbers
// and their medians, in milliseconds.
//
//   node report-bench.mjs REPORT.html QUERY [RUNS]
import { chromium } from 'playwright-core';

const [file, query, runs = '5'] = process.argv.slice(2);
const out = { open_ms: [], drawn_ms: [], search_ms: [], boxes: 0, share: '', errors: [] };
const median = (a) => {
	const s = [...a].sort((x, y) => x - y), m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
	const url = new URL(file, 'file://' + process.cwd() + '/').href;

	for (let i = 0; i < Number(runs); i++) {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });

		page.on('pageerror', (e) => out.errors.push(String(e)));
		// the frame that shows the graph: the first after report.js's mark
		await page.addInitScript(() => {
			const mark = performance.mark.bind(performance);

			performance.mark = (name, opts) => {
				const r = mark(name, opts);

				if (name === 'pyrospy-drawn')
					requestAnimationFrame(() => { window.pyrospyShown = performance.now(); });
				return r;
			};
		});
		await page.goto(url, { timeout: 120000 });
		await page.waitForFunction(() => window.pyrospyShown !== undefined, null,
					   { timeout: 120000 });
		const t = await page.evaluate(() => ({
			drawn: performance.getEntriesByName('pyrospy-drawn')[0].startTime,
			shown: window.pyrospyShown
		}));
		out.drawn_ms.push(t.drawn);
		out.open_ms.push(t.shown);
		out.boxes = await page.evaluate(() => window.pyrospyReport.boxes().length);
		// the search: typed as a whole (one input event), timed in the page
		out.search_ms.push(await page.evaluate((q) => new Promise((done) => {
			const box = document.getElementById('search'), t0 = performance.now();

			box.value = q;
			box.dispatchEvent(new Event('input', { bubbles: true }));
			requestAnimationFrame(() => done(performance.now() - t0));
		}), query));
		out.share = await page.locator('#search-share').textContent();
		await page.close();
	}
} finally {
	await browser.close();
}
out.open = median(out.open_ms);
out.drawn = median(out.drawn_ms);
out.search = median(out.search_ms);
console.log(JSON.stringify(out));
