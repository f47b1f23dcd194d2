/* nsenter.c: join a sandbox's user and network namespaces in a child. */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "nsenter.h"

int bc_ns_open(struct bc_ns *ns, int net_fd, struct bc_error *err)
{
	*ns = (struct bc_ns){ .user_fd = -1, .net_fd = -1 };
	ns->net_fd = fcntl(net_fd, F_DUPFD_CLOEXEC, 3);
	if (ns->net_fd >= 0)
		ns->user_fd = ioctl(ns->net_fd, NS_GET_USERNS);    /* O_CLOEXEC, by the kernel */
	if (ns->user_fd < 0 || ns->net_fd < 0) {
		int e = errno;
		bc_ns_close(ns);
		return bc_error_errno(err, e, "open the sandbox's network and user namespaces");
	}
	return 0;
}

void bc_ns_close(struct bc_ns *ns)
{
	if (ns->user_fd >= 0)
		close(ns->user_fd);
	if (ns->net_fd >= 0)
		close(ns->net_fd);
	ns->user_fd = ns->net_fd = -1;
}

/* Join the user namespace (unless it is already ours), then the netns. */
static int ns_join(const struct bc_ns *ns)
{
	struct stat a, b;
	bool same = fstat(ns->user_fd, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev;
	if (!same && setns(ns->user_fd, CLONE_NEWUSER) < 0)
		return -errno;
	if (setns(ns->net_fd, CLONE_NEWNET) < 0)
		return -errno;
	return 0;
}

int bc_nsenter_run(const struct bc_ns *ns, int (*fn)(void *arg), void *arg, struct bc_error *err)
{
	pid_t child = fork();
	if (child < 0)
		return bc_error_errno(err, errno, "fork");
	if (child == 0) {
		int r = ns_join(ns);
		_exit(r < 0 ? 200 + (-r > 54 ? 54 : -r) : fn(arg));
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return bc_error_errno(err, errno, "waitpid");
	if (!WIFEXITED(status))
		return bc_error_set(err, ECHILD, "the namespace helper died");
	int code = WEXITSTATUS(status);
	if (code >= 200)
		return bc_error_errno(err, code - 200, "join the sandbox's namespaces");
	return code;
}

struct sock_req {
	int domain, type, protocol;
	int chan;
};

static int make_socket(void *arg)
{
	struct sock_req *q = arg;
	int fd = socket(q->domain, q->type | SOCK_CLOEXEC, q->protocol);
	if (fd < 0)
		return 1;
	return bc_send_fd(q->chan, fd) < 0 ? 2 : 0;
}

int bc_netns_socket(const struct bc_ns *ns, int domain, int type, int protocol, struct bc_error *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return bc_error_errno(err, errno, "socketpair");
	struct sock_req q = { domain, type, protocol, sv[1] };
	int r = bc_nsenter_run(ns, make_socket, &q, err);
	close(sv[1]);
	if (r == 0)
		r = bc_recv_fd(sv[0], MSG_DONTWAIT);
	else if (r > 0)
		r = -EIO;
	close(sv[0]);
	if (r < 0)
		return bc_error_errno(err, -r, "create a socket in the sandbox's network namespace");
	return r;
}
