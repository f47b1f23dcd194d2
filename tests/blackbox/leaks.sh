#!/bin/bash
# leaks.sh: filtered sandboxes leave nothing behind on the host (TAP; root):
# 100 veth launches in a row, 20 pasta launches as an unprivileged user,
# a sandbox killed, a launcher killed (its cleaner, then `browsercage gc`). Afterwards
# no veth, netns, nft table, cgroup bc-*, runtime record or process of
# ours may be left. The commands run are /bin/true and sleep: no traffic.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

launcher_setup ip nft pgrep 'pasta (Debian package passt)'
need_kernel nf_tables veth
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

# The veth uplink turns forwarding on when it is off; put it back after.
fwd=$(cat /proc/sys/net/ipv4/ip_forward)
on_exit "echo $fwd >/proc/sys/net/ipv4/ip_forward"

mkdir -m 777 "$SCRATCH/logs"
POL=$SCRATCH/filtered.ini
write_policy "$POL" "network.allow_cidrs = 198.51.100.0/24" "limits.pids = 64"
sed -i 's/^mode = none$/mode = filtered/' "$POL"
PASTA=$SCRATCH/pasta.ini
sed 's/^mode = filtered$/&\nuplink = pasta/' "$POL" >"$PASTA"; chmod 644 "$PASTA"
for f in "$POL" "$PASTA"; do
	log=$SCRATCH/logs/$(basename "$f" .ini).log
	printf '[audit]\nlog = %s\n' "$log" >>"$f"
	touch "$log"; chmod 666 "$log"
done

nsfs_before=$(grep ' nsfs ' /proc/self/mountinfo | grep -vc ' /run/netns/')
fails=0
for i in $(seq 1 100); do
	timeout 60 "$BC" run --policy "$POL" -- /bin/readlink /proc/self/ns/net >>"$SCRATCH/netns" \
		2>>"$SCRATCH/veth.err" || fails=$((fails + 1))
done
check "100 veth launches in a row succeed ($fails failed)" [ $fails = 0 ]
[ $fails = 0 ] || diag "$(tail -5 "$SCRATCH/veth.err")"
check "they used veth" grep -q '"uplink":"veth"' "$SCRATCH/logs/filtered.log"

fails=0
for i in $(seq 1 20); do
	as "$TEST_USER" timeout 60 "$BC" run --policy "$PASTA" -- /bin/readlink /proc/self/ns/net \
		>>"$SCRATCH/netns" 2>>"$SCRATCH/pasta.err" ||
		fails=$((fails + 1))
done
check "20 pasta launches as $TEST_USER succeed ($fails failed)" [ $fails = 0 ]
[ $fails = 0 ] || diag "$(tail -5 "$SCRATCH/pasta.err")"
check "they used pasta" grep -q '"uplink":"pasta"' "$SCRATCH/logs/pasta.log"

# start_bg WHO POLICY: a sandbox running sleep; sets SPID (its pid 1) and
# LPID (the launcher) from the audit log's start record
start_bg() {
	local who=$1 pol=$2 log
	log=$SCRATCH/logs/$(basename "$pol" .ini).log
	cat "$log" >>"$SCRATCH/logs/all.log"
	: >"$log"
	as "$who" "$BC" run --policy "$pol" -- /bin/sleep 60 >/dev/null 2>&1 &
	BGPID=$!
	SPID= LPID=
	for _ in $(seq 1 100); do
		if grep -q '"event":"ready"' "$log"; then
			SPID=$(sed -n 's/.*"event":"start".*"sandbox_pid":\([0-9]*\).*/\1/p' "$log")
			LPID=$(sed -n 's/.*"event":"start".*"supervisor_pid":\([0-9]*\).*/\1/p' "$log")
			readlink "/proc/$SPID/ns/net" >>"$SCRATCH/netns"
			break
		fi
		sleep 0.1
	done
	[ -n "$SPID" ] && [ -n "$LPID" ]
}
# gone PID: the process ends within 10 s
gone() { for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }

for who in root "$TEST_USER"; do
	if [ $who = root ]; then pol=$POL; else pol=$PASTA; fi
	# (start_bg sets variables: not run through check, which uses a subshell)
	start_bg $who "$pol"; check "$who: a sandbox to kill started" [ -n "$SPID" ]
	[ -n "$SPID" ] && kill -9 "$SPID"
	check "$who: killing the sandbox's pid 1 ends the launcher" gone "${LPID:-999999999}"
	wait $BGPID 2>/dev/null

	start_bg $who "$pol"; check "$who: a launcher to kill started" [ -n "$LPID" ]
	[ -n "$LPID" ] && kill -9 "$LPID"
	check "$who: killing the launcher ends the sandbox" gone "${SPID:-999999999}"
	wait $BGPID 2>/dev/null
done
# Every pasta of this test runs as $TEST_USER (a user made for it): other
# tests' pastas, running at the same time, are not looked at.
check "no pasta outlives its killed launcher" bash -c "for i in \$(seq 1 100); do pgrep -u $TEST_UID -f '^pasta --config-net' >/dev/null || exit 0; sleep 0.1; done; exit 1"
# A launcher deletes nothing of its veth uplink on the way out: the
# kernel removes the pair with the sandbox's netns a moment later (the
# killed launcher's cleaner removes its pair and table), and the slot
# keeps its host table for its next use. So every veth this test's
# sandboxes had goes without gc, and their tables are one per slot used,
# not one per launch; gc removes the tables of slots nobody holds.
cat "$SCRATCH"/logs/*.log | sed -n 's/.*"uplink_addr":"\([0-9.]*\)".*/\1/p' | sort -u |
	while IFS=. read -r a b c d; do printf 'bc%02x%02x%02x%02x\n' "$a" "$b" "$c" $((d & ~3)); done |
	sort -u >"$SCRATCH/links"
check "the veth launches name their slots ($(wc -l <"$SCRATCH/links") used for 102 launches)" \
	[ "$(wc -l <"$SCRATCH/links")" -ge 1 ]
check "fewer slots than launches: a slot is taken again, its table kept" \
	[ "$(wc -l <"$SCRATCH/links")" -lt 102 ]
check "every pair of theirs goes without gc (with its netns)" \
	bash -c "for i in \$(seq 1 100); do ip -br link | cut -d@ -f1 | cut -d' ' -f1 | grep -qxFf '$SCRATCH/links' || exit 0; sleep 0.1; done; exit 1"
out=$("$BC" gc 2>&1)
check "browsercage gc runs ($out)" grep -q '^removed ' <<<"$out"

# What is left: by name (veth, tables: only uplinks make them), by
# identity (the netns each sandbox had, the sessions in the audit logs),
# by command line (processes).
cat "$SCRATCH"/logs/*.log | grep -o '"session":"[0-9a-f]\{32\}"' | cut -d'"' -f4 | sort -u >"$SCRATCH/sessions"
check "the audit logs name 100 + 20 + 4 sessions" [ "$(wc -l <"$SCRATCH/sessions")" -ge 124 ]
check "each sandbox had its own network namespace" [ "$(grep -c '^net:\[' "$SCRATCH/netns")" -ge 124 ]
# (by the slots this test's sandboxes had: other tests' sandboxes may be
# running, holding slots of their own)
sed 's/^bc/bc_uplink_/' "$SCRATCH/links" >"$SCRATCH/tables"
check "no veth left" bash -c "! ip -br link | cut -d@ -f1 | cut -d' ' -f1 | grep -xFf '$SCRATCH/links'"
check "no nft table left" bash -c "! nft list tables | cut -d' ' -f3 | grep -xFf '$SCRATCH/tables'"
# A netns lives while a process is in it, an fd holds it or a mount pins
# it: processes are checked below; no nsfs mount may have been added.
check "no network namespace pinned by a new mount" [ "$(grep ' nsfs ' /proc/self/mountinfo | grep -vc ' /run/netns/')" = "$nsfs_before" ]
check "no cgroup bc-SESSION left" bash -c "! find /sys/fs/cgroup -maxdepth 5 -type d -name 'bc-*' 2>/dev/null |
	grep -Ff '$SCRATCH/sessions'"
check "no runtime record left" bash -c "! { '$BC' ps; as_ps=\$(setpriv --reuid=$TEST_UID --regid=$TEST_GID --clear-groups '$BC' ps 2>/dev/null); echo \"\$as_ps\"; } 2>/dev/null | grep -Ff '$SCRATCH/sessions'"
check "no process of ours left (launcher, sandbox, DNS filter)" test -z "$(pgrep -f -- "--policy $SCRATCH/")"
check "no pasta left" bash -c "! pgrep -u $TEST_UID -f '^pasta --config-net'"

done_testing
