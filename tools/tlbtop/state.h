/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop's userspace state, shared by its files: the options (env) and
 * the run (st), one of each, so that the functions need not pass them
 * around. Userspace only: what the BPF side shares is in tlbtop.h.
 */
#ifndef TLBTOP_STATE_H
#define TLBTOP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <linux/types.h>

#include "tlbtop.h"
#include "debugfs.h"
#include "rows.h"
#include "source.h"

struct tlbtop_bpf;

enum sort_key {
	SORT_PID, SORT_COMM, SORT_CPUS, SORT_ASID, SORT_FLUSHES, SORT_BCAST,
	SORT_IPIS, SORT_AVOIDED, SORT_INVLPGB, SORT_TLBSYNC,
};

/* The options. */
struct env {
	pid_t pid;
	unsigned long rows;
	enum sort_key sort;
	bool noclear;
	bool batch;
	bool json;
	bool verbose;
	unsigned long interval;
	unsigned long count;	/* 0: until a signal */
	const char *source;	/* --source, NULL: chosen by probing */
	int nargs;
};

struct state {
	struct tlbtop_bpf *skel;
	const char *source;	/* its name */
	char kernel[65];	/* uname -r */
	unsigned int caps;	/* CAP_* of source.h */
	int invlpgb;		/* the kernel uses INVLPGB: 1, 0, -1 unknown */
	bool estimate;		/* IPIs avoidable, not avoided */
	int ncpus;
	int fd_globals, fd_hist, fd_maxes, fd_procs[2], fd_mms;
	void *pcpu_buf;		/* per-CPU values of one element */
	size_t pcpu_buf_size;
	__u32 *keys;		/* TLBTOP_MAX_PROCS */
	__u64 *mm_keys;		/* TLBTOP_MAX_MMS */
	struct tlbtop_mm *mm;	/* the mms map, as last read */
	size_t nmm;
	struct tlbtop_global prev_g;
	struct tlbtop_hist prev_h;
	__u64 prev_ns;		/* CLOCK_MONOTONIC at the last flip */
	__u64 start_ns;
	time_t start_time;
	struct period iv;	/* the interval just read */
	struct period run;	/* the whole run: g, h, max_ns, secs */
	struct run_table table;
	unsigned long intervals;
	struct debugfs dbg_start, dbg;
	bool clear;
	bool out_error;
};

extern struct env env;
extern struct state st;

/* Errors before anything is loaded: message, exit 3. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* TLBTOP_STATE_H */
