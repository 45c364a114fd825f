/* call_tree.h - the distinct call paths of a trace as a tree of (parent
 * node, site) nodes, for views that aggregate by path (folded stacks).
 *
 * Invariants:
 *  - node 0 is the root; its children are the threads (keyed by tid, or
 *    by the key a view gives each thread in thread_root), and
 *    every other node is a call site under its caller's node, so a path is
 *    one node and finding a callee's node is one hash lookup, whatever the
 *    depth: a view pays O(1) per event, never the length of the path;
 *  - nodes are never removed or moved (ids are stable); memory grows with
 *    the number of distinct paths, not with the number of events;
 *  - children of a node are linked in a list (first_child, next_sibling),
 *    so that a depth-first walk prints each path from its parent's. */
#ifndef NEEDLE_CALL_TREE_H
#define NEEDLE_CALL_TREE_H

#include <stddef.h>
#include <stdint.h>

struct call_node {
	uint32_t parent;
	uint32_t site;          /* a thread's node: its tid */
	uint32_t first_child;   /* 0: none */
	uint32_t next_sibling;  /* 0: none */
	uint64_t value;         /* for the view: ns or a count */
	uint8_t seen;           /* for the view: the path occurred */
};

struct call_tree {
	struct call_node *v;
	size_t cnt, cap;
	uint32_t *slots;        /* hash of (parent, site) -> node id + 1 */
	size_t slot_cap;
	uint64_t *work;         /* NEEDLE_VIEW_WORK: probes are counted here */
	/* Set by a view before iterating, indexed by thread: the key of the
	 * thread's node (threads with one key share it).  NULL: the tid. */
	const uint32_t *thread_root;
	/* Set by a view, indexed by site (site_key_cnt of them): the key a
	 * call's node goes by, so that sites that share one share nodes (the
	 * sites of one name).  NULL: the site. */
	const uint32_t *site_key;
	size_t site_key_cnt;
};

int call_tree_init(struct call_tree *t, uint64_t *work);
/* The node of site called from parent (created on first use); 0 when out
 * of memory. */
uint32_t call_tree_child(struct call_tree *t, uint32_t parent, uint32_t site);
void call_tree_free(struct call_tree *t);

#endif
