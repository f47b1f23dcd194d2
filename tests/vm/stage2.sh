#!/bin/bash
# tests/vm/stage2.sh: stage 2 of the cgroup v2 VM, pid 1 in the host's own
# root (read-only over 9p, tmpfs on /tmp, /run, /root). Mounts a
# cgroup2-only hierarchy, enables memory, pids and cpu below the root, runs
# each test script as root and prints its TAP between markers on the
# serial console, then powers the VM off. With BCVM_SYSTEMD set, systemd
# is pid 1 and this runs as bcvm.service: no mounts, the scripts run in
# that service's cgroup, and the service's end powers the VM off.
#   BCVM-INFO ...             facts about the VM
#   BCVM-BEGIN NAME           a script starts; its output follows
#   BCVM-END NAME STATUS      it ended with STATUS
#   BCVM-EXIT STATUS          all done (0: every script passed)
# Every script must end by BCVM_DEADLINE seconds of the VM's uptime, 30 s
# before tests/vm/run stops qemu. One that would not is stopped there, and
# first its processes are shown (`# hang:` lines, which the report passes
# on): what each waits in, the kernel stack of those that are stuck, and
# the throttling of every cgroup below the root.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
. /run/bcvm/job.env
if [ -n "${BCVM_SYSTEMD:-}" ]; then
	# bcvm.service (tests/vm/init-systemd) powers the VM off when this
	# script ends; systemd mounted everything.
	off() { exit 0; }
	echo "BCVM-INFO pid1 $(cat /proc/1/comm) $(systemctl --version | head -n 1)"
	echo "BCVM-INFO booted in $(cut -d ' ' -f 1 /proc/uptime)s"
	echo "BCVM-INFO system state $(systemctl is-system-running 2>&1)"
	echo "BCVM-INFO this service's cgroup $(cut -d : -f 3 /proc/self/cgroup)"
	probe=/sys/fs/cgroup/system.slice
else
	off() { sync; echo b >/proc/sysrq-trigger; sleep 60; }
	echo 1 >/proc/sys/kernel/printk 2>/dev/null
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm 2>/dev/null || { mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm; }
	mkdir -p /dev/pts && mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
	ln -sfn /proc/self/fd /dev/fd
	ln -sfn /proc/self/fd/0 /dev/stdin; ln -sfn /proc/self/fd/1 /dev/stdout; ln -sfn /proc/self/fd/2 /dev/stderr
	# The tests create users: /etc becomes a writable copy on tmpfs.
	mkdir -p /run/bcvm/etc-up /run/bcvm/etc-work
	mount -t overlay overlay -o lowerdir=/etc,upperdir=/run/bcvm/etc-up,workdir=/run/bcvm/etc-work /etc ||
		{ mkdir -p /run/bcvm/etc && cp -a /etc/. /run/bcvm/etc/ && mount --bind /run/bcvm/etc /etc; } ||
		echo "BCVM-INFO /etc stays read-only"
	mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || { echo "BCVM-EXIT 98 cannot mount cgroup2"; off; }
	echo "+memory +pids +cpu" >/sys/fs/cgroup/cgroup.subtree_control
	mkdir /sys/fs/cgroup/bcvm-probe
	probe=/sys/fs/cgroup/bcvm-probe
fi
echo "BCVM-INFO kernel $(uname -r)"
echo "BCVM-INFO controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "BCVM-INFO subtree_control $(cat /sys/fs/cgroup/cgroup.subtree_control)"
echo "BCVM-INFO v1 hierarchies $(awk '$3 == "cgroup"' /proc/mounts | wc -l)"
echo "BCVM-INFO cgroup.kill $([ -e $probe/cgroup.kill ] && echo yes || echo no)"
[ -n "${BCVM_SYSTEMD:-}" ] || rmdir /sys/fs/cgroup/bcvm-probe
# hang_report: what every process is doing, as `# hang:` lines
hang_report() {
	echo "# hang: $(cut -d ' ' -f 1 /proc/uptime)s of uptime; the processes (pid ppid state seconds wchan command):"
	ps -eo pid=,ppid=,stat=,etimes=,wchan:24=,args= | grep -v -e ' \[.*\]$' -e ' ps -eo ' | cut -c1-160 | sed 's/^/# hang: /'
	local p
	for p in $(ps -eo pid=,stat= | awk '$2 ~ /^[DR]/ { print $1 }'); do
		[ "$p" != $$ ] && [ -r /proc/$p/stack ] || continue
		echo "# hang: kernel stack of $p ($(cat /proc/$p/comm 2>/dev/null)): $(cut -d ' ' -f 2 /proc/$p/stack 2>/dev/null | head -n 8 | tr '\n' ' ')"
	done
	find /sys/fs/cgroup -mindepth 2 -name cpu.stat 2>/dev/null | while read -r f; do
		echo "# hang: ${f%/cpu.stat}: $(grep -E '^(usage_usec|nr_throttled|throttled_usec)' "$f" | tr '\n' ' ') cpu.max $(cat "${f%/cpu.stat}/cpu.max" 2>/dev/null) procs $(wc -l <"${f%/cpu.stat}/cgroup.procs" 2>/dev/null)"
	done
}
status=0
for t in $BCVM_TESTS; do
	echo "BCVM-BEGIN $t $(date +%s)"
	left=$((BCVM_DEADLINE - $(cut -d . -f 1 /proc/uptime)))
	if [ "$left" -lt 20 ]; then
		echo "BCVM-END $t 124 $(date +%s) no time left"
		status=1
		continue
	fi
	( sleep $((left - 10)) && hang_report ) &
	watchdog=$!
	( cd /tmp && export CI LIMITS_ONLY_ROOT=1 LIMITS_NO_CHROMIUM=1 LIMITS_CONCURRENT=10 top_srcdir="$BCVM_SRCDIR" top_builddir="$BCVM_BUILDDIR" &&
		timeout -k 5 "$left" bash "$BCVM_SRCDIR/$t" ) </dev/null 2>&1
	rc=$?
	kill "$watchdog" 2>/dev/null
	echo "BCVM-END $t $rc $(date +%s)"
	[ $rc = 0 ] || status=1
done
echo "BCVM-EXIT $status"
off
