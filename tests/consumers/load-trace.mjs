// Load a Chrome trace event file with Chrome DevTools' own trace engine
// (@paulirish/trace_engine, the model behind the Performance panel and
// Lighthouse) and print what it made of it: each thread with its name,
// its entries (one a frame's span) and the roots of its call tree.
// It complains with console.error (events that do not match up): any
// complaint fails the run.
// usage: node load-trace.mjs FILE
import {analyzeTrace} from '@paulirish/trace_engine/analyze-trace.mjs';

const complaints = [];
console.error = (...args) => complaints.push(args.join(' '));

const {parsedTrace} = await analyzeTrace(process.argv[2]);
const threads = [];
for (const [pid, p] of parsedTrace.data.Renderer.processes)
	for (const [tid, t] of p.threads)
		threads.push({pid, tid, name: t.name, entries: t.entries.length,
			      roots: t.tree ? t.tree.roots.size : 0});
console.log(JSON.stringify({threads, bounds: parsedTrace.data.Meta.traceBounds,
			    complaints: complaints.slice(0, 5)}));
process.exit(complaints.length ? 1 : 0);
