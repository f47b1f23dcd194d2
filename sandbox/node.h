/* node.h: where this process runs, for the records that outlive it (lease,
 * attempt and ready records) and are read back on another node, in
 * another pod or after a reboot.
 *
 * A lease is a POSIX lock: the kernel of one node sees it, a pid means
 * something only in its own pid namespace, and a ready record says
 * something only about the pod and boot it was made in. So each record
 * names the node (host name and boot id), the pid and network namespaces
 * (containers of one Kubernetes pod share the network namespace and
 * differ in the pid namespace) and the pod when the downward API gives it
 * (env POD_NAME, POD_UID). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct bc_node {
	char host[65];      /* uname nodename */
	char boot_id[37];   /* /proc/sys/kernel/random/boot_id, "" unknown */
	int64_t pidns;      /* inode of /proc/self/ns/pid, 0 unknown */
	int64_t netns;      /* inode of /proc/self/ns/net, 0 unknown */
	char pod[254];      /* env POD_NAME, "" unknown */
	char pod_uid[64];   /* env POD_UID, "" unknown */
};

/* The record fields naming a node; every one optional (records made
 * before they existed read as "unknown"). */
#define BC_NODE_FIELDS(n) \
	BC_REC_S("host", (n)->host, false), BC_REC_S("boot_id", (n)->boot_id, false), \
	BC_REC_I("pidns", &(n)->pidns, false), BC_REC_I("netns", &(n)->netns, false), \
	BC_REC_S("pod", (n)->pod, false), BC_REC_S("pod_uid", (n)->pod_uid, false)

/* Fill n with where this process runs. What cannot be read is left
 * unknown; an environment value that is not a plain name is ignored. */
void bc_node_here(struct bc_node *n);

/* Is s a boot id as the kernel writes it (36 characters, lowercase hex
 * and dashes at 8, 13, 18 and 23)? */
bool bc_node_boot_id_valid(const char *s);
/* Is s a name the downward API can give (1..253 of [A-Za-z0-9._-])? */
bool bc_node_name_valid(const char *s);
/* Drop from a node read back from a record whatever is not well formed. */
void bc_node_sanitize(struct bc_node *n);

enum bc_node_where {
	BC_NODE_UNKNOWN,    /* the record names no boot: made before records named one */
	BC_NODE_SAME,       /* this boot and this pid namespace: its pids and locks are ours */
	BC_NODE_OTHER_PID,  /* this boot, another pid namespace: its lock is ours, its pid is not */
	BC_NODE_OTHER,      /* another node, or this one before a reboot: neither */
};
enum bc_node_where bc_node_compare(const struct bc_node *here, const struct bc_node *there);

/* Was there made in the same pod as here, on this boot: same boot id, same
 * network namespace, and the same pod uid when both know one? */
bool bc_node_same_pod(const struct bc_node *here, const struct bc_node *there);

/* "host H, boot B…[, pod P]" (the boot id shortened to 8 digits). */
void bc_node_describe(const struct bc_node *n, char *buf, size_t len);
