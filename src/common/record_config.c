/* record_config.c - the codec of struct record_config (record_config.h).
 * Runs in needle record (encoding) and in the agent (decoding, on the
 * thread that starts or reconfigures a recording: never a traced path),
 * so it allocates and takes no lock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/record_config.h"

#define FIELD_HEADER 8

struct string_field {
	unsigned tag;
	size_t max;
	size_t offset; /* of the member in struct record_config */
};

static const struct string_field string_fields[] = {
#define STRING_FIELD(t, name, m, what) { t, m, offsetof(struct record_config, name) },
	RECORD_CONFIG_STRINGS(STRING_FIELD)
#undef STRING_FIELD
};
#define STRING_FIELDS (sizeof(string_fields) / sizeof(string_fields[0]))

static char **string_at(struct record_config *c, size_t i)
{
	return (char **)((char *)c + string_fields[i].offset);
}

static const char *string_get(const struct record_config *c, size_t i)
{
	return *(char *const *)((const char *)c + string_fields[i].offset);
}

static uint8_t *put_field(uint8_t *p, unsigned tag, const void *v, uint32_t n)
{
	uint16_t t = (uint16_t)tag, zero = 0;
	memcpy(p, &t, 2);
	memcpy(p + 2, &zero, 2);
	memcpy(p + 4, &n, 4);
	if (n)
		memcpy(p + FIELD_HEADER, v, n);
	return p + FIELD_HEADER + n;
}

int record_config_encode(const struct record_config *c, uint8_t **out, size_t *len)
{
	size_t body = 0;

#define INT_SIZE(t, name, what)                                          \
	if (c->name || (c->present & RECORD_CONFIG_BIT(t)))              \
		body += FIELD_HEADER + 8;
	RECORD_CONFIG_INTS(INT_SIZE)
#undef INT_SIZE
	for (size_t i = 0; i < STRING_FIELDS; i++) {
		const char *s = string_get(c, i);
		if (!s)
			continue;
		size_t n = strlen(s);
		if (n > string_fields[i].max)
			return -E2BIG;
		body += FIELD_HEADER + n;
	}
	if (body > UINT32_MAX)
		return -E2BIG;
	uint8_t *buf = malloc(RECORD_CONFIG_HEADER + body), *p = buf + RECORD_CONFIG_HEADER;
	if (!buf)
		return -ENOMEM;
	uint32_t magic = RECORD_CONFIG_MAGIC, body32 = (uint32_t)body, zero = 0;
	uint16_t version = RECORD_CONFIG_VERSION, hlen = RECORD_CONFIG_HEADER;
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &hlen, 2);
	memcpy(buf + 8, &body32, 4);
	memcpy(buf + 12, &zero, 4);
#define INT_PUT(t, name, what)                                           \
	if (c->name || (c->present & RECORD_CONFIG_BIT(t)))              \
		p = put_field(p, t, &c->name, 8);
	RECORD_CONFIG_INTS(INT_PUT)
#undef INT_PUT
	for (size_t i = 0; i < STRING_FIELDS; i++) {
		const char *s = string_get(c, i);
		if (s)
			p = put_field(p, string_fields[i].tag, s, (uint32_t)strlen(s));
	}
	*out = buf;
	*len = RECORD_CONFIG_HEADER + body;
	return 0;
}

size_t record_config_int_offset(const uint8_t *p, size_t len, unsigned tag)
{
	size_t off = RECORD_CONFIG_HEADER;

	while (off + FIELD_HEADER <= len) {
		uint16_t t;
		uint32_t n;
		memcpy(&t, p + off, 2);
		memcpy(&n, p + off + 4, 4);
		if (t == tag)
			return n == 8 && off + FIELD_HEADER + 8 <= len ? off + FIELD_HEADER : 0;
		off += FIELD_HEADER + (size_t)n;
	}
	return 0;
}

size_t record_config_length(const uint8_t *p)
{
	uint32_t magic, body;
	uint16_t version, hlen;

	memcpy(&magic, p, 4);
	memcpy(&version, p + 4, 2);
	memcpy(&hlen, p + 6, 2);
	memcpy(&body, p + 8, 4);
	if (magic != RECORD_CONFIG_MAGIC || version != RECORD_CONFIG_VERSION || hlen != RECORD_CONFIG_HEADER)
		return 0;
	return RECORD_CONFIG_HEADER + (size_t)body;
}

/* Where field tag goes: an integer member, or the index of a string
 * field; 0 for a tag this decoder does not know. */
static int field_of(struct record_config *c, unsigned tag, int64_t **num, size_t *str)
{
	switch (tag) {
#define INT_CASE(t, name, what) \
	case t:                  \
		*num = &c->name; \
		return 1;
		RECORD_CONFIG_INTS(INT_CASE)
#undef INT_CASE
	}
	for (size_t i = 0; i < STRING_FIELDS; i++)
		if (string_fields[i].tag == tag) {
			*num = NULL;
			*str = i;
			return 1;
		}
	return 0;
}

int record_config_decode(const uint8_t *p, size_t len, struct record_config *c)
{
	memset(c, 0, sizeof(*c));
	if (len < RECORD_CONFIG_HEADER || record_config_length(p) != len)
		return -EPROTO;
	/* First pass: every field known, in bounds, once; the strings' size. */
	size_t storage = 0;
	for (size_t at = RECORD_CONFIG_HEADER; at < len;) {
		uint16_t tag, zero;
		uint32_t n;
		int64_t *num;
		size_t str;
		if (len - at < FIELD_HEADER)
			return -EPROTO;
		memcpy(&tag, p + at, 2);
		memcpy(&zero, p + at + 2, 2);
		memcpy(&n, p + at + 4, 4);
		at += FIELD_HEADER;
		if (zero || tag >= 64 || (c->present & RECORD_CONFIG_BIT(tag)) || n > len - at ||
		    !field_of(c, tag, &num, &str))
			return -EPROTO;
		if (num ? n != 8 : n > string_fields[str].max)
			return -EPROTO;
		c->present |= RECORD_CONFIG_BIT(tag);
		if (!num)
			storage += n + 1;
		at += n;
	}
	if (storage && !(c->storage = malloc(storage))) {
		c->present = 0;
		return -ENOMEM;
	}
	/* Second pass: the values. */
	char *s = c->storage;
	for (size_t at = RECORD_CONFIG_HEADER; at < len;) {
		uint16_t tag;
		uint32_t n;
		int64_t *num;
		size_t str;
		memcpy(&tag, p + at, 2);
		memcpy(&n, p + at + 4, 4);
		at += FIELD_HEADER;
		field_of(c, tag, &num, &str);
		if (num) {
			memcpy(num, p + at, 8);
		} else {
			memcpy(s, p + at, n);
			s[n] = 0;
			*string_at(c, str) = s;
			s += n + 1;
		}
		at += n;
	}
	return 0;
}

void record_config_free(struct record_config *c)
{
	free(c->storage);
	memset(c, 0, sizeof(*c));
}
