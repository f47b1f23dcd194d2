#!/bin/bash
# background.sh: a page load through browsercage-chromium leaves in the
# audit log what the page did, not Chromium's background lookups (TAP;
# root with the veth uplink, unprivileged with what uplink = auto chooses,
# the relay, and with uplink = pasta).
#
#   H  "the host": the Node client (Playwright) and the launcher run here;
#      203.0.113.2/24, default route to I
#   I  "the internet": tests/helpers/fakedns.py on 203.0.113.53 (ok.test:
#      A 203.0.113.10), python3's http.server on 203.0.113.10:80
# The policy allows the name ok.test, port 80. Checked, with Playwright and
# with Puppeteer (each passes flags of its own): the page loads; its
# connection is one "connect" record naming ok.test; with Playwright the DNS
# filter saw no name but ok.test (Chromium's background services, which
# the wrapper's default flags turn off, would ask for update.googleapis.com,
# accounts.google.com ... and be refused one record each); no name and type
# is refused in more than one record (the repeats are one count,
# "dns_refused_repeats"); nothing else was refused (the kernel's own IPv6
# multicast listener reports aside).
# Everything made here is removed at exit.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"
. "$top_srcdir/tests/e2e/lib.sh"

e2e_setup playwright-core puppeteer-core -- ip nsenter python3 pasta

fakenet_make bcbg 203.0.113.2/24 203.0.113.1
fakenet_hold 203.0.113.53 203.0.113.10
mkdir -p "$SCRATCH/logs"
chmod 1777 "$SCRATCH/logs"
e2e_site "$SCRATCH/site" 203.0.113.10:3478
touch "$SCRATCH/fakedns.log"
fakenet_serve $I "$SCRATCH/dns.out" python3 "$top_srcdir/tests/helpers/fakedns.py" 203.0.113.53 \
	"$SCRATCH/fakedns.log"
fakenet_serve $I "$SCRATCH/http.out" \
	python3 -m http.server 80 --bind 203.0.113.10 --directory "$SCRATCH/site"
for _ in $(seq 100); do
	inH python3 -c 'import socket; socket.create_connection(("203.0.113.10", 80), 1)' 2>/dev/null && break
	sleep 0.1
done
fakenet_ready "$SCRATCH/dns.out" ||
	{ fail "the fake DNS server started"; diag "$(cat "$SCRATCH/dns.out")"; done_testing; exit 1; }
check "the fake internet serves the site to the fake host" \
	inH python3 -c 'import urllib.request; urllib.request.urlopen("http://203.0.113.10/page.html", timeout=5)'

pol=$SCRATCH/bg.ini
RO_BIND="$SCRATCH/site" write_policy "$pol" "network.allow_domains = ok.test" \
	"network.allow_ports = 80" "network.dns_upstream = 203.0.113.53"
sed -i 's/^mode = none$/mode = filtered/' "$pol"
sed 's/^mode = filtered$/&\nuplink = pasta/' "$pol" >"$SCRATCH/bg-pasta.ini"
chmod 644 "$SCRATCH/bg-pasta.ini"
CLIENT_NETNS=$H

# WHO POLICY UPLINK (the one the start record names)
for run in "root $SCRATCH/bg.ini veth" "$TEST_USER $SCRATCH/bg.ini relay" \
	"$TEST_USER $SCRATCH/bg-pasta.ini pasta"; do
read -r who pol uplink <<<"$run"
for driver in playwright puppeteer; do
	audit=$SCRATCH/logs/$who-$uplink-$driver.jsonl
	rm -f "$audit"
	if [ $driver = playwright ]; then
		out=$(client goto "http://ok.test/page.html")
		loaded=$(json error <<<"$out")
	else
		out=$(client pp-basic "http://ok.test/page.html")
		loaded=$(json title <<<"$out")
		[ "$loaded" = bc-page ] && loaded=null
	fi
	check "$who ($uplink), $driver: the page on ok.test loads ($out)" [ "$loaded" = null ] ||
		diag "$(grep -F '"event":"dns"' "$audit")"
	check "$who ($uplink), $driver: through the $uplink uplink" grep -q "\"uplink\":\"$uplink\"" "$audit"
	check "$who ($uplink), $driver: its connection is a connect record naming ok.test" \
		grep -q '"event":"connect".*"dst":"203.0.113.10","port":80,"proto":"tcp","name":"ok.test"' "$audit"
	names=$(grep -F '"event":"dns"' "$audit" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | sort -u | tr '\n' ' ')
	if [ $driver = playwright ]; then
		check "$who ($uplink), $driver: the DNS filter saw only ok.test (got: $names)" [ "$names" = "ok.test " ]
	else
		# Puppeteer's own --disable-features replaces the wrapper's, so
		# Chromium's network time queries (clients2.google.com) are back
		diag "$who ($uplink), $driver: names asked: $names"
	fi
	twice=$(grep -F '"event":"dns"' "$audit" | grep -F '"decision":"refused"' |
		sed -n 's/.*"name":"\([^"]*\)","type":"\([^"]*\)".*/\1 \2/p' | sort | uniq -d | tr '\n' ' ')
	check "$who ($uplink), $driver: no name and type refused in more than one record (got: $twice)" [ -z "$twice" ]
	grep -F '"event":"dns_refused_repeats"' "$audit" | sed 's/^/# /'
	refused=$(grep -F '"event":"egress_refused"' "$audit" | grep -v '"dst":"ff02::[0-9a-f:]*","port":null,"proto":"icmpv6"')
	check "$who ($uplink), $driver: nothing else was refused" [ -z "$refused" ] || diag "$refused"
done
done

done_testing
