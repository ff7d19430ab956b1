// Validate a speedscope file against the schema shipped in the speedscope
// package, and print what it holds: usage: node validate-speedscope.js FILE
'use strict';
const fs = require('fs');
const Ajv = require('ajv');
const schema = require('speedscope/dist/release/file-format-schema.json');

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
if (!validate(file)) {
	console.log(JSON.stringify({ valid: false, errors: validate.errors }));
	process.exit(1);
}
let weights = 0, samples = 0, bad = 0;
for (const p of file.profiles) {
	samples += p.samples.length;
	weights += p.weights.reduce((a, b) => a + b, 0);
	if (p.samples.length !== p.weights.length)
		bad++;
	for (const s of p.samples)
		for (const i of s)
			if (!(i >= 0 && i < file.shared.frames.length))
				bad++;
}
console.log(JSON.stringify({
	valid: bad === 0,
	profiles: file.profiles.map((p) => p.name),
	frames: file.shared.frames.map((f) => f.name),
	samples, weights, bad,
}));
process.exit(bad === 0 ? 0 : 1);
