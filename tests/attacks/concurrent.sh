#!/bin/bash
# attacks/concurrent.sh: two sandboxes of the same user at once; the
# second looks for what the first keeps in its profile, /tmp and /dev/shm
# (Chromium's shared memory), directly and through /proc/PID/root.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi
	pa=$SCRATCH/a-$who; pb=$SCRATCH/b-$who
	mkdir -m 700 "$pa" "$pb"; chown "$owner:$owner" "$pa" "$pb"
	as_exec "$who" "$BC" run --policy "$POL" --profile-dir "$pa" -- /bin/sh -c \
		"echo s >/tmp/secret-a; echo s >/dev/shm/secret-a; echo s >$pa/secret-a; touch $pa/ready; exec sleep 30" \
		>/dev/null 2>&1 &
	apid=$!
	for _ in $(seq 200); do [ -e "$pa/ready" ] && break; sleep 0.1; done
	check "$who: (sandbox A is up and wrote its secrets)" [ -e "$pa/ready" ]
	check "$who: B cannot read A's /tmp" \
		as "$who" "$BC" run --policy "$POL" --profile-dir "$pb" -- "$PROBE" read /tmp/secret-a
	check "$who: B cannot read A's /dev/shm" \
		as "$who" "$BC" run --policy "$POL" --profile-dir "$pb" -- "$PROBE" read /dev/shm/secret-a
	check "$who: B cannot read A's profile" \
		as "$who" "$BC" run --policy "$POL" --profile-dir "$pb" -- "$PROBE" read "$pa/secret-a"
	check "$who: B sees no other sandbox's processes (nothing under /proc/*/root/tmp/secret-a)" \
		as "$who" "$BC" run --policy "$POL" --profile-dir "$pb" -- /bin/sh -c '! ls /proc/*/root/tmp/secret-a'
	check "$who: an ephemeral sandbox cannot read A's /tmp or /dev/shm either" \
		as "$who" "$BC" run --policy "$POL" -- /bin/sh -c "'$PROBE' read /tmp/secret-a && '$PROBE' read /dev/shm/secret-a"
	kill "$apid" 2>/dev/null; wait "$apid" 2>/dev/null
done

done_testing
