// client.js: Playwright and Puppeteer, as real clients, driving Chromium
// through browsercage-chromium. One step per invocation; each prints one
// JSON object on stdout for the shell test (wrapper.sh, web.sh) to check.
//
//   node client.js STEP WRAPPER [ARG]...
//
// Modules are found from the source tree upwards (npm ci at the top).
'use strict';
const fs = require('fs');
const path = require('path');

function load(name) {
	// tests/e2e -> the source tree's node_modules, or any parent's (the
	// distcheck tree sits inside the clone).
	return require(require.resolve(name, { paths: [__dirname, process.cwd()] }));
}

const [step, wrapper, ...args] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const steps = {
	// launch() + newPage() + goto + screenshot, then chrome://sandbox.
	async 'pw-basic'(url, shot) {
		const { chromium } = load('playwright-core');
		const browser = await chromium.launch({ executablePath: wrapper });
		const page = await browser.newPage();
		await page.goto(url);
		const title = await page.title();
		const body = await page.textContent('#o');
		await page.screenshot({ path: shot });
		await page.goto('chrome://sandbox');
		// The sandbox page fills itself in after load.
		await page.waitForFunction(() => /Seccomp-BPF sandbox/i.test(document.body.innerText), null,
			{ timeout: 15000 }).catch(() => {});
		const sandbox = await page.evaluate(() => document.body.innerText);
		await browser.close();
		out({ title, body, sandbox });
	},

	// Puppeteer's default transport: --remote-debugging-port=0, the port
	// read from Chromium's stderr.
	async 'pp-basic'(url, port) {
		const puppeteer = load('puppeteer-core');
		const browser = await puppeteer.launch({ executablePath: wrapper, headless: true,
			args: port ? [`--remote-debugging-port=${port}`] : [] });
		const wsEndpoint = browser.wsEndpoint();
		const page = await browser.newPage();
		await page.goto(url);
		const title = await page.title();
		const version = await browser.version();
		await browser.close();
		out({ title, version, wsEndpoint });
	},

	// Storage isolation: set (cookie + localStorage) or get, in a
	// persistent profile.
	async 'storage'(mode, dir, url) {
		const { chromium } = load('playwright-core');
		const ctx = await chromium.launchPersistentContext(dir, { executablePath: wrapper });
		const page = ctx.pages()[0] || await ctx.newPage();
		await page.goto(url);
		if (mode === 'set')
			await page.evaluate(() => {
				document.cookie = 'task=alpha; max-age=86400; path=/';
				localStorage.setItem('task', 'alpha');
			});
		const got = await page.evaluate(() => ({
			cookie: (document.cookie.match(/(?:^|; )task=([^;]*)/) || [])[1] || null,
			local: localStorage.getItem('task'),
		}));
		await ctx.close();
		out(got);
	},

	// A download, with Playwright's downloadsPath in the profile's
	// Downloads directory (the sandbox's downloads directory, same path
	// inside and out).
	async 'download'(dir, url) {
		const { chromium } = load('playwright-core');
		const ctx = await chromium.launchPersistentContext(dir, {
			executablePath: wrapper, acceptDownloads: true,
			downloadsPath: path.join(dir, 'Downloads'),
		});
		const page = ctx.pages()[0] || await ctx.newPage();
		await page.goto(url);
		const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl')]);
		const file = await download.path();
		const failure = await download.failure();
		// Playwright deletes its own copy (named by a GUID) when the
		// context closes; keep one under the name the site gave.
		const kept = path.join(dir, 'Downloads', download.suggestedFilename());
		await download.saveAs(kept);
		const sha256 = require('crypto').createHash('sha256').update(fs.readFileSync(file)).digest('hex');
		await ctx.close();
		out({ name: download.suggestedFilename(), file, kept, sha256, failure });
	},

	// A download the site names (Content-Disposition), left under the
	// GUID name Chromium saved it as; a copy saved under another name;
	// and the page driven as usual (goto, evaluate, close) on the way.
	async 'site-download'(dir, url) {
		const { chromium } = load('playwright-core');
		const ctx = await chromium.launchPersistentContext(dir, {
			executablePath: wrapper, acceptDownloads: true,
			downloadsPath: path.join(dir, 'Downloads'),
		});
		const page = ctx.pages()[0] || await ctx.newPage();
		await page.goto(url);
		const evaluated = await page.evaluate(() => 6 * 7);
		const title = await page.title();
		const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl')]);
		const file = await download.path();
		await download.saveAs(path.join(dir, 'Downloads', 'kept.csv'));
		const after = await page.evaluate(() => document.getElementById('dl').textContent);
		await ctx.close();
		out({ name: download.suggestedFilename(), file, evaluated, title, after });
	},

	// The same download with Puppeteer over its port transport, saved
	// under its GUID as Playwright has it (Browser.setDownloadBehavior).
	async 'pp-site-download'(dir, url) {
		const puppeteer = load('puppeteer-core');
		const browser = await puppeteer.launch({ executablePath: wrapper, headless: true, userDataDir: dir });
		const page = await browser.newPage();
		const cdp = await browser.target().createCDPSession();
		await cdp.send('Browser.setDownloadBehavior', { behavior: 'allowAndName',
			downloadPath: path.join(dir, 'Downloads'), eventsEnabled: true });
		const done = new Promise((res) => cdp.on('Browser.downloadProgress', (e) => {
			if (e.state !== 'inProgress') res(e);
		}));
		await page.goto(url);
		await page.click('#dl');
		const e = await done;
		const evaluated = await page.evaluate(() => 6 * 7);
		await browser.close();
		out({ file: path.join(dir, 'Downloads', e.guid), state: e.state, evaluated });
	},

	// A page on a site the policy does not allow.
	async 'goto'(url) {
		const { chromium } = load('playwright-core');
		const browser = await chromium.launch({ executablePath: wrapper });
		const page = await browser.newPage();
		let error = null;
		try {
			await page.goto(url, { timeout: 20000 });
		} catch (e) {
			error = String(e.message).split('\n')[0];
		}
		await browser.close();
		out({ error });
	},

	// The attacker page runs its probes and reports them in #result.
	async 'attack'(url) {
		const { chromium } = load('playwright-core');
		const browser = await chromium.launch({ executablePath: wrapper });
		const page = await browser.newPage();
		await page.goto(url);
		await page.waitForFunction(() => document.getElementById('result').textContent !== '',
			null, { timeout: 60000 });
		const result = JSON.parse(await page.textContent('#result'));
		await browser.close();
		out(result);
	},

	// Timing for the benchmark: launch + goto + close, in milliseconds.
	async 'bench'(url, n) {
		const { chromium } = load('playwright-core');
		const times = [];
		for (let i = 0; i < Number(n || 1); i++) {
			const t0 = process.hrtime.bigint();
			const browser = await chromium.launch({ executablePath: wrapper });
			const page = await browser.newPage();
			await page.goto(url);
			await browser.close();
			times.push(Number(process.hrtime.bigint() - t0) / 1e6);
		}
		out({ times });
	},
};

if (!steps[step]) {
	process.stderr.write(`client.js: unknown step ${step}\n`);
	process.exit(2);
}
steps[step](...args).then(() => process.exit(0), (e) => {
	process.stderr.write(`client.js ${step}: ${e && e.stack || e}\n`);
	process.exit(1);
});
