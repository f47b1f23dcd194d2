/* devtools.c: the DevTools port forwarder (see devtools.h). */
#include "config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "devtools.h"

#define ANNOUNCE "DevTools listening on ws://127.0.0.1:"
#define MAX_RELAYS 64           /* DevTools clients at once */
#define RELAY_BUF 16384
#define LINE_MAX_LEN 4096

int bc_devtools_announced_port(const char *line, size_t len)
{
	size_t n = strlen(ANNOUNCE), i;
	unsigned port = 0;

	if (len <= n || memcmp(line, ANNOUNCE, n) != 0)
		return 0;
	for (i = n; i < len && i < n + 5 && line[i] >= '0' && line[i] <= '9'; i++)
		port = port * 10 + (unsigned)(line[i] - '0');
	if (i == n || (i < len && line[i] != '/') || port == 0 || port > 65535)
		return 0;
	return (int)port;
}

int bc_devtools_rewrite(const char *line, size_t len, uint16_t port, char *out, size_t size)
{
	int old = bc_devtools_announced_port(line, len);
	if (old <= 0)
		return -EINVAL;
	size_t n = strlen(ANNOUNCE), digits = (size_t)snprintf(NULL, 0, "%d", old);
	const char *rest = line + n + digits;
	int w = snprintf(out, size, "%s%u%.*s", ANNOUNCE, (unsigned)port, (int)(len - n - digits), rest);
	if (w < 0 || (size_t)w >= size)
		return -ENOSPC;
	return w;
}

int bc_devtools_prepare(struct bc_devtools *d, struct bc_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "create the stderr pipe for the DevTools forwarder");
	d->stderr_rd = p[0];
	d->stderr_wr = p[1];
	return 0;
}

/* ---- the forwarder process ----------------------------------------------- */

struct relay {
	int fd[2];                    /* 0: the host client, 1: the sandbox side */
	char buf[2][RELAY_BUF];       /* buf[k]: read from fd[k], to go to fd[1-k] */
	size_t len[2], off[2];
	bool eof[2];
};

struct fwd {
	struct bc_ns ns;
	int out_fd;
	int stderr_fd;
	int listen_fd;
	int sig_fd;
	uint16_t inner_port, host_port;
	bool draining;                /* stopping: EAGAIN on stderr means done */
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
	free(r);
	f->relays[i] = NULL;
}

/* A listener on the host's 127.0.0.1: port if it is free, else any port. */
static int host_listen(uint16_t port, uint16_t *bound)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
					   .sin_port = htons(attempt ? 0 : port) };
		socklen_t sl = sizeof sin;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 && listen(fd, 16) == 0 &&
		    getsockname(fd, (struct sockaddr *)&sin, &sl) == 0) {
			*bound = ntohs(sin.sin_port);
			return fd;
		}
		close(fd);
	}
	return -EADDRINUSE;
}

static void audit_devtools(struct fwd *f, const char *error)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "sandbox_port", f->inner_port);
	bc_json_uint(&j, "host_port", f->host_port);
	bc_json_str(&j, "host_addr", "127.0.0.1");
	bc_json_str(&j, "error", error);
	bc_audit_write(f->audit, "devtools", &j);
	bc_json_free(&j);
}

/* One complete stderr line (with its newline, if it had one): open the
 * host port on the announcement, then pass the line on. */
static void stderr_line(struct fwd *f, const char *line, size_t len)
{
	size_t body = len && line[len - 1] == '\n' ? len - 1 : len;
	int port = bc_devtools_announced_port(line, body);
	char out[LINE_MAX_LEN + 16];

	if (port > 0 && f->listen_fd < 0) {
		f->inner_port = (uint16_t)port;
		int fd = host_listen(f->inner_port, &f->host_port);
		if (fd < 0) {
			dprintf(f->out_fd, "browsercage: DevTools port %d: cannot listen on the host's "
				"127.0.0.1: %s\n", port, strerror(-fd));
			audit_devtools(f, strerror(-fd));
		} else {
			f->listen_fd = fd;
			audit_devtools(f, NULL);
		}
	}
	if (port > 0 && f->listen_fd >= 0 && port == f->inner_port) {
		int n = bc_devtools_rewrite(line, body, f->host_port, out, sizeof out - 1);
		if (n >= 0) {
			if (body < len)
				out[n++] = '\n';
			bc_write_all(f->out_fd, out, (size_t)n);
			return;
		}
	}
	bc_write_all(f->out_fd, line, len);
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
	if (left == sizeof f->line) {        /* a line longer than the buffer goes on as is */
		stderr_line(f, f->line, left);
		left = 0;
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

/* A new client: relayed to Chromium's port inside the sandbox. */
static void relay_accept(struct fwd *f)
{
	int c = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
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

int bc_devtools_attach(struct bc_devtools *d, pid_t sandbox_pid, int netns_fd, struct bc_error *err)
{
	return bc_ns_open(&d->ns, sandbox_pid, netns_fd, err);
}

int bc_devtools_start(struct bc_devtools *d, int out_fd, struct bc_audit *a, struct bc_error *err)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0)
		return bc_error_errno(err, errno, "fork the DevTools forwarder");
	if (pid > 0) {
		d->pid = pid;
		close(d->stderr_rd);
		d->stderr_rd = -1;
		return 0;
	}
	/* The forwarder: it dies with the supervisor, and stops on SIGTERM. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigprocmask(SIG_BLOCK, &term, NULL);
	static struct fwd f;
	f = (struct fwd){ .ns = d->ns, .out_fd = out_fd, .stderr_fd = d->stderr_rd,
			  .listen_fd = -1, .sig_fd = signalfd(-1, &term, SFD_CLOEXEC), .audit = a };
	if (f.sig_fd < 0 || getppid() != parent)
		_exit(1);
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
		/* Never started: whatever the command wrote goes on unchanged. */
		char buf[4096];
		ssize_t n;
		fcntl(d->stderr_rd, F_SETFL, O_NONBLOCK);
		for (int i = 0; i < 1024 && (n = read(d->stderr_rd, buf, sizeof buf)) > 0; i++)
			bc_write_all(out_fd, buf, (size_t)n);
	}
	if (d->stderr_rd >= 0)
		close(d->stderr_rd);
	if (d->stderr_wr >= 0)
		close(d->stderr_wr);
	bc_ns_close(&d->ns);
	d->stderr_rd = d->stderr_wr = -1;
}
