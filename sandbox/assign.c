/* assign.c: a strict, bounded JSON parser and the assignment record built
 * on it. Outside input: nothing here trusts a length, a nesting or an
 * escape it has not checked. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "assign.h"
#include "audit.h"

/* ---- parser ---------------------------------------------------------------- */

struct jp {
	const char *s, *end, *p;
	const char *name;
	struct bc_error *err;
	int depth;
};

static int jp_fail(struct jp *j, const char *what)
{
	int line = 1, col = 1;
	for (const char *q = j->s; q < j->p && q < j->end; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else
			col++;
	}
	return bc_error_set(j->err, EINVAL, "%s:%d:%d: %s", j->name, line, col, what);
}

static void jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of a valid UTF-8 sequence at p (< end), 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
		 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	if (!n || (size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
		return 0;   /* overlong, or a UTF-16 surrogate */
	if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
		return 0;   /* overlong, or above U+10FFFF */
	return n;
}

/* A string starting at the opening quote; *out is a heap copy, unescaped. */
static int jp_string(struct jp *j, char **out)
{
	j->p++;   /* '"' */
	/* The unescaped text is never longer than the escaped one. */
	const char *q = j->p;
	while (q < j->end && *q != '"') {
		if (*q == '\\' && q + 1 < j->end)
			q++;
		q++;
	}
	if (q >= j->end)
		return jp_fail(j, "unterminated string");
	char *buf = malloc((size_t)(q - j->p) + 1), *o = buf;
	if (!buf)
		return bc_error_set(j->err, ENOMEM, "out of memory");
	while (*j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			free(buf);
			return jp_fail(j, "control character in string (escape it)");
		}
		if (c != '\\') {
			size_t n = utf8_seq((const unsigned char *)j->p, (const unsigned char *)j->end);
			if (!n) {
				free(buf);
				return jp_fail(j, "invalid UTF-8 in string");
			}
			memcpy(o, j->p, n);
			o += n;
			j->p += n;
			continue;
		}
		j->p++;
		char e = *j->p;
		const char *simple = strchr("\"\\/bfnrt", e);
		if (e && simple) {
			static const char map[] = "\"\\/\b\f\n\r\t";
			*o++ = map[simple - "\"\\/bfnrt"];
			j->p++;
			continue;
		}
		unsigned cp, lo;
		if (e != 'u' || j->end - j->p < 5 || hex4(j->p + 1, &cp) < 0) {
			free(buf);
			return jp_fail(j, "bad escape in string");
		}
		j->p += 5;
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			free(buf);
			return jp_fail(j, "lone low surrogate in string");
		}
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || hex4(j->p + 2, &lo) < 0 ||
			    lo < 0xdc00 || lo > 0xdfff) {
				free(buf);
				return jp_fail(j, "high surrogate without its low half");
			}
			j->p += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (cp == 0) {
			free(buf);
			return jp_fail(j, "\\u0000 in string refused");
		}
		/* 6 or 12 input bytes always cover the at most 4 output bytes. */
		o += put_utf8(o, cp);
	}
	j->p++;
	*o = '\0';
	*out = buf;
	return 0;
}

static int jp_number(struct jp *j, struct bc_jv *v)
{
	const char *st = j->p, *p = j->p;
	if (p < j->end && *p == '-')
		p++;
	if (p < j->end && *p == '0')
		p++;
	else if (p < j->end && *p >= '1' && *p <= '9')
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	else
		return jp_fail(j, "bad number");
	if (p < j->end && *p == '.') {
		p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return jp_fail(j, "bad number: digits must follow '.'");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return jp_fail(j, "bad number: digits must follow the exponent");
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p - st > 64)
		return jp_fail(j, "number too long");
	v->str = strndup(st, (size_t)(p - st));
	if (!v->str)
		return bc_error_set(j->err, ENOMEM, "out of memory");
	v->num = strtod(v->str, NULL);
	v->type = BC_JV_NUMBER;
	j->p = p;
	return 0;
}

static int jp_value(struct jp *j, struct bc_jv *v);

static int jp_grow(struct jp *j, struct bc_jv *v, bool obj)
{
	if (v->n == BC_JV_MAX_MEMBERS)
		return jp_fail(j, "too many members");
	struct bc_jv *items = realloc(v->items, (v->n + 1) * sizeof *items);
	if (!items)
		return bc_error_set(j->err, ENOMEM, "out of memory");
	v->items = items;
	items[v->n] = (struct bc_jv){0};
	if (obj) {
		char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
		if (!keys)
			return bc_error_set(j->err, ENOMEM, "out of memory");
		v->keys = keys;
		keys[v->n] = NULL;
	}
	return 0;
}

static int jp_container(struct jp *j, struct bc_jv *v, bool obj)
{
	char close = obj ? '}' : ']';
	int r;
	if (++j->depth > BC_JV_MAX_DEPTH)
		return jp_fail(j, "nested too deeply");
	v->type = obj ? BC_JV_OBJECT : BC_JV_ARRAY;
	j->p++;
	jp_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		if ((r = jp_grow(j, v, obj)) < 0)
			return r;
		if (obj) {
			jp_ws(j);
			if (j->p >= j->end || *j->p != '"')
				return jp_fail(j, "expected a string key");
			char *key;
			if ((r = jp_string(j, &key)) < 0)
				return r;
			for (size_t i = 0; i < v->n; i++)
				if (strcmp(v->keys[i], key) == 0) {
					free(key);
					return jp_fail(j, "duplicate key");
				}
			jp_ws(j);
			if (j->p >= j->end || *j->p != ':') {
				free(key);
				return jp_fail(j, "expected ':'");
			}
			v->keys[v->n] = key;
			j->p++;
		}
		r = jp_value(j, &v->items[v->n]);
		v->n++;   /* counted even on error, so bc_jv_free sees it */
		if (r < 0)
			return r;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return 0;
		}
		return jp_fail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int jp_value(struct jp *j, struct bc_jv *v)
{
	jp_ws(j);
	if (j->p >= j->end)
		return jp_fail(j, "unexpected end of input");
	static const struct { const char *word; enum bc_jv_type t; bool b; } words[] = {
		{ "null", BC_JV_NULL, false }, { "true", BC_JV_BOOL, true }, { "false", BC_JV_BOOL, false },
	};
	switch (*j->p) {
	case '{':
		return jp_container(j, v, true);
	case '[':
		return jp_container(j, v, false);
	case '"':
		v->type = BC_JV_STRING;
		return jp_string(j, &v->str);
	default:
		for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
			size_t n = strlen(words[i].word);
			if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i].word, n) == 0) {
				v->type = words[i].t;
				v->b = words[i].b;
				j->p += n;
				return 0;
			}
		}
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return jp_number(j, v);
		return jp_fail(j, "unexpected character");
	}
}

static void jv_clear(struct bc_jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jv_clear(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
}

void bc_jv_free(struct bc_jv *v)
{
	if (!v)
		return;
	jv_clear(v);
	free(v);
}

int bc_jv_parse(const char *text, size_t len, const char *name, struct bc_jv **out,
		struct bc_error *err)
{
	struct jp j = { .s = text, .end = text + len, .p = text, .name = name ? name : "json", .err = err };
	if (len > BC_JV_MAX_SIZE)
		return bc_error_set(err, EINVAL, "%s: larger than %d bytes", j.name, BC_JV_MAX_SIZE);
	struct bc_jv *v = calloc(1, sizeof *v);
	if (!v)
		return bc_error_set(err, ENOMEM, "out of memory");
	int r = jp_value(&j, v);
	if (r == 0) {
		jp_ws(&j);
		if (j.p != j.end)
			r = jp_fail(&j, "text after the value");
	}
	if (r < 0) {
		bc_jv_free(v);
		return r;
	}
	*out = v;
	return 0;
}

const struct bc_jv *bc_jv_get(const struct bc_jv *v, const char *key)
{
	if (!v || v->type != BC_JV_OBJECT)
		return NULL;
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->keys[i], key) == 0)
			return &v->items[i];
	return NULL;
}

const char *bc_jv_str(const struct bc_jv *v, const char *key)
{
	const struct bc_jv *m = bc_jv_get(v, key);
	return m && m->type == BC_JV_STRING ? m->str : NULL;
}

static void jv_format(struct bc_json *o, const struct bc_jv *v);

/* Append raw text to a bc_json buffer through its quoting-free path. */
static void put_raw(struct bc_json *o, const char *s)
{
	size_t n = strlen(s);
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 128;
		while (o->len + n + 1 > cap)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->oom = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n + 1);
	o->len += n;
}

static void jv_format(struct bc_json *o, const struct bc_jv *v)
{
	switch (v->type) {
	case BC_JV_NULL: put_raw(o, "null"); break;
	case BC_JV_BOOL: put_raw(o, v->b ? "true" : "false"); break;
	case BC_JV_NUMBER: put_raw(o, v->str); break;
	case BC_JV_STRING: bc_json_quote(o, v->str); break;
	case BC_JV_ARRAY:
	case BC_JV_OBJECT:
		put_raw(o, v->type == BC_JV_OBJECT ? "{" : "[");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				put_raw(o, ",");
			if (v->type == BC_JV_OBJECT) {
				bc_json_quote(o, v->keys[i]);
				put_raw(o, ":");
			}
			jv_format(o, &v->items[i]);
		}
		put_raw(o, v->type == BC_JV_OBJECT ? "}" : "]");
		break;
	}
}

char *bc_jv_format(const struct bc_jv *v)
{
	struct bc_json o;
	bc_json_init(&o);
	jv_format(&o, v);
	if (o.oom || !o.buf) {
		bc_json_free(&o);
		return NULL;
	}
	return o.buf;
}

/* ---- assignments ----------------------------------------------------------- */

bool bc_task_id_valid(const char *s)
{
	return bc_id_valid(BC_ID_TASK, s);
}

void bc_assign_free(struct bc_assignment *a)
{
	free(a->path);
	free(a->task);
	free(a->profile_id);
	free(a->label);
	free(a->storage_dir);
	free(a->policy_path);
	free(a->policy_sha256);
	free(a->state);
	free(a->owner);
	*a = (struct bc_assignment){0};
}

static int take_str(const struct bc_jv *m, const char *name, const char *key, char **out,
		    struct bc_error *err)
{
	if (m->type != BC_JV_STRING)
		return bc_error_set(err, EINVAL, "%s: \"%s\" must be a string", name, key);
	if (!m->str[0])
		return bc_error_set(err, EINVAL, "%s: \"%s\" is empty", name, key);
	if (!(*out = strdup(m->str)))
		return bc_error_set(err, ENOMEM, "out of memory");
	return 0;
}

static int take_policy(struct bc_assignment *a, const struct bc_jv *m, const char *name,
		       struct bc_error *err)
{
	int r;
	if (m->type == BC_JV_STRING)
		return take_str(m, name, "policy", &a->policy_path, err);
	if (m->type != BC_JV_OBJECT)
		return bc_error_set(err, EINVAL, "%s: \"policy\" must be a path or an object "
				    "{\"path\": ..., \"sha256\": ...}", name);
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->keys[i], "path") == 0)
			r = take_str(&m->items[i], name, "policy.path", &a->policy_path, err);
		else if (strcmp(m->keys[i], "sha256") == 0) {
			r = take_str(&m->items[i], name, "policy.sha256", &a->policy_sha256, err);
			if (r == 0 && strspn(a->policy_sha256, "0123456789abcdef") != 64)
				r = bc_error_set(err, EINVAL, "%s: \"policy.sha256\" must be 64 lower-case "
						 "hex digits", name);
			if (r == 0 && a->policy_sha256[64])
				r = bc_error_set(err, EINVAL, "%s: \"policy.sha256\" must be 64 lower-case "
						 "hex digits", name);
		} else
			r = bc_error_set(err, EINVAL, "%s: unknown key \"policy.%s\"", name, m->keys[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int bc_assign_parse(struct bc_assignment *a, const char *name, const char *text, size_t len,
		    struct bc_error *err)
{
	struct bc_jv *root = NULL;
	struct bc_assignment n = {0};
	int r = bc_jv_parse(text, len, name, &root, err);
	if (r < 0)
		return r;
	if (root->type != BC_JV_OBJECT) {
		r = bc_error_set(err, EINVAL, "%s: an assignment must be a JSON object", name);
		goto out;
	}
	for (size_t i = 0; i < root->n && r == 0; i++) {
		const char *k = root->keys[i];
		const struct bc_jv *m = &root->items[i];
		if (strcmp(k, "taskId") == 0)
			r = take_str(m, name, k, &n.task, err);
		else if (strcmp(k, "profileId") == 0)
			r = take_str(m, name, k, &n.profile_id, err);
		else if (strcmp(k, "label") == 0)
			r = take_str(m, name, k, &n.label, err);
		else if (strcmp(k, "storageDir") == 0)
			r = take_str(m, name, k, &n.storage_dir, err);
		else if (strcmp(k, "state") == 0)
			r = take_str(m, name, k, &n.state, err);
		else if (strcmp(k, "owner") == 0)
			r = take_str(m, name, k, &n.owner, err);
		else if (strcmp(k, "policy") == 0)
			r = take_policy(&n, m, name, err);
		else
			r = bc_error_set(err, EINVAL, "%s: unknown key \"%s\"", name, k);
	}
	if (r < 0)
		goto out;
	char where[3][256];
	snprintf(where[0], sizeof where[0], "assignment %s: taskId", name);
	snprintf(where[1], sizeof where[1], "assignment %s: label", name);
	snprintf(where[2], sizeof where[2], "assignment %s: profileId", name);
	if (!n.task)
		r = bc_error_set(err, EINVAL, "%s: \"taskId\" is missing", name);
	else if (bc_id_check(BC_ID_TASK, where[0], n.task, err) < 0 ||
		 (n.label && bc_id_check(BC_ID_LABEL, where[1], n.label, err) < 0) ||
		 (n.profile_id && bc_id_check(BC_ID_PROFILE_ID, where[2], n.profile_id, err) < 0))
		r = -EINVAL;
	else if (!n.state)
		r = bc_error_set(err, EINVAL, "%s: \"state\" is missing", name);
	else if (!n.label == !n.storage_dir)
		r = bc_error_set(err, EINVAL, "%s: give exactly one of \"label\" and \"storageDir\"", name);
	else if (n.storage_dir && n.storage_dir[0] != '/')
		r = bc_error_set(err, EINVAL, "%s: \"storageDir\" must be an absolute path", name);
	else if (!n.policy_path && !n.policy_sha256)
		r = bc_error_set(err, EINVAL, "%s: \"policy\" is missing (a path, or an object with "
				 "\"path\" and/or \"sha256\")", name);
	else if (!(n.path = strdup(name)))
		r = bc_error_set(err, ENOMEM, "out of memory");
out:
	bc_jv_free(root);
	if (r < 0) {
		bc_assign_free(&n);
		return r;
	}
	*a = n;
	return 0;
}

int bc_assign_load(struct bc_assignment *a, const char *path, struct bc_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return bc_error_errno(err, errno, "assignment %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "assignment %s", path);
	if (!S_ISREG(st.st_mode))
		return bc_error_set(err, EINVAL, "assignment %s: not a regular file", path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return bc_error_set(err, EPERM, "assignment %s is writable by group/others: chmod go-w %s",
				    path, path);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = bc_read_fd(fd, &text, &len, BC_JV_MAX_SIZE + 1);
	if (r < 0)
		return bc_error_errno(err, -r, "assignment %s", path);
	if (len > BC_JV_MAX_SIZE)
		return bc_error_set(err, EINVAL, "assignment %s: larger than %d bytes", path, BC_JV_MAX_SIZE);
	return bc_assign_parse(a, path, text, len, err);
}

int bc_assign_check(const struct bc_assignment *a, const struct bc_policy *p, struct bc_error *err)
{
	if (strcmp(a->state, "approved") != 0) {
		if (strcmp(a->state, "retired") == 0)
			return bc_error_set(err, EPERM, "assignment %s (task %s) is retired; nothing started",
					    a->path, a->task);
		return bc_error_set(err, EPERM, "assignment %s (task %s) is not approved (state \"%s\"); "
				    "nothing started", a->path, a->task, a->state);
	}
	if (a->policy_path) {
		_cleanup_free_ char *want = realpath(a->policy_path, NULL);
		_cleanup_free_ char *got = p->path ? realpath(p->path, NULL) : NULL;
		if (!want || !got || strcmp(want, got) != 0)
			return bc_error_set(err, EPERM, "assignment %s (task %s) is for policy %s, not %s "
					    "(compared by path); nothing started", a->path, a->task,
					    a->policy_path, p->path ? p->path : "(none)");
	}
	if (a->policy_sha256 && strcmp(a->policy_sha256, p->sha256) != 0)
		return bc_error_set(err, EPERM, "assignment %s (task %s) is for a policy with sha256 %s, "
				    "but %s has sha256 %s (compared by sha256); nothing started", a->path,
				    a->task, a->policy_sha256, p->path ? p->path : "the policy",
				    p->sha256[0] ? p->sha256 : "(none)");
	return 0;
}
