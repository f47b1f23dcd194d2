#!/bin/bash
# tests/vm/systemd-cases.sh: runs inside the VM of tests/vm/run --systemd
# (systemd is pid 1, cgroup v2 only), as root in bcvm.service. The
# launcher from the build tree runs with the shipped policies
# (profiles/offline.ini and profiles/default.ini, limits required = yes)
# in the placements users have:
#   service         a system service (systemd-run --wait --pipe)
#   scope           root in a transient scope (systemd-run --scope)
#   scope-delegate  the same with Delegate=yes
#   user-service    an ordinary user's service under its lingering user
#                   manager (systemd-run --user --wait --pipe)
#   user-scope      that user's transient scope (systemd-run --user --scope)
# In each: `run -- /bin/true` succeeds, `doctor` succeeds exactly when
# run does, and nothing is left behind (no browsercage or bc-* cgroup, no
# run-* unit). Where systemd did not delegate the unit, a shell in it runs
# the launcher (as a service's script or a login shell would) and then
# reports the unit's cgroup: the launcher must not have enabled
# controllers there nor made cgroups below it. Then README's main job (Chromium dumping the demo page)
# under the default policy, as root in a scope and as the user.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
[ "$(cat /proc/1/comm)" = systemd ] || skip_all "pid 1 is not systemd"
[ -x "$BC" ] || skip_all "launcher not built at $BC"
[ "$(cut -d : -f 1,2 /proc/self/cgroup)" = 0: ] || skip_all "not on cgroup v2 only"
CHROMIUM=/usr/lib/chromium/chromium
STEP=120 # seconds any one launcher command may take under emulation
VMUSER=bcvmuser
UNITS="run-*.service run-*.scope" # what systemd-run makes
set -f # $UNITS stays a pattern for systemctl

# The shell of a unit systemd did not delegate: runs its arguments, then
# prints what is in its own cgroup (the unit's).
WRAP='"$@"; rc=$?; cg=/sys/fs/cgroup$(cut -d : -f 3 /proc/self/cgroup)
echo "bcvm-unit subtree_control=[$(cat "$cg/cgroup.subtree_control")] children=[$(cd "$cg" && find . -mindepth 1 -type d | tr "\n" " ")]"
exit $rc'
UNIT_CLEAN='bcvm-unit subtree_control=[] children=[]'

# Each placement's command prefix, as an array in PRE; WRAPPED=1 when the
# unit is not delegated.
placement() {
	WRAPPED=1
	case "$1" in
	service) PRE=(systemd-run --quiet --wait --pipe --collect --) ;;
	scope) PRE=(systemd-run --quiet --scope --collect --) ;;
	scope-delegate) PRE=(systemd-run --quiet --scope --collect -p Delegate=yes --); WRAPPED= ;;
	user-service | user-scope)
		PRE=(runuser -u "$VMUSER" -- env XDG_RUNTIME_DIR="/run/user/$VMUID"
			DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$VMUID/bus"
			systemd-run --user --quiet --collect)
		if [ "$1" = user-service ]; then PRE+=(--wait --pipe --); else PRE+=(--scope --); fi ;;
	esac
	[ -z "$WRAPPED" ] || PRE+=(sh -c "$WRAP" sh)
}

# unit_untouched NAME WHAT OUTPUT: the wrapped unit's report in OUTPUT.
unit_untouched() {
	[ -n "$WRAPPED" ] || return 0
	check "$1: $2 enables no controller in the unit and leaves no cgroup in it" \
		grep -qxF "$UNIT_CLEAN" <<<"$3"
	grep -qxF "$UNIT_CLEAN" <<<"$3" || diag "$(grep '^bcvm-unit' <<<"$3")"
}

# What a case may leave behind: cgroups the launcher makes, transient
# units (a live unit of either manager has a cgroup; --collect drops
# failed ones, and the system manager lists any left loaded).
leftovers() {
	find /sys/fs/cgroup \( -name 'browsercage*' -o -name 'bc-*' -o -name 'run-*.scope' -o -name 'run-*.service' \) \
		-type d 2>/dev/null
	systemctl list-units --all --no-legend --plain $UNITS 2>/dev/null | grep .
}

# Transient units go when systemd has seen their cgroup empty: wait for
# that (bounded), then report what is still there.
settle() {
	local i left
	for ((i = 0; i < 40; i++)); do
		left=$(leftovers)
		[ -z "$left" ] && return 0
		sleep 0.5
	done
	echo "$left"
	return 1
}

# Remove what a failed case left, so that the next case starts clean.
scrub() {
	local d
	timeout 60 systemctl kill --signal=KILL $UNITS >/dev/null 2>&1
	timeout 60 systemctl reset-failed $UNITS >/dev/null 2>&1
	if [ -n "${VMUID:-}" ]; then
		timeout 60 runuser -u "$VMUSER" -- env XDG_RUNTIME_DIR="/run/user/$VMUID" \
			systemctl --user kill --signal=KILL $UNITS >/dev/null 2>&1
		timeout 60 runuser -u "$VMUSER" -- env XDG_RUNTIME_DIR="/run/user/$VMUID" \
			systemctl --user reset-failed $UNITS >/dev/null 2>&1
	fi
	find /sys/fs/cgroup -depth \( -name 'browsercage*' -o -name 'bc-*' \) -type d 2>/dev/null |
		while read -r d; do
			echo 1 >"$d/cgroup.kill" 2>/dev/null
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		done
	return 0
}

# one_case PLACEMENT POLICY: run, doctor, doctor predicts run, leftovers.
one_case() {
	local where=$1 pol=$2 name out rc drc left
	name="$where, $(basename "$pol")"
	placement "$where"
	SECONDS=0
	out=$(timeout "$STEP" "${PRE[@]}" "$BC" run --policy "$pol" -- /bin/true 2>&1 </dev/null)
	rc=$?
	diag "$name: run took ${SECONDS}s"
	check "$name: run -- /bin/true succeeds" [ "$rc" = 0 ]
	[ $rc = 0 ] || diag "run ($name) exit $rc: $(grep -v '^bcvm-unit' <<<"$out" | tail -n 3)"
	unit_untouched "$name" run "$out"
	left=$(settle) || { fail "$name: run left behind: $left"; scrub; }
	[ -z "$left" ] && ok "$name: run leaves nothing behind"
	SECONDS=0
	out=$(timeout "$STEP" "${PRE[@]}" "$BC" doctor --policy "$pol" 2>&1 </dev/null)
	drc=$?
	diag "$name: doctor took ${SECONDS}s"
	unit_untouched "$name" doctor "$out"
	[ $drc = 0 ] || diag "doctor ($name) exit $drc: $(grep -Eiv '^ *ok' <<<"$out" | tail -n 6)"
	check "$name: doctor (exit $drc) predicts run (exit $rc)" [ "$([ $drc = 0 ] && echo y)" = "$([ $rc = 0 ] && echo y)" ]
	SECONDS=0
	left=$(settle) || { fail "$name: doctor left behind: $left"; scrub; }
	[ -z "$left" ] && ok "$name: doctor leaves nothing behind"
	diag "$name: settling took ${SECONDS}s"
}

diag "launcher: $BC ($("$BC" version 2>&1 | head -n 1))"
diag "in $(cut -d : -f 3 /proc/self/cgroup); $(systemctl is-system-running 2>&1)"
for m in nf_tables veth dummy; do
	check "module $m loads from the host's /lib/modules" modprobe "$m"
done
# The VM has no network card; users' machines have an uplink, which pasta
# (a user's filtered network) copies. A dummy one, nothing goes anywhere.
check "an uplink with a default route" eval 'ip link add bcvm0 type dummy && ip link set bcvm0 up &&
	ip addr add 198.51.100.2/24 dev bcvm0 && ip route add default via 198.51.100.1 dev bcvm0'

# The ordinary user with a lingering user manager.
useradd --create-home --shell /bin/bash "$VMUSER" >/dev/null 2>&1
VMUID=$(id -u "$VMUSER" 2>/dev/null) || VMUID=
check "user $VMUSER created" [ -n "$VMUID" ]
loginctl enable-linger "$VMUSER"
for ((i = 0; i < 240; i++)); do
	systemctl -q is-active "user@$VMUID.service" && [ -S "/run/user/$VMUID/bus" ] && break
	sleep 0.5
done
check "user@$VMUID.service runs and the user's bus listens" eval \
	"systemctl -q is-active user@$VMUID.service && [ -S /run/user/$VMUID/bus ]"
diag "user@$VMUID.service after ${i} half-seconds; delegated: $(systemctl show -P Delegate "user@$VMUID.service")"
out=$(pasta --version 2>&1)
diag "pasta --version as root: exit $?: $(head -n 1 <<<"$out")"
out=$(runuser -u "$VMUSER" -- pasta --version 2>&1)
diag "pasta --version as $VMUSER: exit $?: $(head -n 1 <<<"$out")"

for where in service scope scope-delegate user-service user-scope; do
	for pol in "$top_srcdir/profiles/offline.ini" "$top_srcdir/profiles/default.ini"; do
		one_case "$where" "$pol"
	done
done

# useradd gave the user a subordinate range: its sandboxes map into it,
# and on cgroup v2 they still start in their cgroups with the limits on.
IFS=: read -r _ VSUB_START VSUB_COUNT < <(grep "^$VMUSER:" /etc/subuid)
check "useradd gave $VMUSER a subordinate range (${VSUB_START:-none}+${VSUB_COUNT:-0})" \
	eval '[ -n "${VSUB_START:-}" ] && grep -q "^$VMUSER:" /etc/subgid'
placement user-scope
A=/tmp/bcvm-sub.jsonl
install -m 600 -o "$VMUSER" /dev/null "$A"
out=$(timeout $STEP "${PRE[@]}" "$BC" run --audit "$A" --policy "$top_srcdir/profiles/default.ini" -- /bin/true 2>&1)
rc=$?
host=$(sed -n 's/.*"host_uid":\([0-9]*\).*/\1/p' "$A" | head -n 1)
check "user-scope, default.ini: the sandbox starts (exit $rc) as host uid ${host:-?}, in $VMUSER's range, limits applied" \
	eval '[ $rc = 0 ] && [ "${host:-0}" -ge "${VSUB_START:-1}" ] && [ "${host:-0}" -lt $((${VSUB_START:-0} + ${VSUB_COUNT:-0})) ] &&
		grep "\"event\":\"start\"" "$A" | grep -q "\"applied\":\"memory pids"'
[ $rc = 0 ] || diag "$(tail -n 5 <<<"$out")"
left=$(settle) || { fail "user-scope, subordinate range: left behind: $left"; scrub; }
[ -z "$left" ] && ok "user-scope, subordinate range: leaves nothing behind"

# README's main job, with the page where README reads it.
if [ -x "$CHROMIUM" ]; then
	mkdir -p /usr/local/share/browsercage
	cp "$top_srcdir/scripts/demo.html" /usr/local/share/browsercage/demo.html
	chmod 644 /usr/local/share/browsercage/demo.html
	for where in scope user-scope; do
		placement "$where"
		SECONDS=0
		out=$(timeout 300 "${PRE[@]}" "$BC" run --policy "$top_srcdir/profiles/default.ini" -- \
			"$CHROMIUM" --headless --disable-gpu --no-first-run \
			--dump-dom file:///usr/local/share/browsercage/demo.html 2>&1 </dev/null)
		rc=$?
		diag "README main job ($where): exit $rc after ${SECONDS}s"
		check "$where, default.ini: README main job dumps the demo page" \
			exited_with "$rc" 0 '<title>browsercage demo' "$out"
		[ $rc = 0 ] || diag "$(tail -n 5 <<<"$out")"
		left=$(settle) || { fail "$where: README main job left behind: $left"; scrub; }
		[ -z "$left" ] && ok "$where: README main job leaves nothing behind"
	done
else
	fail "no Chromium at $CHROMIUM (Debian package chromium)"
fi

loginctl disable-linger "$VMUSER"
done_testing
