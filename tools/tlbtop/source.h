/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop: where the counts come from. A source is a set of kernel events
 * that the BPF programs attach to; tlbtop checks, before loading anything,
 * which source the running kernel can serve and loads that one. There is
 * one source for now, "tracepoint": the series' tlb: tracepoints, read as
 * tp_btf; another (kprobes, say, for kernels without them) would be one
 * more entry in source.c's table.
 */
#ifndef TLBTOP_SOURCE_H
#define TLBTOP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

struct tlbtop_bpf;

/* A kernel event a source needs, as its BPF program sees it. */
struct source_event {
	const char *sys;
	const char *name;
	unsigned int nargs;	/* TP_PROTO's arguments */
	bool present;		/* set by source_pick() */
};

struct tlbtop_source {
	const char *name;
	struct source_event *events;
	size_t nevents;
	/*
	 * From the events' 'present': whether the running kernel can serve
	 * this source. When it cannot and 'report' is set, says why on
	 * stderr, a line each.
	 */
	bool (*available)(const struct tlbtop_source *src, bool report);
	/* Before the load: choose the programs that load (set_autoload). */
	void (*setup)(const struct tlbtop_source *src, struct tlbtop_bpf *skel);
};

/*
 * The checks before loading: root, the kernel's BTF, the events. Returns
 * the first source the kernel can serve; when none, says why not for the
 * first and exits with EXIT_ERROR.
 */
const struct tlbtop_source *source_pick(void);

/*
 * Open, set up, load and attach the BPF programs of source src, then arm
 * them. Any failure: a message and exit(EXIT_ERROR).
 */
struct tlbtop_bpf *load_and_attach(const struct tlbtop_source *src);

#endif /* TLBTOP_SOURCE_H */
