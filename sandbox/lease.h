/* lease.h: profile directories by label, leased to one live sandbox at a
 * time; task assignments; downloads evidence. */
#pragma once

#include <stdbool.h>

#include "audit.h"
#include "policy.h"
#include "util.h"

struct bc_lease {
	char *label;
	char *dir;          /* <root>/<label>: the profile directory */
	char *task;
	int lock_fd;        /* holds the lease while open, -1 if none */
};

/* Take the lease on label under root for task (NULL: an anonymous task),
 * creating the directory when missing. Refuses a label that is not
 * [a-z0-9-]{1,40}, a label leased by another live holder ("profile
 * directory ... is leased by task T, pid P"), and a profile whose last
 * sandbox did not close cleanly unless recover is set (audited). */
int bc_lease_acquire(struct bc_lease *l, const char *root, const char *label, const char *task,
		     bool recover, struct bc_audit *a, struct bc_error *err);

/* End the lease; clean says the sandbox tore down cleanly (the clean-close
 * marker is written). Idempotent; safe on a zeroed struct. */
void bc_lease_release(struct bc_lease *l, bool clean, struct bc_audit *a);

/* At teardown: one audit record listing each file in the downloads
 * directory (host path dir) with name, size and sha256. */
int bc_downloads_audit(const char *dir, struct bc_audit *a);
