/* seccomp.h: the syscall filter loaded last, just before execve.
 *
 * Default action allow; a fixed list of calls that a browser never needs and
 * that widen the kernel's attack surface fail with EPERM (clone3 with ENOSYS,
 * so glibc falls back to clone(), whose flags a filter can see). Only the
 * native ABI is allowed: a syscall made through another ABI (i386 via
 * int $0x80, x32 via __X32_SYSCALL_BIT) kills the process with SIGSYS.
 * Nested user namespaces, seccomp()/prctl(PR_SET_SECCOMP) and chroot stay
 * allowed because Chromium's own sandbox uses them. */
#pragma once

#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>

#include "policy.h"
#include "util.h"

/* Build the filter for policy p (the list is fixed for now; p is reserved for
 * keys that relax or tighten it). Called early, before any namespace exists,
 * so a libseccomp or kernel-header mismatch refuses the launch up front. On
 * success *out owns a context the caller frees with seccomp_release(). */
int bc_seccomp_build(const struct bc_policy *p, scmp_filter_ctx *out, struct bc_error *err);

/* Load ctx into the kernel for this thread. The caller has already set
 * no_new_privs (bc_set_no_new_privs); load refuses if it is not set and
 * never needs privilege. Does not free ctx. */
int bc_seccomp_load(scmp_filter_ctx ctx, struct bc_error *err);

/* The same in two halves: export the filter of ctx once as a BPF program
 * (what libseccomp would generate again at every load: about half the
 * load's cost), then load that program with one syscall, under the same
 * no_new_privs rule. Free the program with bc_seccomp_prog_free. */
struct bc_seccomp_prog {
	struct sock_fprog fprog;
};
int bc_seccomp_export(scmp_filter_ctx ctx, struct bc_seccomp_prog *out, struct bc_error *err);
int bc_seccomp_load_prog(const struct bc_seccomp_prog *prog, struct bc_error *err);

/* The program of bc_seccomp_build's filter, generated at build time
 * (seccomp-gen.c; it depends on no policy): what the sandbox loads. */
extern const struct sock_fprog bc_seccomp_sandbox;

/* The DNS filter's and the relay's allowlists. They allow write() on
 * stderr and on their writers, named by the numbers bc_fds_arrange gives
 * their descriptors (in the order of these enums); a writer a process
 * does not have leaves its number free, and what could later take it is
 * only a socket, on which write() is a send the filter allows anyway.
 * Their programs, generated at build time as well: */
enum bc_dnsfilter_fd {
	BC_DNSF_UDP = BC_FD_BASE, BC_DNSF_TCP, BC_DNSF_NFT, BC_DNSF_AUDIT, BC_DNSF_STATUS,
	BC_DNSF_CHAN, BC_DNSF_PINS, BC_DNSF_END
};
enum bc_relay_fd {
	BC_RELAY_LISTEN = BC_FD_BASE, BC_RELAY_NFT, BC_RELAY_AUDIT, BC_RELAY_STATUS, BC_RELAY_CONN,
	BC_RELAY_END
};
int bc_seccomp_build_dnsfilter(scmp_filter_ctx *out, struct bc_error *err);
int bc_seccomp_build_relay(scmp_filter_ctx *out, struct bc_error *err);
extern const struct sock_fprog bc_seccomp_dnsfilter, bc_seccomp_relay;
void bc_seccomp_prog_free(struct bc_seccomp_prog *prog);

/* The foreign system-call ABIs of this architecture (x86_64: i386 through
 * int $0x80, x32 through the 0x40000000 bit), and what the kernel does with
 * a getpid entered through one, tried in a forked child outside any filter
 * loaded since (a container's filter, if any, still applies): whether it
 * runs is what the filter's bad-arch action has to cover. Kernels without
 * IA32 emulation fault int $0x80 (SIGSEGV); without x32, ENOSYS.
 * bc_abi_try returns 1 if the call ran, 0 if the kernel (or a filter)
 * refused it, with how it ended in how ("ran", "returned ENOSYS", "killed
 * by SIGSEGV"), or -errno if no child could be run. */
enum bc_abi { BC_ABI_I386, BC_ABI_X32, BC_ABI_N };
const char *bc_abi_name(enum bc_abi abi);
int bc_abi_try(enum bc_abi abi, char *how, size_t len);

/* Free a context built by bc_seccomp_build; for _cleanup_(bc_seccomp_freep). */
static inline void bc_seccomp_freep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}
