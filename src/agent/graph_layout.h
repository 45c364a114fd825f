/* graph_layout.h - what the recorder's trampolines (graph_trampoline.S)
 * read and write of the recorder's structures, as constants the
 * assembler can use (the dispatch layer's are direct_layout.h's).  Only
 * #defines: the assembler includes this file, and graph_direct.c asserts
 * every value against its structure or macro, so a change of layout that
 * is not made here too fails the build. */
#ifndef NEEDLE_GRAPH_LAYOUT_H
#define NEEDLE_GRAPH_LAYOUT_H

/* The dispatch layer's structures: thread state, site, consumer, frame. */
#include "agent/dispatch/direct_layout.h"

/* struct rec_thread (record/event_writer.h), struct shm_chunk and the
 * event word (common/shm_layout.h), the recorder's cookie bits and site
 * flags (record/recorder_direct.h). */
#define G_RT_CHUNK 0
#define G_RT_POS 8
#define G_RT_END 16
#define G_RT_BASE 24
#define G_RT_DEPTH 44
#define G_RT_OUT_COUNT 52
#define G_RT_LIMIT 56
#define G_RT_LIB_TOP 60
#define G_RT_OPEN_SITE 156
#define G_REC_OPEN_SITES 64
#define G_CHUNK_USED 24
#define G_CHUNK_EVENTS 80
#define G_EV_SITE_SHIFT 40
#define G_EV_SITE_MASK 0x3fffff
#define G_EV_DELTA_BITS 40
#define G_EV_EXIT_BIT 62
#define G_COOKIE_LIB_TOP_BIT 61
#define G_COOKIE_TIMED_BIT 60
#define G_COOKIE_TIME_BITS 59
/* COOKIE_IN | COOKIE_OUT | COOKIE_SKIPPED: an exit only graph_exit
 * takes. */
#define G_COOKIE_NOT_PLAIN 0xc800000000000000
#define G_SF_TRIGGER 128
/* struct trigger_table and struct trigger_site (record/trigger.h). */
#define G_TT_CNT 0
#define G_TT_SITE 8
#define G_TS_SHIFT 4 /* sizeof(struct trigger_site) == 16 */
#define G_TS_ID 0
#define G_TS_ON_ENTRY 4
#define G_TS_THRESHOLD 8
#define G_SITE_FLAG_IDS 0x200000
/* struct arg_spec and struct arg_item (record/args.h), and the word that
 * opens a call's values (event_write_fixed's ev_make(EV_SWITCH,
 * EV_DATA_SITE, words), words 0). */
#define G_AS_ENTRY_CNT 0
#define G_AS_EXIT_CNT 1
#define G_AS_ENTRY_DIRECT 4
#define G_AS_ENTRY 56
#define G_AI_SIZE 24
#define G_AI_SHIFT 4
#define G_AI_REG 6
#define G_AI_MASK 8
#define G_AI_WORD 16
#define G_EV_DATA_SITE_SWITCH 0xdfffff0000000000

#endif
