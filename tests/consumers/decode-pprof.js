// SPDX-License-Identifier: MIT
//
// Decode a gzipped pprof profile with a real consumer (pprof-format, the
// decoder behind Datadog's Node.js profiler) and print what the
// integration test checks, as one line of JSON:
//
//   {"samples":300,"cpu":3000000000,"period":10000000,...}
//
// Usage: node decode-pprof.js FILE.pb.gz
'use strict';

const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const prof = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[2])));
const str = prof.stringTable.strings;
// the decoder gives a number, or a BigInt above 2^28
const big = (v) => BigInt(v);
const s = (i) => {
	if (big(i) >= BigInt(str.length))
		throw new Error(`string index ${i} out of range`);
	return str[Number(i)];
};

const functions = new Map(prof.function.map((f) => [String(f.id), f]));
const locations = new Map(prof.location.map((l) => [String(l.id), l]));
const period = big(prof.period);
let samples = 0n, cpu = 0n, unthreaded = 0, inconsistent = 0, dangling = 0;
const labelKeys = new Set();
const names = new Set();

for (const sm of prof.sample) {
	const [n, ns] = sm.value.map(big);

	samples += n;
	cpu += ns;
	if (sm.value.length !== prof.sampleType.length || ns !== n * period)
		inconsistent++;
	if (!sm.label.some((l) => s(l.key) === 'thread' && s(l.str) !== ''))
		unthreaded++;
	for (const l of sm.label)
		labelKeys.add(s(l.key));
	for (const id of sm.locationId) {
		const loc = locations.get(String(id));

		if (!loc || !loc.line.length || !functions.has(String(loc.line[0].functionId)))
			dangling++;
	}
}
for (const f of prof.function) {
	names.add(s(f.name));
	s(f.filename);
}

console.log(JSON.stringify({
	string0: str[0],
	samples: Number(samples),
	cpu: Number(cpu),
	period: Number(period),
	period_type: `${s(prof.periodType.type)}/${s(prof.periodType.unit)}`,
	sample_types: prof.sampleType.map((t) => `${s(t.type)}/${s(t.unit)}`),
	nsample: prof.sample.length,
	unthreaded,
	inconsistent,
	dangling,
	label_keys: [...labelKeys].sort(),
	functions: [...names].sort(),
}));
