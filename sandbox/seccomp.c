/* seccomp.c: the syscall filter (libseccomp), built early and loaded last.
 *
 * Why each entry is here, and why some obvious ones are not:
 * - keyctl/add_key/request_key: the kernel keyring is not namespaced and has
 *   a long CVE history; Chromium does not use it (Kerberos keyring ccaches
 *   fall back to files).
 * - bpf, perf_event_open, userfaultfd: large kernel attack surface, used by
 *   exploits for heap grooming and race widening; no browser use.
 * - kexec_*, *_module, acct, swapon/off, reboot, iopl/ioperm, syslog,
 *   quotactl, lookup_dcookie, clock and time setters: host administration.
 * - open_by_handle_at/name_to_handle_at: file handles bypass the mount tree
 *   (the "shocker" container escape).
 * - ptrace, process_vm_readv/writev: no debugging inside the sandbox (this
 *   also disables crashpad's in-sandbox dump collection).
 * - kcmp: denied. It compares kernel objects of two processes and has leaked
 *   kernel pointer order; Chromium does not call it, and its users (Mesa,
 *   systemd) treat a failure as "cannot tell" and carry on.
 * - mount, umount2, pivot_root and the new mount API: the launcher has built
 *   the root already. chroot stays allowed: Chromium's namespace sandbox
 *   chroots into an empty directory inside its own nested user namespace.
 * - personality: only PER_LINUX (0) and the query 0xffffffff; flags such as
 *   ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC weaken exploit mitigations.
 * - io_uring_*: io_uring performs its operations outside the syscall path,
 *   so this filter would not see them.
 * - clone3: ENOSYS, so glibc falls back to clone(), whose flags a filter
 *   (ours later, or Chromium's) can inspect; clone3 passes them in memory.
 * - ioctl TIOCSTI (push input into a terminal) and TIOCLINUX (console
 *   selection): compared on the low 32 bits of the request, because the
 *   kernel ignores the high ones (CVE-2019-10063).
 * - socket(AF_VSOCK): vsock is not network-namespaced; it would reach the
 *   hypervisor host around the egress firewall. Other families stay: Chromium
 *   needs AF_UNIX and AF_NETLINK (route) and our firewall covers AF_INET*.
 * Not denied: unshare/clone with CLONE_NEWUSER (Chromium nests one user
 * namespace), seccomp()/prctl(PR_SET_SECCOMP) (Chromium stacks its filter).
 * Only the native ABI passes; libseccomp makes the x86_64 filter refuse
 * numbers with the x32 bit (0x40000000) through the bad-arch action too. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "seccomp.h"

/* Calls that fail with EPERM whatever their arguments. */
static const char *const denied_eperm[] = {
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
	"mount_setattr", "mount", "umount2", "pivot_root",
	"acct", "swapon", "swapoff", "reboot", "iopl", "ioperm", "syslog",
	"quotactl", "lookup_dcookie",
	"settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
};

static int resolve(const char *name, struct bc_error *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return bc_error_set(err, ENOSYS, "seccomp: libseccomp does not know syscall %s", name);
	return nr;
}

static int rule_add(scmp_filter_ctx ctx, uint32_t action, const char *name,
		    unsigned n_cmp, const struct scmp_arg_cmp *cmp, struct bc_error *err)
{
	int nr = resolve(name, err);
	if (nr < 0)
		return nr;
	int r = seccomp_rule_add_array(ctx, action, nr, n_cmp, cmp);
	if (r < 0)
		return bc_error_errno(err, -r, "seccomp: cannot add rule for %s", name);
	return 0;
}

/* personality(x) is denied unless the low 32 bits (the kernel takes an
 * unsigned int) are 0 or 0xffffffff. libseccomp refuses two comparisons of
 * one argument in one rule, so the set is written as a union of single
 * masked comparisons: a 32-bit value is neither all zeros nor all ones
 * exactly when, going round the word, some bit i is 1 and bit i+1 is 0. */
static int add_personality(scmp_filter_ctx ctx, struct bc_error *err)
{
	for (unsigned i = 0; i < 32; i++) {
		uint32_t bit = 1u << i, next = 1u << ((i + 1) % 32);
		struct scmp_arg_cmp cmp = SCMP_A0_32(SCMP_CMP_MASKED_EQ, bit | next, bit);
		int r = rule_add(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, &cmp, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* An allowlist: plain[] whatever the arguments, mmap never executable,
 * write() on stderr and on writers[], socket() of the families and types
 * given with protocol 0. */
static int build_allowlist(const int *plain, size_t n_plain, const int *writers, size_t n_writers,
			   const int *families, size_t n_fam, const int *types, size_t n_types,
			   const char *who, scmp_filter_ctx *out, struct bc_error *err)
{
	*out = NULL;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r = ctx ? 0 : -ENOMEM;
	/* a binary tree over the syscall numbers, as the sandbox's */
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	for (size_t i = 0; r == 0 && i < n_plain; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, plain[i], 0);
	/* memory, never executable */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	for (size_t i = 0; r == 0 && i < n_writers; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)writers[i]));
	for (size_t i = 0; r == 0 && i < n_fam; i++)
		for (size_t t = 0; r == 0 && t < n_types; t++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 3,
					     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]),
					     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, (scmp_datum_t)types[t]),
					     SCMP_A2(SCMP_CMP_EQ, 0));
	if (r < 0) {
		if (ctx)
			seccomp_release(ctx);
		return bc_error_errno(err, -r, "%s: build the seccomp filter", who);
	}
	*out = ctx;
	return 0;
}

int bc_seccomp_build_dnsfilter(scmp_filter_ctx *out, struct bc_error *err)
{
	static const int plain[] = {
		SCMP_SYS(read), SCMP_SYS(recvfrom), SCMP_SYS(recvmsg), SCMP_SYS(sendto),
		SCMP_SYS(sendmsg), SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(close),
		SCMP_SYS(connect), SCMP_SYS(accept4), SCMP_SYS(getsockopt),
		SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getrandom),
		SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
		SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall),
	};
	static const int writers[] = { 2, BC_DNSF_AUDIT, BC_DNSF_STATUS, BC_DNSF_PINS };
	/* upstream sockets: IPv4/IPv6 UDP/TCP, nothing else */
	static const int families[] = { AF_INET, AF_INET6 }, types[] = { SOCK_DGRAM, SOCK_STREAM };
	return build_allowlist(plain, ARRAY_SIZE(plain), writers, ARRAY_SIZE(writers), families,
			       ARRAY_SIZE(families), types, ARRAY_SIZE(types), "DNS filter", out, err);
}

int bc_seccomp_build_relay(scmp_filter_ctx *out, struct bc_error *err)
{
	static const int plain[] = {
		SCMP_SYS(read), SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(close),
		SCMP_SYS(connect), SCMP_SYS(accept4), SCMP_SYS(getsockopt), SCMP_SYS(setsockopt),
		SCMP_SYS(shutdown), SCMP_SYS(bind), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
		SCMP_SYS(epoll_ctl), SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
		SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
		SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall),
	};
	static const int writers[] = { 2, BC_RELAY_AUDIT, BC_RELAY_STATUS, BC_RELAY_CONN };
	/* upstream sockets and the host-address probe: IPv4 TCP only */
	static const int families[] = { AF_INET }, types[] = { SOCK_STREAM };
	return build_allowlist(plain, ARRAY_SIZE(plain), writers, ARRAY_SIZE(writers), families,
			       ARRAY_SIZE(families), types, ARRAY_SIZE(types), "relay", out, err);
}

int bc_seccomp_build(const struct bc_policy *p, scmp_filter_ctx *out, struct bc_error *err)
{
	static const unsigned long ioctls[] = { TIOCSTI, TIOCLINUX };
	_cleanup_(bc_seccomp_freep) scmp_filter_ctx ctx = NULL;
	int r;

	(void)p;
	*out = NULL;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return bc_error_set(err, ENOMEM, "seccomp: cannot create a filter context");

	/* Another ABI (i386 int $0x80, x32) kills the process: no program we
	 * run uses one, so such a call is an attack, and a kill is visible
	 * (SIGSYS) where an error code would be ignored. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return bc_error_errno(err, -r, "seccomp: cannot set the bad-arch action");
	/* The caller sets no_new_privs itself and verifies it; libseccomp must
	 * not do it behind its back. Report the kernel's errno on load. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	/* A binary tree over the syscall numbers: an allowed call, the common
	 * case, is decided in about eight comparisons instead of falling
	 * through the whole deny list (every syscall of the sandbox pays
	 * this; BENCHMARKS.md). */
	if (r >= 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return bc_error_errno(err, -r, "seccomp: cannot set filter attributes");

	for (size_t i = 0; i < ARRAY_SIZE(denied_eperm); i++) {
		r = rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied_eperm[i], 0, NULL, err);
		if (r < 0)
			return r;
	}

	r = rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err);
	if (r < 0)
		return r;

	for (size_t i = 0; i < ARRAY_SIZE(ioctls); i++) {
		struct scmp_arg_cmp cmp = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ioctls[i]);
		r = rule_add(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &cmp, err);
		if (r < 0)
			return r;
	}

	struct scmp_arg_cmp vsock = SCMP_A0_32(SCMP_CMP_EQ, AF_VSOCK);
	r = rule_add(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 1, &vsock, err);
	if (r < 0)
		return r;

	r = add_personality(ctx, err);
	if (r < 0)
		return r;

	*out = TAKE_PTR(ctx);
	return 0;
}

int bc_seccomp_export(scmp_filter_ctx ctx, struct bc_seccomp_prog *out, struct bc_error *err)
{
	*out = (struct bc_seccomp_prog){ 0 };
	_cleanup_close_ int fd = memfd_create("bc-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return bc_error_errno(err, errno, "seccomp: memfd_create");
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return bc_error_errno(err, -r, "seccomp: cannot generate the filter");
	off_t size = lseek(fd, 0, SEEK_END);
	size_t insns = size > 0 ? (size_t)size / sizeof(struct sock_filter) : 0;
	if (insns == 0 || insns > BPF_MAXINSNS || (size_t)size % sizeof(struct sock_filter))
		return bc_error_set(err, EINVAL, "seccomp: the generated filter has %lld bytes", (long long)size);
	struct sock_filter *f = calloc(insns, sizeof *f);
	if (!f)
		return bc_error_errno(err, ENOMEM, "seccomp: out of memory");
	if (pread(fd, f, (size_t)size, 0) != size) {
		free(f);
		return bc_error_errno(err, EIO, "seccomp: read the generated filter back");
	}
	out->fprog = (struct sock_fprog){ .len = (unsigned short)insns, .filter = f };
	return 0;
}

void bc_seccomp_prog_free(struct bc_seccomp_prog *prog)
{
	free(prog->fprog.filter);
	prog->fprog = (struct sock_fprog){ 0 };
}

int bc_seccomp_load_prog(const struct bc_seccomp_prog *prog, struct bc_error *err)
{
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	if (nnp < 0)
		return bc_error_errno(err, errno, "seccomp: cannot read no_new_privs");
	if (nnp != 1)
		return bc_error_set(err, EPERM, "seccomp: no_new_privs is not set; refusing to load the filter");
	if (!prog->fprog.filter)
		return bc_error_set(err, EINVAL, "seccomp: no filter to load");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog->fprog) < 0)
		return bc_error_errno(err, errno, "seccomp: cannot load the filter");
	return 0;
}

int bc_seccomp_load(scmp_filter_ctx ctx, struct bc_error *err)
{
	struct bc_seccomp_prog prog;
	int r = bc_seccomp_export(ctx, &prog, err);
	if (r < 0)
		return r;
	r = bc_seccomp_load_prog(&prog, err);
	bc_seccomp_prog_free(&prog);
	return r;
}

/* ---- foreign ABIs --------------------------------------------------------- */

const char *bc_abi_name(enum bc_abi abi)
{
	return abi == BC_ABI_I386 ? "i386" : abi == BC_ABI_X32 ? "x32" : "?";
}

#define ABI_RAN 10      /* the child's exit codes; 100 + errno: it returned one */
#define ABI_ERRNO 100

/* getpid through abi; only ever called in a child that may die of it. */
static long abi_getpid(enum bc_abi abi)
{
#if defined(__x86_64__)
	long r = -ENOSYS;
	if (abi == BC_ABI_I386)
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	else if (abi == BC_ABI_X32)
		__asm__ volatile("syscall" : "=a"(r) : "a"(0x40000000L | SYS_getpid) : "memory", "rcx", "r11");
	return r;
#else
	(void)abi;
	return -ENOSYS;
#endif
}

int bc_abi_try(enum bc_abi abi, char *how, size_t len)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* The kernel's own answer, not a handler's (sanitizers catch
		 * SIGSEGV and exit 1). */
		static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGSYS };
		for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
			signal(sigs[i], SIG_DFL);
		long r = abi_getpid(abi);
		_exit(r == getpid() ? ABI_RAN : r < 0 && r > -(255 - ABI_ERRNO) ? ABI_ERRNO - (int)r : 1);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(st))
		snprintf(how, len, "killed by SIG%s", sigabbrev_np(WTERMSIG(st)) ?: "?");
	else if (WEXITSTATUS(st) == ABI_RAN)
		snprintf(how, len, "ran");
	else if (WEXITSTATUS(st) > ABI_ERRNO)
		snprintf(how, len, "returned %s", strerrorname_np(WEXITSTATUS(st) - ABI_ERRNO) ?: "an error");
	else
		snprintf(how, len, "exited %d", WEXITSTATUS(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == ABI_RAN;
}
