#!/bin/bash
# downloads.sh: the teardown audit names a Playwright download by the file
# name the site gave it. Playwright has Chromium save each download under
# a GUID; the launcher relays Chromium's DevTools pipe (fd 4) and reads the
# name from Browser.downloadWillBegin on the way (sandbox/cdp.h). Playwright
# drives browsercage-chromium, as root and as an unprivileged user, under an
# offline policy; the site is served from inside the sandbox (the policy's
# `chromium` starts a small HTTP server on the sandbox's own loopback, then
# execs the real Chromium) and its download carries
# Content-Disposition: attachment; filename="report-2026.csv".
#
# Checked: Playwright works through the relayed pipe (goto, evaluate,
# title, download, close); the file is saved under its GUID; the teardown
# record of that file has site_name "report-2026.csv" and url, the origin
# only (no path or query); a file under another name (Playwright's saveAs
# copy) gains nothing; the same with Puppeteer over its port transport
# (Browser.setDownloadBehavior allowAndName; the DevTools forwarder reads
# Chromium's WebSocket frames).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/e2e/lib.sh"

e2e_setup playwright-core puppeteer-core

# ---- fixtures -------------------------------------------------------------
mkdir -p "$SCRATCH/bin" "$SCRATCH/site" "$SCRATCH/audit"
chmod 1777 "$SCRATCH/audit"
cat >"$SCRATCH/site/srv.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith('/report'):
            body, ctype = b'id,value\n1,42\n', 'text/csv'
            extra = [('Content-Disposition', 'attachment; filename="report-2026.csv"')]
        else:
            body = (b'<!DOCTYPE html><html><head><title>bc-dl</title></head><body>'
                    b'<a id="dl" href="/report?token=q-secret">get</a></body></html>')
            ctype, extra = 'text/html', []
        self.send_response(200)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY
cat >"$SCRATCH/bin/chromium-srv" <<SH
#!/bin/sh
python3 "$SCRATCH/site/srv.py" 8123 >/dev/null 2>&1 &
for i in \$(seq 100); do
	python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8123), 1)' 2>/dev/null && break
	sleep 0.1
done
exec $CHROMIUM "\$@"
SH
chmod -R a+rX "$SCRATCH/bin" "$SCRATCH/site"
chmod 755 "$SCRATCH/bin/chromium-srv"
POL=$SCRATCH/dl.ini
RO_BIND="$SCRATCH/site, $SCRATCH/bin" write_policy "$POL" "sandbox.chromium = $SCRATCH/bin/chromium-srv"
URL=http://127.0.0.1:8123

# teardown_entry NAME FIELD: FIELD of the downloads entry NAME in the
# teardown record of $audit ("none" if there is no such entry).
teardown_entry() {
	node -e 'const fs = require("fs"); const [file, name, field] = process.argv.slice(1);
		let recs = [];
		try { recs = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch (e) {}
		const t = recs.filter((r) => r.event === "teardown").pop();
		const e = t && (t.downloads || []).find((d) => d.name === name);
		const v = e ? e[field] : "none";
		process.stdout.write(v === undefined || v === null ? "null" : String(v));' "$audit" "$1" "$2"
}

for who in root "$TEST_USER"; do
	audit=$SCRATCH/audit/$who.jsonl
	pol=$POL
	DIR_D=$(as "$who" mktemp -d "/tmp/bcdl-$who.XXXXXX"); on_exit "rm -rf '$DIR_D'"
	rm -f "$audit"
	OUT=$(client site-download "$DIR_D" "$URL/page.html")
	[ -n "$OUT" ] || errtail
	check "$who: Playwright through the relayed pipe: evaluate returned 42" [ "$(json evaluated <<<"$OUT")" = 42 ]
	check "$who: ... the title read, the page driven after the download" \
		eval "[ \"\$(json title <<<'$OUT')\" = bc-dl ] && [ \"\$(json after <<<'$OUT')\" = get ]"
	check "$who: Playwright saw the site's name" [ "$(json name <<<"$OUT")" = report-2026.csv ]
	FILE=$(json file <<<"$OUT")
	guid=${FILE##*/}
	check "$who: Chromium saved it in the downloads directory under a GUID ($guid)" \
		bash -c "[ '${FILE%/*}' = '$DIR_D/Downloads' ] && grep -qE '^[0-9a-f-]{36}\$' <<<'$guid'"
	check "$who: the teardown record lists the GUID-named file" [ "$(teardown_entry "$guid" type)" = file ]
	check "$who: ... with site_name report-2026.csv (got $(teardown_entry "$guid" site_name))" \
		[ "$(teardown_entry "$guid" site_name)" = report-2026.csv ]
	check "$who: ... and url, the origin only (got $(teardown_entry "$guid" url))" \
		[ "$(teardown_entry "$guid" url)" = "$URL" ]
	check "$who: the query string is nowhere in the audit log" ! grep -q q-secret "$audit"
	check "$who: the copy under another name is listed" [ "$(teardown_entry kept.csv type)" = file ]
	check "$who: ... without a site_name" [ "$(teardown_entry kept.csv site_name)" = null ]

	# ---- Puppeteer: the port transport, through the DevTools forwarder --
	DIR_P=$(as "$who" mktemp -d "/tmp/bcdl-pp-$who.XXXXXX"); on_exit "rm -rf '$DIR_P'"
	rm -f "$audit"
	OUT=$(client pp-site-download "$DIR_P" "$URL/page.html")
	[ -n "$OUT" ] || errtail
	check "$who: Puppeteer (port transport): the download completed, the page evaluated" \
		eval "[ \"\$(json state <<<'$OUT')\" = completed ] && [ \"\$(json evaluated <<<'$OUT')\" = 42 ]"
	FILE=$(json file <<<"$OUT")
	guid=${FILE##*/}
	check "$who: Puppeteer: the GUID-named file ($guid) has site_name report-2026.csv" \
		[ "$(teardown_entry "$guid" site_name)" = report-2026.csv ]
	check "$who: ... and url, the origin only" [ "$(teardown_entry "$guid" url)" = "$URL" ]
done

done_testing
