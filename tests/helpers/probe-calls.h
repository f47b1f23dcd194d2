/* probe-calls.h: the calls the seccomp filter denies, with harmless
 * arguments; shared by tests/helpers/probe.c and tests/unit/test-seccomp.c.
 *
 * Arguments are chosen so that, were the filter missing, the kernel would
 * fail the call or do nothing (invalid op codes, NULL or empty paths, bad
 * fds, bad flags): this is safe to run anywhere, even as root. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __x86_64__
#error "probe-calls.h knows the x86_64 syscall ABI only"
#endif

#define X32_SYSCALL_BIT 0x40000000L
#define I386_NR_GETPID 20
#define X86_64_NR_GETPID 39

/* Numbers newer than some libc headers. */
#ifndef SYS_lookup_dcookie
#define SYS_lookup_dcookie 212
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#define SYS_io_uring_enter 426
#define SYS_io_uring_register 427
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#define SYS_move_mount 429
#define SYS_fsopen 430
#define SYS_fsconfig 431
#define SYS_fsmount 432
#define SYS_fspick 433
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif


struct probe_call {
	const char *name;   /* "syscall" or "syscall(detail)" */
	long nr;
	long a[6];
	int want;           /* the errno the filter returns */
};

/* Fill c (room for max entries); returns how many were written. */
static inline size_t probe_calls_fill(struct probe_call *c, size_t max)
{
	const long me = getpid();
	const long hi = (long)0xffffffff00000000UL;
	const struct probe_call all[] = {
		{ "keyctl", SYS_keyctl, { -1 }, EPERM },
		{ "add_key", SYS_add_key, { 0 }, EPERM },
		{ "request_key", SYS_request_key, { 0 }, EPERM },
		{ "bpf", SYS_bpf, { -1 }, EPERM },
		{ "perf_event_open", SYS_perf_event_open, { 0, 0, -1, -1, 0 }, EPERM },
		{ "userfaultfd", SYS_userfaultfd, { -1 }, EPERM },
		{ "kexec_load", SYS_kexec_load, { 0, 0, 0, 0x80 }, EPERM },
		{ "kexec_file_load", SYS_kexec_file_load, { -1, -1, 0, 0, -1 }, EPERM },
		{ "init_module", SYS_init_module, { 0 }, EPERM },
		{ "finit_module", SYS_finit_module, { -1, 0, -1 }, EPERM },
		{ "delete_module", SYS_delete_module, { 0 }, EPERM },
		{ "open_by_handle_at", SYS_open_by_handle_at, { -1, 0, 0 }, EPERM },
		{ "name_to_handle_at", SYS_name_to_handle_at, { -1, 0, 0, 0, 0 }, EPERM },
		{ "ptrace", SYS_ptrace, { 0x7fffffff, 0 }, EPERM },
		{ "process_vm_readv", SYS_process_vm_readv, { me, 0, 0, 0, 0, 0 }, EPERM },
		{ "process_vm_writev", SYS_process_vm_writev, { me, 0, 0, 0, 0, 0 }, EPERM },
		{ "kcmp", SYS_kcmp, { me, me, 99, 0, 0 }, EPERM },
		{ "fsopen", SYS_fsopen, { 0, -1 }, EPERM },
		{ "fsconfig", SYS_fsconfig, { -1, -1, 0, 0, 0 }, EPERM },
		{ "fsmount", SYS_fsmount, { -1, -1, -1 }, EPERM },
		{ "fspick", SYS_fspick, { -1, 0, -1 }, EPERM },
		{ "open_tree", SYS_open_tree, { -1, 0, -1 }, EPERM },
		{ "move_mount", SYS_move_mount, { -1, 0, -1, 0, -1 }, EPERM },
		{ "mount_setattr", SYS_mount_setattr, { -1, 0, 0, 0, 0 }, EPERM },
		{ "mount", SYS_mount, { 0 }, EPERM },
		{ "umount2", SYS_umount2, { 0, -1 }, EPERM },
		{ "pivot_root", SYS_pivot_root, { 0, 0 }, EPERM },
		{ "acct", SYS_acct, { (long)"" }, EPERM },
		{ "swapon", SYS_swapon, { (long)"", 0 }, EPERM },
		{ "swapoff", SYS_swapoff, { (long)"" }, EPERM },
		{ "reboot", SYS_reboot, { 0, 0, 0, 0 }, EPERM },
		{ "iopl", SYS_iopl, { 99 }, EPERM },
		{ "ioperm", SYS_ioperm, { 0, 0, 0 }, EPERM },
		{ "syslog", SYS_syslog, { 10, 0, 0 }, EPERM },   /* SIZE_BUFFER: a read */
		{ "quotactl", SYS_quotactl, { 0, 0, 0, 0 }, EPERM },
		{ "lookup_dcookie", SYS_lookup_dcookie, { 0, 0, 0 }, EPERM },
		{ "settimeofday", SYS_settimeofday, { 0, 0 }, EPERM },   /* NULL, NULL: no-op */
		{ "clock_settime", SYS_clock_settime, { -1, 0 }, EPERM },
		{ "adjtimex", SYS_adjtimex, { 0 }, EPERM },
		{ "clock_adjtime", SYS_clock_adjtime, { -1, 0 }, EPERM },
		{ "personality(ADDR_NO_RANDOMIZE)", SYS_personality, { ADDR_NO_RANDOMIZE }, EPERM },
		{ "personality(READ_IMPLIES_EXEC)", SYS_personality, { READ_IMPLIES_EXEC }, EPERM },
		{ "personality(PER_LINUX32)", SYS_personality, { PER_LINUX32 }, EPERM },
		{ "io_uring_setup", SYS_io_uring_setup, { 0, 0 }, EPERM },
		{ "io_uring_enter", SYS_io_uring_enter, { -1, 0, 0, 0, 0, 0 }, EPERM },
		{ "io_uring_register", SYS_io_uring_register, { -1, 0, 0, 0 }, EPERM },
		{ "clone3", SYS_clone3, { 0, 0 }, ENOSYS },
		{ "ioctl(TIOCSTI)", SYS_ioctl, { -1, TIOCSTI, 0 }, EPERM },
		{ "ioctl(TIOCSTI|high)", SYS_ioctl, { -1, hi | TIOCSTI, 0 }, EPERM },
		{ "ioctl(TIOCLINUX)", SYS_ioctl, { -1, TIOCLINUX, 0 }, EPERM },
		{ "ioctl(TIOCLINUX|high)", SYS_ioctl, { -1, hi | TIOCLINUX, 0 }, EPERM },
		{ "socket(AF_VSOCK)", SYS_socket, { AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0 }, EPERM },
	};
	size_t n = sizeof all / sizeof all[0] < max ? sizeof all / sizeof all[0] : max;
	memcpy(c, all, n * sizeof *c);
	return n;
}

/* Make the call; returns 0 if it failed with c->want, else the errno it
 * failed with, or -1 if it succeeded (*ret then holds its result). */
static inline int probe_call_run(const struct probe_call *c, long *ret)
{
	int old_persona = personality(0xffffffff);
	errno = 0;
	long r = syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
	int e = errno;
	*ret = r;
	if (c->nr == SYS_personality)
		personality(old_persona);     /* undo, were the call let through */
	if (r >= 0) {
		if (c->nr == SYS_socket || c->nr == SYS_io_uring_setup || c->nr == SYS_fsopen)
			close((int)r);
		return -1;
	}
	return e == c->want ? 0 : e;
}
