// session.js: how a launch through browsercage-chromium looks to a real
// client. One step per invocation, one JSON object on stdout:
//
//   node session.js pw-launch WRAPPER   Playwright chromium.launch, a page, close
//   node session.js pp-launch WRAPPER   the same with Puppeteer
//   node session.js pw-wait WRAPPER     launch, then wait (at most 120 s) for
//                                        the browser to go away by itself
//
// A launch that fails gives {launched: false, first, exit}: first is the
// first line of the browser's output the client's error shows, exit the
// status it reports. The session's settings come from the environment.
'use strict';

function load(name) {
	return require(require.resolve(name, { paths: [__dirname, process.cwd()] }));
}

const [step, wrapper] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// Playwright: "Browser logs:" then <launching>, <launched> and the
// process's lines as "[pid=N][err] TEXT"; the call log has the exit code.
function playwrightFailure(e) {
	const m = String(e.message);
	const first = m.split('\n').map((l) => /^\[pid=\d+\]\[(?:err|out)\] (.*)$/.exec(l)).find(Boolean);
	const exit = /<process did exit: exitCode=(\d+)/.exec(m);
	return { launched: false, first: first ? first[1] : null, exit: exit ? Number(exit[1]) : null };
}

// Puppeteer: "Failed to launch the browser process: Code: N" and, after
// "stderr:", the process's standard error.
function puppeteerFailure(e) {
	const m = String(e.message);
	const code = /Code: (\d+)/.exec(m);
	const err = m.split('\nstderr:\n')[1];
	return { launched: false, first: err ? err.split('\n')[0] : null, exit: code ? Number(code[1]) : null };
}

const steps = {
	async 'pw-launch'() {
		const { chromium } = load('playwright-core');
		let browser;
		try {
			browser = await chromium.launch({ executablePath: wrapper, timeout: 60000 });
		} catch (e) {
			return out(playwrightFailure(e));
		}
		const page = await browser.newPage();
		await page.setContent('<title>bc-session</title>');
		const title = await page.title();
		await browser.close();
		out({ launched: true, title });
	},

	async 'pp-launch'() {
		const puppeteer = load('puppeteer-core');
		let browser;
		try {
			browser = await puppeteer.launch({ executablePath: wrapper, headless: true, timeout: 60000 });
		} catch (e) {
			return out(puppeteerFailure(e));
		}
		const page = await browser.newPage();
		await page.setContent('<title>bc-session</title>');
		const title = await page.title();
		await browser.close();
		out({ launched: true, title });
	},

	async 'pw-wait'() {
		const { chromium } = load('playwright-core');
		let browser;
		try {
			browser = await chromium.launch({ executablePath: wrapper, timeout: 60000 });
		} catch (e) {
			return out(playwrightFailure(e));
		}
		const gone = new Promise((res) => browser.on('disconnected', () => res(true)));
		const bound = new Promise((res) => setTimeout(() => res(false), 120000));
		const disconnected = await Promise.race([gone, bound]);
		if (!disconnected)
			await browser.close();
		out({ launched: true, disconnected });
	},
};

steps[step]().then(() => process.exit(0), (e) => {
	out({ error: String(e && e.message || e) });
	process.exit(1);
});
