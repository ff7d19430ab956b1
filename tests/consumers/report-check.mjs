// Drive pyrospy's html report (-f html) in Debian's Chromium, headless,
// through playwright-core, as a person would: mouse clicks, keys, typing.
// REPORT_BROWSER=firefox drives Debian's Firefox ESR instead, through
// WebDriver BiDi (puppeteer-core, behind playwright's API: firefox-page.mjs).
// Prints one JSON object of what it saw; tests/test_report_html.c asserts
// on it.  Any request but the page itself, any console error and any page
// error are counted (requests, errors).
//
//   node report-check.mjs seed REPORT.html FOO BAR WORK BAZ [SCREENSHOT.png]
//   node report-check.mjs hostile REPORT.html NAMES.json
//   node report-check.mjs tags REPORT.html KEY VALUE FUNC...
//   node report-check.mjs compare REPORT.html KEY BASE NEW GREW SHRANK [SCREENSHOT.png]
//
// seed: the seed workload's report (foo 3x bar, work innermost, baz in a
// thread of its own, recorded with --threads).  hostile: a report whose
// names are markup; NAMES.json lists those that must be shown as text.
// tags: choose VALUE of KEY in the tag picker; which of FUNC... are drawn.
// compare: BASE of KEY in its picker and NEW in its "vs" one (unless the
// page opens comparing, as pyrospy diff -f html writes it): the three
// graphs, where they are, the diff's change of GREW and SHRANK, then
// Escape.
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [mode, file, ...names] = process.argv.slice(2);
const out = { requests: 0, request_urls: [], errors: 0, error_texts: [] };
const browser = process.env.REPORT_BROWSER === 'firefox'
	? await (await import('./firefox-page.mjs')).launchFirefox()
	: await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
	const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
	const url = new URL(file, 'file://' + process.cwd() + '/').href;

	page.on('request', (r) => {
		if (r.url() !== url) {
			out.requests++;
			out.request_urls.push(r.url());
		}
	});
	page.on('console', (m) => {
		if (m.type() === 'error') {
			out.errors++;
			out.error_texts.push(m.text());
		}
	});
	page.on('pageerror', (e) => {
		out.errors++;
		out.error_texts.push(String(e));
	});
	await page.goto(url);
	out.user_agent = await page.evaluate(() => navigator.userAgent);
	// what ran when the page loaded, whether or not the report started
	out.pwned = await page.evaluate(() => window.pwned === undefined ? 0 : 1);
	out.scripts = await page.evaluate(() => document.scripts.length);
	out.elements = await page.evaluate(() => document.querySelectorAll('img, svg, iframe, object').length);
	out.loaded = 1;
	try {
		await page.waitForFunction(() => window.pyrospyReport, null, { timeout: 10000 });
	} catch (e) {
		out.loaded = 0;
		out.errors++;
		out.error_texts.push('the report did not start: ' + e.message);
	}
	const boxes = () => page.evaluate(() => window.pyrospyReport.boxes());
	const state = () => page.evaluate(() => window.pyrospyReport.state());
	const widest = (bs, name) => bs.filter((b) => b.name === name).sort((a, b) => b.w - a.w)[0];
	const onScreen = (b) => b && b.y >= 0 && b.y + b.h <= 900 && b.x >= 0 && b.x + b.w <= 1400;
	const center = (b) => [b.x + b.w / 2, b.y + b.h / 2];
	if (!out.loaded)
		;
	else if (mode === 'seed')
		await seed(page, boxes, state, widest, onScreen, center);
	else if (mode === 'tags')
		await tags(page, boxes, state);
	else if (mode === 'compare')
		await compare(page, state, center);
	else
		await hostile(page, boxes, state);
} finally {
	await browser.close();
}
console.log(JSON.stringify(out));

async function seed(page, boxes, state, widest, onScreen, center) {
	const [foo, bar, work, baz, shot] = names;
	const canvasWidth = await page.evaluate(() => document.getElementById('flame').clientWidth);
	let bs = await boxes();
	let f = widest(bs, foo), b = widest(bs, bar);

	out.canvas_width = canvasWidth;
	out.facts = await page.locator('#facts').evaluate((dl) => Array.from(dl.children, (d) => d.textContent));
	out.title = await page.locator('#title').textContent();
	out.samples = (await state()).samples;
	out.first_foo_w = onScreen(f) ? f.w : 0;
	out.first_bar_w = onScreen(b) ? b.w : 0;
	// colours by family of code, and the legend of those drawn
	out.families = Object.fromEntries(bs.map((x) => [x.name, x.family]));
	out.legend = await page.locator('#legend span').evaluateAll((l) => l.map((e) => e.dataset.family));
	out.legend_complete = [...new Set(bs.filter((x) => x.depth).map((x) => x.family))]
		.every((f) => out.legend.includes(f)) ? 1 : 0;
	if (shot)
		await page.screenshot({ path: shot });

	// hover: the tooltip names the function and its counts
	await page.mouse.move(...center(f));
	out.tip_name = await page.evaluate(() => document.getElementById('tip-name').textContent);
	out.tip_file = await page.evaluate(() => document.getElementById('tip-file').textContent);
	out.tip_count = await page.evaluate(() => document.getElementById('tip-count').textContent);
	out.tip_total = f.total;

	// click-zoom on foo, then back by the breadcrumbs' first ("all")
	await page.mouse.click(...center(f));
	bs = await boxes();
	const z = widest(bs, foo);
	out.zoom_state = (await state()).zoom;
	out.zoom_foo_w = z ? z.w : 0;
	out.zoom_bar_boxes = bs.filter((x) => x.name === bar).length;
	out.zoom_crumbs = await page.locator('#crumbs button').count();
	await page.locator('#crumbs button').first().click();
	bs = await boxes();
	out.back_state = (await state()).zoom;
	out.back_foo_w = widest(bs, foo) ? widest(bs, foo).w : 0;
	out.back_bar_w = widest(bs, bar) ? widest(bs, bar).w : 0;
	// Escape goes back to the root too
	await page.mouse.click(...center(widest(bs, foo)));
	out.zoom2_state = (await state()).zoom;
	await page.keyboard.press('Escape');
	out.escape_state = (await state()).zoom;

	// search: "/" focuses the box, the share of bar's samples
	await page.mouse.click(5, 5);
	await page.keyboard.press('/');
	out.slash_focus = await page.evaluate(() => document.activeElement.id);
	await page.keyboard.type(bar);
	let s = await state();
	out.search_share = s.searchShare;
	out.search_samples = s.searchSamples;
	bs = await boxes();
	out.search_hl_bar = bs.filter((x) => x.highlighted && x.name === bar).length;
	out.search_hl_other = bs.filter((x) => x.highlighted && x.name !== bar).length;
	out.search_text = await page.locator('#search-share').textContent();
	// Ctrl-F too, and a regular expression: foo or bar
	await page.mouse.click(5, 5);
	await page.keyboard.press('Control+f');
	out.ctrlf_focus = await page.evaluate(() => document.activeElement.id);
	await page.keyboard.type(`/^(${foo}|${bar})$/`);
	out.regex_share = (await state()).searchShare;
	await page.locator('#search').fill('');

	// the table: sorted by self (a click on its header), the first row
	await page.locator('#table th[data-key="self"]').click();
	let rows = await page.evaluate(() => window.pyrospyReport.rows());
	out.sort_first = rows[0].name;
	out.sort_descending = rows.every((r, i) => !i || rows[i - 1].self >= r.self) ? 1 : 0;
	out.sort_rows = rows.length;
	out.table_first_text = await page.locator('#table tbody tr').first().locator('td').first().textContent();
	// a row's click highlights that function's boxes, and only those
	await page.locator('#table tbody tr', { hasText: bar }).first().click();
	bs = await boxes();
	out.row_selected = (await state()).selected;
	out.row_hl = bs.filter((x) => x.highlighted).length;
	out.row_hl_bar = bs.filter((x) => x.highlighted && x.name === bar).length;
	out.row_bar_boxes = bs.filter((x) => x.name === bar).length;
	// the sandwich of the selected function: callers above it, callees below
	await page.locator('#sandwich').click();
	bs = await boxes();
	const callers = bs.filter((x) => x.part === 'callers'), callees = bs.filter((x) => x.part === 'callees');
	const root = (l) => l.find((x) => x.depth === 0) || { name: '', total: -1, y: 0 };
	out.sw_state = (await state()).sandwich;
	out.sw_callers_root = root(callers).name;
	out.sw_callees_root = root(callees).name;
	out.sw_callers_total = root(callers).total;
	out.sw_callees_total = root(callees).total;
	out.sw_callers_above = callers.every((x) => x.y < root(callees).y) &&
		callers.every((x) => x.depth === 0 || x.y < root(callers).y) ? 1 : 0;
	out.sw_callee_work = callees.filter((x) => x.depth === 1 && x.name === work).length;
	out.sw_caller_work = callers.filter((x) => x.name === work).length;
	out.sw_callers_depth1 = callers.filter((x) => x.depth === 1).map((x) => x.name);
	out.sw_foo_boxes = bs.filter((x) => x.name === foo).length;
	await page.keyboard.press('Escape');
	out.sw_after_escape = (await state()).sandwich;
	out.sw_parts_after = (await boxes()).filter((x) => x.part).length;
	await page.locator('#table tbody tr.selected').click();
	out.row_unselected_hl = (await boxes()).filter((x) => x.highlighted).length;
	// the filter box: only rows that match
	await page.locator('#filter').fill(bar);
	rows = await page.evaluate(() => window.pyrospyReport.rows());
	out.filter_rows = rows.length;
	out.filter_all_match = rows.every((r) => r.name.includes(bar) || r.file.includes(bar)) ? 1 : 0;
	await page.locator('#filter').fill('');

	// the inverted view: the innermost function is a root (depth 1)
	await page.locator('#inverted').check();
	bs = await boxes();
	const top = bs.filter((x) => x.depth === 1).sort((a, c) => c.w - a.w);
	out.inv_root = top.length ? top[0].name : '';
	out.inv_foo_depth1 = bs.filter((x) => x.depth === 1 && x.name === foo).length;
	const w = widest(bs.filter((x) => x.depth === 1), work);
	out.inv_work_total = w ? w.total : 0;
	await page.locator('#inverted').uncheck();

	// the thread picker: the thread of baz alone, then the main one
	s = await state();
	out.threads = s.threads.length;
	const side = s.threads.find((t) => t.name.includes('side'));
	out.side_expected = side ? side.samples : -1;
	if (side) {
		await page.locator('#thread').selectOption({ label: `${side.name} \u2014 ${side.samples} samples` });
		bs = await boxes();
		s = await state();
		out.side_samples = s.samples;
		out.side_thread = s.thread;
		out.side_foo_boxes = bs.filter((x) => x.name === foo).length;
		out.side_baz_boxes = bs.filter((x) => x.name === baz).length;
		const main = s.threads.find((t) => !t.name.includes('side'));
		await page.locator('#thread').selectOption({ label: `${main.name} \u2014 ${main.samples} samples` });
		bs = await boxes();
		out.main_samples = (await state()).samples;
		out.main_expected = main.samples;
		out.main_foo_boxes = bs.filter((x) => x.name === foo).length;
		out.main_baz_boxes = bs.filter((x) => x.name === baz).length;
	}
}

async function hostile(page, boxes, state) {
	const names = JSON.parse(readFileSync(process.argv[4], 'utf8'));
	const drawn = (await boxes()).map((b) => b.name);
	const cells = await page.locator('#table tbody td:first-child').evaluateAll(
		(tds) => tds.map((td) => td.firstChild ? td.firstChild.textContent : ''));
	const threads = (await state()).threads.map((t) => t.name);
	const options = await page.locator('#thread option').allTextContents();
	out.names = names.length;
	// the header: the target's command line (markup) as text
	out.title = await page.locator('#title').textContent();
	out.facts = await page.locator('#facts').evaluate((dl) => Array.from(dl.children, (d) => d.textContent));
	out.in_table = names.filter((n) => cells.includes(n)).length;
	out.long_name = Math.max(0, ...cells.filter((c) => c.startsWith('LLLL')).map((c) => c.length));
	out.drawn = names.filter((n) => drawn.includes(n)).length;
	out.thread_shown = threads.filter((t) => options.some((o) => o.startsWith(t))).length;
	out.threads = threads;
	// hover each hostile box: the tooltip holds its name as text
	let tips = 0;
	for (const b of await boxes()) {
		if (!names.includes(b.name) || b.y + b.h > 900)
			continue;
		await page.mouse.move(b.x + Math.min(b.w / 2, 600), b.y + b.h / 2);
		if (await page.evaluate(() => document.getElementById('tip-name').textContent) === b.name)
			tips++;
	}
	out.tips = tips;
	// search for one of them: a regex that is markup searches as text
	await page.locator('#search').fill('<img');
	out.search_share = (await state()).searchShare;
	out.pwned_after = await page.evaluate(() => window.pwned === undefined ? 0 : 1);
	out.scripts_after = await page.evaluate(() => document.scripts.length);
	out.elements_after = await page.evaluate(() => document.querySelectorAll('img, svg, iframe, object').length);
}

async function tags(page, boxes, state) {
	const [key, value, ...funcs] = names;
	const drawn = async () => {
		const bs = await boxes();
		return funcs.map((f) => bs.filter((b) => b.name === f).length);
	};
	let s = await state();
	out.tag_keys = Object.keys(s.tagValues);
	out.tag_values = s.tagValues[key] || {};
	out.all_samples = s.samples;
	out.all_drawn = await drawn();
	await page.locator(`#tags select[data-key="${key}"]`).selectOption(value);
	s = await state();
	out.chosen = s.tags[key] || null;
	out.chosen_samples = s.samples;
	out.chosen_drawn = await drawn();
	out.chosen_rows = (await page.evaluate(() => window.pyrospyReport.rows())).map((r) => r.name);
	await page.locator(`#tags select[data-key="${key}"]`).selectOption('');
	s = await state();
	out.back_samples = s.samples;
	out.back_chosen = Object.keys(s.tags).length;
}

async function compare(page, state, center) {
	const [key, base, next, grew, shrank, shot] = names;
	const part = (p) => page.evaluate((q) => window.pyrospyReport.boxes(q), p);
	const widest = (bs, name) => bs.filter((b) => b.name === name).sort((a, b) => b.w - a.w)[0];
	let s = await state();

	out.all_samples = s.samples;
	out.opened_comparing = s.compare ? 1 : 0;
	if (!s.compare) {
		await page.locator(`#tags select[data-key="${key}"]`).selectOption(base, { timeout: 5000 });
		await page.locator(`#tags select[data-compare="${key}"]`).selectOption(next, { timeout: 5000 });
		s = await state();
	}
	out.compare = s.compare;
	if (shot)
		await page.screenshot({ path: shot });
	const r = await page.locator('#flame').evaluate((c) => {
		const b = c.getBoundingClientRect();
		return { left: b.left, width: b.width };
	});
	const mid = r.left + r.width / 2, bb = await part('base'), nb = await part('new'), db = await part('diff');
	const root = (bs) => (bs.find((b) => b.depth === 0) || { total: -1 }).total;

	out.base_boxes = bb.length;
	out.new_boxes = nb.length;
	out.diff_boxes = db.length;
	out.base_left = bb.every((b) => b.x >= r.left - 0.5 && b.x + b.w <= mid + 0.5) ? 1 : 0;
	out.new_right = nb.every((b) => b.x >= mid - 0.5 && b.x + b.w <= r.left + r.width + 0.5) ? 1 : 0;
	out.diff_below = db.every((b) => bb.concat(nb).every((o) => b.y > o.y)) ? 1 : 0;
	out.base_total = root(bb);
	out.new_total = root(nb);
	out.base_names = [...new Set(bb.map((b) => b.name))];
	out.new_names = [...new Set(nb.map((b) => b.name))];
	const g = widest(db, grew) || {}, k = widest(db, shrank) || {};
	out.grew_change = g.change === undefined ? 'none' : g.change;
	out.grew_colour = g.colour || 'none';
	out.shrank_change = k.change === undefined ? 'none' : k.change;
	out.shrank_colour = k.colour || 'none';
	out.diff_root_next = root(db) === -1 ? -1 : (db.find((b) => b.depth === 0) || {}).next;
	// hover on the diff: BASE's and NEW's shares and the change
	if (g.w) {
		await page.mouse.move(...center(g));
		out.diff_tip = await page.evaluate(() => document.getElementById('tip-count').textContent);
	}
	// clicks zoom nothing while comparing
	await page.mouse.click(...center(nb[nb.length - 1]));
	out.after_click = (await state()).compare ? 1 : 0;
	await page.mouse.click(2, 2);
	await page.keyboard.press('Escape');
	s = await state();
	const left = await part(undefined);
	out.left_compare = s.compare;
	out.left_parts = left.filter((b) => b.part).length;
	out.left_boxes = left.length;
	out.left_samples = s.samples;
	out.left_inverted_enabled = await page.locator('#inverted').isEnabled() ? 1 : 0;
}
