/* direct_layout.h - what the direct paths' assembly (probe_trampoline.S,
 * and the recorder's agent/graph_trampoline.S) reads and writes of the
 * dispatch layer's structures, as constants the assembler can use.  Only
 * #defines: the assembler includes this file, and dispatch_direct.c
 * asserts every value against its structure or macro, so a change of
 * layout that is not made here too fails the build.  G_: generated-code
 * layout. */
#ifndef NEEDLE_DIRECT_LAYOUT_H
#define NEEDLE_DIRECT_LAYOUT_H

/* struct thread_state (thread/thread_state.h) and its limits. */
#define G_TS_RCU_WORD 0
#define G_TS_RCU_SP 8
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
#define G_LIST_PROBE 8
#define G_LIST_PROBE_USER_DATA 16
#define G_LIST_ITEMS 24
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
#define G_OPS_PROBE 40
#define G_OPS_SIZE 48
#define G_C_USER_DATA 8

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

#endif
