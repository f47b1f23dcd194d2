// playwright.js: Playwright launches timed or counted for the benchmark
// (scripts/bench/chromium). Chromium's own sandbox is on in every launch
// (chromiumSandbox: true, so Playwright passes no --no-sandbox), bare or
// through browsercage-chromium alike.
//
//   node playwright.js time EXE URL     one launch() + newPage() + goto(URL)
//                                        + close(); prints {"ms": N}
//   node playwright.js nav EXE URL N     N launches, each launch() + newPage()
//                                        + goto(URL) + close(); prints one
//                                        {"i", "ok", "ms", "error"} per launch,
//                                        then {"launches", "failures", "errors"}
//
// A launch counts as failed when goto throws (net::ERR_NETWORK_CHANGED,
// a timeout, ...) or the page is not the benchmark's (its title). Each
// launch is bounded (LAUNCH_MS); the browser is closed whatever happened.
'use strict';

function load(name) {
	return require(require.resolve(name, { paths: [__dirname, process.cwd()] }));
}
const { chromium } = load('playwright-core');
const LAUNCH_MS = 60000;
const [mode, exe, url, n] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function bounded(p, ms, what) {
	let t;
	return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: over ${ms} ms`)), ms); })])
		.finally(() => clearTimeout(t));
}

// One launch; resolves to { ms } or { ms, error } (never rejects).
async function once() {
	const t0 = process.hrtime.bigint();
	let browser = null, error = null;
	try {
		browser = await bounded(chromium.launch({ executablePath: exe, chromiumSandbox: true }), LAUNCH_MS, 'launch');
		const page = await browser.newPage();
		await page.goto(url, { timeout: LAUNCH_MS / 2 });
		const title = await page.title();
		if (title !== 'bench')
			error = `unexpected page title ${JSON.stringify(title)}`;
	} catch (e) {
		error = String(e && e.message || e).split('\n')[0];
	}
	if (browser)
		await bounded(browser.close(), LAUNCH_MS / 2, 'close').catch((e) => { error = error || String(e.message); });
	return { ms: Number(process.hrtime.bigint() - t0) / 1e6, error };
}

async function main() {
	if (mode === 'time') {
		const r = await once();
		if (r.error)
			throw new Error(r.error);
		out({ ms: r.ms });
	} else if (mode === 'nav') {
		const total = Number(n), errors = {};
		let failures = 0;
		for (let i = 0; i < total; i++) {
			const r = await once();
			if (r.error) {
				failures++;
				const key = (r.error.match(/net::ERR_[A-Z_]+/) || [r.error.slice(0, 80)])[0];
				errors[key] = (errors[key] || 0) + 1;
			}
			out({ i, ok: !r.error, ms: Math.round(r.ms), error: r.error });
		}
		out({ launches: total, failures, errors });
	} else {
		throw new Error(`unknown mode ${mode}`);
	}
}
main().then(() => process.exit(0), (e) => {
	process.stderr.write(`playwright.js ${mode}: ${e && e.stack || e}\n`);
	process.exit(1);
});
