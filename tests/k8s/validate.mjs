// tests/k8s/validate.mjs: validate Kubernetes manifests against the API's
// schema, unknown fields being errors (as `kubectl apply
// --validate=strict` makes them).
//
//   node tests/k8s/validate.mjs FILE.yaml...
//
// Two sources, both generated from Kubernetes' OpenAPI definitions:
// kubernetes-models checks types, required fields, enums and formats;
// @kubernetes/client-node's model attribute maps name every field each
// type has, so a field that is not there (a typo, a field of another
// version) is an error naming its path. Prints one line per document and
// per error; exits 1 on any error, 2 on bad usage.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import * as models from '@kubernetes/client-node/dist/gen/models/all.js';

let failed = 0;
const error = (where, msg) => { failed++; console.log(`error: ${where}: ${msg}`); };

// "batch/v1" Job -> kubernetes-models/batch/v1 and client-node's V1Job.
async function classes(apiVersion, kind) {
	const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
	const mod = await import(`kubernetes-models/${group ? group + '/' : ''}${version}`);
	const typeName = version[0].toUpperCase() + version.slice(1) + kind;
	return { Model: mod[kind], typeName };
}

// Walk value as client-node type `type`, reporting fields the type lacks.
function strict(value, type, path) {
	if (value === null || value === undefined) return;
	let m;
	if ((m = /^Array<(.+)>$/.exec(type))) {
		if (!Array.isArray(value)) return error(path, `expected a list (${type})`);
		value.forEach((v, i) => strict(v, m[1], `${path}[${i}]`));
		return;
	}
	if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
		if (typeof value !== 'object' || Array.isArray(value)) return error(path, `expected a map (${type})`);
		for (const [k, v] of Object.entries(value)) strict(v, m[1], `${path}.${k}`);
		return;
	}
	const model = models[type];
	if (!model || !model.getAttributeTypeMap) return; // string, number, IntOrString, Date, any...
	if (typeof value !== 'object' || Array.isArray(value)) return error(path, `expected an object (${type})`);
	const attrs = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
	for (const [k, v] of Object.entries(value)) {
		if (!attrs.has(k)) error(`${path}.${k}`, `unknown field (${type} has no "${k}")`);
		else strict(v, attrs.get(k), `${path}.${k}`);
	}
}

const files = process.argv.slice(2);
if (files.length === 0) { console.error('usage: validate.mjs FILE.yaml...'); process.exit(2); }
for (const file of files) {
	for (const [i, d] of parseAllDocuments(readFileSync(file, 'utf8')).entries()) {
		const where = `${file}#${i + 1}`;
		if (d.errors.length) { error(where, d.errors[0].message); continue; }
		const doc = d.toJS();
		if (!doc) continue;
		const id = `${doc.kind} ${doc.metadata && doc.metadata.name}`;
		let c;
		try { c = await classes(doc.apiVersion, doc.kind); } catch (e) { c = {}; }
		if (!c.Model || !models[c.typeName]) { error(where, `unknown apiVersion/kind ${doc.apiVersion} ${doc.kind}`); continue; }
		const before = failed;
		try { new c.Model(doc).validate(); } catch (e) {
			const errs = (e.errors || [{ instancePath: '', message: e.message }]);
			for (const x of errs) error(`${where} ${id}${x.instancePath.replace(/\//g, '.')}`, x.message);
		}
		strict(doc, c.typeName, `${where} ${id}`);
		if (failed === before) console.log(`ok: ${where} ${id}`);
	}
}
process.exit(failed ? 1 : 0);
