#!/bin/bash
# web.sh: Playwright through browsercage-chromium under a filtered policy,
# against a web server on a fake internet (TAP; root and unprivileged).
#
#   H  "the host": the Node client and the launcher run here (nsenter
#      --net); 203.0.113.2/24, default route to I
#   I  "the internet": python3's http.server on ports 80 and 8080 of every
#      address it holds: 198.51.100.10 (the allowed site), 198.51.100.20
#      (a site the policy does not allow), 169.254.169.254 (metadata),
#      10.1.2.3 (a private address)
# The policy allows 198.51.100.10/32 on ports 80 and 8080 only. Checked:
# storage isolation between profile directories over HTTP; a page on a
# site the policy does not allow fails to load and the refusal is in the
# audit log; a download lands in the downloads directory with its sha256 in
# the audit log; an attacker page's metadata, private-address, STUN and
# file:// probes fail. Everything made here is removed at exit.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
CHROMIUM=/usr/lib/chromium/chromium
WRAPPER=$top_builddir/browsercage-chromium
CLIENT=$top_srcdir/tests/e2e/client.js
[ -x "$CHROMIUM" ] || skip_all "Chromium not installed (Debian package chromium)"
[ -x "$WRAPPER" ] || skip_all "wrapper not built at $WRAPPER"
for tool in ip nsenter python3 pasta; do
	command -v $tool >/dev/null || skip_all "$tool not installed"
done
command -v node >/dev/null || skip_all "Node.js is not installed (needed for Playwright)"
node -e "require.resolve('playwright-core', {paths: ['$top_srcdir/tests/e2e']})" 2>/dev/null ||
	skip_all "playwright-core not installed (npm ci at the top of the tree)"
make_scratch
make_test_user

H=bcweb-h-$$ I=bcweb-i-$$
ip netns add $H || skip_all "cannot create named network namespaces"
on_exit "ip netns del $H 2>/dev/null"
ip netns add $I
on_exit "ip netns del $I 2>/dev/null"
inH() { ip netns exec $H "$@"; }
inI() { ip netns exec $I "$@"; }
ip link add bcwh$$ netns $H type veth peer name bcwi$$ netns $I
inH ip link set lo up; inI ip link set lo up
inH ip link set bcwh$$ up; inI ip link set bcwi$$ up
inI ip addr add 203.0.113.1/24 dev bcwi$$
for a in 198.51.100.10 198.51.100.20 169.254.169.254 10.1.2.3; do inI ip addr add $a/32 dev bcwi$$; done
inH ip addr add 203.0.113.2/24 dev bcwh$$
inH ip route add default via 203.0.113.1
inH sysctl -qw net.ipv4.ip_forward=0
inI ip route add default via 203.0.113.2

mkdir -p "$SCRATCH/site" "$SCRATCH/logs"
chmod 1777 "$SCRATCH/logs"
cat >"$SCRATCH/site/page.html" <<'EOF'
<!DOCTYPE html><html><head><title>bc-web</title></head><body><p id="o">static</p>
<script>document.getElementById('o').textContent = 'js-' + (6 * 7);</script></body></html>
EOF
cat >"$SCRATCH/site/download.html" <<'EOF'
<!DOCTYPE html><html><body><a id="dl" href="/payload.bin" download="payload.bin">get</a></body></html>
EOF
head -c 65536 /dev/urandom >"$SCRATCH/site/payload.bin"
PAYLOAD_SHA=$(sha256sum "$SCRATCH/site/payload.bin" | cut -d' ' -f1)
# The attacker page, served by the allowed site. Each probe's target is a
# live server on I, so only the sandbox's firewall can make it fail.
cat >"$SCRATCH/site/attack.html" <<'EOF'
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
	const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:198.51.100.20:3478' }] });
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
	r.allowed = await probe('http://198.51.100.10:8080/page.html');
	r.metadata = await probe('http://169.254.169.254/latest/meta-data/');
	r.private = await probe('http://10.1.2.3/');
	r.other_site = await probe('http://198.51.100.20:8080/page.html');
	r.stun = await stun();
	let shadow = 'failed';
	try { const d = document.getElementById('f').contentDocument;
		if (d && d.body && d.body.textContent.includes('root:')) shadow = 'reached'; } catch (e) {}
	r.shadow = shadow;
	document.getElementById('result').textContent = JSON.stringify(r);
})();
</script></body></html>
EOF
chmod -R a+rX "$SCRATCH/site"
for port in 80 8080; do
	# ip execs python3, so $! is the server itself (a function would leave
	# it orphaned behind a subshell).
	ip netns exec $I python3 -m http.server $port --bind 0.0.0.0 --directory "$SCRATCH/site" \
		>"$SCRATCH/http-$port.out" 2>&1 &
	on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
done
for _ in $(seq 100); do
	inH python3 -c 'import socket; socket.create_connection(("198.51.100.10", 8080), 1);
socket.create_connection(("169.254.169.254", 80), 1)' 2>/dev/null && break
	sleep 0.1
done
check "the fake internet serves the site to the fake host" \
	inH python3 -c 'import urllib.request; urllib.request.urlopen("http://198.51.100.10:8080/page.html", timeout=5)'
check "... and the metadata address answers there too (so only the sandbox can refuse it)" \
	inH python3 -c 'import urllib.request; urllib.request.urlopen("http://169.254.169.254/", timeout=5)'

POL=$SCRATCH/web.ini
RO_BIND="$SCRATCH/site" write_policy "$POL" "network.allow_cidrs = 198.51.100.10/32" \
	"network.allow_ports = 80, 8080"
sed -i 's/^mode = none$/mode = filtered/' "$POL"
SITE=http://198.51.100.10:8080

client() {
	local step=$1; shift
	if [ "$who" = root ]; then
		nsenter --net=/run/netns/$H env BROWSERCAGE_POLICY="$POL" BROWSERCAGE_AUDIT="$audit" \
			timeout 180 node "$CLIENT" "$step" "$WRAPPER" "$@" 2>"$SCRATCH/err" | tail -1
	else
		nsenter --net=/run/netns/$H setpriv --reuid="$who" --regid="$who" --init-groups \
			--reset-env -- env PATH=/usr/bin:/bin HOME=/tmp BROWSERCAGE_POLICY="$POL" \
			BROWSERCAGE_AUDIT="$audit" timeout 180 node "$CLIENT" "$step" "$WRAPPER" "$@" \
			2>"$SCRATCH/err" | tail -1
	fi
}
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v;try{v=JSON.parse(s)[process.argv[1]]}catch(e){}
	process.stdout.write(v===undefined||v===null?"null":typeof v==="string"?v:JSON.stringify(v))})' "$1"; }
errtail() { diag "$(tail -5 "$SCRATCH/err")"; }

for who in root "$TEST_USER"; do
	audit=$SCRATCH/logs/$who.jsonl

	# ---- storage isolation over HTTP -------------------------------------
	dirA=$(as "$who" mktemp -d /tmp/bcweb-A.XXXXXX); on_exit "rm -rf '$dirA'"
	dirB=$(as "$who" mktemp -d /tmp/bcweb-B.XXXXXX); on_exit "rm -rf '$dirB'"
	a=$(client storage set "$dirA" "$SITE/page.html")
	check "$who: task A (profile A) set a cookie and a localStorage value on $SITE" \
		[ "$(json cookie <<<"$a")/$(json local <<<"$a")" = alpha/alpha ]
	[ -n "$a" ] || errtail
	b=$(client storage get "$dirB" "$SITE/page.html")
	check "$who: task B (profile B) sees neither (got $b)" \
		[ "$(json cookie <<<"$b")/$(json local <<<"$b")" = null/null ]
	a2=$(client storage get "$dirA" "$SITE/page.html")
	check "$who: task B with profile A sees both (got $a2)" \
		[ "$(json cookie <<<"$a2")/$(json local <<<"$a2")" = alpha/alpha ]

	# ---- a site the policy does not allow --------------------------------
	rm -f "$audit"
	out=$(client goto "http://198.51.100.20:8080/page.html")
	err=$(json error <<<"$out")
	check "$who: a page on a site the policy does not allow fails to load ($err)" \
		grep -q 'net::ERR_' <<<"$err"
	check "$who: ... and the refusal is in the audit log" \
		grep -q '"event":"egress_refused".*198\.51\.100\.20' "$audit"

	# ---- a download --------------------------------------------------------
	dirD=$(as "$who" mktemp -d /tmp/bcweb-D.XXXXXX); on_exit "rm -rf '$dirD'"
	rm -f "$audit"
	out=$(client download "$dirD" "$SITE/download.html")
	file=$(json file <<<"$out")
	check "$who: a download landed in the downloads directory ($file)" [ "${file%/*}" = "$dirD/Downloads" ]
	[ -n "$out" ] || errtail
	check "$who: ... with the served bytes" [ "$(json sha256 <<<"$out")" = "$PAYLOAD_SHA" ]
	check "$who: ... and its sha256 is in the audit log" grep -q "$PAYLOAD_SHA" "$audit"

	# ---- the attacker page -------------------------------------------------
	rm -f "$audit"
	out=$(client attack "$SITE/attack.html")
	[ -n "$out" ] || errtail
	check "$who: attacker page: the allowed site itself is reachable (the probes work)" \
		[ "$(json allowed <<<"$out")" = reached ]
	for probe in metadata private other_site stun shadow; do
		check "$who: attacker page: $probe fails" [ "$(json $probe <<<"$out")" = failed ]
	done
	# Chromium's own Private Network Access check also fails the metadata
	# and private fetches (after connecting): the audit records show that
	# our firewall refused the connections themselves.
	for addr in 169.254.169.254 10.1.2.3 198.51.100.20; do
		check "$who: the attempt to reach $addr was refused by the firewall (audit log)" \
			grep -q "\"event\":\"egress_refused\".*${addr//./\\.}" "$audit"
	done
done

done_testing
