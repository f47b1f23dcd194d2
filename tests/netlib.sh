# tests/netlib.sh: a fake internet for the shell tests (sourced after
# tests/lib.sh; root).
#
# Two network namespaces joined by a veth pair:
#   H  "the host" (or the sandbox side): the tests run the launcher or
#      the code under test here; its default routes lead to I
#   I  "the internet": holds every address a test aims at, each with a
#      listener, so that a refusal is a firewall's and not a missing host
# Addresses are documentation, private and metadata ones that exist only
# inside these namespaces: no packet leaves them. The namespaces and the
# servers started with fakenet_serve are removed at exit.

# fakenet_make PREFIX H_ADDR/LEN I_ADDR [H_ADDR6/LEN I_ADDR6]: make H
# (PREFIX-h-PID) and I (PREFIX-i-PID), joined by the veth PREFIXhPID
# (in H) / PREFIXiPID (in I); H holds H_ADDR (and H_ADDR6), I the
# gateway I_ADDR (and I_ADDR6) on the same link, H's default routes lead
# to I and I's back to H (so I answers whatever source H uses). H starts
# with IPv4 forwarding off (a new netns inherits the host's). Sets H, I,
# HDEV, IDEV; inH/inI CMD... run CMD in H/I. (Says first that the tests
# here need veth and nf_tables: need_kernel.)
fakenet_make() {
	local prefix=$1 haddr=$2 iaddr=$3 haddr6=${4:-} iaddr6=${5:-}
	need_kernel veth nf_tables
	H=$prefix-h-$$ I=$prefix-i-$$ HDEV=${prefix}h$$ IDEV=${prefix}i$$
	ip netns add $H || skip_all "cannot create named network namespaces"
	on_exit "ip netns del $H 2>/dev/null"
	ip netns add $I || skip_all "cannot create named network namespaces"
	on_exit "ip netns del $I 2>/dev/null"
	ip link add $HDEV netns $H type veth peer name $IDEV netns $I
	inH ip link set lo up; inI ip link set lo up
	inH ip link set $HDEV up; inI ip link set $IDEV up
	inI ip addr add "$iaddr/${haddr#*/}" dev $IDEV
	inH ip addr add "$haddr" dev $HDEV
	inH sysctl -qw net.ipv4.ip_forward=0
	inH ip route add default via "$iaddr"
	inI ip route add default via "${haddr%/*}"
	if [ -n "$haddr6" ]; then
		inI ip addr add "$iaddr6/${haddr6#*/}" dev $IDEV nodad
		inH ip addr add "$haddr6" dev $HDEV nodad
		inH ip -6 route add default via "$iaddr6"
	fi
}
inH() { ip netns exec $H "$@"; }
inI() { ip netns exec $I "$@"; }
# atH CMD...: CMD in H's network namespace only: `ip netns exec` also
# remounts /sys, which hides the cgroup v1 hierarchies from a launcher.
atH() { nsenter --net=/run/netns/$H "$@"; }

# fakenet_hold ADDR...: I holds each ADDR too (a /32 or /128 on its veth).
fakenet_hold() {
	local a
	for a in "$@"; do
		case $a in
		*:*) inI ip addr add "$a/128" dev $IDEV nodad ;;
		*) inI ip addr add "$a/32" dev $IDEV ;;
		esac
	done
}

# fakenet_serve NETNS OUT CMD...: run the server CMD in the namespace
# NETNS in the background, its output in OUT; it is killed at exit.
# (`ip netns exec` execs CMD, so $! is the server itself; a shell function
# in the background would leave it running behind a subshell.)
fakenet_serve() {
	local ns=$1 out=$2; shift 2
	ip netns exec "$ns" "$@" >"$out" 2>&1 &
	on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}

# fakenet_ready FILE...: wait until each FILE says "ready" (bounded: 20 s);
# fails if one does not.
fakenet_ready() {
	local f _
	for f in "$@"; do
		for _ in $(seq 1 200); do
			grep -q ready "$f" 2>/dev/null && break
			sleep 0.1
		done
		grep -q ready "$f" 2>/dev/null || return 1
	done
}

# fakenet_pastas NETNS: the pids of the pasta uplinks (pasta --config-net)
# running in the named network namespace NETNS: a pasta stays in the
# namespace its launcher ran in, so these are the ones launched there.
fakenet_pastas() {
	local want p
	# (no namespace: say so, so that an empty answer cannot pass)
	want="net:[$(stat -L -c %i "/run/netns/$1")]" || { echo "no netns $1"; return 1; }
	for p in $(pgrep -f '^pasta --config-net'); do
		[ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$want" ] && echo "$p"
	done
	return 0
}
