/* cgroup.h: the sandbox's cgroup(s) and the limits written into them.
 *
 * Two layouts are supported:
 *   v2  one directory on the unified hierarchy (memory, pids, cpu there);
 *   v1  one directory per hierarchy: memory, pids, cpu, plus freezer (used
 *       to kill without racing forks) when it is mounted. None in cpuacct's
 *       hierarchy, whose usage nothing reads (gc still removes the ones
 *       launchers before 2026-12 made there).
 * Which one is used is decided from /proc/self/cgroup and
 * /proc/self/mountinfo: v2 when the memory controller is not bound to a v1
 * hierarchy and a cgroup2 mount exists, else v1.
 *
 * Default placement (parent == NULL): a `browsercage` child of the caller's
 * own cgroup in each hierarchy, created if missing. On v2 the "no internal
 * processes" rule means controllers cannot be enabled in the caller's own
 * cgroup while it holds processes; the launcher then moves itself into a
 * leaf child `browsercage-launcher` of its own cgroup (never touching
 * anything above it, so a delegated subtree is enough), enables the
 * controllers in its own cgroup and in `browsercage`, and puts each sandbox
 * at <own>/browsercage/<name>.
 *
 * On a systemd host (v2) our own cgroup is used only when systemd delegated
 * it to us and no other process sits in it (see v2_delegated in cgroup.c).
 * Otherwise the launcher asks systemd for a transient scope with
 * Delegate=yes holding itself (systemd.h) and then proceeds as above with
 * the scope as its own cgroup: <scope>/browsercage-launcher holds the
 * launcher, <scope>/browsercage/<name> each sandbox. It never writes into
 * a unit systemd did not delegate; the scope is collected once empty.
 * Nothing on v1 or without systemd changes.
 *
 * Ownership: every directory this module creates is opened O_DIRECTORY and
 * held with flock(LOCK_EX) for the sandbox's lifetime. bc_cgroup_gc() treats
 * a bc-* directory whose lock it can take as abandoned. The lock fds are
 * O_CLOEXEC, so a forked child holds them only until it execs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"
#include "util.h"

/* Index of a hierarchy (v1) or the unified one (v2) in struct bc_cgroup. */
enum bc_cg_hier {
	BC_CG_UNIFIED,     /* v2 only */
	BC_CG_MEMORY,      /* v1 from here on */
	BC_CG_PIDS,
	BC_CG_CPU,
	BC_CG_CPUACCT,
	BC_CG_FREEZER,
	BC_CG_NHIER
};

/* Limit bits for bc_cgroup.wanted / .applied. */
#define BC_CG_LIMIT_MEMORY 0x1u
#define BC_CG_LIMIT_PIDS   0x2u
#define BC_CG_LIMIT_CPU    0x4u

struct bc_cgroup_dir {
	char *path;        /* absolute path of the sandbox's directory; NULL = unused */
	int fd;            /* O_DIRECTORY fd holding the ownership flock; valid iff path */
	bool created;      /* we made it, so destroy removes it */
};

struct bc_cgroup {
	int version;                            /* 1 or 2; 0 when nothing was set up */
	struct bc_cgroup_dir dir[BC_CG_NHIER];
	bool required;                          /* the policy's limits_required */
	bool scope;                             /* v2: in a transient scope systemd delegated to us */
	unsigned wanted;                        /* BC_CG_LIMIT_* the policy asked for */
	unsigned applied;                       /* BC_CG_LIMIT_* written and read back */
	/* Why wanted & ~applied is not empty (limits not required), or a note
	 * such as "no swap accounting"; "" when there is nothing to say. The
	 * launcher puts it in the audit log. */
	char note[BC_ERRMSG_MAX];
};

/* What the kernel counted, for the audit log. UINT64_MAX = unknown. */
struct bc_cgroup_events {
	uint64_t oom_kill;       /* processes killed by the OOM killer */
	uint64_t pids_max;       /* forks refused at pids.max */
};

/* Create the sandbox cgroup NAME under PARENT (relative to each hierarchy's
 * root; NULL = `browsercage` under the caller's own cgroup) and write the
 * memory, pids and cpu limits from p, reading each back. cg is
 * (re)initialised first. When a limit cannot be applied and
 * p->limits_required, fails with a message saying what to configure and
 * removes whatever it created; otherwise the limit is left out of
 * cg->applied and cg->note says why. have: where the hierarchies are,
 * as bc_cgroup_layout_read found them just before (taken: freed and
 * cleared), or NULL (or a layout never read) to read them here. Returns 0
 * or -errno. */
struct bc_cgroup_layout;
int bc_cgroup_setup(struct bc_cgroup *cg, const struct bc_policy *p, const char *parent,
		    const char *name, struct bc_cgroup_layout *have, struct bc_error *err);

/* Does the calling process sit, in every hierarchy h with bit 1 << h set
 * in hiers (BC_CG_UNIFIED: the v2 line), in a cgroup whose last path
 * component is leaf? Reads /proc/self/cgroup. 0, or -EIO with err naming
 * the first hierarchy it is not in (-errno if the file cannot be read). */
int bc_cgroup_check_self(const char *leaf, unsigned hiers, struct bc_error *err);

/* The same for a /proc/PID/cgroup text (modified in place). */
int bc_cgroup_check_text(char *text, const char *leaf, unsigned hiers, struct bc_error *err);


/* The hierarchies (1 << h bits) cg has a directory in. */
unsigned bc_cgroup_hiers(const struct bc_cgroup *cg);

/* Move pid (with all its threads) into every sandbox directory. Call it for
 * the sandbox's first process before that process starts anything. Fails
 * when a directory holding a limit cannot take the pid. */
int bc_cgroup_attach(struct bc_cgroup *cg, pid_t pid, struct bc_error *err);

/* v2: an O_DIRECTORY fd of the sandbox cgroup for clone3(CLONE_INTO_CGROUP).
 * Owned by cg (do not close); -1 on v1 or when there is none. */
int bc_cgroup_v2_fd(struct bc_cgroup *cg);

/* SIGKILL every process in the sandbox cgroup(s) and wait (bounded) until
 * they are gone. v2: cgroup.kill; v1: freeze, kill each pid, thaw, repeat.
 * Returns 0 once empty, -EBUSY if processes remain after the bound. */
int bc_cgroup_kill(struct bc_cgroup *cg);

/* Read OOM kills, pids.max hits, CPU usage and peak memory into ev. */
int bc_cgroup_events(struct bc_cgroup *cg, struct bc_cgroup_events *ev);

/* In a forked child: close the directory fds the child inherited (the
 * parent keeps its own, and with them the ownership locks) and empty the
 * child's copy of cg without removing anything. */
void bc_cgroup_forget(struct bc_cgroup *cg);

/* Kill, wait until empty, remove every directory setup created and close
 * the fds. Idempotent; safe on a zeroed or half-set-up struct. Returns 0 or
 * the first -errno (the struct is emptied either way). */
int bc_cgroup_destroy(struct bc_cgroup *cg);

/* Remove leftover bc-* cgroups under PARENT (same meaning as in setup)
 * whose owner is gone (their flock is free), killing any processes left in
 * them first. Returns the number removed, or -errno. */
int bc_cgroup_gc(const char *parent, struct bc_error *err);

/* The same for the one cgroup NAME (e.g. the bc-SESSION of a dead runtime
 * record). Returns 1 when it was removed, 0 when absent or alive, -errno. */
int bc_cgroup_gc_name(const char *parent, const char *name, struct bc_error *err);

/* ---- pure parts, exposed for the unit tests ---------------------------- */

/* Where the hierarchies are and where the caller sits in each. */
struct bc_cgroup_layout {
	int version;                   /* 2, 1, or 0 when no memory controller */
	char *mount[BC_CG_NHIER];      /* mountpoint of the hierarchy, NULL = absent */
	char *self[BC_CG_NHIER];       /* caller's cgroup relative to that mount, "/..." */
};

/* Read the layout (/proc/self/cgroup, /proc/self/mountinfo): 0, -ENOENT
 * when no usable hierarchy holds the memory controller (l->version is then
 * 0: the version bc_cgroup_setup would use is l->version), or -errno. */
int bc_cgroup_layout_read(struct bc_cgroup_layout *l);

/* Does /proc/self/cgroup put the memory controller on a v1 hierarchy?
 * Then the layout is v1 but where that hierarchy is not mounted (one
 * small read, where bc_cgroup_layout_read also reads mountinfo). _in:
 * the same for the text of a /proc/PID/cgroup (pure). */
bool bc_cgroup_memory_v1(void);
bool bc_cgroup_memory_v1_in(const char *proc_cgroup);

/* Build the layout from the texts of /proc/self/cgroup and
 * /proc/self/mountinfo. Returns 0, -ENOMEM, or -ENOENT when no usable
 * hierarchy holds the memory controller (l->version is then 0). */
int bc_cgroup_layout_parse(struct bc_cgroup_layout *l, const char *proc_cgroup,
			   const char *mountinfo);
void bc_cgroup_layout_free(struct bc_cgroup_layout *l);

/* The parent directory for sandboxes in hierarchy h: mount + parent, or
 * mount + self + "/browsercage" when parent is NULL. Newly allocated. */
char *bc_cgroup_parent_path(const struct bc_cgroup_layout *l, enum bc_cg_hier h,
			    const char *parent);

/* cpu.max for millis thousandths of a core: "max 100000" for 0, else
 * "QUOTA PERIOD" with period 100000 us (1000000 when the quota would fall
 * under the kernel's 1000 us minimum). Fills quota and period in us
 * (quota -1 for none) for the v1 files. */
int bc_cgroup_cpu_max(uint32_t millis, char *buf, size_t len, int64_t *quota, uint64_t *period);

/* Is `got` (as read back from a memory limit file) what writing `want`
 * bytes yields, allowing for the kernel rounding down to pages? */
bool bc_cgroup_memory_matches(uint64_t want, uint64_t got, uint64_t page_size);
