#!/bin/bash
# netsettled.sh: with a veth uplink the sandbox's network is final when its
# command starts (TAP; root): no address still tentative (duplicate address
# detection) or about to change, its IPv4 address and default route in,
# eth0 up. A browser reports any later change as a network change and
# fails the navigation under way (net::ERR_NETWORK_CHANGED). Read from the
# command's first moment, over several launches: /proc/net/if_inet6 (flags
# column: 0x40 tentative, 0x04 optimistic, 0x08 duplicate), /proc/net/route,
# /proc/net/fib_trie and `ip` (link state, routes marked linkdown). No traffic.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

launcher_setup ip nft
need_kernel nf_tables veth
[ -x /usr/sbin/ip ] || [ -x /usr/bin/ip ] || skip_all "ip (iproute2) not under /usr, where the sandbox sees it"
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

# The veth uplink turns forwarding on when it is off; put it back after.
fwd=$(cat /proc/sys/net/ipv4/ip_forward)
on_exit "echo $fwd >/proc/sys/net/ipv4/ip_forward"

POL=$SCRATCH/veth.ini
write_policy "$POL" "network.allow_cidrs = 198.51.100.0/24" "network.uplink = veth"
sed -i 's/^mode = none$/mode = filtered/' "$POL"

N=12
fails=0 tentative=0 noroute=0 noaddr=0 down=0
for i in $(seq 1 $N); do
	out=$SCRATCH/run$i.out
	if ! timeout 60 "$BC" run --policy "$POL" -- /bin/sh -c \
		'cat /proc/net/if_inet6; echo ---; cat /proc/net/route; echo ---; cat /proc/net/fib_trie; echo ---; ip -o link show eth0; ip route' \
		>"$out" 2>"$SCRATCH/run$i.err"; then
		fails=$((fails + 1))
		continue
	fi
	# if_inet6: address ifindex prefixlen scope flags name
	bad=0
	while read -r _ _ _ _ f _; do
		[ $(( 0x$f & 0x4c )) = 0 ] || bad=1
	done < <(sed -n '/^---$/q; p' "$out")
	tentative=$((tentative + bad))
	# route: a default route (destination and mask 0) through eth0, gateway set
	awk 'BEGIN { s = 0 } /^---$/ { s++; next } s == 1 && $1 == "eth0" && $2 == "00000000" &&
		$8 == "00000000" && $3 != "00000000" { ok = 1 } END { exit !ok }' "$out" ||
		noroute=$((noroute + 1))
	# fib_trie: the sandbox's own IPv4 address, a local one of 10.x
	awk 'BEGIN { s = 0 } /^---$/ { s++; next } s == 2' "$out" | grep -B1 '/32 host LOCAL' |
		grep -q ' 10\.' || noaddr=$((noaddr + 1))
	# eth0 up with carrier, its operational state final, no route marked linkdown
	awk 'BEGIN { s = 0 } /^---$/ { s++; next } s == 3' "$out" >"$out.link"
	{ grep -q 'eth0.*[<,]UP[,>].*LOWER_UP.* state UP ' "$out.link" && ! grep -q linkdown "$out.link"; } ||
		down=$((down + 1))
done
check "$N veth launches succeed ($fails failed)" [ $fails = 0 ]
[ $fails = 0 ] || diag "$(tail -3 "$SCRATCH"/run*.err)"
check "no address tentative, optimistic or duplicate at exec ($tentative of $N launches had one)" \
	[ $tentative = 0 ]
[ $tentative = 0 ] || diag "$(sed -n '/^---$/q; p' "$(grep -l . "$SCRATCH"/run*.out | head -1)")"
check "the default route is in at exec ($noroute of $N launches without)" [ $noroute = 0 ]
check "the sandbox's IPv4 address is in at exec ($noaddr of $N launches without)" [ $noaddr = 0 ]
check "eth0 is up with carrier at exec ($down of $N launches not)" [ $down = 0 ]
# The command above really ran in a sandbox with eth0 (not the host's view).
check "the sandbox saw its own eth0" grep -q '^eth0' "$SCRATCH/run1.out"

done_testing
