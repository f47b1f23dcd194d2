# tests/lib.sh: shared helpers for the shell tests (TAP on stdout).
#
# A test that needs something this machine lacks skips with the reason;
# under CI (CI=true) a skip is a failure, so CI cannot go green by skipping.

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
BC="$top_builddir/browsercage"
PROBE="$top_builddir/tests/helpers/probe"
_tap_n=0
_tap_failed=0

ok()   { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
fail() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# check DESCRIPTION [!] CMD...: pass when CMD succeeds (with !, fails).
# CMD's output is shown only when the check fails; so is the text a grep
# searched when it was given on standard input (`check D grep -q P <<<"$out"`),
# else the failure of a grep -q would say nothing of why.
# A compound condition must be one command: `check D A && B` would run B
# outside check; write `check D eval 'A && B'` or use exited_with.
check() {
	local _ck_what=$1 _ck_want=0 _ck_out _ck_rc _ck_in=; shift
	if [ "$1" = '!' ]; then _ck_want=1; shift; fi
	# a here-string is ready to read at once (read -t 0); a terminal or an
	# idle pipe is never read
	if [ "$1" = grep ] && [ ! -t 0 ] && read -r -t 0; then
		_ck_in=$(cat; echo x); _ck_in=${_ck_in%x}
		_ck_out=$("$@" 2>&1 <<<"${_ck_in%$'\n'}"); _ck_rc=$?
	else
		_ck_out=$("$@" 2>&1); _ck_rc=$?
	fi
	if [ $_ck_rc != 0 ]; then _ck_rc=1; fi
	if [ $_ck_rc = $_ck_want ]; then ok "$_ck_what"; return 0; fi
	fail "$_ck_what"
	[ -n "$_ck_out" ] && diag "$_ck_out"
	[ -n "$_ck_in" ] && diag "searched:" "$(head -n 12 <<<"$_ck_in" | cut -c1-400)"
	return 0
}

# exited_with RC WANT PATTERN TEXT: RC is WANT and TEXT matches the
# extended regular expression PATTERN.
exited_with() {
	[ "$1" = "$2" ] || { echo "exit status $1, want $2"; return 1; }
	grep -Eq -- "$3" <<<"$4" || { echo "no '$3' in: $4"; return 1; }
}

# skip_all REASON: nothing here can run on this machine.
skip_all() {
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - required in CI but skipped: $*"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 0
}

done_testing() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
}

# Browsercage's host id range (sandbox/hostids.h): the `browsercage` lines
# of /etc/subuid and /etc/subgid, else the built-in default. Its first ids,
# ROOT_OWNER:ROOT_GROUP, own root's profiles on disk; every sandbox a root
# caller starts runs as another id of it (IDS_COUNT ids in all).
_sub_field() { awk -F: -v f="$2" '$1 == "browsercage" { print $f; exit }' "$1" 2>/dev/null; }
ROOT_OWNER=$(_sub_field /etc/subuid 2); ROOT_OWNER=${ROOT_OWNER:-1879048192}
ROOT_GROUP=$(_sub_field /etc/subgid 2); ROOT_GROUP=${ROOT_GROUP:-1879048192}
IDS_COUNT=$(_sub_field /etc/subuid 3); IDS_COUNT=${IDS_COUNT:-65536}
# in_id_range UID: UID is a sandbox's id of the range (not the owner's).
in_id_range() { [ "$1" -gt "$ROOT_OWNER" ] && [ "$1" -lt $((ROOT_OWNER + IDS_COUNT)) ]; }

need_root() { [ "$(id -u)" = 0 ] || skip_all "needs root (run make check as root)"; }

# launcher_setup ['TOOL (PACKAGE)']...: root, a built launcher and each
# TOOL, else skip; then $SCRATCH and $TEST_USER.
launcher_setup() {
	local t
	need_root
	[ -x "$BC" ] || skip_all "launcher not built at $BC"
	for t in "$@"; do command -v "${t%% *}" >/dev/null || skip_all "$t missing"; done
	make_scratch
	make_test_user
}

# A scratch directory every user can read, removed at exit.
make_scratch() {
	SCRATCH=$(mktemp -d /tmp/bctest.XXXXXX)
	chmod 755 "$SCRATCH"
	trap cleanup EXIT
}

_cleanups=()
on_exit() { _cleanups+=("$*"); }
cleanup() {
	local i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" || true; done
	[ -n "${SCRATCH:-}" ] && rm -rf "$SCRATCH"
}

# An unprivileged user created for this test run; removed at exit.
make_test_user() {
	TEST_USER=bct$$
	useradd --system --no-create-home --shell /usr/sbin/nologin "$TEST_USER" >/dev/null 2>&1 ||
		skip_all "cannot create a test user (useradd)"
	on_exit "userdel $TEST_USER >/dev/null 2>&1"
	TEST_UID=$(id -u "$TEST_USER")
	TEST_GID=$(id -g "$TEST_USER")
	make_runtime_dir "$TEST_UID"
}

# make_runtime_dir UID: /run/user/UID, owned by UID with mode 0700, as a
# login manager makes it (the launcher's runtime directory for a user who
# sets no XDG_RUNTIME_DIR); removed at exit if it was made here.
make_runtime_dir() {
	[ -e "/run/user/$1" ] && return 0
	mkdir -p /run/user && install -d -m 0700 -o "$1" -g "$(id -g "$1")" "/run/user/$1" || return 0
	on_exit "rm -rf /run/user/$1"
}

# as_prefix USER: sets the array AS_PREFIX to what runs a command as USER
# (empty for root), keeping the environment the tests need.
as_prefix() {
	AS_PREFIX=()
	[ "$1" = root ] || AS_PREFIX=(setpriv --reuid="$1" --regid="$1" --init-groups --reset-env -- env
		top_srcdir="$top_srcdir" top_builddir="$top_builddir" PATH=/usr/bin:/bin)
}

# as USER CMD...: run CMD as USER (root: as is).
as() { as_prefix "$1"; shift; "${AS_PREFIX[@]}" "$@"; }

# as_exec USER CMD...: like as, but replaces the (sub)shell, so that
# `as_exec USER CMD &` leaves CMD's own pid in $!.
as_exec() { as_prefix "$1"; shift; exec "${AS_PREFIX[@]}" "$@"; }

# write_policy FILE [section.key = value]...: an offline policy with the
# probe visible (ro_bind is $RO_BIND if set), plus the keys given, each
# added under its section.
write_policy() {
	local file=$1; shift
	{
		echo "[policy]"
		echo "name = test"
		echo "[sandbox]"
		echo "[filesystem]"
		echo "ro_bind = ${RO_BIND:-$top_builddir/tests/helpers}"
		echo "[network]"
		echo "mode = none"
		echo "[limits]"
		echo "required = no"
		echo "[session]"
		echo "ttl = 5m"
	} >"$file"
	local line
	for line in "$@"; do
		# "section.key = value" lines go under their section.
		local sec=${line%%.*} rest=${line#*.}
		sed -i "/^\[$sec\]\$/a $rest" "$file"
	done
	chmod 644 "$file"
}

# tree_hold, then tree_restore: a test that hides directories under an
# empty tmpfs (/tmp, /run, /var/lib) keeps the tree under test, wherever
# it was checked out, visible at its own path: tree_hold opens it before,
# tree_restore binds it back where a tmpfs hid it (--no-canonicalize: the
# path in /proc/self/fd names the old place, not the fresh one).
tree_hold() {
	local d fd
	_tree=()
	for d in "$top_srcdir" "$top_builddir"; do
		d=$(cd "$d" && pwd -P) && exec {fd}<"$d" && _tree+=("$d=$fd")
	done
}
tree_restore() {
	local k
	for k in "${_tree[@]}"; do
		[ -e "${k%=*}/Makefile.am" ] || [ -e "${k%=*}/Makefile" ] && continue
		mkdir -p "${k%=*}" && mount --no-canonicalize --bind "/proc/self/fd/${k#*=}" "${k%=*}" ||
			skip_all "cannot keep the tree ${k%=*} visible"
	done
}
