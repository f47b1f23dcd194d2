#!/bin/bash
# attacks/disk.sh: a sandbox filling the host's disk through its profile,
# and a download that makes teardown endless.
#  - an assigned profile on a file system with project quotas: writes past
#    profile_quota fail with EDQUOT inside (attacks/disk-quota.sh, run here
#    when this kernel mounts ext4 with prjquota, else in the tests/vm/run VM);
#  - where the bound cannot be enforced (no project quotas, or no root) and
#    limits are required, the launch is refused with the fix; when they are
#    not required, the audit log says the disk is not bounded;
#  - an ephemeral profile is a tmpfs of at most profile_quota;
#  - a 4 GiB sparse download is listed as not hashed, with its size.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup 'mkfs.ext4 (e2fsprogs)' 'losetup (mount)'

# ---- project quotas -----------------------------------------------------------
quota_log=$SCRATCH/quota.log
probe_img=$SCRATCH/probe.img; mkdir -p "$SCRATCH/probe"
truncate -s 32M "$probe_img"; mkfs.ext4 -q -F -O quota,project "$probe_img" >/dev/null 2>&1
if qerr=$(mount -o loop,prjquota "$probe_img" "$SCRATCH/probe" 2>&1); then
	umount "$SCRATCH/probe"
	kernel_diag "ext4 project quotas" "an ext4 image mounts with prjquota: disk-quota.sh runs on this host"
	where=host
	bash "$top_srcdir/tests/attacks/disk-quota.sh" >"$quota_log" 2>&1
	rc=$?
else
	kernel_diag "ext4 project quotas" "mount -o loop,prjquota refused (${qerr%%$'\n'*}): disk-quota.sh runs in the tests/vm/run VM"
	where=VM
	bash "$top_srcdir/tests/vm/run" --timeout 600 tests/attacks/disk-quota.sh >"$quota_log" 2>"$SCRATCH/vm.err"
	rc=$?
	[ $rc = 77 ] && skip_all "this kernel has no ext4 project quotas (CONFIG_QFMT_V2) and the VM cannot run: $(cat "$SCRATCH/vm.err")"
fi
rm -f "$probe_img"
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*) n=$((n + 1)); ok "quota ($where): ${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); fail "quota ($where): ${line#not ok * - }" ;;
	"1..0"*) fail "quota ($where) skipped: $line" ;;
	esac
done <"$quota_log"
check "quota ($where): attacks/disk-quota.sh passed ($n checks)" [ $rc = 0 -a $n -gt 0 ]
[ $rc = 0 ] || diag "$(tail -n 20 "$quota_log")" "$(cat "$SCRATCH/vm.err" 2>/dev/null)"

# ---- no project quotas: refused when required, recorded when not ----------------
REQ=$SCRATCH/required.ini
write_policy "$REQ" "limits.required = yes"; sed -i '/^required = no$/d' "$REQ"
NOREQ=$SCRATCH/not-required.ini
write_policy "$NOREQ"
ZERO=$SCRATCH/zero.ini
write_policy "$ZERO" "filesystem.profile_quota = 0"

# profile roots: a tmpfs, and an ext4 image made without the quota feature
tmpfs_root=$SCRATCH/tmpfs; mkdir -p "$tmpfs_root"
mount -t tmpfs -o size=16m,mode=755 tmpfs "$tmpfs_root" && on_exit "umount -l $tmpfs_root"
plain_img=$SCRATCH/plain.img plain_root=$SCRATCH/plain; mkdir -p "$plain_root"
truncate -s 32M "$plain_img"; mkfs.ext4 -q -F -O ^quota "$plain_img" >/dev/null 2>&1
mount -o loop "$plain_img" "$plain_root" && on_exit "umount -l $plain_root"
for root in "$tmpfs_root" "$plain_root"; do
	mkdir -p "$root/p"; chown "$ROOT_OWNER:$ROOT_GROUP" "$root/p"; chmod 700 "$root/p"
done
out=$("$BC" run --policy "$REQ" --profile-dir "$tmpfs_root/p" -- /bin/sh -c 'touch "$BROWSERCAGE_PROFILE/ran"' 2>&1); rc=$?
check "root: a profile on tmpfs with required = yes is refused (125), saying what to do" \
	exited_with $rc 125 'profile_quota = 1G cannot be enforced.*tmpfs.*(prjquota).*ephemeral profile.*required = no' "$out"
check "...and nothing ran" [ ! -e "$tmpfs_root/p/ran" ]
check "...in one line" eval '[ -n "$out" ] && [ "$(wc -l <<<"$out")" = 1 ]'
out=$("$BC" run --policy "$REQ" --profile-dir "$plain_root/p" -- /bin/true 2>&1); rc=$?
check "root: a profile on ext4 without project quotas is refused, naming tune2fs and prjquota" \
	exited_with $rc 125 'ext4.*tune2fs -O quota,project.*prjquota' "$out"

DOC=$SCRATCH/doctor.ini
write_policy "$DOC" "filesystem.profile = assigned" "filesystem.profile_root = $tmpfs_root" "limits.required = yes"
sed -i '/^required = no$/d' "$DOC"
out=$("$BC" doctor --policy "$DOC" 2>&1)
check "doctor: the disk check fails on a tmpfs profile root, with the fix" \
	eval "grep -A1 -E '^fail +disk +profile_quota cannot be enforced' <<<\"\$out\" | grep -q 'fix: put the profile root on ext4 (prjquota)'"
aud=$SCRATCH/noreq.jsonl
check "root: with required = no it runs" "$BC" run --policy "$NOREQ" --audit "$aud" --profile-dir "$tmpfs_root/p" -- /bin/true
check "...and the audit log says the disk was not bounded, and why" \
	grep -q '"event":"disk".*"bounded":false,"enforced_by":null.*"reason":".*tmpfs' "$aud"
check "profile_quota = 0 is valid with a warning" eval "'$BC' check '$ZERO' 2>&1 | grep -q 'profile_quota = 0: an assigned profile may fill'"
aud=$SCRATCH/zero.jsonl
"$BC" run --policy "$ZERO" --audit "$aud" --profile-dir "$tmpfs_root/p" -- /bin/true
check "profile_quota = 0: the audit log says the disk is not bounded" \
	grep -q '"event":"disk".*"bounded":false.*"reason":"profile_quota = 0"' "$aud"

uprof=$SCRATCH/user-prof; mkdir -p "$uprof"; chown "$TEST_UID:$TEST_GID" "$uprof"; chmod 700 "$uprof"
out=$(as "$TEST_USER" "$BC" run --policy "$REQ" --profile-dir "$uprof" -- /bin/true 2>&1); rc=$?
check "$TEST_USER: an assigned profile with required = yes is refused: only root sets project quotas" \
	exited_with $rc 125 'cannot be enforced.*only root can set a project quota.*ephemeral profile.*required = no' "$out"

# ---- ephemeral profiles: a tmpfs of at most profile_quota -------------------------
EPH=$SCRATCH/eph.ini
write_policy "$EPH" "filesystem.profile_quota = 8M"
for who in root "$TEST_USER"; do
	aud=$SCRATCH/eph-$who.jsonl; : >"$aud"; chmod 666 "$aud"
	out=$(as "$who" "$BC" run --policy "$EPH" --audit "$aud" -- /bin/sh -c \
		'dd if=/dev/zero of="$BROWSERCAGE_DOWNLOADS/fill" bs=1M count=16 2>&1; du -sk "$BROWSERCAGE_PROFILE"' 2>&1)
	check "$who: an ephemeral profile holds no more than profile_quota (ENOSPC)" grep -q 'No space left on device' <<<"$out"
	check "$who: ...and the audit log says tmpfs bounds it at 8M" \
		grep -q '"event":"disk".*"profile_quota":8388608,"bounded":true,"enforced_by":"tmpfs"' "$aud"
done

# ---- teardown: a sparse download is not hashed -------------------------------------
for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then pol=$NOREQ; owner=$ROOT_OWNER:$ROOT_GROUP; else pol=$NOREQ; owner=$TEST_UID:$TEST_GID; fi
	prof=$SCRATCH/sparse-$who; mkdir -p "$prof"; chown "$owner" "$prof"; chmod 700 "$prof"
	aud=$SCRATCH/sparse-$who.jsonl; : >"$aud"; chmod 666 "$aud"
	as "$who" "$BC" run --policy "$pol" --audit "$aud" --profile-dir "$prof" -- /bin/sh -c \
		'cd "$BROWSERCAGE_DOWNLOADS" && truncate -s 4G sparse && printf abc >z.txt' 2>/dev/null
	td=$(grep '"event":"teardown"' "$aud")
	check "$who: a 4 GiB sparse download is listed as not hashed, with its size and why" \
		grep -q '{"name":"sparse","type":"file","size":4294967296,"skipped":"total size limit reached (sparse file); not hashed"}' <<<"$td"
	check "$who: ...a small one after it is hashed" \
		grep -q '"name":"z.txt","type":"file","size":3,"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"' <<<"$td"
	check "$who: ...and the record counts one file not hashed" grep -q '"downloads_not_hashed":1' <<<"$td"
	rm -rf "$prof"
done

done_testing
