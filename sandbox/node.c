/* node.c: where this process runs (node.h). */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "node.h"
#include "util.h"

bool bc_node_boot_id_valid(const char *s)
{
	if (!s || strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

bool bc_node_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

void bc_node_sanitize(struct bc_node *n)
{
	if (!bc_node_name_valid(n->host))
		n->host[0] = '\0';
	if (!bc_node_boot_id_valid(n->boot_id))
		n->boot_id[0] = '\0';
	if (!bc_node_name_valid(n->pod))
		n->pod[0] = '\0';
	if (!bc_node_name_valid(n->pod_uid))
		n->pod_uid[0] = '\0';
	if (n->pidns < 0)
		n->pidns = 0;
	if (n->netns < 0)
		n->netns = 0;
}

static int64_t ns_inode(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_ino : 0;
}

static void env_name(char *dst, size_t size, const char *var)
{
	const char *v = getenv(var);
	dst[0] = '\0';
	if (v && bc_node_name_valid(v) && strlen(v) < size)
		memcpy(dst, v, strlen(v) + 1);
}

void bc_node_here(struct bc_node *n)
{
	struct utsname u;
	_cleanup_free_ char *boot = NULL;
	size_t len = 0;
	*n = (struct bc_node){0};
	if (uname(&u) == 0 && bc_node_name_valid(u.nodename))
		snprintf(n->host, sizeof n->host, "%s", u.nodename);
	if (bc_read_file("/proc/sys/kernel/random/boot_id", &boot, &len, 64) >= 0) {
		if (len && boot[len - 1] == '\n')
			boot[len - 1] = '\0';
		if (bc_node_boot_id_valid(boot))
			memcpy(n->boot_id, boot, 37);
	}
	n->pidns = ns_inode("/proc/self/ns/pid");
	n->netns = ns_inode("/proc/self/ns/net");
	env_name(n->pod, sizeof n->pod, "POD_NAME");
	env_name(n->pod_uid, sizeof n->pod_uid, "POD_UID");
}

enum bc_node_where bc_node_compare(const struct bc_node *here, const struct bc_node *there)
{
	if (!there->boot_id[0])
		return BC_NODE_UNKNOWN;
	if (strcmp(here->boot_id, there->boot_id) != 0 || strcmp(here->host, there->host) != 0)
		return BC_NODE_OTHER;
	if (here->pidns != there->pidns || !here->pidns)
		return BC_NODE_OTHER_PID;
	return BC_NODE_SAME;
}

bool bc_node_same_pod(const struct bc_node *here, const struct bc_node *there)
{
	if (!here->boot_id[0] || strcmp(here->boot_id, there->boot_id) != 0)
		return false;
	if (!here->netns || here->netns != there->netns)
		return false;
	if (here->pod_uid[0] && there->pod_uid[0] && strcmp(here->pod_uid, there->pod_uid) != 0)
		return false;
	return true;
}

void bc_node_describe(const struct bc_node *n, char *buf, size_t len)
{
	snprintf(buf, len, "host %s, boot %.8s%s%s%s", n->host[0] ? n->host : "?",
		 n->boot_id[0] ? n->boot_id : "?", n->boot_id[0] ? "…" : "",
		 n->pod[0] ? ", pod " : "", n->pod);
}
