/* devtools.c: the DevTools port forwarder (see devtools.h). */
#include "config.h"

#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <libmnl/libmnl.h>

#include "cdp.h"
#include "devtools.h"
#include "../netfilter/netlink.h"

#define ANNOUNCE "DevTools listening on ws://127.0.0.1:"
#define MARK "DevTools listening on"
#define ANNOUNCE_PATH "/devtools/browser/"
#define MAX_RELAYS 64           /* DevTools clients at once */
#define MAX_REFUSALS_AUDITED 16 /* then one devtools_refused record says the rest are not */
#define RELAY_BUF 16384
#define LINE_MAX_LEN 4096

int bc_devtools_announced_port(const char *line, size_t len)
{
	size_t n = strlen(ANNOUNCE), p = strlen(ANNOUNCE_PATH), i;
	unsigned port = 0;

	if (len <= n || memcmp(line, ANNOUNCE, n) != 0)
		return 0;
	for (i = n; i < len && i < n + 5 && line[i] >= '0' && line[i] <= '9'; i++)
		port = port * 10 + (unsigned)(line[i] - '0');
	if (i == n || port == 0 || port > 65535 || (line[n] == '0'))
		return 0;
	if (len - i <= p || len - i > p + 64 || memcmp(line + i, ANNOUNCE_PATH, p) != 0)
		return 0;
	for (i += p; i < len; i++) {
		char c = line[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))
			return 0;
	}
	return (int)port;
}

enum bc_devtools_line bc_devtools_filter(const char *line, size_t len, uint16_t sandbox_port,
					 uint16_t host_port, char *out, size_t size, size_t *out_len)
{
	if (!memmem(line, len, MARK, strlen(MARK)))
		return BC_DEVTOOLS_PASS;
	int port = bc_devtools_announced_port(line, len);
	if (port <= 0 || port != sandbox_port)
		return BC_DEVTOOLS_DROP;
	size_t n = strlen(ANNOUNCE), digits = (size_t)snprintf(NULL, 0, "%d", port);
	int w = snprintf(out, size, "%s%u%.*s", ANNOUNCE, (unsigned)host_port,
			 (int)(len - n - digits), line + n + digits);
	if (w < 0 || (size_t)w >= size)
		return BC_DEVTOOLS_DROP;
	*out_len = (size_t)w;
	return BC_DEVTOOLS_REWRITE;
}

/* A decimal port: 0..65535, digits only, at most 5 of them. */
static int parse_port(const char *s, size_t len)
{
	unsigned v = 0;
	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v > 65535 ? -EINVAL : (int)v;
}

int bc_devtools_port_arg(int argc, char *const argv[])
{
	const char *v = bc_switch_last(argc, argv, "remote-debugging-port");
	if (!v)
		return -ENOENT;
	return v[0] == '=' ? parse_port(v + 1, strlen(v + 1)) : -EINVAL;
}

int bc_devtools_parse_ports(const char *s, uint16_t *host_port, uint16_t *sandbox_port)
{
	const char *colon = strchr(s, ':');
	if (!colon)
		return -EINVAL;
	int h = parse_port(s, (size_t)(colon - s)), in = parse_port(colon + 1, strlen(colon + 1));
	if (h < 0 || in <= 0)
		return -EINVAL;
	*host_port = (uint16_t)h;
	*sandbox_port = (uint16_t)in;
	return 0;
}

/* ---- who is on the other end ----------------------------------------- */

/* The owner (uid in the host's user namespace) of the socket at the other
 * end of conn, a TCP connection over the host's loopback: the client's
 * socket is the one whose source is conn's peer and whose destination is
 * conn's local address. -errno when it cannot be told (no such socket,
 * it is gone, sock_diag refused). */
static int peer_uid(int diag_fd, int conn, uid_t *uid)
{
	struct sockaddr_in local, peer;
	socklen_t ll = sizeof local, pl = sizeof peer;
	if (getsockname(conn, (struct sockaddr *)&local, &ll) < 0 ||
	    getpeername(conn, (struct sockaddr *)&peer, &pl) < 0)
		return -errno;
	if (local.sin_family != AF_INET || peer.sin_family != AF_INET)
		return -EAFNOSUPPORT;

	char buf[MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct inet_diag_req_v2))] = { 0 };
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	struct inet_diag_req_v2 *req = mnl_nlmsg_put_extra_header(nlh, sizeof *req);
	req->sdiag_family = AF_INET;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = ~0u;
	req->id.idiag_sport = peer.sin_port;
	req->id.idiag_dport = local.sin_port;
	req->id.idiag_src[0] = peer.sin_addr.s_addr;
	req->id.idiag_dst[0] = local.sin_addr.s_addr;
	req->id.idiag_cookie[0] = req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

	union { char b[4096]; struct nlmsghdr h; } reply = { .h = { .nlmsg_type = 0 } };
	int r = bc_nl_talk(diag_fd, nlh, &reply, sizeof reply);
	if (r < 0)
		return r;
	const struct inet_diag_msg *m = mnl_nlmsg_get_payload(&reply.h);
	if (reply.h.nlmsg_type != SOCK_DIAG_BY_FAMILY || reply.h.nlmsg_len < NLMSG_LENGTH(sizeof *m))
		return -ENOENT;
	/* The answer must be that very socket, and a full one: a socket in
	 * TIME_WAIT (or a request) carries no owner. */
	if (m->idiag_family != AF_INET || m->id.idiag_sport != peer.sin_port ||
	    m->id.idiag_dport != local.sin_port || m->id.idiag_src[0] != peer.sin_addr.s_addr ||
	    m->id.idiag_dst[0] != local.sin_addr.s_addr)
		return -ENOENT;
	if (m->idiag_state != TCP_ESTABLISHED && m->idiag_state != TCP_FIN_WAIT1 &&
	    m->idiag_state != TCP_FIN_WAIT2)
		return -ENOENT;
	*uid = m->idiag_uid;
	return 0;
}

/* A listener on the host's 127.0.0.1: port if it is free (and not 0),
 * else any free port. */
static int host_listen(uint16_t port, uint16_t *bound)
{
	for (int attempt = port ? 0 : 1; attempt < 2; attempt++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
					   .sin_port = htons(attempt ? 0 : port) };
		socklen_t sl = sizeof sin;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
		if (fd < 0)
			return -errno;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 && listen(fd, 16) == 0 &&
		    getsockname(fd, (struct sockaddr *)&sin, &sl) == 0) {
			*bound = ntohs(sin.sin_port);
			return fd;
		}
		close(fd);
	}
	return -EADDRINUSE;
}

/* sock_diag must name us as the owner of a connection we make ourselves;
 * else the owner of a client could never be told, and nothing may be
 * forwarded. */
static int diag_selftest(struct bc_devtools *d)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(d->host_port) };
	/* Closed in reverse order: the client first, so that TIME_WAIT is
	 * on its side and not on the listener's port. */
	_cleanup_close_ int a = -1;
	_cleanup_close_ int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	if (connect(c, (struct sockaddr *)&sin, sizeof sin) < 0)
		return -errno;
	for (int i = 0; i < 100 && a < 0; i++) {
		a = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (a < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (a < 0)
			poll(&(struct pollfd){ .fd = d->listen_fd, .events = POLLIN }, 1, 10);
	}
	if (a < 0)
		return -ETIMEDOUT;
	uid_t uid;
	int r = peer_uid(d->diag_fd, a, &uid);
	if (r < 0)
		return r;
	return uid == geteuid() ? 0 : -EPROTO;
}

int bc_devtools_prepare(struct bc_devtools *d, uint16_t host_port, uint16_t sandbox_port,
			struct bc_error *err)
{
	int p[2], r;
	if (sandbox_port == 0)
		return bc_error_set(err, EINVAL, "DevTools forwarding needs Chromium's port inside the sandbox");
	d->sandbox_port = sandbox_port;
	d->uid = getuid();
	if ((r = host_listen(host_port, &d->host_port)) < 0)
		return bc_error_errno(err, -r, "listen for DevTools clients on the host's 127.0.0.1");
	d->listen_fd = r;
	if ((r = bc_nl_open(NETLINK_SOCK_DIAG)) < 0)
		return bc_error_errno(err, -r, "open a NETLINK_SOCK_DIAG socket to check who connects "
				      "to the DevTools port (the kernel needs CONFIG_INET_DIAG and "
				      "tcp_diag; or use --remote-debugging-pipe)");
	d->diag_fd = r;
	if ((r = diag_selftest(d)) < 0)
		return bc_error_errno(err, -r, "sock_diag cannot tell who owns a connection to the "
				      "DevTools port (load tcp_diag, or use --remote-debugging-pipe)");
	if (pipe2(p, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "create the stderr pipe for the DevTools forwarder");
	d->stderr_rd = p[0];
	d->stderr_wr = p[1];
	return 0;
}

void bc_devtools_close_host_side(struct bc_devtools *d)
{
	int *fds[] = { &d->stderr_rd, &d->listen_fd, &d->diag_fd };
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* ---- the forwarder process ----------------------------------------------- */

struct relay {
	int fd[2];                    /* 0: the host client, 1: the sandbox side */
	char buf[2][RELAY_BUF];       /* buf[k]: read from fd[k], to go to fd[1-k] */
	size_t len[2], off[2];
	bool eof[2];
	struct bc_cdp_ws ws;          /* Chromium's side, read for download names (cdp.h) */
};

struct fwd {
	struct bc_ns ns;
	int out_fd;
	int stderr_fd;
	int listen_fd;
	int diag_fd;
	int sig_fd;
	uid_t uid;
	uint16_t inner_port, host_port;
	bool draining;                /* stopping: EAGAIN on stderr means done */
	bool dropped;                 /* an announcement was dropped (said once) */
	unsigned refusals;
	struct bc_audit *audit;
	char line[LINE_MAX_LEN];
	size_t line_len;
	struct relay *relays[MAX_RELAYS];
};

static void relay_free(struct fwd *f, size_t i)
{
	struct relay *r = f->relays[i];
	close(r->fd[0]);
	close(r->fd[1]);
	bc_cdp_ws_free(&r->ws);
	free(r);
	f->relays[i] = NULL;
}

static void audit_devtools(struct fwd *f, const char *error)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "sandbox_port", f->inner_port);
	bc_json_uint(&j, "host_port", f->host_port);
	bc_json_str(&j, "host_addr", "127.0.0.1");
	bc_json_uint(&j, "uid", f->uid);
	bc_json_str(&j, "error", error);
	bc_audit_write(f->audit, "devtools", &j);
	bc_json_free(&j);
}

/* A connection closed unrelayed: its owner's uid (-1: unknown) and why. */
static void audit_refused(struct fwd *f, long long uid, const char *why)
{
	if (f->refusals > MAX_REFUSALS_AUDITED)
		return;
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "host_port", f->host_port);
	if (uid >= 0)
		bc_json_uint(&j, "client_uid", (uint64_t)uid);
	else
		bc_json_str(&j, "client_uid", NULL);
	bc_json_str(&j, "reason", f->refusals == MAX_REFUSALS_AUDITED ? "further refusals not recorded" : why);
	bc_audit_write(f->audit, "devtools_refused", &j);
	bc_json_free(&j);
	f->refusals++;
}

/* One stderr line (with its newline, if it had one), passed on as data;
 * only the announcement of Chromium's port is rewritten, and any other
 * line that mentions an announcement is dropped. */
static void stderr_line(struct fwd *f, const char *line, size_t len)
{
	size_t body = len && line[len - 1] == '\n' ? len - 1 : len, n = 0;
	char out[LINE_MAX_LEN + 16];

	switch (bc_devtools_filter(line, body, f->inner_port, f->host_port, out, sizeof out - 1, &n)) {
	case BC_DEVTOOLS_PASS:
		bc_write_all(f->out_fd, line, len);
		break;
	case BC_DEVTOOLS_REWRITE:
		out[n++] = '\n';
		bc_write_all(f->out_fd, out, n);
		break;
	case BC_DEVTOOLS_DROP:
		if (!f->dropped)
			dprintf(f->out_fd, "browsercage: dropped a DevTools announcement that is not "
				"Chromium's on port %u inside the sandbox\n", (unsigned)f->inner_port);
		f->dropped = true;
		break;
	}
}

/* Read what stderr has; 0 at EOF (or error), 1 otherwise. */
static int stderr_read(struct fwd *f)
{
	ssize_t n = read(f->stderr_fd, f->line + f->line_len, sizeof f->line - f->line_len);
	if (n < 0 && (errno == EINTR || (errno == EAGAIN && !f->draining)))
		return 1;
	if (n <= 0) {
		if (f->line_len)
			stderr_line(f, f->line, f->line_len);
		f->line_len = 0;
		return 0;
	}
	f->line_len += (size_t)n;
	char *start = f->line, *nl;
	while ((nl = memchr(start, '\n', f->line_len - (size_t)(start - f->line)))) {
		stderr_line(f, start, (size_t)(nl - start) + 1);
		start = nl + 1;
	}
	size_t left = f->line_len - (size_t)(start - f->line);
	if (left == sizeof f->line) {
		/* A line longer than the buffer goes on in pieces, each ended
		 * with a newline of its own and filtered on its own: no reader
		 * sees two pieces as one line. */
		char last = f->line[left - 1];
		f->line[left - 1] = '\n';
		stderr_line(f, f->line, left);
		f->line[0] = last;
		f->line_len = 1;
		return 1;
	}
	memmove(f->line, start, left);
	f->line_len = left;
	return 1;
}

/* A socket in the sandbox's netns (made by a short-lived child that joins
 * its namespaces) connected to Chromium's port there. */
static int sandbox_connect(struct fwd *f)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(f->inner_port) };
	int s = bc_netns_socket(&f->ns, AF_INET, SOCK_STREAM, 0, NULL);
	if (s < 0)
		return s;
	if (connect(s, (struct sockaddr *)&sin, sizeof sin) < 0) {
		close(s);
		return -ECONNREFUSED;
	}
	return s;
}

/* A new client: relayed to Chromium's port inside the sandbox if its
 * socket belongs to the launcher's uid, else closed before anything it
 * sent is read (and before the sandbox is connected to at all). */
static void relay_accept(struct fwd *f)
{
	int c = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	uid_t uid;
	int e = peer_uid(f->diag_fd, c, &uid);
	if (e < 0 || uid != f->uid) {
		audit_refused(f, e < 0 ? -1 : (long long)uid,
			      e < 0 ? "the owner of the client's socket cannot be told" : "another uid");
		close(c);
		return;
	}
	size_t slot = 0;
	while (slot < MAX_RELAYS && f->relays[slot])
		slot++;
	int s = slot < MAX_RELAYS ? sandbox_connect(f) : -EMFILE;
	struct relay *r = s >= 0 ? calloc(1, sizeof *r) : NULL;
	if (!r || fcntl(s, F_SETFL, O_NONBLOCK) < 0) {
		free(r);
		if (s >= 0)
			close(s);
		close(c);
		return;
	}
	r->fd[0] = c;
	r->fd[1] = s;
	bc_cdp_ws_init(&r->ws, bc_cdp_seen());
	f->relays[slot] = r;
}

/* Move bytes for relay i after poll; frees it when both sides are done. */
static void relay_step(struct fwd *f, size_t i, const struct pollfd *pfd)
{
	struct relay *r = f->relays[i];
	for (int k = 0; k < 2; k++) {
		short in = pfd[k].revents, out = pfd[1 - k].revents;
		if (!r->len[k] && !r->eof[k] && (in & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = read(r->fd[k], r->buf[k], RELAY_BUF);
			if (n == 0) {
				r->eof[k] = true;
				shutdown(r->fd[1 - k], SHUT_WR);
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				relay_free(f, i);
				return;
			} else if (n > 0) {
				r->len[k] = (size_t)n;
				r->off[k] = 0;
				if (k == 1)
					bc_cdp_ws_scan(&r->ws, r->buf[1], (size_t)n);
			}
		}
		if (r->len[k] && (out & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = send(r->fd[1 - k], r->buf[k] + r->off[k], r->len[k], MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				relay_free(f, i);
				return;
			}
			if (n > 0) {
				r->off[k] += (size_t)n;
				r->len[k] -= (size_t)n;
			}
		}
	}
	if (r->eof[0] && r->eof[1] && !r->len[0] && !r->len[1])
		relay_free(f, i);
}

static _Noreturn void forwarder_main(struct fwd *f)
{
	/* 3 fixed entries, then two per relay. */
	struct pollfd pfd[3 + 2 * MAX_RELAYS];
	size_t where[MAX_RELAYS];     /* index of relay i's first entry, 0 if not polled */

	for (;;) {
		size_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = f->sig_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = f->stderr_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = f->listen_fd, .events = POLLIN };
		for (size_t i = 0; i < MAX_RELAYS; i++) {
			struct relay *r = f->relays[i];
			where[i] = 0;
			if (!r)
				continue;
			where[i] = n;
			for (int k = 0; k < 2; k++)
				pfd[n++] = (struct pollfd){ .fd = r->fd[k], .events = (short)(
					(!r->len[k] && !r->eof[k] ? POLLIN : 0) | (r->len[1 - k] ? POLLOUT : 0)) };
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents && !stderr_read(f)) {
			close(f->stderr_fd);
			f->stderr_fd = -1;
		}
		if (pfd[2].revents)
			relay_accept(f);
		for (size_t i = 0; i < MAX_RELAYS; i++)
			if (f->relays[i] && where[i])
				relay_step(f, i, &pfd[where[i]]);
	}
	/* Stopped: the sandbox has ended, so every writer of the pipe is gone;
	 * pass on what is left of stderr, without waiting. */
	if (f->stderr_fd >= 0) {
		f->draining = true;
		fcntl(f->stderr_fd, F_SETFL, O_NONBLOCK);
		for (int i = 0; i < 1024 && stderr_read(f); i++)
			;
	}
	_exit(0);
}

int bc_devtools_attach(struct bc_devtools *d, int netns_fd, struct bc_error *err)
{
	return bc_ns_open(&d->ns, netns_fd, err);
}

int bc_devtools_start(struct bc_devtools *d, int out_fd, struct bc_audit *a, struct bc_error *err)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	bc_cdp_seen();   /* mapped before the fork: the forwarder fills the supervisor's table */
	pid_t parent = getpid(), pid = fork();
	if (pid < 0)
		return bc_error_errno(err, errno, "fork the DevTools forwarder");
	if (pid > 0) {
		d->pid = pid;
		bc_devtools_close_host_side(d);
		return 0;
	}
	/* The forwarder: it dies with the supervisor, and stops on SIGTERM. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigprocmask(SIG_BLOCK, &term, NULL);
	static struct fwd f;
	f = (struct fwd){ .ns = d->ns, .out_fd = out_fd, .stderr_fd = d->stderr_rd,
			  .listen_fd = d->listen_fd, .diag_fd = d->diag_fd, .uid = d->uid,
			  .inner_port = d->sandbox_port, .host_port = d->host_port,
			  .sig_fd = signalfd(-1, &term, SFD_CLOEXEC), .audit = a };
	if (f.sig_fd < 0 || getppid() != parent)
		_exit(1);
	audit_devtools(&f, NULL);
	forwarder_main(&f);
}

void bc_devtools_stop(struct bc_devtools *d, int out_fd)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
			;
		d->pid = 0;
	} else if (d->stderr_rd >= 0) {
		/* Never started: what was written goes on, through the same
		 * filter. */
		struct fwd f = { .out_fd = out_fd, .stderr_fd = d->stderr_rd, .listen_fd = -1,
				 .diag_fd = -1, .sig_fd = -1, .inner_port = d->sandbox_port,
				 .host_port = d->host_port, .draining = true };
		fcntl(d->stderr_rd, F_SETFL, O_NONBLOCK);
		for (int i = 0; i < 1024 && stderr_read(&f); i++)
			;
	}
	bc_devtools_close_host_side(d);
	if (d->stderr_wr >= 0)
		close(d->stderr_wr);
	bc_ns_close(&d->ns);
	d->stderr_wr = -1;
}
