#!/bin/bash
# attacks/runtime.sh: the runtime directory (records that ps, revoke and gc
# trust) taken over before its owner's first run. Another user pre-creates
# the old predictable fallback /tmp/browsercage-UID, plants symlinks, hands
# over a directory of theirs, one with group or other bits, one below a
# directory others can write. The victim either works in a directory only
# it controls or refuses with the fix; it never writes through what the
# attacker made. Runs in a private mount namespace with fresh /run and /tmp.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/attacks/lib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
command -v unshare >/dev/null || skip_all "needs unshare (util-linux)"
if [ -z "${BC_RUNTIME_INSIDE:-}" ]; then
	BC_RUNTIME_INSIDE=1 exec unshare -m "$BASH" "$0"
fi
mount --make-rprivate / || skip_all "cannot make / private"
tree_hold    # the tree under test stays visible (a clone in /tmp)
for d in /run /tmp; do
	mode=0755; [ $d = /tmp ] && mode=1777
	mount -t tmpfs -o mode=$mode,size=16m bc-runtime $d || skip_all "cannot mount tmpfs on $d"
done
tree_restore
make_scratch
make_test_user
V=$TEST_UID
rm -rf /run/user/$V         # (make_test_user gave it one: start without)
EVIL=65534                  # the other user: owns what the attacker made
offline_policy
FIX='set XDG_RUNTIME_DIR to a directory of yours with mode 0700'

# victim ENV...: `run -- /bin/true` as the test user with only ENV set;
# OUT and RC.
victim() {
	OUT=$(cd / && setpriv --reuid="$V" --regid="$TEST_GID" --init-groups --reset-env -- \
		env PATH=/usr/bin:/bin "$@" "$BC" run --policy "$POL" -- /bin/true 2>&1); RC=$?
}
# untouched DIR: DIR holds nothing (nothing was written through it).
untouched() { [ -z "$(ls -A "$1")" ] || { ls -la "$1"; return 1; }; }
# attacker_dir PATH [MODE]: a directory of the other user.
attacker_dir() { install -d -m "${2:-0777}" -o $EVIL -g $EVIL "$1"; }

# 1. the old fallback taken first; the victim has no runtime directory
attacker_dir /tmp/browsercage-$V
victim
check "no runtime directory: refused with the fix" exited_with $RC 125 "$FIX" "$OUT"
check "... nothing written into the pre-created /tmp/browsercage-$V" untouched /tmp/browsercage-$V
# with a runtime directory from the login manager it works, elsewhere
install -d -m 0700 -o "$V" -g "$TEST_GID" /run/user/$V
victim
check "with /run/user/UID: works" [ $RC = 0 ]
[ $RC = 0 ] || diag "$OUT"
check "... its records under /run/user/UID/browsercage, mode 0700" \
	[ "$(stat -c %u:%a /run/user/$V/browsercage 2>&1)" = "$V:700" ]
check "... and still nothing in /tmp/browsercage-$V" untouched /tmp/browsercage-$V
rm -rf /run/user/$V

# 2. /run/user/UID itself made by another user
attacker_dir /run/user/$V 0777
victim
check "/run/user/UID owned by another user: refused" exited_with $RC 125 "must be owned by uid $V" "$OUT"
check "... nothing written there" untouched /run/user/$V
rm -rf /run/user/$V

# 3. XDG_RUNTIME_DIR handed over by another user (mode 0777)
attacker_dir /tmp/evil
victim XDG_RUNTIME_DIR=/tmp/evil
check "XDG_RUNTIME_DIR of another user: refused, naming XDG_RUNTIME_DIR" \
	exited_with $RC 125 "XDG_RUNTIME_DIR: /tmp/evil must be owned by uid $V" "$OUT"
check "... nothing written there" untouched /tmp/evil

# 4. XDG_RUNTIME_DIR is a symlink (to the attacker's dir, to the victim's own)
ln -s /tmp/evil /tmp/link-evil
victim XDG_RUNTIME_DIR=/tmp/link-evil
check "XDG_RUNTIME_DIR a symlink to another user's dir: refused" exited_with $RC 125 "symlink" "$OUT"
check "... nothing written through it" untouched /tmp/evil
install -d -m 0700 -o "$V" -g "$TEST_GID" /tmp/own
ln -s /tmp/own /tmp/link-own
victim XDG_RUNTIME_DIR=/tmp/link-own
check "XDG_RUNTIME_DIR a symlink to the victim's own dir: refused (never followed)" \
	exited_with $RC 125 "symlink" "$OUT"
check "... nothing written through it" untouched /tmp/own

# 5. the browsercage entry inside a good XDG_RUNTIME_DIR is a planted
# symlink, or a directory of another user
install -d -m 0700 -o "$V" -g "$TEST_GID" /tmp/xdg
ln -s /tmp/evil /tmp/xdg/browsercage
victim XDG_RUNTIME_DIR=/tmp/xdg
check "XDG_RUNTIME_DIR/browsercage a planted symlink: refused" exited_with $RC 125 "symlink" "$OUT"
check "... nothing written through it" untouched /tmp/evil
rm /tmp/xdg/browsercage
attacker_dir /tmp/xdg/browsercage 0777
victim XDG_RUNTIME_DIR=/tmp/xdg
check "XDG_RUNTIME_DIR/browsercage of another user: refused" \
	exited_with $RC 125 "runtime directory /tmp/xdg/browsercage must be owned by uid $V" "$OUT"
check "... nothing written there" untouched /tmp/xdg/browsercage
rm -rf /tmp/xdg/browsercage

# 6. the victim's own directories with group or other bits
chmod 0755 /tmp/xdg
victim XDG_RUNTIME_DIR=/tmp/xdg
check "XDG_RUNTIME_DIR with mode 0755: refused with chmod 0700" exited_with $RC 125 "chmod 0700 /tmp/xdg" "$OUT"
chmod 0700 /tmp/xdg
install -d -m 0777 -o "$V" -g "$TEST_GID" /tmp/xdg/browsercage
victim XDG_RUNTIME_DIR=/tmp/xdg
check "its browsercage directory with mode 0777: refused with chmod 0700" \
	exited_with $RC 125 "chmod 0700 /tmp/xdg/browsercage" "$OUT"
check "... nothing written there" untouched /tmp/xdg/browsercage
chmod 0700 /tmp/xdg/browsercage
victim XDG_RUNTIME_DIR=/tmp/xdg
check "the same, fixed as told: works" [ $RC = 0 ]

# 7. a private directory below one others can write (not sticky): they
# could rename it away and put their own in its place
install -d -m 0777 -o 0 -g 0 /tmp/open
install -d -m 0700 -o "$V" -g "$TEST_GID" /tmp/open/xdg
victim XDG_RUNTIME_DIR=/tmp/open/xdg
check "XDG_RUNTIME_DIR below a directory others can write: refused" \
	exited_with $RC 125 "parent directory /tmp/open is writable by group or others" "$OUT"
check "... nothing written there" untouched /tmp/open/xdg

# 8. root's /run/browsercage taken first, or a symlink
attacker_dir /run/browsercage 0700
out=$("$BC" run --policy "$POL" -- /bin/true 2>&1); rc=$?
check "root: /run/browsercage of another user: refused with the fix" \
	exited_with $rc 125 "/run/browsercage must be owned by uid 0, not uid $EVIL: remove it" "$out"
check "... nothing written there" untouched /run/browsercage
rm -rf /run/browsercage
ln -s /tmp/evil /run/browsercage
out=$("$BC" run --policy "$POL" -- /bin/true 2>&1); rc=$?
check "root: /run/browsercage a symlink: refused" exited_with $rc 125 "symlink" "$out"
check "... nothing written through it" untouched /tmp/evil
rm /run/browsercage
out=$("$BC" run --policy "$POL" -- /bin/true 2>&1); rc=$?
check "root: a fresh /run: works, /run/browsercage uid 0 mode 0700" \
	eval '[ $rc = 0 ] && [ "$(stat -c %u:%a /run/browsercage)" = 0:700 ]'

done_testing
