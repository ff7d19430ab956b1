// Debian's Firefox ESR, headless, driven through WebDriver BiDi by
// puppeteer-core, behind the part of playwright-core's Page that
// report-check.mjs uses (locators, mouse, keyboard, events), so that its
// checks run unchanged in Firefox.
//
// Why not playwright-core's own moz-firefox channel: playwright-core 1.65
// sends emulation.setMediaFeaturesOverride when it creates any page's
// context, a BiDi command Firefox ESR 153 answers with "unknown command",
// so no page can be opened.  puppeteer-core sends only what Firefox ESR
// implements.
import puppeteer from 'puppeteer-core';

export async function launchFirefox() {
	const browser = await puppeteer.launch({
		browser: 'firefox',
		executablePath: '/usr/bin/firefox-esr',
		headless: true,
	});
	return {
		async newPage({ viewport }) {
			const page = await browser.newPage();
			await page.setViewport(viewport);
			return wrap(page);
		},
		close: () => browser.close(),
	};
}

function wrap(page) {
	return {
		on: (event, f) => page.on(event, f),
		goto: (url) => page.goto(url),
		evaluate: (f, arg) => page.evaluate(f, arg),
		waitForFunction: (f, arg, { timeout }) => page.waitForFunction(f, { timeout }, arg),
		screenshot: (options) => page.screenshot(options),
		mouse: page.mouse,
		keyboard: {
			type: (text) => page.keyboard.type(text),
			// playwright's "Control+f": the modifiers held around the key
			async press(keys) {
				const k = keys.split('+');
				for (const m of k.slice(0, -1))
					await page.keyboard.down(m);
				await page.keyboard.press(k[k.length - 1]);
				for (const m of k.slice(0, -1).reverse())
					await page.keyboard.up(m);
			},
		},
		locator: (selector, options) => locator(page, [{ selector, hasText: options?.hasText }]),
	};
}

// A locator is a list of steps (a selector, perhaps with text it must
// hold, or an index), resolved to element handles when it is used.
function locator(page, steps) {
	const resolve = async () => {
		let found = [null];
		for (const s of steps) {
			if (s.index !== undefined) {
				found = found.slice(s.index, s.index + 1);
				continue;
			}
			const next = [];
			for (const h of found)
				next.push(...await (h ? h.$$(s.selector) : page.$$(s.selector)));
			found = [];
			for (const h of next)
				if (s.hasText === undefined || (await h.evaluate((e) => e.textContent)).includes(s.hasText))
					found.push(h);
		}
		return found;
	};
	const one = async () => {
		const found = await resolve();
		if (!found.length)
			throw new Error(`no element for ${JSON.stringify(steps)}`);
		return found[0];
	};
	return {
		first: () => locator(page, [...steps, { index: 0 }]),
		locator: (selector) => locator(page, [...steps, { selector }]),
		count: async () => (await resolve()).length,
		evaluate: async (f) => (await one()).evaluate(f),
		evaluateAll: async (f) => (await page.evaluateHandle((...e) => e, ...await resolve())).evaluate(f),
		textContent: async () => (await one()).evaluate((e) => e.textContent),
		allTextContents: async () => Promise.all((await resolve()).map((h) => h.evaluate((e) => e.textContent))),
		click: async () => (await one()).click(),
		check: async () => {
			const h = await one();
			if (!await h.evaluate((e) => e.checked))
				await h.click();
		},
		uncheck: async () => {
			const h = await one();
			if (await h.evaluate((e) => e.checked))
				await h.click();
		},
		// as playwright fills: the text selected, then replaced at once
		// (one input event; BiDi's keyboard sends a character at a time)
		fill: async (value) => (await one()).evaluate((e, v) => {
			e.focus();
			e.select();
			if (!document.execCommand(v ? 'insertText' : 'delete', false, v))
				throw new Error('cannot fill ' + e.id);
		}, value),
		selectOption: async (choice) => {
			const h = await one();
			const value = typeof choice === 'string' ? choice : await h.evaluate(
				(e, label) => Array.from(e.options).find((o) => o.label === label)?.value, choice.label);
			if (value === undefined)
				throw new Error(`no option ${JSON.stringify(choice)}`);
			await h.select(value);
		},
	};
}
