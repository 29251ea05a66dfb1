/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop: the counts of a period (an interval, or the whole run) and its
 * rows, one per process; the run's table of processes for the summary;
 * and collect(), which reads the BPF maps into them.
 */
#ifndef TLBTOP_ROWS_H
#define TLBTOP_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "tlbtop.h"

#define RUN_PROCS	512	/* processes remembered for the summary */
#define RUN_SLOTS	(2 * RUN_PROCS)	/* its hash table: a power of two */
#define RUN_CPU_BITS	1024	/* CPUs a process ran on, for the summary */

struct row {
	__u32 pid;
	char comm[TLBTOP_COMM_LEN];
	__u32 cpus;
	int asid;		/* -1: none */
	__u64 shootdowns;
	__u64 ipis;
	__u64 bcast;
	__u64 avoided;
	__u64 local_only;
	__u64 invlpgb;
	__u64 invlpgb_pages;
	__u64 tlbsync_waits;
	__u64 tlbsync_ns;
	__u64 assigns;
	__u64 cpumask[RUN_CPU_BITS / 64];	/* run table only */
};

/*
 * The summary's table of processes: open addressing on the tgid, in a
 * fixed array that is allocated and touched at start, so that tlbtop's
 * memory stays flat however many processes come and go. When it is full,
 * the exited processes with the fewest flushes make room: their counts go
 * to the "folded" row. An exited process's counts no longer change, so the
 * exited processes kept are always those with the most flushes.
 */
struct run_table {
	struct row *slot;
	bool *used;
	size_t n;
	struct row folded;		/* the sums of the processes folded */
	unsigned long long nfolded;
	unsigned long long untracked;	/* table full of live processes */
};

struct period {
	double secs;
	struct tlbtop_global g;		/* counts in the period */
	struct tlbtop_hist h;
	__u64 max_ns;
	struct row *rows;
	size_t nrows;
	size_t rows_cap;
};

__u64 row_flushes(const struct row *r);
double row_tlbsync_mean(const struct row *r);
/* For qsort(): by env.sort, then by PID. */
int row_cmp(const void *a, const void *b);

/* The run table's rows, in a new array (NULL if none or no memory). */
struct row *run_rows(size_t *n);

/* Bucket i holds [2^i, 2^(i+1) - 1] ns (bucket 0: 0 and 1). */
static inline __u64 bucket_lo(int i) { return i ? 1ULL << i : 0; }
static inline __u64 bucket_hi(int i) { return (1ULL << (i + 1)) - 1; }
/* The p-th percentile of the period's TLBSYNC waits, as shown. */
__u64 period_percentile(const struct period *p, double pct);

/* End the current interval: read it into st.iv, add it to st.run. */
void collect(void);

#endif /* TLBTOP_ROWS_H */
