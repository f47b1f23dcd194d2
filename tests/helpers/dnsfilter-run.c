/* dnsfilter-run: drive bc_dnsfilter_start outside the launcher
 * (tests/blackbox/dns.sh, scripts/bench/dns).
 *
 *   dnsfilter-run [--rate N --burst N] POLICY AUDIT_LOG
 *
 * Does what the launcher does around the filter, and nothing else: a child
 * unshares a user and a network namespace (uid/gid maps as the launcher
 * writes them: root maps a slot of browsercage's host id range, held for
 * our whole life, a user maps itself), brings
 * lo up, commits the policy's ruleset, makes the 127.0.0.1:53 UDP and TCP
 * sockets and a netfilter socket there and hands them up; this process
 * (the "supervisor", in the netns it was started in) starts the filter.
 * Prints "sandbox PID", "filter PID" and "ready" on stdout, then waits:
 * SIGTERM/SIGINT stop everything (exit 0); the filter dying first is
 * reported on stderr (exit 1). The sandbox child never outlives us. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostids.h"
#include "dnsfilter.h"
#include "nft.h"
#include "policy.h"

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "dnsfilter-run: %s: %s\n", what, msg);
	exit(2);
}

static int dns_socket(int type)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(53),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0))
		die("127.0.0.1:53", strerror(errno));
	return fd;
}

static void send_fds(int sock, const int *fds, size_t n)
{
	char c = 'n';
	union { char buf[CMSG_SPACE(sizeof(int) * 3)]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	if (sendmsg(sock, &msg, 0) != 1)
		die("hand up the sockets", strerror(errno));
}

static void recv_fds(int sock, int *fds, size_t n)
{
	char c;
	union { char buf[CMSG_SPACE(sizeof(int) * 3)]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		die("receive the sockets", "the sandbox child failed");
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * n))
		die("receive the sockets", "bad message");
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * n);
}

static _Noreturn void sandbox_child(const struct bc_policy *p, int sock)
{
	struct bc_error err = {0};
	char c;
	int fds[3];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		die("unshare", strerror(errno));
	if (write(sock, "u", 1) != 1 || read(sock, &c, 1) != 1)
		die("sync", "parent gone");
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo" };
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("lo", strerror(errno));
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("lo up", strerror(errno));
	close(s);
	if (bc_nft_commit(p, &err) < 0)
		die("commit", err.msg);
	fds[0] = dns_socket(SOCK_DGRAM);
	fds[1] = dns_socket(SOCK_STREAM);
	if ((fds[2] = bc_nft_socket_open()) < 0)
		die("netfilter socket", strerror(-fds[2]));
	send_fds(sock, fds, 3);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	for (;;)
		pause();
}

static void write_map(pid_t pid, const char *file, const char *text)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path, strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	struct bc_policy p = {0};
	struct bc_error err = {0};
	struct bc_dnsfilter_cfg cfg = {0};
	int sv[2], fds[3], i = 1;
	char c, map[64];
	pid_t child, filter;
	sigset_t set;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--rate") == 0)
			cfg.rate = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--burst") == 0)
			cfg.burst = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else
			die("usage", "dnsfilter-run [--rate N --burst N] POLICY AUDIT_LOG");
	}
	if (argc - i != 2)
		die("usage", "dnsfilter-run [--rate N --burst N] POLICY AUDIT_LOG");
	if (bc_policy_load(&p, argv[i], &err) < 0)
		die(argv[i], err.msg);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", strerror(errno));
	if ((child = fork()) == 0) {
		close(sv[0]);
		sandbox_child(&p, sv[1]);
	}
	close(sv[1]);
	if (read(sv[0], &c, 1) != 1)
		die("sandbox child", "ended before unshare");
	bool root = getuid() == 0;
	struct bc_id_range range;
	struct bc_host_ids ids = { .uid = getuid(), .gid = getgid(), .lock_fd = -1 };
	if (root && (bc_ids_range_load(&range, &err) < 0 || bc_ids_take(&range, "dnsfilter-run", &ids, &err) < 0))
		die("host ids", err.msg);
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p.uid, (unsigned)ids.uid);
	write_map(child, "uid_map", map);
	if (!root)
		write_map(child, "setgroups", "deny");
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p.gid, (unsigned)ids.gid);
	write_map(child, "gid_map", map);
	if (write(sv[0], "g", 1) != 1)
		die("sandbox child", "gone");
	recv_fds(sv[0], fds, 3);

	cfg.policy = &p;
	cfg.pins_fd = -1;
	cfg.udp_fd = fds[0];
	cfg.tcp_fd = fds[1];
	cfg.nft_fd = fds[2];
	cfg.session_id = "dnsfilter-run";
	cfg.audit_fd = open(argv[i + 1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (cfg.audit_fd < 0)
		die(argv[i + 1], strerror(errno));
	if (bc_dnsfilter_start(&cfg, &filter, &err) < 0) {
		kill(child, SIGKILL);
		die("bc_dnsfilter_start", err.msg);
	}
	for (int k = 0; k < 3; k++)
		close(fds[k]);
	printf("sandbox %d\nfilter %d\nready\n", (int)child, (int)filter);
	fflush(stdout);

	for (;;) {
		siginfo_t si;
		int status;
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		if (si.si_signo != SIGCHLD)
			break;
		pid_t w;
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w == filter) {
				fprintf(stderr, "dnsfilter-run: the filter ended: %s %d\n",
					WIFSIGNALED(status) ? "signal" : "status",
					WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
				kill(child, SIGKILL);
				waitpid(child, NULL, 0);
				return 1;
			}
			if (w == child) {
				fprintf(stderr, "dnsfilter-run: the sandbox child ended\n");
				kill(filter, SIGKILL);
				waitpid(filter, NULL, 0);
				return 1;
			}
		}
	}
	kill(filter, SIGTERM);
	waitpid(filter, NULL, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	bc_policy_free(&p);
	return 0;
}
