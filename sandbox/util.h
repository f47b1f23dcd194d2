/* util.h: the base layer every other module stands on.
 *
 * Conventions (see STYLE.md): functions return 0 or more on success and
 * -errno on failure; where a caller needs a message, a struct bc_error is
 * filled (first error wins) instead of printing. Nothing here exits. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define BC_ERRMSG_MAX 512

struct bc_error {
	int code;                  /* positive errno, 0 while unset */
	char msg[BC_ERRMSG_MAX];   /* one line, no trailing newline */
};

/* Record an error unless one is already recorded; returns -code so callers
 * can write `return bc_error_set(err, EINVAL, "...")`. err may be NULL. */
__attribute__((format(printf, 3, 4)))
int bc_error_set(struct bc_error *err, int code, const char *fmt, ...);
/* As bc_error_set, with ": strerror(code)" appended. */
__attribute__((format(printf, 3, 4)))
int bc_error_errno(struct bc_error *err, int code, const char *fmt, ...);

/* Cleanup helpers in the style of systemd: _cleanup_free_ char *p = NULL; */
#define _cleanup_(f) __attribute__((cleanup(f)))
static inline void bc_freep(void *p) { free(*(void **)p); }
static inline void bc_closep(int *fd) { if (*fd >= 0) { int e = errno; close(*fd); errno = e; } }
#define _cleanup_free_ _cleanup_(bc_freep)
#define _cleanup_close_ _cleanup_(bc_closep)
/* Hand ownership on: returns the value and leaves the variable empty. */
#define TAKE_PTR(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define TAKE_FD(fd) ({ int _t = (fd); (fd) = -1; _t; })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A growable vector of owned strings, NULL-terminated for exec. */
struct bc_strv {
	char **v;
	size_t n;
};
int bc_strv_push(struct bc_strv *sv, const char *s);   /* copies s */

/* Chromium's switch NAME (without dashes) in argv[1..argc-1], before any
 * "--": what follows the name in its last occurrence ("" or "=VALUE"), or
 * NULL when it is not there. */
const char *bc_switch_last(int argc, char *const argv[], const char *name);
void bc_strv_free(struct bc_strv *sv);
bool bc_strv_contains(const struct bc_strv *sv, const char *s);

/* Write all of buf; retries on EINTR and short writes. */
int bc_write_all(int fd, const void *buf, size_t len);
/* Write a whole small file (O_WRONLY|O_CLOEXEC, no O_CREAT unless mode!=0). */
int bc_write_file(const char *path, const char *data, int flags, mode_t mode);
/* Read a whole small file into a NUL-terminated heap buffer. */
int bc_read_file(const char *path, char **out, size_t *len, size_t max);
/* Read all of fd (up to max bytes) into a NUL-terminated heap buffer. */
int bc_read_fd(int fd, char **out, size_t *len, size_t max);
/* Read a whole small file (a /proc one) into buf, NUL-terminated, with no
 * allocation; returns its length, -EFBIG when it does not fit, or -errno. */
int bc_read_file_into(const char *path, char *buf, size_t size);

/* Close every descriptor from 3 up but those of keep (sorted in place;
 * negative entries keep nothing). 0 or -errno. */
int bc_close_all_but(int *keep, size_t n);

/* For a helper process (the DNS filter, the relay): stdin and stdout
 * become /dev/null, stderr stays, *fds[i] moves to number BC_FD_BASE + i
 * (an absent one, -1, leaves its number free) and every other descriptor
 * is closed, so that its seccomp program, generated at build time, can
 * name them (seccomp.h). 0 or -errno. */
#define BC_FD_BASE 3
int bc_fds_arrange(int *const fds[], size_t n);

/* Pass one fd over a unix socket (SCM_RIGHTS, one byte of data). */
int bc_send_fd(int sock, int fd);

/* An fd of the network namespace socket sock lives in (SIOCGSKNS; needs
 * CAP_NET_ADMIN over that namespace), or -errno. */
int bc_socket_netns(int sock);
/* Receive one fd sent by bc_send_fd (close-on-exec); flags for recvmsg.
 * Anything but exactly one fd is refused and closed. */
int bc_recv_fd(int sock, int flags);

/* Print "PROG: message" and a newline on stderr; returns status. For the
 * command-line front ends only (modules fill a struct bc_error). */
__attribute__((format(printf, 3, 4)))
int bc_report(const char *prog, int status, const char *fmt, ...);

/* Trim ASCII whitespace in place; returns s advanced past leading space. */
char *bc_strstrip(char *s);

/* Does this process run in a user namespace other than the host's (a
 * container's: /proc/self/uid_map is not the whole range mapped to itself)? */
bool bc_in_container_userns(void);

/* Flags for bc_state_dir(). */
#define BC_DIR_CREATE  0x1u   /* create it (and missing parents, 0755) */
#define BC_DIR_ROOT_OK 0x2u   /* it may be owned by root as well as by the caller */

/* Open a directory the launcher keeps state in, creating it on first use:
 * PATH is taken one component at a time below dirfd (AT_FDCWD: PATH is
 * absolute and the walk starts at /) with openat(O_DIRECTORY|O_NOFOLLOW),
 * so no component may be a symlink. Every directory on the way must be
 * owned by root or the caller (or, in a container's user namespace, by an
 * owner not mapped there: host root as the container sees it) and not writable by group or others unless
 * sticky (/tmp), or the root of a volume mounted into a container (a
 * kubelet emptyDir: 0777, seen from the container's user namespace); the last one must be the caller's (or root's with
 * BC_DIR_ROOT_OK) with no permission bits (0777) outside MODE. A directory this
 * call creates gets exactly MODE whatever the umask; an EEXIST from a
 * concurrent first run is fine (both callers succeed). SHOWN names the
 * directory in messages (the full path when dirfd is not AT_FDCWD); each
 * refusal says how to fix it. Returns an O_DIRECTORY fd or -errno. */
int bc_state_dir(int dirfd, const char *path, const char *shown, mode_t mode, unsigned flags,
		 struct bc_error *err);
/* Ids that name files, records and cgroups. Every id is checked where it
 * enters (command line, environment, assignment file), always:
 *   task, profile id  1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'
 *   label, template   1 to 40 of [a-z0-9-], not starting with '-', and
 *                     not "templates"
 *   session           32 lower-case hex digits */
enum bc_id_kind { BC_ID_TASK, BC_ID_PROFILE_ID, BC_ID_LABEL, BC_ID_TEMPLATE, BC_ID_SESSION };
bool bc_id_valid(enum bc_id_kind kind, const char *s);
/* As bc_id_valid, filling err with one line that names where the id came
 * from (e.g. "--task", "BROWSERCAGE_TASK", "assignment a.json: taskId"),
 * what it is and the rule, showing s with control characters escaped. */
int bc_id_check(enum bc_id_kind kind, const char *where, const char *s, struct bc_error *err);
