/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop: where the counts come from. A source is a set of kernel events
 * that the BPF programs attach to; tlbtop checks, before loading anything,
 * which source the running kernel can serve and loads that one (or the one
 * --source names). "tracepoint": the series' tlb: tracepoints, read as
 * tp_btf. "fentry": fentry/fexit on upstream's own functions, for kernels
 * without them (upstream 6.15+, or no INVLPGB at all); it counts less, and
 * what it cannot count is shown as "-" (null in JSON).
 */
#ifndef TLBTOP_SOURCE_H
#define TLBTOP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

struct tlbtop_bpf;

/*
 * What a source counts (struct state's 'caps'); a field outside them is
 * not known, rather than 0.
 */
#define CAP_ASID	0x01	/* global ASID assigns, frees, transitions, rows' ASID */
#define CAP_RESETS	0x02	/* global ASID space resets */
#define CAP_BCAST	0x04	/* broadcast flushes and the IPIs they avoided */
#define CAP_INVLPGB	0x08	/* INVLPGBs issued and their pages */
#define CAP_TLBSYNC	0x10	/* TLBSYNC waits and their times */
#define CAP_BATCH	0x20	/* reclaim's batch flushes */
#define CAP_PENDING	0x40	/* ... and which had INVLPGBs pending */
#define CAP_POOL	0x80	/* global ASIDs available at the last event */
#define CAP_ESTIMATE	0x100	/* IPIs avoidable (estimate; no INVLPGB in use) */

/*
 * A kernel event a source uses, as its BPF programs see it: a tracepoint
 * (sys set; the program has its name) or a kernel function (sys NULL; the
 * programs are fentry_NAME and fexit_NAME).
 */
struct source_event {
	const char *sys;
	const char *name;
	unsigned int nargs;	/* TP_PROTO's, or the function's, arguments */
	unsigned int caps;	/* an optional event: what it gives; 0: needed */
	bool present;		/* set by source_pick() */
};

struct tlbtop_source {
	const char *name;
	struct source_event *events;
	size_t nevents;
	unsigned int caps;	/* what it counts with every event present */
	/*
	 * From the events' 'present': whether the running kernel can serve
	 * this source. When it cannot and 'report' is set, says why on
	 * stderr, a line each.
	 */
	bool (*available)(const struct tlbtop_source *src, bool report);
};

/*
 * The checks before loading: root, the kernel's BTF, the events. Returns
 * the source 'want' names (NULL: the first the kernel can serve); when
 * the kernel cannot serve it, says why and exits with EXIT_ERROR.
 */
const struct tlbtop_source *source_pick(const char *want);

/* "tracepoint, fentry": for messages. */
const char *source_names(void);

/*
 * Open, set up, load and attach the BPF programs of source src, then arm
 * them; sets st.caps, st.invlpgb and st.estimate. Any failure: a message
 * and exit(EXIT_ERROR).
 */
struct tlbtop_bpf *load_and_attach(const struct tlbtop_source *src);

/* Read the kernel's state the fentry source cannot trace (a no-op else). */
void source_refresh(void);

#endif /* TLBTOP_SOURCE_H */
