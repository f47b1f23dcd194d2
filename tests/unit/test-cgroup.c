/* test-cgroup.c: the pure parts of cgroup.c (layout detection from
 * /proc/self/cgroup and mountinfo, parent paths, cpu.max, memory rounding)
 * with fixture texts from a v1 host, a v2-only host and containers; the
 * pure parts of systemd.c (scope names, delegation marks and the walk that
 * judges them, the slice for a scope). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "cgroup.h"
#include "systemd.h"
#include "../tap.h"

/* This VM: v1 controllers, an empty cgroup2 at /sys/fs/cgroup/unified. */
static const char v1_cgroup[] =
	"9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n"
	"4:memory:/process_api/078a\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/user/42\n0::/\n";
static const char v1_mountinfo[] =
	"22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* A production node: cgroup2 only, launcher in a delegated user scope. */
static const char v2_cgroup[] =
	"0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n";
static const char v2_mountinfo[] =
	"22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
	"30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
	"rw,nsdelegate,memory_recursiveprot\n";

/* A container with cpu,cpuacct co-mounted, a mount root below the
 * hierarchy root, and a mountpoint with an escaped space. */
static const char ct_cgroup[] =
	"5:cpu,cpuacct:/docker/abc/job\n4:memory:/docker/abc\n3:pids:/docker/abc\n0::/\n";
static const char ct_mountinfo[] =
	"50 40 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
	"51 40 0:41 /docker/abc /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
	"52 40 0:42 / /my\\040cg/pids rw shared:3 master:1 - cgroup cgroup rw,pids\n";

/* A v2 host as seen from inside a cgroup namespace and a v2 mount. */
static const char ns_cgroup[] = "0::/\n";
static const char ns_mountinfo[] =
	"700 600 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";

static void test_v1(void)
{
	struct bc_cgroup_layout l;
	is_int(bc_cgroup_layout_parse(&l, v1_cgroup, v1_mountinfo), 0, "v1 host parses");
	is_int(l.version, 1, "v1 host: memory on a v1 hierarchy means v1");
	is_str(l.mount[BC_CG_MEMORY], "/sys/fs/cgroup/memory", "v1 memory mount");
	is_str(l.self[BC_CG_MEMORY], "/process_api/078a", "v1 memory self");
	is_str(l.mount[BC_CG_PIDS], "/sys/fs/cgroup/pids", "v1 pids mount");
	is_str(l.mount[BC_CG_CPU], "/sys/fs/cgroup/cpu", "cpu mount is not cpuacct's or cpuset's");
	is_str(l.mount[BC_CG_CPUACCT], "/sys/fs/cgroup/cpuacct", "cpuacct mount");
	is_str(l.mount[BC_CG_FREEZER], "/sys/fs/cgroup/freezer", "freezer mount");
	ok(l.mount[BC_CG_UNIFIED] == NULL, "v1: the empty cgroup2 mount is ignored");

	char *p = bc_cgroup_parent_path(&l, BC_CG_MEMORY, NULL);
	is_str(p, "/sys/fs/cgroup/memory/process_api/078a/browsercage", "default parent below own cgroup");
	free(p);
	p = bc_cgroup_parent_path(&l, BC_CG_PIDS, NULL);
	is_str(p, "/sys/fs/cgroup/pids/browsercage", "default parent at the root has one slash");
	free(p);
	p = bc_cgroup_parent_path(&l, BC_CG_CPU, "/deleg/x/");
	is_str(p, "/sys/fs/cgroup/cpu/deleg/x", "explicit parent is relative to the hierarchy root");
	free(p);
	ok(bc_cgroup_parent_path(&l, BC_CG_UNIFIED, NULL) == NULL, "no path for an absent hierarchy");
	bc_cgroup_layout_free(&l);
}

static void test_v2(void)
{
	struct bc_cgroup_layout l;
	is_int(bc_cgroup_layout_parse(&l, v2_cgroup, v2_mountinfo), 0, "v2 host parses");
	is_int(l.version, 2, "v2-only host is v2");
	is_str(l.mount[BC_CG_UNIFIED], "/sys/fs/cgroup", "v2 mount");
	is_str(l.self[BC_CG_UNIFIED], "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope",
	       "v2 self");
	for (int h = BC_CG_MEMORY; h < BC_CG_NHIER; h++)
		ok(l.mount[h] == NULL, "v2: no v1 hierarchy %d", h);
	char *p = bc_cgroup_parent_path(&l, BC_CG_UNIFIED, NULL);
	is_str(p, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope/browsercage",
	       "v2 default parent below the delegated scope");
	free(p);
	bc_cgroup_layout_free(&l);

	/* A launcher that already moved itself into its leaf. */
	is_int(bc_cgroup_layout_parse(&l, "0::/svc/browsercage-launcher\n", v2_mountinfo), 0, "leaf parses");
	p = bc_cgroup_parent_path(&l, BC_CG_UNIFIED, NULL);
	is_str(p, "/sys/fs/cgroup/svc/browsercage", "the launcher leaf means the cgroup above it");
	free(p);
	bc_cgroup_layout_free(&l);

	is_int(bc_cgroup_layout_parse(&l, ns_cgroup, ns_mountinfo), 0, "cgroupns view parses");
	p = bc_cgroup_parent_path(&l, BC_CG_UNIFIED, NULL);
	is_str(p, "/sys/fs/cgroup/browsercage", "cgroupns root: parent right below the mount");
	free(p);
	bc_cgroup_layout_free(&l);
}

static void test_container(void)
{
	struct bc_cgroup_layout l;
	is_int(bc_cgroup_layout_parse(&l, ct_cgroup, ct_mountinfo), 0, "container parses");
	is_int(l.version, 1, "container is v1");
	is_str(l.mount[BC_CG_CPU], "/sys/fs/cgroup/cpu,cpuacct", "co-mounted cpu");
	is_str(l.mount[BC_CG_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct", "co-mounted cpuacct, same mount");
	is_str(l.self[BC_CG_CPU], "/job", "mount root stripped from self");
	is_str(l.self[BC_CG_MEMORY], "/", "self equal to the mount root is /");
	is_str(l.mount[BC_CG_PIDS], "/my cg/pids", "octal escape in the mountpoint decoded");
	is_str(l.self[BC_CG_PIDS], "/docker/abc", "mount root / keeps self");
	ok(l.mount[BC_CG_FREEZER] == NULL, "no freezer mounted");
	bc_cgroup_layout_free(&l);
}

/* The pre-clone shortcut: the memory controller on a v1 hierarchy. */
static void test_memory_v1(void)
{
	ok(bc_cgroup_memory_v1_in(v1_cgroup), "v1 host: memory on a v1 hierarchy");
	ok(bc_cgroup_memory_v1_in(ct_cgroup), "container: memory on a v1 hierarchy");
	ok(!bc_cgroup_memory_v1_in(v2_cgroup), "v2 host: memory not on v1");
	ok(!bc_cgroup_memory_v1_in(ns_cgroup), "cgroup namespace view of v2: not v1");
	ok(!bc_cgroup_memory_v1_in("5:cpu,cpuacct:/a\n0::/\n"), "hybrid without a memory hierarchy: not v1");
	ok(bc_cgroup_memory_v1_in("3:cpu,memory,pids:/x\n"), "memory among other controllers");
	ok(!bc_cgroup_memory_v1_in("2:memoryx:/x\n1:name=memory:/\n"), "no word that only looks like memory");
	ok(!bc_cgroup_memory_v1_in("4:memory"), "a line without its path: not counted");
	ok(!bc_cgroup_memory_v1_in(""), "empty");
}

static void test_none(void)
{
	struct bc_cgroup_layout l;
	/* memory listed but not mounted, and no cgroup2: nothing usable. */
	is_int(bc_cgroup_layout_parse(&l, "4:memory:/\n", "1 0 0:1 / / rw - ext4 x rw\n"), -ENOENT,
	       "no memory hierarchy mounted: -ENOENT");
	is_int(l.version, 0, "version 0");
	bc_cgroup_layout_free(&l);
	is_int(bc_cgroup_layout_parse(&l, "garbage\n::\n", "garbage\n- - -\n"), -ENOENT, "garbage: -ENOENT");
	bc_cgroup_layout_free(&l);
}

static void test_cpu_max(void)
{
	char buf[64];
	int64_t q;
	uint64_t per;
	is_int(bc_cgroup_cpu_max(0, buf, sizeof buf, &q, &per), 0, "cpu 0");
	is_str(buf, "max 100000", "no cpu limit is max");
	is_int(q, -1, "v1 quota -1 for none");
	bc_cgroup_cpu_max(500, buf, sizeof buf, &q, &per);
	is_str(buf, "50000 100000", "cpu 0.5");
	bc_cgroup_cpu_max(1500, buf, sizeof buf, &q, &per);
	is_str(buf, "150000 100000", "cpu 1.5");
	is_int(q, 150000, "v1 quota for 1.5");
	is_int(per, 100000, "v1 period");
	bc_cgroup_cpu_max(5, buf, sizeof buf, &q, &per);
	is_str(buf, "5000 1000000", "cpu 0.005 stretches the period past the 1 ms quota floor");
	bc_cgroup_cpu_max(1, buf, sizeof buf, &q, &per);
	is_str(buf, "1000 1000000", "cpu 0.001 at the floor");
	char small[4];
	ok(bc_cgroup_cpu_max(500, small, sizeof small, &q, &per) < 0, "short buffer refused");
}

static void test_memory(void)
{
	ok(bc_cgroup_memory_matches(64 << 20, 64 << 20, 4096), "exact");
	ok(bc_cgroup_memory_matches(10000, 8192, 4096), "rounded down to pages");
	ok(!bc_cgroup_memory_matches(10000, 12288, 4096), "rounded up is a mismatch");
	ok(!bc_cgroup_memory_matches(64 << 20, UINT64_MAX, 4096), "max is a mismatch");
	ok(!bc_cgroup_memory_matches(64 << 20, 9223372036854771712ull, 4096), "v1 unlimited is a mismatch");
}

/* bc_cgroup_check_self against this process's own /proc/self/cgroup: it
 * is in no "bc-..." cgroup, so any hierarchy asked for is missing. */
static void test_check_self(void)
{
	struct bc_error err = {0};
	is_int(bc_cgroup_check_self("bc-none", 0, &err), 0, "check_self: no hierarchy asked, nothing to miss");
	is_int(bc_cgroup_check_self("bc-none", 1u << BC_CG_MEMORY, &err), -EIO,
	       "check_self: not in a cgroup named bc-none");
	is_str(err.msg, "not in its memory cgroup bc-none after joining it", "  the message names the hierarchy");
	is_int(bc_cgroup_check_self("bc-none", 1u << BC_CG_UNIFIED, &err), -EIO,
	       "check_self: the v2 line is checked too");
	char v2[] = "0::/system.slice/browsercage-ab.scope/browsercage/bc-ab\n";
	is_int(bc_cgroup_check_text(v2, "bc-ab", 1u << BC_CG_UNIFIED, &err), 0, "check_text: in its v2 cgroup");
	char v2out[] = "0::/system.slice/browsercage-ab.scope/browsercage-launcher\n";
	is_int(bc_cgroup_check_text(v2out, "bc-ab", 1u << BC_CG_UNIFIED, &err), -EIO, "check_text: not in it");
	char v1[] = "4:memory:/browsercage/bc-ab\n3:pids:/browsercage/bc-ab\n0::/\n";
	is_int(bc_cgroup_check_text(v1, "bc-ab", 1u << BC_CG_MEMORY | 1u << BC_CG_PIDS, &err), 0,
	       "check_text: in its v1 cgroups");
	char v1v2[] = "4:memory:/browsercage/bc-ab\n0::/\n";
	is_int(bc_cgroup_check_text(v1v2, "bc-ab", 1u << BC_CG_UNIFIED, &err), -EIO,
	       "check_text: a v1 line does not stand for the v2 one");
}

static void test_scope_name(void)
{
	char buf[256];
	is_int(bc_systemd_scope_name("bc-0123abcd", buf, sizeof buf), 0, "scope name");
	is_str(buf, "browsercage-0123abcd.scope", "  bc-SESSION gives browsercage-SESSION.scope");
	is_int(bc_systemd_scope_name("bc-doctor-812", buf, sizeof buf), 0, "doctor's scope name");
	is_str(buf, "browsercage-doctor-812.scope", "  the doctor's test sandbox");
	is_int(bc_systemd_scope_name("a b/c\\", buf, sizeof buf), 0, "odd characters");
	is_str(buf, "browsercage-a\\x20b\\x2fc\\x5c.scope", "  escaped as \\xNN, as systemd escapes");
	is_int(bc_systemd_scope_name("bc-", buf, sizeof buf), 0, "a bare prefix stays");
	is_str(buf, "browsercage-bc-.scope", "  bc- alone is kept whole");
	char small[20];
	is_int(bc_systemd_scope_name("bc-0123456789", small, sizeof small), -ENAMETOOLONG, "short buffer refused");
	char big[600];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	is_int(bc_systemd_scope_name(big, buf, sizeof buf), -ENAMETOOLONG, "over systemd's 255 characters refused");
}

static void test_delegate_value(void)
{
	is_int(bc_systemd_delegate_value("1", 1), 1, "\"1\" is delegated");
	is_int(bc_systemd_delegate_value("0", 1), 0, "\"0\" is not");
	is_int(bc_systemd_delegate_value("1\0", 2), 1, "a trailing NUL is not part of the value");
	is_int(bc_systemd_delegate_value("yes\n", 4), 1, "yes with a newline");
	is_int(bc_systemd_delegate_value("FALSE", 5), 0, "false in capitals");
	is_int(bc_systemd_delegate_value("", 0), -EINVAL, "empty is no answer");
	is_int(bc_systemd_delegate_value("11", 2), -EINVAL, "\"11\" is no boolean");
	is_int(bc_systemd_delegate_value("1", 0), -EINVAL, "length counts, not the NUL");
}

/* Marks for the walk: path -> value; anything else has none. */
struct fake_marks { const char *path[4]; int value[4]; };

static int fake_mark(const char *p, void *ud)
{
	const struct fake_marks *f = ud;
	for (int i = 0; i < 4 && f->path[i]; i++)
		if (strcmp(f->path[i], p) == 0)
			return f->value[i];
	return -ENODATA;
}

static void test_delegated(void)
{
	const char *mnt = "/sys/fs/cgroup";
	size_t m = strlen(mnt);
	struct fake_marks scope = { { "/sys/fs/cgroup/system.slice/run-r1.scope" }, { 1 } };
	ok(bc_systemd_delegated("/sys/fs/cgroup/system.slice/run-r1.scope", m, fake_mark, &scope),
	   "a scope marked 1 is delegated");
	ok(bc_systemd_delegated("/sys/fs/cgroup/system.slice/run-r1.scope/payload", m, fake_mark, &scope),
	   "a plain cgroup below it belongs to its owner");
	ok(!bc_systemd_delegated("/sys/fs/cgroup/system.slice/run-r1.scope/x/app.service", m, fake_mark, &scope),
	   "an unmarked unit below it is not ours");
	struct fake_marks none = { { NULL }, { 0 } };
	ok(!bc_systemd_delegated("/sys/fs/cgroup/system.slice/foo.service", m, fake_mark, &none),
	   "a plain system service (no mark) is not delegated");
	ok(!bc_systemd_delegated("/sys/fs/cgroup/system.slice/foo.service/sub", m, fake_mark, &none),
	   "nor a cgroup below it");
	ok(!bc_systemd_delegated("/sys/fs/cgroup", m, fake_mark, &none), "the root is not delegated");
	ok(!bc_systemd_delegated("/sys/fs/cgroup/plain", m, fake_mark, &none), "no mark up to the root: not delegated");
	struct fake_marks zero = { { "/sys/fs/cgroup/system.slice/run-r2.scope" }, { 0 } };
	ok(!bc_systemd_delegated("/sys/fs/cgroup/system.slice/run-r2.scope", m, fake_mark, &zero),
	   "a unit marked 0 is not delegated");
	/* A user manager: user@1000.service is delegated to it (trusted.delegate,
	 * invisible to the user), its units are the manager's. */
	struct fake_marks user = { { "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service",
				     "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/d.scope" },
				   { 1, 1 } };
	ok(!bc_systemd_delegated("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.service",
				 m, fake_mark, &user), "a user manager's plain service is the manager's, not ours");
	ok(bc_systemd_delegated("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/d.scope",
				m, fake_mark, &user), "a user scope with Delegate=yes is ours");
	ok(bc_systemd_is_unit("/a/b.slice") && bc_systemd_is_unit("x.socket") && !bc_systemd_is_unit("/a/.scope") &&
	   !bc_systemd_is_unit("/a/browsercage") && !bc_systemd_is_unit("/a/b.scope/c"), "unit names by their suffix");
}

static void test_slice_for(void)
{
	char buf[64];
	is_int(bc_systemd_slice_for("/system.slice/foo.service", false, buf, sizeof buf), 0, "slice of a system service");
	is_str(buf, "system.slice", "  its slice");
	bc_systemd_slice_for("/user.slice/user-0.slice/session-3.scope", false, buf, sizeof buf);
	is_str(buf, "user-0.slice", "root in a login session: the session's slice");
	bc_systemd_slice_for("/init.scope", false, buf, sizeof buf);
	is_str(buf, "", "no slice above: the manager's default");
	bc_systemd_slice_for("/", false, buf, sizeof buf);
	is_str(buf, "", "the root cgroup: the manager's default");
	bc_systemd_slice_for("/user.slice/user-1000.slice/user@1000.service/app.slice/run-u7.service", true,
			     buf, sizeof buf);
	is_str(buf, "app.slice", "a user manager's service: its slice in the manager");
	bc_systemd_slice_for("/user.slice/user-1000.slice/user@1000.service/app.slice/a-b.slice/x.scope", true,
			     buf, sizeof buf);
	is_str(buf, "a-b.slice", "  the nearest slice");
	bc_systemd_slice_for("/user.slice/user-1000.slice/session-2.scope", true, buf, sizeof buf);
	is_str(buf, "", "a user outside the user manager: the manager's default, never a system slice");
	bc_systemd_slice_for("/user.slice/user-1000.slice/user@1000.service/init.scope", true, buf, sizeof buf);
	is_str(buf, "", "the user manager's own scope: its default");
	char small[8];
	is_int(bc_systemd_slice_for("/system.slice/foo.service", false, small, sizeof small), -ENAMETOOLONG,
	       "short buffer refused");
}

int main(void)
{
	test_v1();
	test_memory_v1();
	test_v2();
	test_container();
	test_none();
	test_cpu_max();
	test_memory();
	test_check_self();
	test_scope_name();
	test_delegate_value();
	test_delegated();
	test_slice_for();
	return tap_done();
}
