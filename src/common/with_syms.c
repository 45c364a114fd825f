/* with_syms.c - reading --with-syms lines (with_syms.h).  Runs in the
 * agent at start-up and when an object is loaded, never on a traced
 * call: no allocation, and the text is only read. */
#include "common/with_syms.h"

#include <stdlib.h>
#include <string.h>

static const char *field_end(const char *p, const char *end)
{
	const char *tab = memchr(p, '\t', (size_t)(end - p));
	return tab ? tab : end;
}

int with_syms_next(const char **pos, struct with_syms_line *line)
{
	const char *p = *pos;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		const char *f = p;
		p = nl ? nl + 1 : end;

		const char *e0 = field_end(f, end);
		if (e0 == end)
			continue;
		const char *e1 = field_end(e0 + 1, end);
		if (e1 == end)
			continue;
		char *q;
		unsigned long long addr = strtoull(e1 + 1, &q, 16), size = 0;
		if (*q == '\t' && q < end)
			size = strtoull(q + 1, &q, 16);
		if (q >= end || *q != '\t' || q + 1 >= end || !addr)
			continue;
		*line = (struct with_syms_line){
			.object = f,
			.object_len = (size_t)(e0 - f),
			.build_id = e0 + 1,
			.build_id_len = (size_t)(e1 - e0 - 1),
			.addr = addr,
			.size = size,
			.name = q + 1,
			.name_len = (size_t)(end - q - 1),
		};
		*pos = p;
		return 1;
	}
	*pos = p;
	return 0;
}

enum with_syms_match with_syms_match(const struct with_syms_line *line, enum with_syms_pass pass,
				     const char *const *names, size_t n_names, const char *hex_id)
{
	size_t id_len = strlen(hex_id);
	int no_id = line->build_id_len == 1 && line->build_id[0] == '-';

	if (pass == WITH_SYMS_BY_ID)
		return id_len && !no_id && line->build_id_len == id_len && !memcmp(line->build_id, hex_id, id_len)
			       ? WITH_SYMS_YES
			       : WITH_SYMS_NO;
	for (size_t i = 0; i < n_names; i++) {
		if (!names[i] || strlen(names[i]) != line->object_len || memcmp(line->object, names[i], line->object_len))
			continue;
		return no_id || !id_len ? WITH_SYMS_YES : WITH_SYMS_OTHER_BUILD;
	}
	return WITH_SYMS_NO;
}
