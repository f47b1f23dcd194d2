/* hostaddr.c: the host's own addresses over rtnetlink (see hostaddr.h).
 * The dump goes through bc_nl_dump, the project's netlink transport. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "hostaddr.h"
#include "netlink.h"
#include "nft.h"

struct collect {
	struct bc_cidr *v;
	size_t n, cap;
	int err;
};

static int push(struct collect *c, int family, const void *addr)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct bc_cidr *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	struct bc_cidr *e = &c->v[c->n++];
	*e = (struct bc_cidr){ .family = family, .prefix = family == AF_INET ? 32 : 128 };
	memcpy(e->addr, addr, family == AF_INET ? 4 : 16);
	return 0;
}

/* One RTM_NEWADDR: the local address (IFA_LOCAL; on a point-to-point link
 * IFA_ADDRESS is the peer's), else IFA_ADDRESS (IPv6 has only that). */
static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	struct collect *c = data;
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a, *local = NULL, *address = NULL;

	if (nlh->nlmsg_type != RTM_NEWADDR || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)) ||
	    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return MNL_CB_OK;
	size_t len = ifa->ifa_family == AF_INET ? 4 : 16;
	mnl_attr_for_each(a, nlh, sizeof(*ifa)) {
		if (mnl_attr_get_payload_len(a) != len)
			continue;
		if (mnl_attr_get_type(a) == IFA_LOCAL)
			local = a;
		else if (mnl_attr_get_type(a) == IFA_ADDRESS)
			address = a;
	}
	if (!local)
		local = address;
	if (local && (c->err = push(c, ifa->ifa_family, mnl_attr_get_payload(local))) < 0)
		return MNL_CB_ERROR;
	return MNL_CB_OK;
}

/* One dump of every address into c: 0 or -errno; -EINTR when the kernel
 * says the list changed while it was read (NLM_F_DUMP_INTR: other
 * sandboxes' veths come and go), and then c holds a torn list. */
static int dump_once(struct collect *c)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	int fd = bc_nl_open(NETLINK_ROUTE), r;

	if (fd < 0)
		return fd;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = bc_nl_seq();
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	r = bc_nl_dump(fd, nlh, addr_cb, c);
	close(fd);
	return r == 0 && c->err < 0 ? c->err : r;
}

int bc_hostaddr_load(struct bc_policy *p, struct bc_error *err)
{
	struct collect c = { 0 };
	int r = -EINTR;

	/* a torn dump is read again, a bounded number of times */
	for (int i = 0; i < 20 && r == -EINTR; i++) {
		free(c.v);
		c = (struct collect){ 0 };
		r = dump_once(&c);
	}
	if (r < 0) {
		free(c.v);
		return bc_error_errno(err, -r, "the host's addresses: rtnetlink address dump%s",
				      r == -EINTR ? " (the addresses kept changing while they were read)" : "");
	}
	free(p->host_addrs);
	p->host_addrs = c.v;
	p->n_host_addrs = c.n;
	return (int)c.n;
}
