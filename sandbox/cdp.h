/* cdp.h: the names Chromium gives its downloads, read from the DevTools
 * protocol on its way to the client, for the teardown audit.
 *
 * Playwright has Chromium save each download under its GUID
 * (Browser.setDownloadBehavior "allowAndName"), so the downloads directory
 * holds names like 0b9c...-...; the file name the site suggested is only
 * in the DevTools events Browser.downloadWillBegin and
 * Page.downloadWillBegin {guid, url, suggestedFilename}. With
 * --remote-debugging-pipe (Playwright's transport: requests on fd 3,
 * replies and events on fd 4, each message JSON ended by a NUL) the
 * supervisor relays fd 4: Chromium writes into a pipe, the supervisor
 * copies it to the client's fd 4 as it came and scans it on the way.
 * The request direction (fd 3) still passes straight into the sandbox.
 *
 * What Chromium writes is untrusted (a compromised browser writes it):
 * a message is parsed only if it is at most BC_CDP_MAX_MESSAGE bytes and
 * mentions downloadWillBegin; larger ones are passed on unscanned. Only
 * guid, suggestedFilename and the URL's origin are kept, in a table of
 * at most BC_CDP_MAX_DOWNLOADS entries (the excess counted); a guid is
 * 1 to 64 of [0-9A-Za-z-], a name has no control character, '/' or '\'
 * (each becomes '_') and is cut to BC_CDP_NAME_MAX bytes on a character
 * boundary. Names are recorded, never used to open anything: the
 * teardown audit (bc_downloads_scan) adds them to the record of a file
 * whose on-disk name is a guid seen. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "assign.h"
#include "util.h"

#define BC_CDP_MAX_MESSAGE BC_JV_MAX_SIZE  /* larger messages are not parsed */
#define BC_CDP_MAX_DOWNLOADS 1024
#define BC_CDP_GUID_MAX 64
#define BC_CDP_NAME_MAX 255                /* bytes of a suggested name */
#define BC_CDP_ORIGIN_MAX 255              /* bytes of scheme://host[:port] */

struct bc_cdp_download {
	char guid[BC_CDP_GUID_MAX + 1];
	char name[BC_CDP_NAME_MAX + 1];      /* the site's file name, sanitized */
	char origin[BC_CDP_ORIGIN_MAX + 1];  /* "" if the URL had none we accept */
	bool used;                           /* filled (set last) */
};

/* Slots are taken atomically and marked used once filled, so that the
 * supervisor (pipe relay) and the DevTools forwarder (port relay) can
 * fill one table shared between them (bc_cdp_seen). */
struct bc_cdp_table {
	struct bc_cdp_download *v;   /* BC_CDP_MAX_DOWNLOADS slots, allocated on first use */
	size_t n;                    /* slots taken */
	size_t dropped;              /* downloads not kept: the table was full */
	bool shared;                 /* v is bc_cdp_seen's mapping: never freed */
};

/* Splits a byte stream into NUL-ended messages and hands each that may
 * name a download to bc_cdp_message. */
struct bc_cdp_scanner {
	struct bc_cdp_table *table;
	char *msg;                   /* the message so far, BC_CDP_MAX_MESSAGE bytes */
	size_t len;
	bool oversized;              /* the current message is too long: skipped to its NUL */
	size_t skipped;              /* messages passed on unscanned (too long) */
};

/* Pure: one message (without its NUL). Adds its download to t if it is a
 * well-formed downloadWillBegin event; a guid already in t keeps its
 * first entry. 1 if added, 0 if not such a message (or a duplicate),
 * -ENOSPC if t is full (counted in t->dropped), -ENOMEM. */
int bc_cdp_message(struct bc_cdp_table *t, const char *msg, size_t len);

/* Pure: feed len bytes of the stream. Never fails: what cannot be
 * scanned (too long, no memory) is skipped. */
void bc_cdp_scan(struct bc_cdp_scanner *s, const char *data, size_t len);
void bc_cdp_scanner_free(struct bc_cdp_scanner *s);

/* The entry for guid, or NULL. */
const struct bc_cdp_download *bc_cdp_lookup(const struct bc_cdp_table *t, const char *guid);
void bc_cdp_table_free(struct bc_cdp_table *t);

/* Pure: the origin (scheme://host[:port], lower-case scheme; no user
 * info, path, query or fragment) of url into out; for blob:URL the
 * inner URL's, prefixed "blob:". -EINVAL (out "") if url has none of
 * the expected shape. */
int bc_cdp_origin(const char *url, char *out, size_t size);

/* Pure: the command line argv[1..argc-1] asks Chromium for the DevTools
 * pipe in JSON (--remote-debugging-pipe without a value, or =json; "-"
 * prefix too), before any "--". */
bool bc_cdp_pipe_arg(int argc, char *const argv[]);

/* The downloads this process's sessions saw: filled by the relays, read
 * by the teardown audit. A shared anonymous mapping made on the first
 * call, so processes forked after it (the DevTools forwarder) fill the
 * same table. */
struct bc_cdp_table *bc_cdp_seen(void);

/* ---- WebSocket (port mode: the forwarder's sandbox-to-client bytes) ---- */

/* Reads one connection's server-to-client bytes: the HTTP response (only
 * a "101" switch is followed further), then frames with 7, 16 or 64-bit
 * lengths; a text frame that is whole (FIN, no continuation, not
 * compressed) and at most BC_CDP_MAX_MESSAGE long is one message for
 * bc_cdp_message; every other frame is skipped. A malformed stream stops
 * the scan of that connection, never the relay. */
struct bc_cdp_ws {
	struct bc_cdp_table *table;
	int state;                   /* WS_HTTP, WS_HEAD, WS_BODY, WS_OFF */
	char status[12];             /* "HTTP/1.1 101" */
	size_t head_len;             /* bytes of the HTTP response so far */
	unsigned crlf;               /* of "\r\n\r\n" matched */
	unsigned char fh[14];        /* a frame's header */
	size_t fh_len;
	uint64_t left;               /* payload bytes to come */
	uint64_t pos;                /* into the payload (unmasking) */
	bool keep;
	char *msg;
	size_t len;
};

void bc_cdp_ws_init(struct bc_cdp_ws *w, struct bc_cdp_table *t);
void bc_cdp_ws_scan(struct bc_cdp_ws *w, const char *data, size_t len);
void bc_cdp_ws_free(struct bc_cdp_ws *w);

/* ---- the pipe relay (supervisor) ---- */

struct bc_cdp_relay {
	int in_fd;         /* read end of the pipe Chromium writes (O_NONBLOCK) */
	int out_fd;        /* the client's descriptor (a copy of fd) */
	int fd;            /* the descriptor number the sandbox gets the pipe's write end as */
	int out_flags;     /* out_fd's file status flags, restored when done */
	bool out_socket;
	bool in_eof;
	char *buf;
	size_t off, len;
	struct bc_cdp_scanner scan;
};

#define BC_CDP_RELAY_INIT { .in_fd = -1, .out_fd = -1, .fd = -1 }

/* Before the clone: keep a copy of the client's descriptor fd (close-on-
 * exec) and put the write end of a new pipe at fd, which the sandbox then
 * inherits in its place. */
int bc_cdp_relay_prepare(struct bc_cdp_relay *r, int fd, struct bc_error *err);

/* In the sandbox's pid 1, first thing: close the supervisor's ends. */
void bc_cdp_relay_close_host_side(struct bc_cdp_relay *r);

/* In the supervisor after the clone: close its copy of the write end (so
 * Chromium's end is the only one and its exit is an end of file). */
void bc_cdp_relay_started(struct bc_cdp_relay *r);

/* The event loop: set the two pollfds (fd -1 when nothing is awaited),
 * then handle what poll returned in them. Chromium's end of file is
 * passed on as the client's (its copy closed); an error writing to the
 * client closes the pipe, so Chromium's next write fails. */
void bc_cdp_relay_events(const struct bc_cdp_relay *r, struct pollfd pfd[2]);
void bc_cdp_relay_handle(struct bc_cdp_relay *r, const struct pollfd pfd[2]);

/* Teardown: pass on what Chromium wrote before it ended (bounded in time:
 * a client that reads nothing for a second loses the rest), close every
 * fd. Idempotent; safe on BC_CDP_RELAY_INIT. */
void bc_cdp_relay_finish(struct bc_cdp_relay *r);
