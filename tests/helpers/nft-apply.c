/* nft-apply: test helper for the egress ruleset (tests/blackbox/nft.sh).
 *
 *   nft-apply POLICY_FILE              load, bc_nft_commit in this netns
 *   nft-apply --print POLICY_FILE      bc_ruleset_print
 *   nft-apply --verify POLICY_FILE     bc_nft_verify of its ruleset
 *   nft-apply --add4|--add6 ADDR TIMEOUT_MS     bc_nft_set_add
 *   nft-apply --connect ADDR PORT      TCP connect; prints connected,
 *                                      refused, unreachable or timeout
 *   nft-apply --udp ADDR PORT          send one datagram, wait for the echo;
 *                                      prints reply, refused, unreachable or timeout
 *   nft-apply --serve PORT...          TCP and UDP (echo) on every address,
 *                                      IPv4 and IPv6; exits after 300 s
 * Exit status 0 on success (connected / reply), 1 otherwise, 2 on misuse. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nft.h"
#include "policy.h"
#include "ruleset.h"

#define WAIT_MS 5000   /* a bound on a hung connect, not a measurement */

static int load(const char *path, struct bc_policy *p)
{
	struct bc_error err = { 0 };

	memset(p, 0, sizeof(*p));
	if (bc_policy_load(p, path, &err) < 0) {
		fprintf(stderr, "nft-apply: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int addr_parse(const char *s, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
		return 0;
	}
	return -1;
}

static const char *outcome(int e)
{
	switch (e) {
	case 0: return "connected";
	case ECONNREFUSED: case ECONNRESET: return "refused";
	case EHOSTUNREACH: case ENETUNREACH: case EACCES: case EPERM: return "unreachable";
	case ETIMEDOUT: return "timeout";
	default: return strerror(e);
	}
}

static int do_connect(const char *addr, const char *port, int type)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct pollfd pfd;
	int e = 0;

	if (addr_parse(addr, (uint16_t)atoi(port), &ss, &len) < 0)
		return 2;
	pfd.fd = socket(ss.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (pfd.fd < 0)
		return 2;
	if (connect(pfd.fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)
		e = errno;
	if (!e && type == SOCK_DGRAM && send(pfd.fd, "ping", 4, 0) < 0)
		e = errno;
	if (!e) {
		pfd.events = POLLIN | (type == SOCK_STREAM ? POLLOUT : 0);
		int n = poll(&pfd, 1, WAIT_MS);
		if (n == 0) {
			e = ETIMEDOUT;
		} else if (type == SOCK_STREAM) {
			socklen_t el = sizeof(e);
			getsockopt(pfd.fd, SOL_SOCKET, SO_ERROR, &e, &el);
		} else {
			char buf[16];
			if (recv(pfd.fd, buf, sizeof(buf), 0) < 0)
				e = errno;
		}
	}
	close(pfd.fd);
	if (type == SOCK_DGRAM && e == 0)
		puts("reply");
	else
		puts(outcome(e));
	return e ? 1 : 0;
}

static int do_serve(int argc, char **argv)
{
	struct pollfd pfd[64];
	int types[64];
	size_t n = 0;

	alarm(300);
	for (int i = 0; i < argc; i++) {
		for (int fam = 0; fam < 2; fam++) {
			for (int t = 0; t < 2 && n < ARRAY_SIZE(pfd); t++) {
				int type = t ? SOCK_DGRAM : SOCK_STREAM, one = 1;
				struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
							   .sin6_port = htons((uint16_t)atoi(argv[i])) };
				struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = a6.sin6_port };
				int fd = socket(fam ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC, 0);
				if (fd < 0)
					return 1;
				setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
				if (fam)
					setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
				if ((fam ? bind(fd, (struct sockaddr *)&a6, sizeof(a6))
					 : bind(fd, (struct sockaddr *)&a4, sizeof(a4))) < 0 ||
				    (type == SOCK_STREAM && listen(fd, 16) < 0)) {
					perror("nft-apply --serve");
					return 1;
				}
				pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
				types[n++] = type;
			}
		}
	}
	puts("ready");
	fflush(stdout);
	for (unsigned round = 0; round < 100000; round++) {
		if (poll(pfd, n, -1) < 0)
			return 1;
		for (size_t i = 0; i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			if (types[i] == SOCK_STREAM) {
				int c = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
				if (c >= 0) {
					(void)!write(c, "hi\n", 3);
					close(c);
				}
			} else {
				struct sockaddr_storage from;
				socklen_t fl = sizeof(from);
				char buf[512];
				ssize_t r = recvfrom(pfd[i].fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
				if (r > 0)
					(void)!sendto(pfd[i].fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
			}
		}
	}
	return 0;
}

/* This helper also runs inside sandboxes (its connect and udp modes), where
 * the seccomp filter denies the ptrace LeakSanitizer needs at exit: in a
 * sanitizer build its leak check is off (AddressSanitizer itself stays on). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(int argc, char **argv)
{
	struct bc_error err = { 0 };
	struct bc_policy p;

	if (argc == 2 && argv[1][0] != '-') {
		if (load(argv[1], &p) < 0)
			return 1;
		int r = bc_nft_commit(&p, &err);
		bc_policy_free(&p);
		if (r < 0) {
			fprintf(stderr, "nft-apply: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	if (argc == 3 && (strcmp(argv[1], "--print") == 0 || strcmp(argv[1], "--verify") == 0)) {
		if (load(argv[2], &p) < 0)
			return 1;
		int r;
		if (argv[1][2] == 'p')
			r = bc_ruleset_print(&p, stdout);
		else {
			struct bc_ruleset rs;
			r = bc_ruleset_build(&p, &rs);
			if (r == 0) {
				r = bc_nft_verify(&rs, &err);
				bc_ruleset_free(&rs);
			}
		}
		bc_policy_free(&p);
		if (r < 0) {
			fprintf(stderr, "nft-apply: %s\n", err.msg[0] ? err.msg : strerror(-r));
			return 1;
		}
		return 0;
	}
	if (argc == 4 && (strcmp(argv[1], "--add4") == 0 || strcmp(argv[1], "--add6") == 0)) {
		int family = argv[1][5] == '4' ? AF_INET : AF_INET6;
		uint8_t addr[16];
		if (inet_pton(family, argv[2], addr) != 1)
			return 2;
		if (bc_nft_set_add(-1, family, addr, (uint32_t)strtoul(argv[3], NULL, 10), &err) < 0) {
			fprintf(stderr, "nft-apply: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "--connect") == 0)
		return do_connect(argv[2], argv[3], SOCK_STREAM);
	if (argc == 4 && strcmp(argv[1], "--udp") == 0)
		return do_connect(argv[2], argv[3], SOCK_DGRAM);
	if (argc >= 3 && strcmp(argv[1], "--serve") == 0)
		return do_serve(argc - 2, argv + 2);
	fprintf(stderr, "usage: nft-apply POLICY | --print|--verify POLICY | --add4|--add6 ADDR MS |"
		" --connect|--udp ADDR PORT | --serve PORT...\n");
	return 2;
}
