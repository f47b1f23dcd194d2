#!/bin/bash
# attacks/exe.sh: overwriting the binary that runs the sandbox or a binary
# a later run will execute (runc CVE-2019-5736 wrote the host runc through
# /proc/self/exe): /proc/self/exe of the command, /proc/1/exe (the
# launcher's own binary: pid 1 is a fork of the supervisor), for a
# launcher and a command owned by the very uid the sandbox runs as.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi
	# Copies owned by the sandbox's host uid: permissions alone would let
	# the sandbox write them.
	d=$SCRATCH/own-$who; mkdir "$d"
	cp "$BC" "$d/browsercage"; cp "$PROBE" "$d/probe"
	chown -R "$owner:$owner" "$d"; chmod 755 "$d" "$d/browsercage" "$d/probe"
	sums=$(sha256sum "$d/browsercage" "$d/probe")
	POL=$SCRATCH/pol-$who.ini
	RO_BIND="$d" write_policy "$POL"
	run() { as "$who" "$d/browsercage" run --policy "$POL" "$@"; }

	check "$who: /proc/self/exe of the command cannot be opened for writing" run -- "$d/probe" write /proc/self/exe
	check "$who: /proc/1/exe (the launcher binary) cannot be opened for writing" run -- "$d/probe" write /proc/1/exe
	check "$who: /proc/1/exe cannot even be read" run -- "$d/probe" read /proc/1/exe
	check "$who: both binaries are unchanged" [ "$(sha256sum "$d/browsercage" "$d/probe")" = "$sums" ]
done

done_testing
