/* audit.c: JSON Lines audit records, one write() each. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit.h"

void bc_json_init(struct bc_json *j)
{
	*j = (struct bc_json){0};
}

void bc_json_free(struct bc_json *j)
{
	free(j->buf);
	*j = (struct bc_json){0};
}

static void json_put(struct bc_json *j, const char *s, size_t n)
{
	if (j->oom)
		return;
	if (j->len + n + 2 > j->cap) {
		size_t cap = j->cap ? j->cap : 256;
		while (j->len + n + 2 > cap)
			cap *= 2;
		char *b = realloc(j->buf, cap);
		if (!b) {
			j->oom = true;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void json_puts(struct bc_json *j, const char *s)
{
	json_put(j, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;   /* overlong or surrogate */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

void bc_json_quote(struct bc_json *j, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	json_put(j, "\"", 1);
	while (*s) {
		char esc[8];
		if (*s == '"' || *s == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*s;
			json_put(j, esc, 2);
			s++;
		} else if (*s < 0x20 || *s == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", *s);
			json_puts(j, esc);
			s++;
		} else {
			size_t n = utf8_len(s);
			if (n == 0) {
				json_puts(j, "\\ufffd");
				s++;
			} else {
				json_put(j, (const char *)s, n);
				s += n;
			}
		}
	}
	json_put(j, "\"", 1);
}

static void json_key(struct bc_json *j, const char *key)
{
	json_put(j, j->len ? "," : "{", 1);
	bc_json_quote(j, key);
	json_put(j, ":", 1);
}

void bc_json_str(struct bc_json *j, const char *key, const char *val)
{
	json_key(j, key);
	if (val)
		bc_json_quote(j, val);
	else
		json_puts(j, "null");
}

void bc_json_int(struct bc_json *j, const char *key, int64_t val)
{
	char num[32];
	snprintf(num, sizeof num, "%" PRId64, val);
	json_key(j, key);
	json_puts(j, num);
}

void bc_json_uint(struct bc_json *j, const char *key, uint64_t val)
{
	char num[32];
	snprintf(num, sizeof num, "%" PRIu64, val);
	json_key(j, key);
	json_puts(j, num);
}

void bc_json_bool(struct bc_json *j, const char *key, bool val)
{
	json_key(j, key);
	json_puts(j, val ? "true" : "false");
}

void bc_json_strv(struct bc_json *j, const char *key, char *const *v, size_t n)
{
	json_key(j, key);
	json_put(j, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			json_put(j, ",", 1);
		bc_json_quote(j, v[i]);
	}
	json_put(j, "]", 1);
}

void bc_json_raw(struct bc_json *j, const char *key, const char *json)
{
	json_key(j, key);
	json_puts(j, json);
}

const char *bc_json_text(struct bc_json *j)
{
	if (!j->len)
		json_put(j, "{", 1);
	json_put(j, "}", 1);
	if (j->oom)
		return NULL;
	j->len--;   /* keep the object open for more fields */
	return j->buf;
}

int bc_audit_open(struct bc_audit *a, const char *path, int fd, const char *session,
		  struct bc_error *err)
{
	*a = (struct bc_audit){ .fd = -1 };
	snprintf(a->session, sizeof a->session, "%s", session ? session : "");
	if (path) {
		a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0640);
		if (a->fd < 0)
			return bc_error_errno(err, errno, "audit log %s", path);
		struct stat st;
		if (fstat(a->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(a->fd);
			a->fd = -1;
			return bc_error_set(err, EINVAL, "audit log %s: not a regular file", path);
		}
		a->own_fd = true;
	} else if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			return bc_error_errno(err, errno, "--audit-fd %d", fd);
		if ((fl & O_ACCMODE) == O_RDONLY)
			return bc_error_set(err, EBADF, "--audit-fd %d is not open for writing", fd);
		a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (a->fd < 0)
			return bc_error_errno(err, errno, "--audit-fd %d", fd);
		a->own_fd = true;
	}
	return 0;
}

void bc_audit_close(struct bc_audit *a)
{
	if (a->own_fd && a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

int bc_audit_write(struct bc_audit *a, const char *event, struct bc_json *fields)
{
	if (a->fd < 0)
		return 0;
	struct timespec ts;
	struct tm tm;
	char stamp[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);

	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "ts", stamp);
	bc_json_str(&j, "event", event);
	bc_json_str(&j, "session", a->session);
	if (fields && fields->len > 1) {
		/* fields->buf is "{...": splice its members in. */
		json_put(&j, ",", 1);
		json_put(&j, fields->buf + 1, fields->len - 1);
	}
	json_put(&j, "}\n", 2);
	int r = j.oom ? -ENOMEM : bc_write_all(a->fd, j.buf, j.len);
	bc_json_free(&j);
	return r;
}
