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

# ---- what the kernel offers ---------------------------------------------------
# A test says once what it found of each kernel feature it depends on, in a
# "# kernel: FEATURE: WHAT" line (kernel_diag), and checks what is right
# for that kernel. A feature browsercage cannot run without is a need:
# need_kernel states it and, where it is missing, fails and bails out.

_kernel_said=" "
# kernel_diag FEATURE WHAT...: "# kernel: FEATURE: WHAT", once per FEATURE.
kernel_diag() {
	case $_kernel_said in *" $1 "*) return 0 ;; esac
	_kernel_said="$_kernel_said$1 "
	diag "kernel: $1: ${*:2}"
}

# sysctl_val NAME: /proc/sys/NAME (dots or slashes), or "absent".
sysctl_val() { cat "/proc/sys/${1//.//}" 2>/dev/null || echo absent; }

# _kernel_try CMD...: "works", or "fails: " and CMD's last line of error.
_kernel_try() {
	local e
	e=$("$@" 2>&1 >/dev/null) && { echo works; return 0; }
	echo "fails: $(tail -n 1 <<<"${e:-exit status $?}")"
	return 1
}

# The probes of the features browsercage needs (root): each prints what it
# found and returns 0 when the feature is there. An unprivileged user must
# be able to make a user namespace as well (every launcher test runs one).
# (Ubuntu's kernel.apparmor_restrict_unprivileged_userns = 1 refuses the
# unprivileged one to unshare; the launcher's own AppArmor profile,
# installed by `make install`, allows it to the launcher: apparmor.sh.)
_kneed_userns() {
	local r u aa
	r=$(_kernel_try unshare -U true); u=$(_kernel_try setpriv --reuid=65534 --regid=65534 --clear-groups unshare -U true)
	aa=$(sysctl_val kernel.apparmor_restrict_unprivileged_userns)
	echo "unshare -U as root $r, as nobody $u; user.max_user_namespaces $(sysctl_val user.max_user_namespaces)," \
		"kernel.unprivileged_userns_clone $(sysctl_val kernel.unprivileged_userns_clone)," \
		"kernel.apparmor_restrict_unprivileged_userns $aa"
	[ "$r" = works ] && { [ "$u" = works ] || [ "$aa" = 1 ]; }
}
_kneed_seccomp() {
	local a
	a=$(sysctl_val kernel.seccomp.actions_avail)
	echo "actions_avail $a"
	[[ " $a " = *" kill_process "* && " $a " = *" errno "* ]]
}
_kneed_nf_tables() {
	local r
	command -v nft >/dev/null || { echo "not tried: nft (Debian package nftables) missing"; return 0; }
	r=$(_kernel_try unshare -n nft add table inet bckprobe); echo "a table in a fresh netns: $r"
	[ "$r" = works ]
}
_kneed_veth() {
	local r
	r=$(_kernel_try unshare -n ip link add bckp0 type veth peer name bckp1); echo "a pair in a fresh netns: $r"
	[ "$r" = works ]
}
declare -gA _kneed_what=([userns]="user namespaces" [seccomp]="seccomp filters (kill_process, errno)"
	[nf_tables]=nf_tables [veth]=veth)

# need_kernel FEATURE...: userns, seccomp, nf_tables, veth: browsercage
# cannot run without it; "# kernel: needs X (found: ...)", once each, and
# a failure and a bail-out where it is missing.
need_kernel() {
	local f found
	for f in "$@"; do
		case $_kernel_said in *" $f "*) continue ;; esac
		_kernel_said="$_kernel_said$f "
		if found=$(_kneed_$f); then
			diag "kernel: needs ${_kneed_what[$f]} (found: $found)"
		else
			fail "kernel: needs ${_kneed_what[$f]} (found: $found)"
			echo "Bail out! the kernel lacks ${_kneed_what[$f]}, which browsercage needs"
			exit 1
		fi
	done
}

# launcher_setup ['TOOL (PACKAGE)']...: root, a built launcher and each
# TOOL, else skip; then $SCRATCH and $TEST_USER.
launcher_setup() {
	local t
	need_root
	[ -x "$BC" ] || skip_all "launcher not built at $BC"
	for t in "$@"; do command -v "${t%% *}" >/dev/null || skip_all "$t missing"; done
	need_kernel userns seccomp
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

# make_sub_user: SUB_USER (SUB_UID), an ordinary account as Debian's
# useradd makes one, with its lines in /etc/subuid and /etc/subgid
# (SUB_START, SUB_COUNT: its uid range); removed at exit, lines too.
make_sub_user() {
	SUB_USER=bcs$$
	useradd --no-create-home --shell /usr/sbin/nologin "$SUB_USER" >/dev/null 2>&1 ||
		skip_all "cannot create an ordinary account (useradd)"
	on_exit "userdel $SUB_USER >/dev/null 2>&1; sed -i '/^$SUB_USER:/d' /etc/subuid /etc/subgid"
	SUB_UID=$(id -u "$SUB_USER")
	IFS=: read -r _ SUB_START SUB_COUNT < <(grep "^$SUB_USER:" /etc/subuid)
	[ -n "${SUB_START:-}" ] && grep -q "^$SUB_USER:" /etc/subgid ||
		skip_all "useradd gave $SUB_USER no /etc/subuid and /etc/subgid lines (SUB_UID_COUNT in /etc/login.defs)"
	make_runtime_dir "$SUB_UID"
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
