/* netlink.h: the project's one netlink transport, for every protocol it
 * speaks (nf_tables, rtnetlink, sock_diag): open a socket, send one
 * request or one nfnetlink batch and read every answer to it (sequence
 * numbers checked, a bounded receive buffer), dump with a callback per
 * message. Message building stays with the callers (libnftnl, libmnl). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>

/* The receive buffer of every call here: a larger datagram is an error
 * (-EMSGSIZE), never silently truncated. */
#define BC_NL_BUF (64 * 1024)

/* Open and bind a netlink socket of protocol (NETLINK_ROUTE, ...) in the
 * current network namespace, close-on-exec, NACKs carrying only the
 * refused message's header (NETLINK_CAP_ACK). The socket stays bound to
 * that namespace wherever it is used from: a socket made inside a
 * sandbox and handed up is how the supervisor reaches the sandbox's
 * network. Returns the fd or -errno. */
int bc_nl_open(int protocol);

/* A fresh sequence number (per process, starting from the clock). */
uint32_t bc_nl_seq(void);

/* Send len bytes in one datagram to the kernel (SO_SNDBUF raised for a
 * large batch). 0 or -errno. */
int bc_nl_send(int fd, const void *buf, size_t len);

/* Request-answer: send nlh with NLM_F_REQUEST | NLM_F_ACK and a fresh
 * sequence number, and wait for the kernel's ACK of it; the first other
 * message answering it is copied to reply (if it fits in reply_len).
 * Answers to other sequence numbers are skipped. Returns 0, the kernel's
 * -errno, or -errno of send/recv (-ETIMEDOUT after too many datagrams). */
int bc_nl_talk(int fd, struct nlmsghdr *nlh, void *reply, size_t reply_len);

/* What an nfnetlink batch got back. */
struct bc_nl_acks {
	size_t acks;            /* ACKs and NACKs read for the batch's messages */
	int error;              /* the first NACK's -errno that counts, 0 if none */
	uint32_t error_seq;     /* the sequence number of the message it refused */
};

/* Send a batch (len bytes at buf, its messages numbered seq_lo..seq_hi)
 * and read the answers: nfnetlink handles a batch inside sendto(), so
 * every ACK and NACK is queued when it returns; read without blocking
 * until the queue is empty or want answers came. Answers outside
 * seq_lo..seq_hi are skipped; a NACK with -ignore (0: none) counts as an
 * ACK. Returns 0, a NACK's -errno (out->error, out->error_seq set),
 * -EPROTO when fewer than want answers came (out->acks says how many), or
 * -errno of send/recv. */
int bc_nl_batch(int fd, const void *buf, size_t len, uint32_t seq_lo, uint32_t seq_hi,
		size_t want, int ignore, struct bc_nl_acks *out);

/* Dump: send req (NLM_F_DUMP set, its sequence number chosen) and run cb
 * with data on every answer of that sequence until NLMSG_DONE. Returns 0,
 * or -errno (an NLMSG_ERROR answer's error, or -EPROTO for a dump without
 * end). */
int bc_nl_dump(int fd, struct nlmsghdr *req, mnl_cb_t cb, void *data);
