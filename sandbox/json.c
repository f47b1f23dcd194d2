/* json.c: records as data: one table-driven writer and one strict reader.
 * See json.h. */
#include "config.h"

#include <string.h>

#include "assign.h"
#include "audit.h"
#include "json.h"

bool bc_rec_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* An integer written as such: digits only, optional '-', no fraction or
 * exponent, within int64. */
static int rec_int(const struct bc_jv *v, int64_t *out)
{
	const char *s = v->str;
	if (v->type != BC_JV_NUMBER || !s || strpbrk(s, ".eE"))
		return -EINVAL;
	errno = 0;
	char *end;
	long long x = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = (int64_t)x;
	return 0;
}

static int rec_member(const struct bc_rec_field *f, const struct bc_jv *v, const char *name,
		      struct bc_error *err)
{
	switch (f->type) {
	case BC_REC_STR:
		if (v->type == BC_JV_NULL) {
			f->str[0] = '\0';
			return 0;
		}
		if (v->type != BC_JV_STRING)
			return bc_error_set(err, EINVAL, "%s: \"%s\" must be a string", name, f->key);
		if (strlen(v->str) >= f->size)
			return bc_error_set(err, EINVAL, "%s: \"%s\" is longer than %zu bytes", name, f->key,
					    f->size - 1);
		if (bc_rec_has_control(v->str))
			return bc_error_set(err, EINVAL, "%s: \"%s\" holds a control character", name, f->key);
		memcpy(f->str, v->str, strlen(v->str) + 1);
		return 0;
	case BC_REC_INT:
		if (rec_int(v, f->i64) < 0)
			return bc_error_set(err, EINVAL, "%s: \"%s\" must be an integer", name, f->key);
		return 0;
	case BC_REC_BOOL:
		if (v->type != BC_JV_BOOL)
			return bc_error_set(err, EINVAL, "%s: \"%s\" must be true or false", name, f->key);
		*f->b = v->b;
		return 0;
	case BC_REC_ANY:
		return 0;
	}
	return bc_error_set(err, EINVAL, "%s: \"%s\": bad field table", name, f->key);
}

int bc_rec_parse(const char *text, size_t len, const char *name, const struct bc_rec_field *f,
		 size_t n, struct bc_error *err)
{
	struct bc_jv *root = NULL;
	name = name ? name : "record";
	if (len > BC_REC_MAX_SIZE)
		return bc_error_set(err, EINVAL, "%s: larger than %d bytes", name, BC_REC_MAX_SIZE);
	int r = bc_jv_parse(text, len, name, &root, err);
	if (r < 0)
		return r;
	bool have[64] = { false };
	if (n > ARRAY_SIZE(have))
		r = bc_error_set(err, EINVAL, "%s: bad field table", name);
	else if (root->type != BC_JV_OBJECT)
		r = bc_error_set(err, EINVAL, "%s: a record must be a JSON object", name);
	for (size_t i = 0; r == 0 && i < root->n; i++) {
		size_t k = 0;
		while (k < n && strcmp(f[k].key, root->keys[i]) != 0)
			k++;
		if (k == n) {
			r = bc_error_set(err, EINVAL, "%s: unknown key \"%.64s\"", name, root->keys[i]);
			break;
		}
		r = rec_member(&f[k], &root->items[i], name, err);
		have[k] = true;
		if (f[k].seen)
			*f[k].seen = true;
	}
	for (size_t k = 0; r == 0 && k < n; k++)
		if (f[k].required && !have[k])
			r = bc_error_set(err, EINVAL, "%s: \"%s\" is missing", name, f[k].key);
	bc_jv_free(root);
	return r;
}

char *bc_rec_format(const struct bc_rec_field *f, size_t n)
{
	struct bc_json j;
	bc_json_init(&j);
	for (size_t k = 0; k < n; k++) {
		switch (f[k].type) {
		case BC_REC_STR:
			bc_json_str(&j, f[k].key, f[k].str[0] ? f[k].str : NULL);
			break;
		case BC_REC_INT:
			bc_json_int(&j, f[k].key, *f[k].i64);
			break;
		case BC_REC_BOOL:
			bc_json_bool(&j, f[k].key, *f[k].b);
			break;
		case BC_REC_ANY:
			break;
		}
	}
	const char *t = bc_json_text(&j);
	char *out = t ? strdup(t) : NULL;
	bc_json_free(&j);
	return out;
}
