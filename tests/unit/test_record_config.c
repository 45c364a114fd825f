/* test_record_config - the codec of what needle record asks the agent
 * (src/common/record_config.c): every field comes back as it went, an
 * absent field is absent, and bytes that are not exactly one config of
 * this version are refused whole. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/record_config.h"
#include "harness.h"

static int round_trip(const struct record_config *in, struct record_config *out)
{
	uint8_t *p;
	size_t n;
	int e = record_config_encode(in, &p, &n);
	if (e)
		return e;
	e = record_config_length(p) == n ? record_config_decode(p, n, out) : -100;
	free(p);
	return e;
}

int main(void)
{
	struct record_config in = { 0 }, out;

	/* Every field set. */
	RECORD_CONFIG_SET(&in, graph, 0); /* present though 0: sent */
	in.depth = 7;
	in.ctl = 1;
	in.sites = RECORD_SITES_RELOCATED;
	in.libcall = RECORD_LIBCALL_NONE;
	in.max_string = 128;
	in.trigger_gap_ns = 1000000000;
	in.trigger_after_ns = 5;
	in.buf_fd = 1010;
	in.meta_fd = -1;
	in.filter = "kv_*\nmain";
	in.notrace = "";
	in.subtree = "a";
	in.drop = "b\nc";
	in.triggers = "handle\t5000000";
	in.args = "kv_get\tA\t1:1:u:64";
	in.arg_filters = "kv_get\t1:2:d:64\t>\t1000";
	in.orig_ld_preload = "/lib/x.so";
	CHECK_EQ(round_trip(&in, &out), 0, "a config with every field decodes");
	CHECK(RECORD_CONFIG_HAS(&out, graph) && out.graph == 0, "graph 0 given is present, 0");
	CHECK(out.depth == 7 && out.ctl == 1 && out.sites == RECORD_SITES_RELOCATED &&
		      out.libcall == RECORD_LIBCALL_NONE && out.max_string == 128,
	      "depth, ctl, sites, libcall, max_string come back");
	CHECK(out.trigger_gap_ns == 1000000000 && out.trigger_after_ns == 5 && out.buf_fd == 1010 &&
		      out.meta_fd == -1, "durations and descriptors (-1 too) come back");
	CHECK(!strcmp(out.filter, "kv_*\nmain") && !strcmp(out.subtree, "a") && !strcmp(out.drop, "b\nc"),
	      "glob lists come back, newlines and all");
	CHECK(out.notrace && !out.notrace[0] && RECORD_CONFIG_HAS(&out, notrace), "an empty string is present, empty");
	CHECK(!strcmp(out.triggers, "handle\t5000000") && !strcmp(out.args, "kv_get\tA\t1:1:u:64") &&
		      !strcmp(out.arg_filters, "kv_get\t1:2:d:64\t>\t1000") && !strcmp(out.orig_ld_preload, "/lib/x.so"),
	      "triggers, args, arg_filters and LD_PRELOAD come back");
	record_config_free(&out);

	/* Nothing set: an empty body, every field absent. */
	struct record_config none = { 0 };
	CHECK_EQ(round_trip(&none, &out), 0, "an empty config decodes");
	CHECK(!out.present && !out.filter && !out.depth && !out.storage, "... with nothing present");
	record_config_free(&out);

	/* A string longer than its field may be is not encoded. */
	size_t big = RECORD_CONFIG_GLOBS_MAX + 1;
	char *huge = malloc(big + 1);
	memset(huge, 'x', big);
	huge[big] = 0;
	struct record_config too = { .filter = huge };
	uint8_t *p;
	size_t n;
	CHECK_EQ(record_config_encode(&too, &p, &n), -E2BIG, "a filter over RECORD_CONFIG_GLOBS_MAX is refused");
	free(huge);

	/* Damaged bytes are refused whole. */
	struct record_config one = { .depth = 3, .filter = "f" };
	CHECK_EQ(record_config_encode(&one, &p, &n), 0, "a small config encodes");
	CHECK_EQ(n, RECORD_CONFIG_HEADER + 8 + 8 + 8 + 1, "its size: header, an int field, a 1-byte string field");
	uint8_t *bad = malloc(n + 8);
	memcpy(bad, p, n);
	CHECK_EQ(record_config_decode(bad, n - 1, &out), -EPROTO, "one byte short: refused");
	memcpy(bad, p, n);
	bad[4] = 2; /* version */
	CHECK_EQ(record_config_decode(bad, n, &out), -EPROTO, "another version: refused");
	CHECK_EQ(record_config_length(bad), 0, "... and its length is not read");
	memcpy(bad, p, n);
	bad[RECORD_CONFIG_HEADER] = 30; /* the int field's tag: one nobody knows */
	CHECK_EQ(record_config_decode(bad, n, &out), -EPROTO, "an unknown tag: refused");
	memcpy(bad, p, n);
	bad[RECORD_CONFIG_HEADER + 4] = 4; /* the int field's length */
	CHECK_EQ(record_config_decode(bad, n, &out), -EPROTO, "an integer of 4 bytes: refused");
	memcpy(bad, p, n);
	memcpy(bad + RECORD_CONFIG_HEADER + 16, bad + RECORD_CONFIG_HEADER, 8); /* the string's header made the int's */
	CHECK_EQ(record_config_decode(bad, n, &out), -EPROTO, "a field twice (or overrunning the body): refused");
	memcpy(bad, p, n);
	uint32_t body = (uint32_t)(n - RECORD_CONFIG_HEADER + 8);
	memcpy(bad + 8, &body, 4);
	memset(bad + n, 0, 8);
	CHECK_EQ(record_config_decode(bad, n + 8, &out), -EPROTO, "a field header of zeros at the end: refused");
	memcpy(bad, p, n);
	CHECK_EQ(record_config_decode(bad, n, &out), 0, "the undamaged bytes decode");
	CHECK(out.depth == 3 && !strcmp(out.filter, "f"), "... to what was encoded");
	record_config_free(&out);
	free(bad);
	free(p);
	return harness_exit();
}
