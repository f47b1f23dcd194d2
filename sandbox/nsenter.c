/* nsenter.c: join a sandbox's user and network namespaces in a child. */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "nsenter.h"

static int ns_open(pid_t pid, const char *type)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, type);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Join pid's user namespace (unless it is already ours) and netns. */
static int ns_join(int userfd, int netfd)
{
	struct stat a, b;
	if (fstat(userfd, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 && a.st_ino == b.st_ino)
		userfd = -1;
	if (userfd >= 0 && setns(userfd, CLONE_NEWUSER) < 0)
		return -errno;
	if (setns(netfd, CLONE_NEWNET) < 0)
		return -errno;
	return 0;
}

int bc_nsenter_run(pid_t pid, int (*fn)(void *arg), void *arg, struct bc_error *err)
{
	_cleanup_close_ int userfd = ns_open(pid, "user");
	_cleanup_close_ int netfd = ns_open(pid, "net");
	if (userfd < 0 || netfd < 0)
		return bc_error_errno(err, userfd < 0 ? -userfd : -netfd, "open namespaces of pid %d", (int)pid);
	pid_t child = fork();
	if (child < 0)
		return bc_error_errno(err, errno, "fork");
	if (child == 0) {
		int r = ns_join(userfd, netfd);
		_exit(r < 0 ? 200 + (-r > 54 ? 54 : -r) : fn(arg));
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return bc_error_errno(err, errno, "waitpid");
	if (!WIFEXITED(status))
		return bc_error_set(err, ECHILD, "namespace helper for pid %d died", (int)pid);
	int code = WEXITSTATUS(status);
	if (code >= 200)
		return bc_error_errno(err, code - 200, "join the namespaces of pid %d", (int)pid);
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
	char data = 0;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(q->chan, &msg, MSG_NOSIGNAL) == 1 ? 0 : 2;
}

int bc_netns_socket(pid_t pid, int domain, int type, int protocol, struct bc_error *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return bc_error_errno(err, errno, "socketpair");
	struct sock_req q = { domain, type, protocol, sv[1] };
	int r = bc_nsenter_run(pid, make_socket, &q, err);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		return r < 0 ? r : bc_error_set(err, EIO, "create a socket in the sandbox's network namespace");
	}
	char data;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	ssize_t n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	close(sv[0]);
	struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return bc_error_set(err, EIO, "no socket came back from the sandbox's network namespace");
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}
