// What a time-ordered speedscope file (pyrospy report -f speedscope) says
// about order: per profile its start and end, the sum of its weights, and
// the outermost frame of each sample with runs of the same one merged.
// usage: node speedscope-order.js FILE
'use strict';
const fs = require('fs');

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const frames = file.shared.frames;
console.log(JSON.stringify({
	profiles: file.profiles.map((p) => {
		const roots = [];
		for (const s of p.samples) {
			const name = s.length ? frames[s[0]].name : '';
			if (roots[roots.length - 1] !== name)
				roots.push(name);
		}
		return {
			name: p.name, type: p.type, start: p.startValue, end: p.endValue,
			weights: p.weights.reduce((a, b) => a + b, 0), samples: p.samples.length,
			roots,
		};
	}),
}));
