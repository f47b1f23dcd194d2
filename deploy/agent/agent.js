// The agent the Kubernetes Job runs (node /app/agent.js): one Playwright
// session through browsercage-chromium, so the browser runs in a fresh
// browsercage sandbox under $BROWSERCAGE_POLICY. A real agent puts its
// task logic where this one reads the page's title.
//
//   AGENT_URL              the page to open (required)
//   BROWSERCAGE_CHROMIUM   the wrapper (default /usr/bin/browsercage-chromium)
//   AGENT_TIMEOUT_MS       navigation timeout (default 30000)
//
// Prints one JSON line: {"url", "status", "title"}; exits 1 on failure with
// the launcher's first line of explanation when there is one.
'use strict';
const fs = require('fs');
const { chromium } = require('playwright-core');

async function main() {
	const url = process.env.AGENT_URL;
	if (!url) throw new Error('AGENT_URL is not set');
	const timeout = Number(process.env.AGENT_TIMEOUT_MS || 30000);
	const executablePath = process.env.BROWSERCAGE_CHROMIUM || '/usr/bin/browsercage-chromium';
	// Checked first: Playwright makes its temporary directories before it
	// looks for the executable, and leaves them when it is missing.
	try {
		fs.accessSync(executablePath, fs.constants.X_OK);
	} catch (e) {
		throw new Error(`cannot run ${executablePath} (${e.code}): install browsercage or set BROWSERCAGE_CHROMIUM`);
	}
	const browser = await chromium.launch({ executablePath, timeout });
	try {
		const page = await browser.newPage();
		const res = await page.goto(url, { timeout });
		console.log(JSON.stringify({ url, status: res ? res.status() : null, title: await page.title() }));
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	const lines = String(e && e.message || e).split('\n');
	const why = lines.find((l) => l.includes('browsercage:')) || lines[0];
	console.error('agent: ' + why.trim());
	process.exit(1);
});
