/* template.h: templates as objects. A template is an authenticated
 * profile snapshot, <root>/templates/<name>/, that `run --template NAME`
 * forks (the read-only lower layer of an overlay). `template save` makes
 * one from a clean, closed labelled profile; its record,
 * <root>/.templates/<name>.json (json.h), names the source label, when and
 * by whom it was made, its size and its expiry, after which forks are
 * refused. A template without a record (made by hand) has no expiry. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "policy.h"
#include "quota.h"
#include "util.h"

struct bc_template_info {
	char name[41];
	char label[41];         /* the label it was saved from, "" unknown */
	char created[32];       /* RFC 3339 UTC, "" unknown */
	int64_t expires_at;     /* unix seconds, 0: never */
	int64_t creator_uid;    /* -1 unknown */
	uint64_t size, files;   /* apparent bytes and entries copied */
	bool expired;
	bool recorded;          /* has a record (made by `template save`) */
};

/* Open the audit log for a template command (path NULL: records dropped),
 * with a session id of its own. */
int bc_template_audit_open(struct bc_audit *a, const char *path, struct bc_error *err);

/* Save <root>/<label> as <root>/templates/<name>: refused while the label
 * is leased (held, reserved) or did not close cleanly, or when the
 * template exists. The copy is built in a temporary directory beside it
 * and renamed into place, owned by uid:gid (as root; else the caller),
 * no symlink followed, the identity marker left out. expires_at 0: never.
 * Audited ("template", action save or refused). */
int bc_template_save(const char *root, const char *label, const char *name, int64_t expires_at, uid_t uid,
		     gid_t gid, struct bc_audit *a, struct bc_template_info *out, struct bc_error *err);

/* Every template under root, sorted by name; free(*v). */
int bc_template_list(const char *root, struct bc_template_info **v, size_t *n, struct bc_error *err);

/* Delete a template and its record (audited: action rm); refused while a
 * fork holds it (bc_template_open). */
int bc_template_rm(const char *root, const char *name, struct bc_audit *a, struct bc_error *err);

/* run --template NAME: refuse an expired template (or one whose record
 * cannot be read) with the reason, then open and check it as a profile
 * directory owned by uid, group gid (bc_profile_open); errors name it
 * as what (the option or variable that gave it). *fd: its O_PATH
 * fd; dir receives its path. *hold: the fork's hold on the template, a
 * shared flock(2) on its directory, to be closed when the fork has
 * ended: bc_template_rm refuses a template while any fork holds it (an
 * overlay's lower layer must not change under it), and a fork starting
 * while it is being removed is refused. Audited (action fork or
 * refused). */
int bc_template_open(const char *what, const char *root, const char *name, uid_t uid, gid_t gid,
		     struct bc_audit *a, int *fd, int *hold, char *dir, size_t dirlen, struct bc_error *err);

/* A fork's downloads ([filesystem] fork_downloads, with downloads = yes).
 * record (the default): a tmpfs made inside the sandbox over the overlay's
 * Downloads, sized profile_quota (tmp_size when that is 0), which needs no
 * host directory and no quota; its mount fd reaches the supervisor
 * (bc_launch.fork_downloads_mnt, moved to mnt_fd here), which lists its
 * files at teardown through it (bc_teardown_audit_fd) and closes it, which
 * frees the tmpfs. keep: a host directory per session,
 * <root>/.forks/<session>/Downloads, owned
 * by the sandbox user's host uid and group (as root; else the caller),
 * bound over the overlay's Downloads (bc_rootfs_fork_downloads) and
 * bounded by a project quota of profile_quota as an assigned profile is
 * (bc_quota_apply: refused where it cannot be enforced and limits are
 * required). At teardown its files are listed as an assigned profile's
 * downloads (bc_teardown_audit), then it is deleted (record) or left in
 * place (keep), without following any symlink; audited ("fork_downloads"). */
struct bc_fork_downloads {
	bool tmpfs;             /* record: on a tmpfs of tmpfs_size bytes */
	uint64_t tmpfs_size;
	int mnt_fd;             /* record: its mount fd once the launch handed it up, -1 */
	bool active;            /* a directory was made for this session */
	bool keep;
	int forks_fd;           /* <root>/.forks, -1 */
	int fd;                 /* O_PATH of dir, -1 */
	char session[33];
	char dir[4200];         /* its host path */
	struct bc_quota quota;
};
#define BC_FORK_DOWNLOADS_INIT { .mnt_fd = -1, .forks_fd = -1, .fd = -1, .quota = BC_QUOTA_INIT }

/* record: set tmpfs and tmpfs_size, and return 0. keep: make the
 * directory (else f stays inactive and 0 is returned). *launch_fd: a second O_PATH fd of it for the launch
 * (bc_launch.fork_downloads_fd), -1 when inactive. Writes the "disk"
 * record of the directory. On failure nothing is left behind. */
int bc_fork_downloads_prepare(struct bc_fork_downloads *f, const char *root, const char *session,
			      const struct bc_policy *p, uid_t uid, gid_t gid, struct bc_audit *a,
			      int *launch_fd, struct bc_error *err);

/* After the teardown record: close the tmpfs (record), or remove the
 * limit, then delete the session's directory (or keep Downloads); write
 * the "fork_downloads" record.
 * Idempotent; safe on BC_FORK_DOWNLOADS_INIT. */
void bc_fork_downloads_end(struct bc_fork_downloads *f, struct bc_audit *a);
