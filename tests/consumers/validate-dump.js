// Validate pyrospy dump --json output against docs/dump-json.schema.json
// and print a digest of it: usage: node validate-dump.js SCHEMA FILE
'use strict';
const fs = require('fs');
const Ajv = require('ajv');

const schema = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const file = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const validate = ajv.compile(schema);
if (!validate(file)) {
	console.log(JSON.stringify({ valid: false, errors: validate.errors }));
	process.exit(1);
}
const p = file.processes[0];
const tasks = (ts) => ts.flatMap((t) => [t.name, ...tasks(t.awaits || [])]);
console.log(JSON.stringify({
	valid: true,
	pid: p.pid,
	language: p.language,
	threads: p.threads ? p.threads.length : 0,
	tasks: (p.task_groups || []).flatMap((g) => tasks(g.tasks)),
	frames: (p.threads || []).flatMap((t) => t.frames.map((f) => f.name)),
	locals: (p.threads || []).flatMap((t) => t.frames.flatMap((f) => f.locals || [])),
}));
