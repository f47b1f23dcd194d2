/* test-cdp.c: download names from the DevTools protocol (cdp.h): which
 * messages name a download, what of them is kept (guid checked, name
 * sanitized and cut, the URL's origin only), the stream split on NULs in
 * any pieces with oversized messages skipped, the table's bound, the
 * command lines that ask for the pipe; WebSocket frames (port mode:
 * lengths, masks, frames skipped); and, unprivileged, the relay
 * itself on real descriptors: bytes copied unchanged, names read on the
 * way, Chromium's end of file passed on, a client that is gone closing
 * Chromium's way to it, and the client's descriptor back in place when
 * the relay never started. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cdp.h"
#include "../tap.h"

#define WILL(method, guid, url, name) \
	"{\"method\":\"" method "\",\"params\":{\"frameId\":\"F1\",\"guid\":\"" guid "\",\"url\":\"" url \
	"\",\"suggestedFilename\":\"" name "\"}}"

static int msg(struct bc_cdp_table *t, const char *m)
{
	return bc_cdp_message(t, m, strlen(m));
}

static const char *origin(const char *url)
{
	static char out[BC_CDP_ORIGIN_MAX + 1];
	return bc_cdp_origin(url, out, sizeof out) == 0 ? out : "(none)";
}

static bool pipe_arg(const char *a, const char *b)
{
	char *argv[] = { "chromium", (char *)a, (char *)b, NULL };
	return bc_cdp_pipe_arg(b ? 3 : 2, argv);
}

/* Run the relay until cond or 100 rounds of poll (100 ms each) pass. */
#define PUMP(r, cond) do { \
	for (int _i = 0; _i < 100 && !(cond); _i++) { \
		struct pollfd _p[2]; \
		bc_cdp_relay_events(r, _p); \
		if (poll(_p, 2, 100) > 0) \
			bc_cdp_relay_handle(r, _p); \
	} \
} while (0)

static void test_relay(void)
{
	struct bc_error err = {0};
	struct bc_cdp_relay r = BC_CDP_RELAY_INIT;
	int sp[2];
	signal(SIGPIPE, SIG_DFL);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || dup2(sp[1], 40) < 0) {
		ok(0, "relay: socketpair");
		return;
	}
	close(sp[1]);
	bc_cdp_table_free(bc_cdp_seen());
	is_int(bc_cdp_relay_prepare(&r, 40, &err), 0, "relay: prepared on descriptor 40 (%s)", err.msg);
	struct stat st;
	ok(fstat(40, &st) == 0 && S_ISFIFO(st.st_mode), "relay: descriptor 40 is now the pipe's write end");
	ok(!(fcntl(40, F_GETFD) & FD_CLOEXEC), "relay: ... kept across exec, as a passed descriptor");

	/* "Chromium": another process writes the stream (more than a pipe
	 * holds) into descriptor 40, then ends. */
	static char big[300000];
	memset(big, 'x', sizeof big);
	big[0] = '"';
	big[sizeof big - 2] = '"';
	big[sizeof big - 1] = '\0';
	static const char will[] = WILL("Browser.downloadWillBegin", "0b9c-11", "https://a.example/f?k=1", "r.csv");
	pid_t pid = fork();
	if (pid == 0) {
		ssize_t w1 = write(40, big, sizeof big), w2 = write(40, will, sizeof will);
		_exit(w1 == (ssize_t)sizeof big && w2 == (ssize_t)sizeof will ? 0 : 1);
	}
	bc_cdp_relay_started(&r);
	ok(fcntl(40, F_GETFD) < 0, "relay: once started, the supervisor holds no write end");
	char *got = malloc(sizeof big + sizeof will + 16);
	size_t n = 0;
	bool eof = false;
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 2000 && !eof; i++) {
		struct pollfd p[3];
		bc_cdp_relay_events(&r, p);
		p[2] = (struct pollfd){ .fd = sp[0], .events = POLLIN };
		if (poll(p, 3, 100) <= 0)
			continue;
		bc_cdp_relay_handle(&r, p);
		ssize_t k;
		while ((k = read(sp[0], got + n, sizeof big + sizeof will + 16 - n)) > 0)
			n += (size_t)k;
		eof = k == 0;
	}
	int status = -1;
	waitpid(pid, &status, 0);
	is_int(status, 0, "relay: the writer wrote everything");
	ok(eof, "relay: Chromium's end of file reaches the client");
	ok(n == sizeof big + sizeof will && memcmp(got, big, sizeof big) == 0 &&
	   memcmp(got + sizeof big, will, sizeof will) == 0, "relay: the client got the bytes unchanged (%zu)", n);
	const struct bc_cdp_download *d = bc_cdp_lookup(bc_cdp_seen(), "0b9c-11");
	ok(d && strcmp(d->name, "r.csv") == 0 && strcmp(d->origin, "https://a.example") == 0,
	   "relay: the download's name and origin were read on the way");
	is_int(r.scan.skipped, 1, "relay: the message larger than the limit passed unscanned");
	bc_cdp_relay_finish(&r);
	free(got);
	close(sp[0]);

	/* The client goes away: Chromium's next write fails (EPIPE). */
	struct bc_cdp_relay r2 = BC_CDP_RELAY_INIT;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || dup2(sp[1], 41) < 0)
		return;
	close(sp[1]);
	is_int(bc_cdp_relay_prepare(&r2, 41, &err), 0, "relay: prepared on descriptor 41");
	int chromium = fcntl(41, F_DUPFD_CLOEXEC, 50);
	bc_cdp_relay_started(&r2);
	close(sp[0]);
	signal(SIGPIPE, SIG_IGN);
	ok(write(chromium, "{}", 3) == 3, "relay: Chromium writes a message");
	PUMP(&r2, r2.in_fd < 0);
	errno = 0;
	ssize_t w = write(chromium, "{}", 3);
	ok(w < 0 && errno == EPIPE, "relay: after the client left, Chromium's write fails with EPIPE");
	signal(SIGPIPE, SIG_DFL);
	ok(r2.out_fd < 0 && r2.in_fd < 0, "relay: ... and the relay closed both ends");
	bc_cdp_relay_finish(&r2);
	close(chromium);

	/* Never started (the launch failed before the clone): the client's
	 * descriptor is back at its number. */
	struct bc_cdp_relay r3 = BC_CDP_RELAY_INIT;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || dup2(sp[1], 42) < 0)
		return;
	close(sp[1]);
	is_int(bc_cdp_relay_prepare(&r3, 42, &err), 0, "relay: prepared on descriptor 42");
	bc_cdp_relay_finish(&r3);
	ok(fstat(42, &st) == 0 && S_ISSOCK(st.st_mode) && write(42, "z", 1) == 1,
	   "relay: never started: descriptor 42 is the client's socket again");
	char c = 0;
	ok(read(sp[0], &c, 1) == 1 && c == 'z', "relay: ... the same one");
	close(42);
	close(sp[0]);
}

/* A server frame (FIN, opcode op) around payload, with the smallest
 * length encoding unless force (2: 16-bit, 8: 64-bit); masked with key
 * if key. Returns its length. */
static size_t frame(unsigned char *out, unsigned op, bool fin, const char *payload, size_t n,
		    int force, const unsigned char *key)
{
	size_t o = 0;
	out[o++] = (unsigned char)((fin ? 0x80 : 0) | op);
	unsigned char m = key ? 0x80 : 0;
	if (force == 8 || n > 65535) {
		out[o++] = m | 127;
		for (int i = 7; i >= 0; i--)
			out[o++] = (unsigned char)((uint64_t)n >> (8 * i));
	} else if (force == 2 || n > 125) {
		out[o++] = m | 126;
		out[o++] = (unsigned char)(n >> 8);
		out[o++] = (unsigned char)n;
	} else
		out[o++] = m | (unsigned char)n;
	if (key) {
		memcpy(out + o, key, 4);
		o += 4;
	}
	for (size_t i = 0; i < n; i++)
		out[o + i] = (unsigned char)(key ? payload[i] ^ key[i % 4] : payload[i]);
	return o + n;
}

static void test_ws(void)
{
	static const char resp[] = "HTTP/1.1 101 WebSocket Protocol Handshake\r\nUpgrade: WebSocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";
	static unsigned char buf[200000];
	static char big[70000];
	const unsigned char key[4] = { 0x12, 0x34, 0x56, 0x78 };
	size_t n = 0;
	memcpy(buf, resp, strlen(resp));
	n += strlen(resp);
	const char *m1 = WILL("Browser.downloadWillBegin", "w-7", "http://a.example/x", "seven.txt");
	const char *m2 = WILL("Browser.downloadWillBegin", "w-16", "http://a.example/x", "sixteen.txt");
	const char *m3 = WILL("Browser.downloadWillBegin", "w-64", "http://a.example/x", "sixtyfour.txt");
	const char *m4 = WILL("Browser.downloadWillBegin", "w-mask", "http://a.example/x", "masked.txt");
	const char *m5 = WILL("Browser.downloadWillBegin", "w-frag", "http://a.example/x", "frag.txt");
	const char *m6 = WILL("Browser.downloadWillBegin", "w-bin", "http://a.example/x", "bin.txt");
	const char *m7 = WILL("Browser.downloadWillBegin", "w-last", "http://a.example/x", "last.txt");
	memset(big, ' ', sizeof big);
	n += frame(buf + n, 1, true, m1, strlen(m1), 0, NULL);
	n += frame(buf + n, 9, true, "ping", 4, 0, NULL);                 /* control frame */
	n += frame(buf + n, 1, true, big, sizeof big, 0, NULL);           /* > the limit: skipped */
	n += frame(buf + n, 1, true, m2, strlen(m2), 2, NULL);
	n += frame(buf + n, 1, true, m3, strlen(m3), 8, NULL);
	n += frame(buf + n, 1, true, m4, strlen(m4), 0, key);
	n += frame(buf + n, 1, false, m5, 20, 0, NULL);                    /* fragmented: skipped */
	n += frame(buf + n, 0, true, m5 + 20, strlen(m5) - 20, 0, NULL);
	n += frame(buf + n, 2, true, m6, strlen(m6), 0, NULL);            /* binary: skipped */
	n += frame(buf + n, 1, true, "", 0, 0, NULL);
	n += frame(buf + n, 1, true, m7, strlen(m7), 0, NULL);
	for (int pass = 0; pass < 2; pass++) {
		struct bc_cdp_table t = {0};
		struct bc_cdp_ws w;
		bc_cdp_ws_init(&w, &t);
		if (pass == 0)
			bc_cdp_ws_scan(&w, (const char *)buf, n);
		else
			for (size_t i = 0; i < n; i++)
				bc_cdp_ws_scan(&w, (const char *)buf + i, 1);
		const char *how = pass ? "byte by byte" : "whole";
		ok(bc_cdp_lookup(&t, "w-7") && bc_cdp_lookup(&t, "w-16") && bc_cdp_lookup(&t, "w-64"),
		   "ws (%s): text frames with 7, 16 and 64-bit lengths are read", how);
		is_str(bc_cdp_lookup(&t, "w-mask") ? bc_cdp_lookup(&t, "w-mask")->name : NULL, "masked.txt",
		       "ws (%s): a masked frame is unmasked", how);
		ok(!bc_cdp_lookup(&t, "w-frag") && !bc_cdp_lookup(&t, "w-bin"),
		   "ws (%s): fragmented and binary frames are skipped", how);
		ok(bc_cdp_lookup(&t, "w-last") != NULL && t.n == 5,
		   "ws (%s): after skipped frames, the stream is still followed (%zu)", how, t.n);
		bc_cdp_ws_free(&w);
		bc_cdp_table_free(&t);
	}
	/* Not a switch to WebSocket (a /json reply): nothing after is read. */
	struct bc_cdp_table t = {0};
	struct bc_cdp_ws w;
	bc_cdp_ws_init(&w, &t);
	static const char http[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
	bc_cdp_ws_scan(&w, http, strlen(http));
	n = frame(buf, 1, true, m1, strlen(m1), 0, NULL);
	bc_cdp_ws_scan(&w, (const char *)buf, n);
	ok(t.n == 0, "ws: after a response that is not 101, frames are not read");
	bc_cdp_ws_free(&w);
	/* A 64-bit length with its top bit set stops the scan. */
	bc_cdp_ws_init(&w, &t);
	bc_cdp_ws_scan(&w, resp, strlen(resp));
	static const unsigned char bad[] = { 0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 1 };
	bc_cdp_ws_scan(&w, (const char *)bad, sizeof bad);
	n = frame(buf, 1, true, m1, strlen(m1), 0, NULL);
	bc_cdp_ws_scan(&w, (const char *)buf, n);
	ok(t.n == 0, "ws: a malformed length ends the scan of that connection");
	bc_cdp_ws_free(&w);
	bc_cdp_table_free(&t);
}

int main(void)
{
	struct bc_cdp_table t = {0};
	const struct bc_cdp_download *d;

	/* ---- messages ---- */
	is_int(msg(&t, WILL("Browser.downloadWillBegin", "d7585bc4-d961-40c8-8da1-c5484dcc5c11",
			    "http://127.0.0.1:8123/report?q=secret", "report-2026.csv")), 1,
	       "Browser.downloadWillBegin is recorded");
	d = bc_cdp_lookup(&t, "d7585bc4-d961-40c8-8da1-c5484dcc5c11");
	is_str(d ? d->name : NULL, "report-2026.csv", "its suggested name");
	is_str(d ? d->origin : NULL, "http://127.0.0.1:8123", "its URL's origin, without path or query");
	is_int(msg(&t, WILL("Page.downloadWillBegin", "d7585bc4-d961-40c8-8da1-c5484dcc5c11",
			    "http://x/", "other")), 0, "the same guid again (Page's event) is not added");
	is_str(bc_cdp_lookup(&t, "d7585bc4-d961-40c8-8da1-c5484dcc5c11")->name, "report-2026.csv",
	       "... the first entry stays");
	is_int(msg(&t, WILL("Page.downloadWillBegin", "aa-1", "https://e.example/", "p.pdf")), 1,
	       "Page.downloadWillBegin is recorded");
	is_int(msg(&t, WILL("Browser.downloadProgress", "bb-1", "https://e.example/", "p.pdf")), 0,
	       "another method is not");
	is_int(msg(&t, "{\"method\":\"Runtime.consoleAPICalled\",\"params\":{\"args\":[\"downloadWillBegin\"]}}"), 0,
	       "a page's text that says downloadWillBegin is not");
	is_int(msg(&t, "{\"id\":1,\"result\":" WILL("Browser.downloadWillBegin", "cc-1", "http://a/", "n") "}"), 0,
	       "an event nested in a reply is not");
	is_int(msg(&t, WILL("Browser.downloadWillBegin", "../../etc/passwd", "http://a/", "n")), 0,
	       "a guid with '/' or '.' is refused");
	is_int(msg(&t, WILL("Browser.downloadWillBegin", "0123456789012345678901234567890123456789012345678901234567890123x",
			    "http://a/", "n")), 0, "a guid longer than 64 is refused");
	is_int(msg(&t, "{\"method\":\"Browser.downloadWillBegin\",\"params\":{\"guid\":\"dd-1\",\"url\":\"http://a/\"}}"), 0,
	       "without suggestedFilename: not recorded");
	is_int(msg(&t, "{\"method\":\"Browser.downloadWillBegin\",\"params\":{\"guid\":\"ee-1\",\"guid\":\"ee-2\","
		       "\"url\":\"http://a/\",\"suggestedFilename\":\"n\"}}"), 0, "duplicate keys: refused");
	is_int(msg(&t, "{\"method\":\"Browser.downloadWillBegin\",\"params\":{\"guid\":\"ff-1\",\"url\":\"http://a/\","
		       "\"suggestedFilename\":\"n\"}"), 0, "malformed JSON: not recorded");
	is_int(msg(&t, WILL("Browser.downloadWillBegin", "gg-1", "http://a/", "a\\u0001b/c\\\\d\\u0085e\\u007f.txt")), 1,
	       "a name with control characters and separators is recorded");
	is_str(bc_cdp_lookup(&t, "gg-1")->name, "a_b_c_d_e_.txt", "... each of them as '_'");
	char name[600], m[800];
	memset(name, 0, sizeof name);
	strcpy(name, "a");
	for (int i = 0; i < 200; i++)
		strcat(name, "\xc3\xa9");   /* é: 401 bytes */
	snprintf(m, sizeof m, WILL("Browser.downloadWillBegin", "hh-1", "http://a/", "%s"), name);
	is_int(msg(&t, m), 1, "a long name is recorded");
	d = bc_cdp_lookup(&t, "hh-1");
	is_int(d ? strlen(d->name) : 0, 255, "... cut to 255 bytes on a character boundary");
	is_int(msg(&t, WILL("Browser.downloadWillBegin", "ii-1", "not a url", "n")), 1,
	       "an URL without an origin: recorded");
	is_str(bc_cdp_lookup(&t, "ii-1")->origin, "", "... with no origin");

	/* ---- origins ---- */
	is_str(origin("HTTPS://User:Pw@Example.COM:8443/a/b?c=d#e"), "https://example.com:8443",
	       "origin: user info, path, query and fragment left out, lower case");
	is_str(origin("http://[::1]:8080/x"), "http://[::1]:8080", "origin: IPv6 literal");
	is_str(origin("blob:https://a.example/5f0b-1"), "blob:https://a.example", "origin: blob: URL");
	is_str(origin("data:text/csv;base64,QQ=="), "data:", "origin: data: URL, the scheme only");
	is_str(origin("http:///x"), "(none)", "origin: empty host refused");
	is_str(origin("http://a b/"), "(none)", "origin: space in host refused");
	is_str(origin("blob:blob:http://a/"), "(none)", "origin: nested blob refused");
	is_str(origin("://a"), "(none)", "origin: no scheme refused");

	/* ---- the stream ---- */
	struct bc_cdp_table t2 = {0};
	struct bc_cdp_scanner s = { .table = &t2 };
	static const char stream[] = "{\"id\":1,\"result\":{}}\0"
		WILL("Browser.downloadWillBegin", "s-1", "http://a/", "one.txt") "\0"
		WILL("Browser.downloadWillBegin", "s-2", "http://b/", "two.txt");
	for (size_t i = 0; i < sizeof stream; i++)
		bc_cdp_scan(&s, stream + i, 1);
	ok(bc_cdp_lookup(&t2, "s-1") && bc_cdp_lookup(&t2, "s-2") && t2.n == 2,
	   "stream fed one byte at a time: both downloads found");
	char *huge = malloc(BC_CDP_MAX_MESSAGE + 200);
	int k = snprintf(huge, 200, "{\"method\":\"Browser.downloadWillBegin\",\"params\":{\"guid\":\"s-3\","
			 "\"url\":\"http://a/\",\"suggestedFilename\":\"");
	memset(huge + k, 'n', BC_CDP_MAX_MESSAGE);
	memcpy(huge + k + BC_CDP_MAX_MESSAGE - 100, "\"}}", 4);   /* > the limit, NUL-ended */
	size_t hlen = (size_t)k + BC_CDP_MAX_MESSAGE - 100 + 4;
	bc_cdp_scan(&s, huge, hlen);
	ok(!bc_cdp_lookup(&t2, "s-3") && s.skipped == 1, "a message over the limit is skipped");
	static const char next[] = WILL("Browser.downloadWillBegin", "s-4", "http://a/", "four");
	bc_cdp_scan(&s, next, sizeof next);
	ok(bc_cdp_lookup(&t2, "s-4") != NULL, "... and the next one is read");
	free(huge);
	bc_cdp_scanner_free(&s);

	/* ---- the table's bound ---- */
	struct bc_cdp_table t3 = {0};
	int added = 0, full = 0;
	for (int i = 0; i < BC_CDP_MAX_DOWNLOADS + 5; i++) {
		char g[32];
		snprintf(g, sizeof g, "g-%d", i);
		snprintf(m, sizeof m, WILL("Browser.downloadWillBegin", "%s", "http://a/", "n"), g);
		int r = msg(&t3, m);
		added += r == 1;
		full += r == -ENOSPC;
	}
	is_int(added, BC_CDP_MAX_DOWNLOADS, "the table holds %d downloads", BC_CDP_MAX_DOWNLOADS);
	ok(full == 5 && t3.dropped == 5, "... the rest are refused and counted");
	bc_cdp_table_free(&t3);
	bc_cdp_table_free(&t2);
	bc_cdp_table_free(&t);

	/* ---- command lines ---- */
	ok(pipe_arg("--remote-debugging-pipe", NULL), "pipe: --remote-debugging-pipe");
	ok(pipe_arg("-remote-debugging-pipe", NULL), "pipe: one dash");
	ok(pipe_arg("--remote-debugging-pipe=json", NULL), "pipe: =json");
	ok(!pipe_arg("--remote-debugging-pipe=cbor", NULL), "pipe: =cbor is not scanned");
	ok(!pipe_arg("--remote-debugging-pipe", "--remote-debugging-pipe=cbor"), "pipe: the last one counts");
	ok(!pipe_arg("--", "--remote-debugging-pipe"), "pipe: not after --");
	ok(!pipe_arg("--remote-debugging-port=0", NULL), "pipe: the port is not the pipe");
	ok(!pipe_arg("--remote-debugging-pipes", NULL), "pipe: another switch");

	test_ws();
	test_relay();
	return tap_done();
}
