# tests/e2e/lib.sh: what the end-to-end tests share: their set-up,
# the site they serve, the Node client and reading its JSON. Sourced after
# tests/lib.sh.

CHROMIUM=/usr/lib/chromium/chromium
WRAPPER=$top_builddir/browsercage-chromium
CLIENT=$top_srcdir/tests/e2e/client.js

# e2e_site DIR STUN NAME=URL...: the site in DIR: page.html (title bc-page;
# its JavaScript writes js-42), download.html with payload.bin (random;
# its sha256 in PAYLOAD_SHA), and attack.html, an attacker page whose
# results (JSON in #result) are: each NAME, 'reached' when a fetch of URL
# succeeds; stun, 'reached' when the STUN server STUN (ADDR:PORT) answers;
# shadow, 'reached' when an iframe can read file:///etc/shadow.
e2e_site() {
	local dir=$1 stun=$2 p probes=; shift 2
	for p in "$@"; do probes="$probes	r.${p%%=*} = await probe('${p#*=}');
"; done
	mkdir -p "$dir"
	cat >"$dir/page.html" <<'EOF'
<!DOCTYPE html><html><head><title>bc-page</title></head><body><p id="o">static</p>
<script>document.getElementById('o').textContent = 'js-' + (6 * 7);</script></body></html>
EOF
	cat >"$dir/download.html" <<'EOF'
<!DOCTYPE html><html><body><a id="dl" href="/payload.bin" download="payload.bin">get</a></body></html>
EOF
	head -c 65536 /dev/urandom >"$dir/payload.bin"
	PAYLOAD_SHA=$(sha256sum "$dir/payload.bin" | cut -d' ' -f1)
	cat >"$dir/attack.html" <<EOF
<!DOCTYPE html><html><body><pre id="result"></pre>
<iframe id="f" src="file:///etc/shadow"></iframe>
<script>
const r = {};
const to = (ms) => new Promise((res) => setTimeout(() => res('timeout'), ms));
async function probe(url) {
	try { await Promise.race([fetch(url, { mode: 'no-cors' }), to(8000).then(() => { throw 'timeout'; })]);
		return 'reached'; } catch (e) { return 'failed'; }
}
async function stun() {
	// A server-reflexive candidate means a packet went out and came back.
	const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:$stun' }] });
	const types = [];
	pc.onicecandidate = (e) => { if (e.candidate) types.push(e.candidate.type); };
	pc.createDataChannel('x');
	await pc.setLocalDescription(await pc.createOffer());
	await Promise.race([new Promise((res) => { pc.onicegatheringstatechange = () => {
		if (pc.iceGatheringState === 'complete') res(); }; }), to(10000)]);
	pc.close();
	return types.includes('srflx') ? 'reached' : 'failed';
}
(async () => {
$probes	r.stun = await stun();
	let shadow = 'failed';
	try { const d = document.getElementById('f').contentDocument;
		if (d && d.body && d.body.textContent.includes('root:')) shadow = 'reached'; } catch (e) {}
	r.shadow = shadow;
	document.getElementById('result').textContent = JSON.stringify(r);
})();
</script></body></html>
EOF
	chmod -R a+rX "$dir"
}

# client STEP ARGS...: run the Node client as $who (in the network
# namespace $CLIENT_NETNS if set) under policy $pol, with the audit log
# in $audit; the last line of its output (JSON) on stdout, its stderr in
# $SCRATCH/err.
client() {
	local step=$1 ns=(); shift
	[ -n "${CLIENT_NETNS:-}" ] && ns=(nsenter --net=/run/netns/$CLIENT_NETNS)
	as_prefix "$who"
	"${ns[@]}" "${AS_PREFIX[@]}" env BROWSERCAGE_POLICY="$pol" BROWSERCAGE_AUDIT="$audit" HOME=/tmp \
		timeout 180 node "$CLIENT" "$step" "$WRAPPER" "$@" 2>"$SCRATCH/err" | tail -1
}
# json FIELD: a field of the JSON on stdin (null if missing).
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v;try{v=JSON.parse(s)[process.argv[1]]}catch(e){}
	process.stdout.write(v===undefined||v===null?"null":typeof v==="string"?v:JSON.stringify(v))})' "$1"; }
errtail() { diag "$(tail -5 "$SCRATCH/err")"; }

# storage_run URL PREFIX: task A sets a cookie and a localStorage value
# on URL in a new profile directory (PREFIX-A.*), task B reads them in
# another (PREFIX-B.*), then with A's. Sets A, B and A2 to what each saw
# ("cookie/local"; alpha/alpha when set, null/null when absent) and
# A_OUT, B_OUT, A2_OUT to their outputs.
storage_run() {
	local url=$1 prefix=$2 dirA dirB
	dirA=$(as "$who" mktemp -d "$prefix-A.XXXXXX"); on_exit "rm -rf '$dirA'"
	dirB=$(as "$who" mktemp -d "$prefix-B.XXXXXX"); on_exit "rm -rf '$dirB'"
	A_OUT=$(client storage set "$dirA" "$url")
	A="$(json cookie <<<"$A_OUT")/$(json local <<<"$A_OUT")"
	[ -n "$A_OUT" ] || errtail
	B_OUT=$(client storage get "$dirB" "$url")
	B="$(json cookie <<<"$B_OUT")/$(json local <<<"$B_OUT")"
	A2_OUT=$(client storage get "$dirA" "$url")
	A2="$(json cookie <<<"$A2_OUT")/$(json local <<<"$A2_OUT")"
}

# download_run URL PREFIX: the client clicks the download link on URL
# with a new profile directory DIR_D (PREFIX-D.*); the audit log is
# emptied first. Sets OUT (the client's JSON) and FILE (where it saved).
download_run() {
	DIR_D=$(as "$who" mktemp -d "$2-D.XXXXXX"); on_exit "rm -rf '$DIR_D'"
	rm -f "$audit"
	OUT=$(client download "$DIR_D" "$1")
	FILE=$(json file <<<"$OUT")
	[ -n "$OUT" ] || errtail
}

# e2e_setup MODULE... [-- TOOL...]: what every client test needs (root,
# Chromium, the wrapper, Node and these npm modules, these tools), then a
# scratch directory and a test user; skips the test (a failure under CI)
# when something is missing.
e2e_setup() {
	local mods=() tools=() m
	while [ $# -gt 0 ] && [ "$1" != -- ]; do mods+=("$1"); shift; done
	[ $# -gt 0 ] && shift && tools=("$@")
	need_root
	[ -x "$CHROMIUM" ] || skip_all "Chromium not installed (Debian package chromium)"
	[ -x "$WRAPPER" ] || skip_all "wrapper not built at $WRAPPER"
	for m in "${tools[@]}"; do
		command -v "$m" >/dev/null || skip_all "$m not installed"
	done
	command -v node >/dev/null || skip_all "Node.js is not installed (needed for ${mods[*]})"
	for m in "${mods[@]}"; do
		node -e "require.resolve('$m', {paths: ['$top_srcdir/tests/e2e']})" 2>/dev/null ||
			skip_all "$m not installed (npm ci at the top of the tree)"
	done
	make_scratch
	make_test_user
}
