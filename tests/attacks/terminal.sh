#!/bin/bash
# attacks/terminal.sh: terminal injection from inside the sandbox into the
# caller's terminal: TIOCSTI (push input), its high-bit variant
# (CVE-2019-10063: the kernel ignores the upper 32 bits of the request, a
# filter comparing all 64 does not), TIOCLINUX (console selection paste).
# The launcher runs on a real pseudo-terminal (script(1)), which is the
# caller's controlling terminal and the command's fds 0-2.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup 'script (util-linux)'
offline_policy

for who in root "$TEST_USER"; do
	on_tty() { as "$who" env SHELL=/bin/sh script -qec "$BC run --policy $POL -- $PROBE $1" /dev/null; }

	for req in tiocsti tiocsti-high tioclinux; do
		out=$(on_tty "$req" 2>&1); rc=$?
		check "$who: $req on the caller's terminal refused (fds 0-2 are its pty)" \
			[ $rc = 0 ] && grep -q "fd0:errno=EPERM" <<<"$out"
	done
	# The filter answers before the kernel looks at the fd: EPERM for fd -1
	# (the kernel alone would say EBADF), with and without the high bits.
	check "$who: the filter refuses TIOCSTI/TIOCLINUX, high bits or not (EPERM, not EBADF)" \
		run -- "$PROBE" try ioctl
done

done_testing
