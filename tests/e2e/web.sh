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
. "$top_srcdir/tests/netlib.sh"
. "$top_srcdir/tests/e2e/lib.sh"

e2e_setup playwright-core -- ip nsenter python3 pasta

fakenet_make bcweb 203.0.113.2/24 203.0.113.1
fakenet_hold 198.51.100.10 198.51.100.20 169.254.169.254 10.1.2.3

mkdir -p "$SCRATCH/logs"
chmod 1777 "$SCRATCH/logs"
# The attacker page, served by the allowed site. Each probe's target is a
# live server on I, so only the sandbox's firewall can make it fail.
e2e_site "$SCRATCH/site" 198.51.100.20:3478 allowed=http://198.51.100.10:8080/page.html \
	metadata=http://169.254.169.254/latest/meta-data/ private=http://10.1.2.3/ \
	other_site=http://198.51.100.20:8080/page.html
for port in 80 8080; do
	fakenet_serve $I "$SCRATCH/http-$port.out" \
		python3 -m http.server $port --bind 0.0.0.0 --directory "$SCRATCH/site"
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

pol=$POL CLIENT_NETNS=$H

for who in root "$TEST_USER"; do
	audit=$SCRATCH/logs/$who.jsonl

	# ---- storage isolation over HTTP -------------------------------------
	storage_run "$SITE/page.html" /tmp/bcweb
	check "$who: task A (profile A) set a cookie and a localStorage value on $SITE" [ "$A" = alpha/alpha ]
	check "$who: task B (profile B) sees neither (got $B_OUT)" [ "$B" = null/null ]
	check "$who: task B with profile A sees both (got $A2_OUT)" [ "$A2" = alpha/alpha ]

	# ---- a site the policy does not allow --------------------------------
	rm -f "$audit"
	out=$(client goto "http://198.51.100.20:8080/page.html")
	err=$(json error <<<"$out")
	check "$who: a page on a site the policy does not allow fails to load ($err)" \
		grep -q 'net::ERR_' <<<"$err"
	check "$who: ... and the refusal is in the audit log" \
		grep -q '"event":"egress_refused".*198\.51\.100\.20' "$audit"

	# ---- a download --------------------------------------------------------
	download_run "$SITE/download.html" /tmp/bcweb
	check "$who: a download landed in the downloads directory ($FILE)" [ "${FILE%/*}" = "$DIR_D/Downloads" ]
	check "$who: ... with the served bytes" [ "$(json sha256 <<<"$OUT")" = "$PAYLOAD_SHA" ]
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
	# uplink = auto: veth for root; unprivileged, the relay (the policy
	# allows nothing it cannot carry), through which Chromium browsed above
	want=relay; [ "$who" = root ] && want=veth
	check "$who: the uplink was $want (audit log)" grep -q "\"uplink\":\"$want\"" "$audit"
done

done_testing
