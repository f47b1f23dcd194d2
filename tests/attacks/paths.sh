#!/bin/bash
# attacks/paths.sh: symlink and hardlink escapes through the profile and
# downloads directories (the only host directories the sandbox writes),
# and a symlink swapped into the profile path while the launcher resolves
# it (time-of-check to time-of-use).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy
CANARY=/tmp/bc-canary-paths-$$
echo secret >"$CANARY"; chmod 644 "$CANARY"
on_exit "rm -f $CANARY"

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi
	prof=$SCRATCH/prof-$who
	mkdir -m 700 "$prof"; chown "$owner:$owner" "$prof"

	# A symlink planted in the profile (by an earlier session or anyone)
	# resolves inside the sandbox, never on the host.
	ln -s "$CANARY" "$prof/link"; ln -s /etc/shadow "$prof/shadow"
	chown -h "$owner:$owner" "$prof/link" "$prof/shadow"
	check "$who: a symlink in the profile to a host file resolves inside the sandbox (canary unreadable)" \
		run --profile-dir "$prof" -- "$PROBE" read "$prof/link"
	check "$who: ...and to /etc/shadow likewise" run --profile-dir "$prof" -- "$PROBE" read "$prof/shadow"
	check "$who: a hard link from the profile to a file outside it cannot be made" \
		run --profile-dir "$prof" -- /bin/sh -c "! ln /etc/hostname '$prof/hl' && ! ln '$PROBE' '$prof/hl2'"

	# The supervisor hashes the downloads at teardown, on the host: a
	# symlink left there must be listed, never followed.
	aud=$SCRATCH/audit-$who.jsonl; touch "$aud"; chown "$who" "$aud"
	secret=$SCRATCH/hostsecret-$who; echo "secret $who" >"$secret"; chmod 644 "$secret"
	run --profile-dir "$prof" --audit "$aud" -- /bin/sh -c "ln -s '$secret' \"\$BROWSERCAGE_DOWNLOADS/leak\"" 2>/dev/null
	sum=$(sha256sum <"$secret" | cut -d' ' -f1)
	check "$who: teardown lists a symlink in Downloads without following it" \
		grep -q '"name":"leak","type":"symlink"' "$aud"
	check "$who: ...the host file's hash is nowhere in the audit log" ! grep -q "$sum" "$aud"

	# Downloads replaced by a symlink to another host directory the
	# sandbox user owns: teardown must not list it, the next launch must
	# not write through it.
	victim=$SCRATCH/victim-$who; mkdir -m 700 "$victim"; chown "$owner:$owner" "$victim"
	echo x >"$victim/victim-file"
	run --profile-dir "$prof" --audit "$aud" -- /bin/sh -c "rm -rf '$prof/Downloads' && ln -s '$victim' '$prof/Downloads'" 2>/dev/null
	check "$who: (the sandbox replaced Downloads with a symlink to $victim)" [ -L "$prof/Downloads" ]
	check "$who: teardown does not list the directory the Downloads symlink points to" \
		! grep -q victim-file "$aud"
	run --profile-dir "$prof" -- /bin/sh -c 'echo x >"$BROWSERCAGE_DOWNLOADS/x"' >/dev/null 2>&1
	check "$who: the next launch does not write through the Downloads symlink" [ ! -e "$victim/x" ]
	rm -f "$prof/Downloads"

	# The profile path's parent flips between a real directory and a
	# symlink to another directory with an equally acceptable profile, as
	# fast as the host can rename, while the launcher starts 40 times. Each
	# launch must refuse or mount the real one, never the other.
	race=$SCRATCH/race-$who; mkdir -p "$race/real/p" "$race/evil/p"
	ln -s "$race/evil" "$race/link"
	chown "$owner:$owner" "$race/real/p" "$race/evil/p"; chmod 700 "$race/real/p" "$race/evil/p"
	"$PROBE" swap "$race/real" "$race/link" 20000000 >/dev/null 2>&1 &
	swapper=$!
	on_exit "kill $swapper 2>/dev/null"
	for i in $(seq 40); do
		run --profile-dir "$race/real/p" -- /bin/sh -c "echo $i >\"\$BROWSERCAGE_PROFILE/marker-$i\"" >/dev/null 2>&1
	done
	kill "$swapper" 2>/dev/null; wait "$swapper" 2>/dev/null
	# After the swaps, "real" may be the symlink: look at the directories.
	check "$who: no launch wrote through the swapped-in symlink" [ -z "$(ls "$race/evil/p")" ]
	n=$(find "$race" -name 'marker-*' | wc -l)
	diag "$who: $n of 40 launches won the race cleanly (the rest refused)"
done

done_testing
