/* test-hostids.c: the pure parts of the host id range (hostids.h): the
 * browsercage line of /etc/subuid, overlaps with other subordinate ranges
 * and with accounts. No privileges needed. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "../tap.h"
#include "hostids.h"

static void test_find(void)
{
	uint32_t s = 0, c = 0;
	unsigned line = 0;
	is_int(bc_ids_find_sub("", &s, &c, &line), 0, "an empty file has no browsercage range");
	is_int(bc_ids_find_sub("alice:100000:65536\n", &s, &c, &line), 0, "another user's range is not ours");
	is_int(bc_ids_find_sub("alice:100000:65536\nbrowsercage:2000000000:4096\n", &s, &c, &line), 1,
	       "the browsercage line is found");
	ok(s == 2000000000u && c == 4096, "...with its start and count (%u, %u)", s, c);
	is_int(bc_ids_find_sub("browsercage:5:7", &s, &c, &line), 1, "a last line without newline counts");
	ok(s == 5 && c == 7, "...(%u, %u)", s, c);
	is_int(bc_ids_find_sub("browsercagex:1:2\nxbrowsercage:1:2\n", &s, &c, &line), 0,
	       "names are matched whole");
	static const char *const bad[] = {
		"browsercage:1\n", "browsercage:1:2:3\n", "browsercage:x:2\n", "browsercage:1:1\n",
		"browsercage:0:100\n", "browsercage:-1:100\n", "browsercage:4294967290:100\n",
		"browsercage:1:\n", "browsercage::2\n", "browsercage:99999999999:2\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		line = 0;
		char text[64];
		snprintf(text, sizeof text, "a:1:2\n%s", bad[i]);
		ok(bc_ids_find_sub(text, &s, &c, &line) == -EINVAL && line == 2, "refused at line 2: %.*s",
		   (int)strlen(bad[i]) - 1, bad[i]);
	}
	ok(bc_ids_find_sub("browsercage:10:2\nbrowsercage:20:2\n", &s, &c, &line) == -EINVAL && line == 2,
	   "a second browsercage line is refused");
}

static void test_overlap(void)
{
	char who[64] = "";
	const char *sub = "alice:100000:65536\nbrowsercage:50:10\nbob:165536:65536\n";
	is_int(bc_ids_sub_overlap(sub, 231072, 10, who, sizeof who), 0, "a range after every other is free");
	is_int(bc_ids_sub_overlap(sub, 50, 10, who, sizeof who), 0, "our own line does not collide with us");
	is_int(bc_ids_sub_overlap(sub, 99990, 11, who, sizeof who), 1, "a range reaching alice's first id collides");
	is_str(who, "alice", "...and names her");
	is_int(bc_ids_sub_overlap(sub, 99990, 10, who, sizeof who), 0, "a range ending just before it does not");
	is_int(bc_ids_sub_overlap(sub, 231071, 5, who, sizeof who), 1, "one reaching bob's last id does");
	is_str(who, "bob", "...and names him");
	is_int(bc_ids_sub_overlap("junk\nx:y:z\n", 0, 100, who, sizeof who), 0, "malformed lines allocate nothing");
}

static void test_accounts(void)
{
	char name[64] = "";
	uint32_t id = 0;
	const char *passwd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/sbin/nologin\n"
			     "u:x:1879048200:1:::\n";
	is_int(bc_ids_db_overlap(passwd, 1879048192, 8, &id, name, sizeof name), 0,
	       "a range below an account is free");
	is_int(bc_ids_db_overlap(passwd, 1879048192, 9, &id, name, sizeof name), 1,
	       "a range holding an account's uid is not");
	ok(id == 1879048200u && strcmp(name, "u") == 0, "...naming it (%u %s)", id, name);
	is_int(bc_ids_db_overlap("nogroup:x:65534:\n", 65530, 10, &id, name, sizeof name), 1,
	       "a group line is read the same way");
	is_int(bc_ids_db_overlap("+::::::\nc:x:abc:\nd:x::\n", 0, 100, &id, name, sizeof name), 0,
	       "lines without a numeric id are skipped");
	is_int(bc_ids_db_overlap("a:x:4294967295:\n", 4294967294u, 1, &id, name, sizeof name), 0,
	       "the top of the id space is handled without overflow");
}

static void test_owner(void)
{
	uint32_t s = 0, c = 0;
	const char *sub = "alice:100000:65536\n1001:200000:10\nalice:300000:5\nbob:x:1\nzed:5:0\n";
	ok(bc_ids_find_owner(sub, "alice", 1000, &s, &c) == 1 && s == 100000 && c == 65536,
	   "a user's first range, by name");
	ok(bc_ids_find_owner(sub, "carol", 1001, &s, &c) == 1 && s == 200000 && c == 10,
	   "...or by numeric uid");
	is_int(bc_ids_find_owner(sub, "bob", 1002, &s, &c), 0, "a malformed entry gives no range");
	is_int(bc_ids_find_owner(sub, "zed", 1003, &s, &c), 0, "nor does an empty one");
	is_int(bc_ids_find_owner(sub, NULL, 1004, &s, &c), 0, "a user without entries has none");
	is_int(bc_ids_find_owner(sub, "alic", 1005, &s, &c), 0, "names are matched whole");
}

static void test_mapped(void)
{
	const char *init = "         0          0 4294967295\n";
	const char *pod = "         0     100000      65536\n";
	const char *split = "0 100000 1000\n1000 500000 1000\n";
	ok(bc_ids_mapped(init, 1879048192, 65536), "the initial namespace maps the default range");
	ok(!bc_ids_mapped(pod, 1879048192, 65536), "a container's 65536 ids do not");
	ok(bc_ids_mapped(pod, 60000, 5536), "...but map a range inside them");
	ok(!bc_ids_mapped(pod, 60000, 5537), "...and not one reaching past them");
	ok(bc_ids_mapped(split, 900, 200), "a range over two adjacent extents is mapped");
	ok(!bc_ids_mapped("0 0 10\n20 20 10\n", 5, 20), "a gap between extents is not");
	ok(!bc_ids_mapped("", 1, 2), "an empty map maps nothing");
}

int main(void)
{
	test_find();
	test_mapped();
	test_owner();
	test_overlap();
	test_accounts();
	return tap_done();
}
