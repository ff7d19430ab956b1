// Check a Chrome trace event file (pyrospy report -f chrome): JSON with a
// traceEvents array whose complete ("X") events nest properly within each
// thread (a frame inside its caller's span), with times and durations
// that are numbers >= 0, and whose async "b"/"e" spans pair up in time
// order.  Prints what it holds, with each thread's outermost frames in
// time order (runs merged).
// usage: node check-trace.js FILE
'use strict';
const fs = require('fs');

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const problems = [];
const threads = new Map();
const spans = new Map();
let events = 0;
for (const e of file.traceEvents) {
	events++;
	const key = `${e.pid}/${e.tid}`;
	if (!threads.has(key))
		threads.set(key, { name: null, frames: [] });
	const t = threads.get(key);
	if (e.ph === 'M') {
		if (e.name === 'thread_name')
			t.name = e.args.name;
		continue;
	}
	if (typeof e.ts !== 'number' || !(e.ts >= 0))
		problems.push(`bad ts: ${JSON.stringify(e)}`);
	if (e.ph === 'X') {
		if (typeof e.dur !== 'number' || !(e.dur >= 0))
			problems.push(`bad dur: ${JSON.stringify(e)}`);
		t.frames.push(e);
	} else if (e.ph === 'b' || e.ph === 'e') {
		const s = spans.get(e.id) || { open: false, ts: -Infinity };
		if ((e.ph === 'b') === s.open)
			problems.push(`${key}: span ${e.id} ${e.ph} when ${s.open ? 'open' : 'closed'}`);
		if (e.ts < s.ts)
			problems.push(`${key}: span ${e.id} goes back in time`);
		spans.set(e.id, { open: e.ph === 'b', ts: e.ts });
	} else {
		problems.push(`unknown phase ${e.ph}`);
	}
}
const eps = 0.002;	// the file's microseconds have three decimals
const out = [];
for (const [key, t] of threads) {
	// outer before inner: by start, then longest first
	t.frames.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
	const open = [], roots = [];
	const end = (x) => x.ts + x.dur;
	for (const e of t.frames) {
		// leave the spans that do not hold e: they must have ended by its start
		while (open.length) {
			const top = open[open.length - 1];
			if (top.ts <= e.ts + eps && end(e) <= end(top) + eps)
				break;
			if (e.ts < end(top) - eps)
				problems.push(`${key}: ${e.name} at ${e.ts} overlaps ${top.name} at ${top.ts}`);
			open.pop();
		}
		if (!open.length && roots[roots.length - 1] !== e.name)
			roots.push(e.name);
		open.push(e);
	}
	out.push({ name: t.name, frames: t.frames.length, roots });
}
for (const [id, s] of spans)
	if (s.open)
		problems.push(`span ${id} never ends`);
console.log(JSON.stringify({ valid: problems.length === 0, problems: problems.slice(0, 5), events,
			     threads: out }));
process.exit(problems.length ? 1 : 0);
