/* cdp.c: download names from the DevTools protocol, and the relay of
 * Chromium's DevTools pipe (cdp.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdp.h"

#define RELAY_BUF (256 * 1024)
#define FINISH_IDLE_MS 1000

/* ---- messages ----------------------------------------------------------------- */

static bool guid_valid(const char *g)
{
	size_t n = g ? strlen(g) : 0;
	if (n == 0 || n > BC_CDP_GUID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = g[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
			return false;
	}
	return true;
}

/* s is valid UTF-8 (bc_jv_parse checked it). Control characters (C0,
 * DEL, C1), '/' and '\' become '_'; cut on a character boundary. */
static void name_copy(char *out, size_t size, const char *s)
{
	size_t o = 0;
	while (*s) {
		unsigned char c = (unsigned char)*s;
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
		if (strnlen(s, n) < n)
			break;   /* not reached for valid UTF-8 */
		if (o + n >= size)
			break;
		bool bad = c < 0x20 || c == 0x7f || c == '/' || c == '\\' ||
			   (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f);
		if (bad)
			out[o++] = '_';
		else {
			memcpy(out + o, s, n);
			o += n;
		}
		s += n;
	}
	out[o] = '\0';
}

static bool scheme_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && ((c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-'));
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_' || c == '~' || c == '%' || c == ':' || c == '[' || c == ']';
}

static int origin_of(const char *url, char *out, size_t size, bool inner)
{
	size_t i = 0;
	while (url[i] && scheme_char(url[i], i == 0) && i < 32)
		i++;
	if (i == 0 || url[i] != ':')
		return -EINVAL;
	char scheme[33];
	for (size_t k = 0; k < i; k++)
		scheme[k] = (char)(url[k] >= 'A' && url[k] <= 'Z' ? url[k] - 'A' + 'a' : url[k]);
	scheme[i] = '\0';
	const char *rest = url + i + 1;
	if (!inner && strcmp(scheme, "blob") == 0) {
		char in[BC_CDP_ORIGIN_MAX + 1];
		if (origin_of(rest, in, sizeof in, true) < 0)
			return -EINVAL;
		return snprintf(out, size, "blob:%s", in) < (int)size ? 0 : -EINVAL;
	}
	if (rest[0] != '/' || rest[1] != '/') {
		if (inner)
			return -EINVAL;   /* a blob's origin has a host */
		return snprintf(out, size, "%s:", scheme) < (int)size ? 0 : -EINVAL;
	}
	rest += 2;
	size_t alen = strcspn(rest, "/?#");
	const char *host = rest;
	for (size_t k = 0; k < alen; k++)
		if (rest[k] == '@')
			host = rest + k + 1;   /* user info is left out */
	size_t hlen = alen - (size_t)(host - rest);
	if (hlen == 0)
		return -EINVAL;
	for (size_t k = 0; k < hlen; k++)
		if (!host_char(host[k]))
			return -EINVAL;
	int n = snprintf(out, size, "%s://%.*s", scheme, (int)hlen, host);
	if (n < 0 || (size_t)n >= size)
		return -EINVAL;
	for (char *p = out + i + 3; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return 0;
}

int bc_cdp_origin(const char *url, char *out, size_t size)
{
	if (size)
		out[0] = '\0';
	if (!url || size == 0)
		return -EINVAL;
	int r = origin_of(url, out, size, false);
	if (r < 0)
		out[0] = '\0';
	return r;
}

static size_t slots(const struct bc_cdp_table *t)
{
	size_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
	return n < BC_CDP_MAX_DOWNLOADS ? n : BC_CDP_MAX_DOWNLOADS;
}

const struct bc_cdp_download *bc_cdp_lookup(const struct bc_cdp_table *t, const char *guid)
{
	if (!t || !t->v || !guid)
		return NULL;
	for (size_t i = 0, n = slots(t); i < n; i++)
		if (__atomic_load_n(&t->v[i].used, __ATOMIC_ACQUIRE) && strcmp(t->v[i].guid, guid) == 0)
			return &t->v[i];
	return NULL;
}

int bc_cdp_message(struct bc_cdp_table *t, const char *msg, size_t len)
{
	static const char word[] = "downloadWillBegin";
	if (len > BC_CDP_MAX_MESSAGE || !memmem(msg, len, word, sizeof word - 1))
		return 0;
	struct bc_jv *v = NULL;
	struct bc_error e = {0};
	int r = bc_jv_parse(msg, len, "cdp", &v, &e);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	const char *m = bc_jv_str(v, "method");
	const struct bc_jv *p = bc_jv_get(v, "params");
	const char *guid = bc_jv_str(p, "guid"), *name = bc_jv_str(p, "suggestedFilename");
	const char *url = bc_jv_str(p, "url");
	r = 0;
	if (!m || (strcmp(m, "Browser.downloadWillBegin") != 0 && strcmp(m, "Page.downloadWillBegin") != 0) ||
	    !guid_valid(guid) || !name || bc_cdp_lookup(t, guid))
		goto done;
	if (!t->v && !(t->v = calloc(BC_CDP_MAX_DOWNLOADS, sizeof *t->v))) {
		r = -ENOMEM;
		goto done;
	}
	size_t i = __atomic_fetch_add(&t->n, 1, __ATOMIC_ACQ_REL);
	if (i >= BC_CDP_MAX_DOWNLOADS) {
		__atomic_fetch_sub(&t->n, 1, __ATOMIC_ACQ_REL);
		__atomic_fetch_add(&t->dropped, 1, __ATOMIC_RELAXED);
		r = -ENOSPC;
		goto done;
	}
	struct bc_cdp_download *d = &t->v[i];
	memset(d, 0, sizeof *d);
	memcpy(d->guid, guid, strlen(guid) + 1);
	name_copy(d->name, sizeof d->name, name);
	bc_cdp_origin(url, d->origin, sizeof d->origin);
	__atomic_store_n(&d->used, true, __ATOMIC_RELEASE);
	r = 1;
done:
	bc_jv_free(v);
	return r;
}

void bc_cdp_table_free(struct bc_cdp_table *t)
{
	if (t->shared) {
		memset(t->v, 0, BC_CDP_MAX_DOWNLOADS * sizeof *t->v);
		t->n = t->dropped = 0;
		return;
	}
	free(t->v);
	*t = (struct bc_cdp_table){0};
}

void bc_cdp_scan(struct bc_cdp_scanner *s, const char *data, size_t len)
{
	while (len) {
		const char *nul = memchr(data, '\0', len);
		size_t n = nul ? (size_t)(nul - data) : len;
		if (!s->oversized) {
			if (!s->msg && !(s->msg = malloc(BC_CDP_MAX_MESSAGE)))
				s->oversized = true;     /* no memory: this message is not scanned */
			else if (s->len + n > BC_CDP_MAX_MESSAGE)
				s->oversized = true;
			else {
				memcpy(s->msg + s->len, data, n);
				s->len += n;
			}
		}
		if (!nul)
			return;
		if (s->oversized)
			s->skipped++;
		else if (s->table)
			bc_cdp_message(s->table, s->msg, s->len);
		s->len = 0;
		s->oversized = false;
		data += n + 1;
		len -= n + 1;
	}
}

void bc_cdp_scanner_free(struct bc_cdp_scanner *s)
{
	free(s->msg);
	s->msg = NULL;
	s->len = 0;
	s->oversized = false;
}

bool bc_cdp_pipe_arg(int argc, char *const argv[])
{
	const char *v = bc_switch_last(argc, argv, "remote-debugging-pipe");
	return v && (v[0] == '\0' || strcmp(v, "=json") == 0 || strcmp(v, "=JSON") == 0);
}

struct bc_cdp_table *bc_cdp_seen(void)
{
	static struct bc_cdp_table private_table;   /* if the mapping cannot be made */
	static struct bc_cdp_table *seen;
	if (seen)
		return seen;
	size_t size = sizeof *seen + BC_CDP_MAX_DOWNLOADS * sizeof *seen->v;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return seen = &private_table;
	seen = m;
	seen->v = (struct bc_cdp_download *)(seen + 1);
	seen->shared = true;
	return seen;
}

/* ---- WebSocket ------------------------------------------------------------------ */

enum { WS_HTTP, WS_HEAD, WS_BODY, WS_OFF };
#define WS_HTTP_MAX (16 * 1024)

void bc_cdp_ws_init(struct bc_cdp_ws *w, struct bc_cdp_table *t)
{
	*w = (struct bc_cdp_ws){ .table = t, .state = WS_HTTP };
}

void bc_cdp_ws_free(struct bc_cdp_ws *w)
{
	free(w->msg);
	w->msg = NULL;
	w->state = WS_OFF;
}

/* The frame header is whole in w->fh: set up its payload. */
static void ws_frame(struct bc_cdp_ws *w, size_t lenbytes)
{
	uint64_t n = w->fh[1] & 0x7f;
	if (lenbytes) {
		n = 0;
		for (size_t i = 0; i < lenbytes; i++)
			n = n << 8 | w->fh[2 + i];
		if (lenbytes == 8 && n >> 63) {
			w->state = WS_OFF;   /* RFC 6455: the top bit is 0 */
			return;
		}
	}
	unsigned op = w->fh[0] & 0x0f;
	bool fin = w->fh[0] & 0x80, rsv = w->fh[0] & 0x70;
	w->keep = op == 1 && fin && !rsv && n <= BC_CDP_MAX_MESSAGE;
	if (w->keep && !w->msg && !(w->msg = malloc(BC_CDP_MAX_MESSAGE)))
		w->keep = false;
	w->left = n;
	w->pos = 0;
	w->len = 0;
	w->state = WS_BODY;
}

static void ws_done(struct bc_cdp_ws *w)
{
	if (w->keep && w->table)
		bc_cdp_message(w->table, w->msg, w->len);
	w->state = WS_HEAD;
	w->fh_len = 0;
}

void bc_cdp_ws_scan(struct bc_cdp_ws *w, const char *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;
	while (len && w->state != WS_OFF) {
		if (w->state == WS_HTTP) {
			if (w->head_len < sizeof w->status)
				w->status[w->head_len] = (char)*p;
			w->head_len++;
			w->crlf = *p == "\r\n\r\n"[w->crlf] ? w->crlf + 1 : *p == '\r' ? 1 : 0;
			p++, len--;
			if (w->crlf == 4)
				w->state = memcmp(w->status, "HTTP/1.1 101", sizeof w->status) == 0 ? WS_HEAD : WS_OFF;
			else if (w->head_len > WS_HTTP_MAX)
				w->state = WS_OFF;
		} else if (w->state == WS_HEAD) {
			w->fh[w->fh_len++] = *p++;
			len--;
			if (w->fh_len < 2)
				continue;
			unsigned l7 = w->fh[1] & 0x7f;
			size_t lenbytes = l7 == 126 ? 2 : l7 == 127 ? 8 : 0;
			size_t need = 2 + lenbytes + (w->fh[1] & 0x80 ? 4 : 0);
			if (w->fh_len == need) {
				ws_frame(w, lenbytes);
				if (w->state == WS_BODY && !w->left)
					ws_done(w);
			}
		} else {
			size_t m = w->left < len ? (size_t)w->left : len;
			if (w->keep) {
				bool masked = w->fh[1] & 0x80;
				const unsigned char *key = w->fh + w->fh_len - 4;
				for (size_t i = 0; i < m; i++)
					w->msg[w->len++] = (char)(masked ? p[i] ^ key[(w->pos + i) % 4] : p[i]);
			}
			w->pos += m;
			w->left -= m;
			p += m;
			len -= m;
			if (!w->left)
				ws_done(w);
		}
	}
}

/* ---- the relay ------------------------------------------------------------------ */

int bc_cdp_relay_prepare(struct bc_cdp_relay *r, int fd, struct bc_error *err)
{
	int p[2];
	struct stat st;
	r->buf = malloc(RELAY_BUF);
	if (!r->buf)
		return bc_error_set(err, ENOMEM, "out of memory");
	r->out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (r->out_fd < 0)
		return bc_error_errno(err, errno, "DevTools pipe: copy descriptor %d", fd);
	r->out_flags = fcntl(r->out_fd, F_GETFL);
	r->out_socket = fstat(r->out_fd, &st) == 0 && S_ISSOCK(st.st_mode);
	if (pipe2(p, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "DevTools pipe: pipe");
	/* The sandbox's end blocks as the client's did; ours never blocks
	 * (a socket's writes say so per call). fd changes last: a failure
	 * before leaves the client's descriptor where it was. */
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0 ||
	    (!r->out_socket && (r->out_flags < 0 || fcntl(r->out_fd, F_SETFL, r->out_flags | O_NONBLOCK) < 0)) ||
	    dup3(p[1], fd, 0) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return bc_error_errno(err, e, "DevTools pipe: relay descriptor %d", fd);
	}
	close(p[1]);
	(void)fcntl(p[0], F_SETPIPE_SZ, 1 << 20);   /* fewer wakeups; the default size works too */
	r->in_fd = p[0];
	r->fd = fd;
	r->scan.table = bc_cdp_seen();
	return 0;
}

void bc_cdp_relay_close_host_side(struct bc_cdp_relay *r)
{
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->out_fd >= 0)
		close(r->out_fd);
	r->in_fd = r->out_fd = -1;
}

void bc_cdp_relay_started(struct bc_cdp_relay *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static void close_in(struct bc_cdp_relay *r)
{
	if (r->in_fd >= 0)
		close(r->in_fd);
	r->in_fd = -1;
	r->in_eof = true;
}

static void close_out(struct bc_cdp_relay *r)
{
	if (r->out_fd >= 0) {
		if (!r->out_socket && r->out_flags >= 0)
			fcntl(r->out_fd, F_SETFL, r->out_flags);
		close(r->out_fd);
	}
	r->out_fd = -1;
	r->off = r->len = 0;
}

/* write(2) to a pipe or file without SIGPIPE: blocked around the call,
 * and taken back if the call raised it. */
static ssize_t write_quiet(int fd, const void *b, size_t n)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigset_t pending;
	sigpending(&pending);
	bool was = sigismember(&pending, SIGPIPE);
	ssize_t w = write(fd, b, n);
	int e = errno;
	if (w < 0 && e == EPIPE && !was)
		sigtimedwait(&pipe_set, NULL, &(struct timespec){0});
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return w;
}

static void relay_write(struct bc_cdp_relay *r)
{
	while (r->len) {
		ssize_t w = r->out_socket
			? send(r->out_fd, r->buf + r->off, r->len - r->off, MSG_NOSIGNAL | MSG_DONTWAIT)
			: write_quiet(r->out_fd, r->buf + r->off, r->len - r->off);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0) {
			/* The client is gone: so is Chromium's way to it. */
			close_out(r);
			close_in(r);
			return;
		}
		r->off += (size_t)w;
		if (r->off == r->len)
			r->off = r->len = 0;
	}
}

static void relay_read(struct bc_cdp_relay *r)
{
	ssize_t n = read(r->in_fd, r->buf, RELAY_BUF);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_in(r);
		return;
	}
	bc_cdp_scan(&r->scan, r->buf, (size_t)n);
	r->off = 0;
	r->len = (size_t)n;
}

void bc_cdp_relay_events(const struct bc_cdp_relay *r, struct pollfd pfd[2])
{
	pfd[0] = (struct pollfd){ .fd = !r->len && r->out_fd >= 0 ? r->in_fd : -1, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = r->len ? r->out_fd : -1, .events = POLLOUT };
}

void bc_cdp_relay_handle(struct bc_cdp_relay *r, const struct pollfd pfd[2])
{
	bool got = false;
	if (pfd[0].fd >= 0 && pfd[0].fd == r->in_fd && pfd[0].revents) {
		relay_read(r);
		got = r->len > 0;
	}
	if (r->len && (got || (pfd[1].fd >= 0 && pfd[1].fd == r->out_fd && pfd[1].revents)))
		relay_write(r);   /* at once: the copy adds no round of poll */
	if (r->in_eof && !r->len && r->out_fd >= 0)
		close_out(r);     /* Chromium's end of file is the client's */
}

void bc_cdp_relay_finish(struct bc_cdp_relay *r)
{
	if (r->fd >= 0 && r->out_fd >= 0) {
		/* Never started: the client's descriptor goes back where it was. */
		dup3(r->out_fd, r->fd, 0);
		r->fd = -1;
		close_in(r);
	}
	bc_cdp_relay_started(r);
	while (r->out_fd >= 0 && r->in_fd >= 0) {
		struct pollfd pfd[2];
		bc_cdp_relay_events(r, pfd);
		int n = poll(pfd, 2, FINISH_IDLE_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		bc_cdp_relay_handle(r, pfd);
	}
	if (r->out_fd >= 0 && r->len) {
		struct pollfd pfd[2];
		bc_cdp_relay_events(r, pfd);
		while (r->len && poll(&pfd[1], 1, FINISH_IDLE_MS) > 0) {
			relay_write(r);
			bc_cdp_relay_events(r, pfd);
		}
	}
	close_in(r);
	close_out(r);
	bc_cdp_scanner_free(&r->scan);
	free(r->buf);
	r->buf = NULL;
}
