/* test-node.c: where a record was made (node.h): the boot id and name
 * checks applied to what a record or the environment says, which records
 * count as made here, in this pid namespace or in this pod, and how a
 * node is named in messages. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "json.h"
#include "node.h"
#include "util.h"

#define BOOT_A "0123abcd-4567-89ef-0123-456789abcdef"
#define BOOT_B "fedcba98-7654-3210-fedc-ba9876543210"

static void test_boot_id(void)
{
	ok(bc_node_boot_id_valid(BOOT_A), "a kernel boot id");
	ok(!bc_node_boot_id_valid("0123ABCD-4567-89ef-0123-456789abcdef"), "upper case is not");
	ok(!bc_node_boot_id_valid("0123abcd-4567-89ef-0123-456789abcde"), "35 characters are not");
	ok(!bc_node_boot_id_valid("0123abcd-4567-89ef-0123-456789abcdef0"), "37 characters are not");
	ok(!bc_node_boot_id_valid("0123abcd44567-89ef-0123-456789abcdef"), "a dash is where a dash goes");
	ok(!bc_node_boot_id_valid("0123abcd-4567-89ef-0123-456789abcde\n"), "no newline");
	ok(!bc_node_boot_id_valid(""), "empty is not");
	ok(!bc_node_boot_id_valid(NULL), "NULL is not");
}

static void test_names(void)
{
	ok(bc_node_name_valid("browsercage-agent-task-x7k2p"), "a pod name");
	ok(bc_node_name_valid("5b3f2c1e-9a8b-4c7d-8e6f-1a2b3c4d5e6f"), "a pod uid");
	ok(bc_node_name_valid("node-1.example.internal"), "a host name");
	ok(!bc_node_name_valid(""), "empty is not a name");
	ok(!bc_node_name_valid("a b"), "no space");
	ok(!bc_node_name_valid("a\033[2J"), "no escape");
	ok(!bc_node_name_valid("a/b"), "no slash");
	char long_name[300];
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	ok(!bc_node_name_valid(long_name), "254 and more characters are not");
	long_name[253] = '\0';
	ok(bc_node_name_valid(long_name), "253 are");
}

static void test_sanitize_and_record(void)
{
	struct bc_node n = {0};
	struct bc_error err = {0};
	const struct bc_rec_field f[] = { BC_NODE_FIELDS(&n) };
	const char *text = "{\"host\":\"h 1\",\"boot_id\":\"" BOOT_A "\",\"pidns\":-4,\"netns\":7,"
			   "\"pod\":null,\"pod_uid\":\"u-1\"}";
	is_int(bc_rec_parse(text, strlen(text), "r", f, ARRAY_SIZE(f), &err), 0, "the node fields read");
	bc_node_sanitize(&n);
	is_str(n.host, "", "a host that is no name is dropped");
	is_str(n.boot_id, BOOT_A, "the boot id is kept");
	is_int(n.pidns, 0, "a negative inode is unknown");
	is_int(n.netns, 7, "the netns is kept");
	is_str(n.pod, "", "null is unknown");
	is_str(n.pod_uid, "u-1", "the pod uid is kept");
	const char *old = "{}";
	n = (struct bc_node){0};
	is_int(bc_rec_parse(old, 2, "r", f, ARRAY_SIZE(f), &err), 0, "a record without them reads");
}

static struct bc_node node(const char *host, const char *boot, int64_t pidns, int64_t netns, const char *uid)
{
	struct bc_node n = {0};
	snprintf(n.host, sizeof n.host, "%s", host);
	snprintf(n.boot_id, sizeof n.boot_id, "%s", boot);
	snprintf(n.pod_uid, sizeof n.pod_uid, "%s", uid);
	n.pidns = pidns;
	n.netns = netns;
	return n;
}

static void test_compare(void)
{
	struct bc_node here = node("n1", BOOT_A, 10, 20, "");
	struct bc_node t = node("n1", BOOT_A, 10, 99, "");
	is_int(bc_node_compare(&here, &t), BC_NODE_SAME, "this boot, this pid namespace");
	t = node("n1", BOOT_A, 11, 20, "");
	is_int(bc_node_compare(&here, &t), BC_NODE_OTHER_PID, "this boot, another pid namespace");
	t = node("n1", BOOT_B, 10, 20, "");
	is_int(bc_node_compare(&here, &t), BC_NODE_OTHER, "another boot of this host");
	t = node("n2", BOOT_A, 10, 20, "");
	is_int(bc_node_compare(&here, &t), BC_NODE_OTHER, "another host");
	t = node("", "", 0, 0, "");
	is_int(bc_node_compare(&here, &t), BC_NODE_UNKNOWN, "a record that names no boot");
	struct bc_node blind = node("n1", BOOT_A, 0, 0, "");
	t = node("n1", BOOT_A, 0, 0, "");
	is_int(bc_node_compare(&blind, &t), BC_NODE_OTHER_PID, "an unknown pid namespace is never the same");
}

static void test_same_pod(void)
{
	struct bc_node here = node("n1", BOOT_A, 10, 20, "");
	struct bc_node t = node("n1", BOOT_A, 11, 20, "");
	ok(bc_node_same_pod(&here, &t), "another container of the pod: same boot and netns");
	t = node("n1", BOOT_A, 10, 21, "");
	ok(!bc_node_same_pod(&here, &t), "another netns is another pod");
	t = node("n1", BOOT_B, 10, 20, "");
	ok(!bc_node_same_pod(&here, &t), "another boot is refused");
	t = node("", "", 0, 0, "");
	ok(!bc_node_same_pod(&here, &t), "a record naming no boot is refused");
	struct bc_node pod = node("n1", BOOT_A, 10, 20, "uid-1");
	t = node("n1", BOOT_A, 11, 20, "uid-2");
	ok(!bc_node_same_pod(&pod, &t), "another pod uid is refused");
	t = node("n1", BOOT_A, 11, 20, "uid-1");
	ok(bc_node_same_pod(&pod, &t), "the same pod uid");
	t = node("n1", BOOT_A, 11, 20, "");
	ok(bc_node_same_pod(&pod, &t), "a pod uid only one side knows is not compared");
	struct bc_node blind = node("n1", BOOT_A, 10, 0, "");
	t = node("n1", BOOT_A, 10, 0, "");
	ok(!bc_node_same_pod(&blind, &t), "an unknown netns is never the same pod");
}

static void test_describe(void)
{
	char buf[400];
	struct bc_node n = node("n1", BOOT_A, 1, 2, "");
	bc_node_describe(&n, buf, sizeof buf);
	is_str(buf, "host n1, boot 0123abcd…", "host and short boot id");
	snprintf(n.pod, sizeof n.pod, "job-x");
	bc_node_describe(&n, buf, sizeof buf);
	is_str(buf, "host n1, boot 0123abcd…, pod job-x", "and the pod");
	n = (struct bc_node){0};
	bc_node_describe(&n, buf, sizeof buf);
	is_str(buf, "host ?, boot ?", "unknown");
}

static void test_here(void)
{
	struct bc_node n;
	setenv("POD_NAME", "pod-1", 1);
	setenv("POD_UID", "bad uid\n", 1);
	bc_node_here(&n);
	ok(bc_node_boot_id_valid(n.boot_id), "this boot's id is read");
	ok(n.pidns > 0 && n.netns > 0, "the namespaces' inodes are read");
	ok(n.host[0] != '\0', "the host name is read");
	is_str(n.pod, "pod-1", "POD_NAME is taken");
	is_str(n.pod_uid, "", "a POD_UID that is no name is ignored");
	struct bc_node m;
	bc_node_here(&m);
	is_int(bc_node_compare(&n, &m), BC_NODE_SAME, "here is here");
	ok(bc_node_same_pod(&n, &m), "and in this pod");
}

int main(void)
{
	test_boot_id();
	test_names();
	test_sanitize_and_record();
	test_compare();
	test_same_pod();
	test_describe();
	test_here();
	return tap_done();
}
