/* netlink.c: the one netlink transport (see netlink.h). */
#include "config.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netlink.h"
#include "util.h"

int bc_nl_open(int protocol)
{
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	int one = 1;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* NACKs carry only the header of the refused message, not its payload */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
	return fd;
}

uint32_t bc_nl_seq(void)
{
	static uint32_t seq;
	if (!seq)
		seq = (uint32_t)time(NULL);
	return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

int bc_nl_send(int fd, const void *buf, size_t len)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int sndbuf = (int)len + 4096;

	/* a batch goes in one sendto, and netlink refuses one larger than SO_SNDBUF */
	if (len > 128 * 1024)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	ssize_t n = sendto(fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof kernel);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/* One datagram into buf (BC_NL_BUF bytes): its length, or -errno
 * (-EMSGSIZE if it did not fit). */
static ssize_t nl_recv(int fd, char *buf, int flags)
{
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(fd, buf, BC_NL_BUF, flags | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		return n > BC_NL_BUF ? -EMSGSIZE : n;
	}
	return -EINTR;
}

int bc_nl_talk(int fd, struct nlmsghdr *nlh, void *reply, size_t reply_len)
{
	_cleanup_free_ char *buf = malloc(BC_NL_BUF);
	int r;

	if (!buf)
		return -ENOMEM;
	nlh->nlmsg_seq = bc_nl_seq();
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if ((r = bc_nl_send(fd, nlh, nlh->nlmsg_len)) < 0)
		return r;
	for (int round = 0; round < 16; round++) {
		ssize_t n = nl_recv(fd, buf, 0);
		if (n < 0)
			return (int)n;
		int left = (int)n;
		for (struct nlmsghdr *m = (struct nlmsghdr *)buf; mnl_nlmsg_ok(m, left);
		     m = mnl_nlmsg_next(m, &left)) {
			if (m->nlmsg_seq != nlh->nlmsg_seq)
				continue;
			if (m->nlmsg_type == NLMSG_ERROR) {
				if (m->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
					return -EPROTO;
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
				return e->error;
			}
			if (reply && m->nlmsg_len <= reply_len) {
				memcpy(reply, m, m->nlmsg_len);
				reply = NULL;
			}
		}
	}
	return -ETIMEDOUT;
}

int bc_nl_batch(int fd, const void *msgs, size_t len, uint32_t seq_lo, uint32_t seq_hi,
		size_t want, int ignore, struct bc_nl_acks *out)
{
	_cleanup_free_ char *buf = malloc(BC_NL_BUF);
	int r;

	*out = (struct bc_nl_acks){ 0 };
	if (!buf)
		return -ENOMEM;
	if ((r = bc_nl_send(fd, msgs, len)) < 0)
		return r;
	for (size_t round = 0; round < want + 16 && out->acks < want; round++) {
		ssize_t n = nl_recv(fd, buf, MSG_DONTWAIT);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n < 0)
			return (int)n;
		int left = (int)n;
		for (struct nlmsghdr *m = (struct nlmsghdr *)buf; mnl_nlmsg_ok(m, left);
		     m = mnl_nlmsg_next(m, &left)) {
			if (m->nlmsg_type != NLMSG_ERROR || m->nlmsg_seq < seq_lo || m->nlmsg_seq > seq_hi ||
			    m->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
				continue;
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
			out->acks++;
			if (e->error == 0 || (ignore && e->error == -ignore) || out->error)
				continue;
			out->error = e->error;
			out->error_seq = m->nlmsg_seq;
		}
	}
	if (out->error)
		return out->error;
	return out->acks < want ? -EPROTO : 0;
}

int bc_nl_dump(int fd, struct nlmsghdr *req, mnl_cb_t cb, void *data)
{
	_cleanup_free_ char *buf = malloc(BC_NL_BUF);
	uint32_t seq = req->nlmsg_seq;
	int ret;

	if (!buf)
		return -ENOMEM;
	if ((ret = bc_nl_send(fd, req, req->nlmsg_len)) < 0)
		return ret;
	for (int round = 0; round < 100000; round++) {
		ssize_t n = nl_recv(fd, buf, 0);
		if (n < 0)
			return (int)n;
		ret = mnl_cb_run(buf, (size_t)n, seq, 0, cb, data);
		if (ret < 0)
			return -errno;
		if (ret == MNL_CB_STOP)
			return 0;
	}
	return -EPROTO;
}
