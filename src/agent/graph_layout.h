/* graph_layout.h - what the recorder's trampolines (graph_trampoline.S)
 * read and write of the structures C defines, as constants the assembler
 * can use.  Only #defines: the assembler includes this file, and
 * graph_direct.c asserts every value against its structure or macro, so
 * a change of layout that is not made here too fails the build. */
#ifndef NEEDLE_GRAPH_LAYOUT_H
#define NEEDLE_GRAPH_LAYOUT_H

/* struct thread_state (thread/thread_state.h) and its limits. */
#define G_TS_RCU_WORD 0
#define G_TS_SHADOW 16
#define G_TS_SHADOW_TOP 24
#define G_TS_SHADOW_CAP 32
#define G_TS_CONTEXT 40
#define G_TS_STACK_WINDOW 48
#define G_TS_SHADOW_HIGH 56
#define G_TS_DATA 128
#define G_TS_DATA_USED 136
#define G_THREAD_STATE_SENTINEL_MAX 2
#define G_STACK_BLOCK_SHIFT 18
#define G_STACK_WINDOW_BLOCKS 3
#define G_RCU_NEST_BITS 16

/* struct site (sites/site_table.h) and struct module (sites/module.h). */
#define G_SITE_ID 24
#define G_SITE_DIRECT_SKIP 32
#define G_SITE_DIRECT_GRAPH 33 /* the byte after: one word compare reads both */
#define G_SITE_MODULE 40
#define G_SITE_CONSUMERS 72
#define G_SITE_EXITS_LIVE 132
#define G_MOD_EXEC_LO 16
#define G_MOD_EXEC_HI 24
#define G_MOD_FOREIGN_LO 448
#define G_MOD_FOREIGN_HI 456

/* struct consumer_list, struct consumer, struct consumer_ops
 * (dispatch/consumer.h). */
#define G_LIST_CNT 0
#define G_LIST_ITEMS 8
#define G_C_OPS 0
#define G_C_GENERATION 16
#define G_C_SLOT 20
#define G_C_TDATA_OFF 34
#define G_C_TDATA_IDX 40
#define G_C_TDATA_TAG 44
#define G_C_SIZE 104
#define G_OPS_INDEX 20
#define G_OPS_DIRECT_ENTRY 24
#define G_OPS_DIRECT_EXIT 32
#define G_OPS_SIZE 40

/* A frame of one entry (dispatch/shadow_frame.h): struct frame_entry
 * {slot, ops, generation; cookie}, then struct frame_header {return_addr,
 * site, sp; entry_cnt, frame_bytes, at_exit_site, called}; the last word
 * of a frame the calling trampoline pushed: entry_cnt 1, frame_bytes 16,
 * called. */
#define G_FRAME_BYTES 48
#define G_FH_RETURN_ADDR 0
#define G_FH_SITE 8
#define G_FH_SP 16
#define G_FH_COUNTS 24
#define G_FH_HEADER 32
#define G_FRAME_CALLED_ONE 0x8000001000000001

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
