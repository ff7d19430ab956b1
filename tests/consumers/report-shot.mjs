// The html report as a person first sees it, 1400x900 in Debian's
// Chromium: a screenshot, and the boxes drawn on that first screen.
//   node report-shot.mjs REPORT.html SHOT.png
import { chromium } from 'playwright-core';

const [file, shot] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
let requests = 0;
try {
	const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
	page.on('request', (r) => { if (!r.url().startsWith('file://')) requests++; });
	await page.goto('file://' + file);
	await page.waitForFunction(() => window.pyrospyReport && window.pyrospyReport.boxes().length > 0,
				   null, { timeout: 10000 });
	await page.screenshot({ path: shot });
	const boxes = await page.evaluate(() => window.pyrospyReport.boxes()
		.filter((b) => b.y + b.h <= 900 && b.w >= 20).map((b) => b.name));
	const title = await page.evaluate(() => document.getElementById('title').textContent);
	console.log(JSON.stringify({ requests, title, boxes }));
} finally {
	await browser.close();
}
