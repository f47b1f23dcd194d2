#!/bin/bash
# attacks/disk-quota.sh: a sandbox filling the host's disk through an
# assigned profile directory on a file system with project quotas (an
# ext4 image made with -O quota,project, mounted -o loop,prjquota), as
# root. Run by attacks/disk.sh: directly when this kernel mounts such an
# image, else inside the tests/vm/run VM (Debian's kernel has quota_v2).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup 'mkfs.ext4 (e2fsprogs)' 'losetup (mount)' 'lsattr (e2fsprogs)'
modprobe -q loop 2>/dev/null; modprobe -q ext4 2>/dev/null; modprobe -q quota_v2 2>/dev/null
# Loop devices: made when the kernel has the driver but /dev lacks them.
[ -e /dev/loop-control ] || mknod -m 660 /dev/loop-control c 10 237 2>/dev/null
for i in 0 1 2 3 4 5 6 7; do [ -e /dev/loop$i ] || mknod -m 660 /dev/loop$i b 7 $i 2>/dev/null; done

img=$SCRATCH/prj.img mnt=$SCRATCH/prj
truncate -s 96M "$img" && mkfs.ext4 -q -F -O quota,project "$img" >/dev/null 2>&1 || skip_all "mkfs.ext4 -O quota,project failed"
mkdir -p "$mnt"
dev=$(losetup -f --show "$img" 2>/dev/null) || skip_all "no loop device (losetup -f)"
on_exit "losetup -d $dev"
mount -o prjquota "$dev" "$mnt" 2>/dev/null || skip_all "this kernel cannot mount ext4 with prjquota (CONFIG_QFMT_V2)"
on_exit "umount -l $mnt"
used_kib() { df --output=used -k "$mnt" | tail -n 1 | tr -d ' '; }

owner=$ROOT_OWNER group=$ROOT_GROUP
prof=$mnt/p1; mkdir -p "$prof/Downloads"
# A file from before quotas applied to this directory (project id 0).
dd if=/dev/zero of="$prof/Downloads/old" bs=1M count=1 status=none
chown -R $owner:$group "$prof"; chmod 700 "$prof"
POL=$SCRATCH/quota.ini
write_policy "$POL" "filesystem.profile_quota = 16M" "limits.required = yes"
sed -i '/^required = no$/d' "$POL"
aud=$SCRATCH/audit.jsonl
run() { as root "$BC" run --policy "$POL" --audit "$aud" --profile-dir "$prof" "$@"; }

base=$(used_kib)
out=$(run -- /bin/sh -c 'dd if=/dev/zero of="$BROWSERCAGE_DOWNLOADS/fill" bs=1M count=48 2>&1; echo "dd=$?"' 2>&1)
check "a write past profile_quota fails with EDQUOT inside" grep -q 'Disk quota exceeded' <<<"$out"
check "...and the host file system grew by less than the quota" [ $(( $(used_kib) - base )) -lt 16384 ]
check "the audit log says the profile was bounded by a project quota" \
	grep -q '"event":"disk".*"bounded":true,"enforced_by":"project_quota"' "$aud"
projid=$(sed -n 's/.*"event":"disk".*"project_id":\([0-9]*\).*/\1/p' "$aud" | tail -n 1)
check "the directory and the file made before carry the project id" \
	eval "[ -n '$projid' ] && lsattr -pd '$prof' | grep -q '^ *$projid ' && lsattr -p '$prof/Downloads/old' | grep -q '^ *$projid '"
check "the directory has PROJINHERIT" eval "lsattr -d '$prof' | grep -q '^[^ ]*P'"
rm -f "$prof/Downloads/fill"

# Growing a file the sandbox finds in its profile is charged too.
base=$(used_kib)
out=$(run -- /bin/sh -c 'dd if=/dev/zero of="$BROWSERCAGE_DOWNLOADS/old" bs=1M count=48 oflag=append conv=notrunc 2>&1' 2>&1)
check "appending to a file made before quotas fails with EDQUOT" grep -q 'Disk quota exceeded' <<<"$out"
check "...and the host file system grew by less than the quota" [ $(( $(used_kib) - base )) -lt 16384 ]
: >"$prof/Downloads/old"

# Inodes are bounded too (4096 for 16M): empty files cost no blocks.
out=$(run -- /bin/sh -c 'cd "$BROWSERCAGE_PROFILE" && mkdir many && i=0; while [ $i -lt 5000 ]; do : >many/$i || exit 0; i=$((i+1)); done; echo made-all' 2>&1)
check "the inode limit stops a sandbox making files without end" ! grep -q made-all <<<"$out"
rm -rf "$prof/many"

# The sandbox cannot move its files out of the project.
run -- /bin/sh -c 'echo x >"$BROWSERCAGE_PROFILE/mine"; chattr -p 0 "$BROWSERCAGE_PROFILE/mine"; chattr -P "$BROWSERCAGE_PROFILE"' >/dev/null 2>&1
check "the sandbox cannot change a project id or PROJINHERIT" \
	eval "lsattr -p '$prof/mine' | grep -q '^ *$projid ' && lsattr -d '$prof' | grep -q '^[^ ]*P'"

# The next run finds the same id; the limit is gone after each run.
run -- /bin/true
check "the next run takes the directory's own project id again" \
	eval "[ \"\$(sed -n 's/.*\"event\":\"disk\".*\"project_id\":\([0-9]*\).*/\1/p' '$aud' | tail -n 1)\" = '$projid' ]"
# (as the profile owner: root's CAP_SYS_RESOURCE passes any quota)
setpriv --reuid=$owner --regid=$group --clear-groups dd if=/dev/zero of="$prof/after" bs=1M count=24 status=none 2>/dev/null
check "after release the limit is removed (its owner may write 24M there)" [ "$(stat -c %s "$prof/after")" = $((24 << 20)) ]
rm -f "$prof/after"

# A second directory gets another id; two sandboxes never share one.
prof2=$mnt/p2; mkdir -p "$prof2"; chown $owner:$group "$prof2"; chmod 700 "$prof2"
as root "$BC" run --policy "$POL" --audit "$aud" --profile-dir "$prof2" -- /bin/true
id2=$(sed -n 's/.*"event":"disk".*"project_id":\([0-9]*\).*/\1/p' "$aud" | tail -n 1)
check "another profile directory gets another project id" eval "[ -n '$id2' ] && [ '$id2' != '$projid' ]"

done_testing
