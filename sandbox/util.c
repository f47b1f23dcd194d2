/* util.c: errors, string vectors and whole-file I/O. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "util.h"

static int error_vset(struct bc_error *err, int code, bool with_errno,
		      const char *fmt, va_list ap)
{
	if (code < 0)
		code = -code;
	if (code == 0)
		code = EINVAL;
	if (err && err->code == 0) {
		err->code = code;
		int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		if (with_errno && n >= 0 && (size_t)n < sizeof err->msg)
			snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(code));
	}
	return -code;
}

int bc_error_set(struct bc_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_vset(err, code, false, fmt, ap);
	va_end(ap);
	return r;
}

int bc_error_errno(struct bc_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = error_vset(err, code, true, fmt, ap);
	va_end(ap);
	return r;
}

int bc_strv_push(struct bc_strv *sv, const char *s)
{
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	char **v = realloc(sv->v, (sv->n + 2) * sizeof *v);
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	v[sv->n++] = copy;
	v[sv->n] = NULL;
	sv->v = v;
	return 0;
}

void bc_strv_free(struct bc_strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}

bool bc_strv_contains(const struct bc_strv *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return true;
	return false;
}

int bc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int bc_write_file(const char *path, const char *data, int flags, mode_t mode)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | flags | (mode ? O_CREAT : 0), mode);
	if (fd < 0)
		return -errno;
	return bc_write_all(fd, data, strlen(data));
}

int bc_read_fd(int fd, char **out, size_t *len, size_t max)
{
	size_t cap = 4096, n = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				return -EFBIG;
			cap = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}

int bc_read_file(const char *path, char **out, size_t *len, size_t max)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return bc_read_fd(fd, out, len, max);
}

int bc_read_file_into(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n < size - 1) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			buf[n] = '\0';
			return (int)n;
		}
		n += (size_t)r;
	}
	return -EFBIG;
}

char *bc_strstrip(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

union fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

int bc_socket_netns(int sock)
{
	int fd = ioctl(sock, SIOCGSKNS);
	return fd < 0 ? -errno : fd;
}

static int int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int bc_close_all_but(int *keep, size_t n)
{
	qsort(keep, n, sizeof *keep, int_cmp);
	int from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from && syscall(SYS_close_range, from, keep[i] - 1, 0) < 0)
			return -errno;
		from = keep[i] + 1;
	}
	return syscall(SYS_close_range, from, ~0U, 0) < 0 ? -errno : 0;
}

int bc_fds_arrange(int *const fds[], size_t n)
{
	unsigned top = BC_FD_BASE + (unsigned)n;
	/* above the places first, so no move lands on a descriptor still to
	 * be moved */
	for (size_t i = 0; i < n; i++)
		if (*fds[i] >= 0) {
			int t = fcntl(*fds[i], F_DUPFD_CLOEXEC, (int)top);
			if (t < 0)
				return -errno;
			*fds[i] = t;
		}
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
		return -errno;
	if (null > 2)
		close(null);
	for (size_t i = 0; i < n; i++) {
		int want = BC_FD_BASE + (int)i;
		if (*fds[i] < 0) {
			close(want);   /* whatever we inherited there */
			continue;
		}
		if (dup3(*fds[i], want, O_CLOEXEC) < 0)
			return -errno;
		*fds[i] = want;
	}
	return syscall(SYS_close_range, top, ~0u, 0) < 0 ? -errno : 0;
}

int bc_send_fd(int sock, int fd)
{
	char data = 0;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union fd_cmsg u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int bc_recv_fd(int sock, int flags)
{
	char data;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union fd_cmsg u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
	if (n < 0)
		return -errno;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (n != 1 || !c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int))) {
		if (c && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int f;
				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
				close(f);
			}
		return -EBADMSG;
	}
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

int bc_report(const char *prog, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return status;
}

/* The caller may rely on dir (a parent on the way to a state directory):
 * nobody but root and the caller can rename or replace what is in it. */
bool bc_in_container_userns(void)
{
	_cleanup_free_ char *map = NULL;
	unsigned long in, out, n;
	if (bc_read_file("/proc/self/uid_map", &map, NULL, 4096) < 0)
		return false;
	return !(sscanf(map, "%lu %lu %lu", &in, &out, &n) == 3 && in == 0 && out == 0 && n == 4294967295UL);
}

/* A volume a container runtime mounted for this container (kubelet's
 * emptyDir: mode 0777, root's): the root of a mount, seen from a user
 * namespace other than the host's, where every uid that can write it
 * belongs to the same container or pod. */
static bool container_volume_root(int fd, const struct stat *st)
{
	struct statx sx;
	if (st->st_uid != 0 || statx(fd, "", AT_EMPTY_PATH, 0, &sx) < 0 ||
	    !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return false;
	return bc_in_container_userns();
}

/* In a user namespace other than the host's, a file whose owner is not
 * mapped there shows as the overflow uid: that is how host root's / and
 * /run look from a container that does not map it. */
static bool unmapped_owner(uid_t uid)
{
	_cleanup_free_ char *s = NULL;
	if (bc_read_file("/proc/sys/kernel/overflowuid", &s, NULL, 32) < 0)
		return false;
	return uid == (uid_t)strtoul(s, NULL, 10) && bc_in_container_userns();
}

static int state_parent_check(int fd, const char *shown, const char *prefix, struct bc_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "%s: %s", shown, prefix);
	if (st.st_uid != 0 && st.st_uid != geteuid() && !unmapped_owner(st.st_uid))
		return bc_error_set(err, EPERM, "%s: parent directory %s is owned by uid %u, not by root or "
				    "uid %u: use a path whose parents only root or you can change", shown,
				    prefix, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX) && !container_volume_root(fd, &st))
		return bc_error_set(err, EPERM, "%s: parent directory %s is writable by group or others "
				    "(chmod go-w %s)", shown, prefix, prefix);
	return 0;
}

int bc_state_dir(int dirfd, const char *path, const char *shown, mode_t mode, unsigned flags,
		 struct bc_error *err)
{
	char buf[PATH_MAX], prefix[PATH_MAX] = "";
	uid_t me = geteuid();
	if (dirfd == AT_FDCWD && path[0] != '/')
		return bc_error_set(err, EINVAL, "%s: must be an absolute path", shown);
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return bc_error_set(err, ENAMETOOLONG, "%s: path too long", shown);
	_cleanup_close_ int fd = dirfd == AT_FDCWD ? open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
						   : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return bc_error_errno(err, errno, "%s", shown);
	size_t ns = strlen(shown), np = strlen(path);
	if (dirfd == AT_FDCWD)
		strcpy(prefix, "/");
	else if (ns > np + 1 && ns - np - 1 < sizeof prefix && strcmp(shown + ns - np, path) == 0)
		snprintf(prefix, sizeof prefix, "%.*s", (int)(ns - np - 1), shown);   /* dirfd's own name */
	char *save = NULL, *comp = strtok_r(buf, "/", &save);
	if (!comp)
		return bc_error_set(err, EINVAL, "%s: not a directory below /", shown);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = next == NULL;
		mode_t want = last ? mode : 0755;
		if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
			return bc_error_set(err, EINVAL, "%s: '.' and '..' are not allowed in the path", shown);
		int r = state_parent_check(fd, shown, prefix[0] ? prefix : "(the directory it is opened in)", err);
		if (r < 0)
			return r;
		size_t n = strlen(prefix);
		snprintf(prefix + n, sizeof prefix - n, "%s%s", n && prefix[n - 1] != '/' ? "/" : "", comp);
		bool made = false;
		if (flags & BC_DIR_CREATE) {
			if (mkdirat(fd, comp, want) == 0)
				made = true;
			else if (errno != EEXIST)
				return bc_error_errno(err, errno, "%s: create %s%s", shown, prefix,
						      errno == EACCES ? " (create it as root, owned by you, or "
									"choose another path)" : "");
		}
		int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			int e = errno;
			return bc_error_errno(err, e, "%s: open %s%s", shown, prefix,
					      e == ELOOP || e == ENOTDIR ? " (a symlink or not a directory: "
									   "remove it, or give the real path)" : "");
		}
		close(fd);
		fd = nfd;
		/* ours and new: exactly the mode asked for, whatever the umask */
		if (made && fchmod(fd, want) < 0)
			return bc_error_errno(err, errno, "%s: chmod %s", shown, prefix);
		comp = next;
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "%s", shown);
	bool owner_ok = st.st_uid == me || ((flags & BC_DIR_ROOT_OK) && st.st_uid == 0);
	if (!owner_ok)
		return bc_error_set(err, EPERM, "%s must be owned by uid %u, not uid %u: remove it (as root: "
				    "rm -r %s) or choose another path", shown, (unsigned)me,
				    (unsigned)st.st_uid, shown);
	/* permission bits only: a setgid or sticky bit on it gives nobody access */
	if (st.st_mode & 0777 & ~mode)
		return bc_error_set(err, EPERM, "%s %s (mode %04o, more than %04o): chmod %04o %s", shown,
				    st.st_mode & (S_IWGRP | S_IWOTH) & ~mode ? "is writable by group or others"
									    : "is open to group or others",
				    (unsigned)(st.st_mode & 07777), (unsigned)mode, (unsigned)(mode & 0777), shown);
	return TAKE_FD(fd);
}

static const struct {
	const char *what, *chars, *rule;
	size_t max;
	bool lower_hex_exact;
} id_kinds[] = {
	[BC_ID_TASK] = { "task id", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
			 "1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'", 64, false },
	[BC_ID_PROFILE_ID] = { "profile id", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
			       "1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'", 64, false },
	[BC_ID_LABEL] = { "profile label", "abcdefghijklmnopqrstuvwxyz0123456789-",
			  "1 to 40 lower-case letters, digits and '-', not starting with '-', "
			  "not 'templates'", 40, false },
	[BC_ID_TEMPLATE] = { "template name", "abcdefghijklmnopqrstuvwxyz0123456789-",
			     "1 to 40 lower-case letters, digits and '-', not starting with '-', "
			     "not 'templates'", 40, false },
	[BC_ID_SESSION] = { "session id", "0123456789abcdef", "32 lower-case hex digits", 32, true },
};

bool bc_id_valid(enum bc_id_kind kind, const char *s)
{
	if ((unsigned)kind >= ARRAY_SIZE(id_kinds) || !s)
		return false;
	size_t n = strlen(s);
	if (n == 0 || n > id_kinds[kind].max || (id_kinds[kind].lower_hex_exact && n != id_kinds[kind].max))
		return false;
	if (s[0] == '.' || s[0] == '-')
		return false;
	if ((kind == BC_ID_LABEL || kind == BC_ID_TEMPLATE) && strcmp(s, "templates") == 0)
		return false;
	return strspn(s, id_kinds[kind].chars) == n;
}

int bc_id_check(enum bc_id_kind kind, const char *where, const char *s, struct bc_error *err)
{
	if (bc_id_valid(kind, s))
		return 0;
	if ((unsigned)kind >= ARRAY_SIZE(id_kinds))
		return bc_error_set(err, EINVAL, "%s: unknown kind of id", where);
	/* Show the id as one line: control characters and non-ASCII escaped. */
	char shown[4 * 80 + 4];
	size_t o = 0;
	const unsigned char *src = (const unsigned char *)(s ? s : "");
	for (const unsigned char *p = src; *p && o + 8 < sizeof shown; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\' && *p != '\'')
			shown[o++] = (char)*p;
		else
			o += (size_t)snprintf(shown + o, sizeof shown - o, "\\x%02x", *p);
		if (p - src >= 80) {
			memcpy(shown + o, "...", 3);
			o += 3;
			break;
		}
	}
	shown[o] = '\0';
	return bc_error_set(err, EINVAL, "%s: %s '%s' is not valid (use %s)", where, id_kinds[kind].what,
			    shown, id_kinds[kind].rule);
}

const char *bc_switch_last(int argc, char *const argv[], const char *name)
{
	const char *last = NULL;
	size_t n = strlen(name);
	for (int i = 1; i < argc && argv[i]; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-')
			continue;
		a += a[1] == '-' ? 2 : 1;
		if (strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '='))
			last = a + n;
	}
	return last;
}
