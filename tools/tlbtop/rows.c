// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: the process rows and the periods. collect() ends an interval:
 * it flips the BPF side to the other per-process buffer, sums the per-CPU
 * counters, reads the mms map and drains the buffer no longer written
 * into rows; the run table keeps each process's sums for the summary.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "state.h"
#include "tlbtop.skel.h"

#define DRAIN_DELAY_NS	5000000	/* after a flip, for programs still running */

/* Process rows */

__u64 row_flushes(const struct row *r)
{
	return r->shootdowns + r->bcast + r->local_only;
}

double row_tlbsync_mean(const struct row *r)
{
	return r->tlbsync_waits ? (double)r->tlbsync_ns / (double)r->tlbsync_waits : 0;
}

int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	__u64 u = 0, v = 0;
	double du, dv;
	int c;

	switch (env.sort) {
	case SORT_PID:
		break;
	case SORT_COMM:
		c = strcmp(x->comm, y->comm);
		if (c)
			return c;
		break;
	case SORT_CPUS: u = x->cpus; v = y->cpus; break;
	case SORT_ASID: u = (__u64)(x->asid + 1); v = (__u64)(y->asid + 1); break;
	case SORT_FLUSHES: u = row_flushes(x); v = row_flushes(y); break;
	case SORT_BCAST: u = x->bcast; v = y->bcast; break;
	case SORT_IPIS: u = x->ipis; v = y->ipis; break;
	case SORT_AVOIDED: u = x->avoided; v = y->avoided; break;
	case SORT_INVLPGB: u = x->invlpgb; v = y->invlpgb; break;
	case SORT_TLBSYNC:
		du = row_tlbsync_mean(x);
		dv = row_tlbsync_mean(y);
		if (du != dv)
			return du > dv ? -1 : 1;
		break;
	}
	if (u != v)
		return u > v ? -1 : 1;	/* counts: largest first */
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static size_t run_home(__u32 pid)
{
	return pid & (RUN_SLOTS - 1);
}

static void row_add(struct row *t, const struct row *r)
{
	t->shootdowns += r->shootdowns;
	t->ipis += r->ipis;
	t->bcast += r->bcast;
	t->avoided += r->avoided;
	t->local_only += r->local_only;
	t->invlpgb += r->invlpgb;
	t->invlpgb_pages += r->invlpgb_pages;
	t->tlbsync_waits += r->tlbsync_waits;
	t->tlbsync_ns += r->tlbsync_ns;
	t->assigns += r->assigns;
}

/* Empty slot i, moving later entries of its probe run back (no tombstones). */
static void run_remove(struct run_table *t, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & (RUN_SLOTS - 1);
		if (!t->used[j])
			break;
		k = run_home(t->slot[j].pid);
		/* Stays if its home is cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slot[i] = t->slot[j];
		i = j;
	}
	t->used[i] = false;
	t->n--;
}

static struct row *run_find(struct run_table *t, __u32 pid, bool add);

struct fold_cand {
	__u64 flushes;
	__u32 pid;
};

static int fold_cand_cmp(const void *a, const void *b)
{
	const struct fold_cand *x = a, *y = b;

	return x->flushes < y->flushes ? -1 : x->flushes > y->flushes;
}

/*
 * Make room: fold the exited processes with the fewest flushes, until a
 * quarter of the table is free (so that liveness is checked once per many
 * new processes, not for each). False if no process has exited.
 */
static bool run_fold(struct run_table *t)
{
	static struct fold_cand cand[RUN_PROCS];
	size_t nc = 0, k;

	for (size_t i = 0; i < RUN_SLOTS; i++) {
		if (!t->used[i])
			continue;
		if (kill((pid_t)t->slot[i].pid, 0) == 0 || errno != ESRCH)
			continue;
		cand[nc].flushes = row_flushes(&t->slot[i]);
		cand[nc].pid = t->slot[i].pid;
		nc++;
	}
	if (!nc)
		return false;
	qsort(cand, nc, sizeof(cand[0]), fold_cand_cmp);
	for (k = 0; k < nc && t->n > RUN_PROCS - RUN_PROCS / 4; k++) {
		struct row *r = run_find(t, cand[k].pid, false);

		row_add(&t->folded, r);
		t->nfolded++;
		run_remove(t, (size_t)(r - t->slot));
	}
	return true;
}

static struct row *run_find(struct run_table *t, __u32 pid, bool add)
{
	size_t i;

	for (i = run_home(pid); t->used[i]; i = (i + 1) & (RUN_SLOTS - 1))
		if (t->slot[i].pid == pid)
			return &t->slot[i];
	if (!add)
		return NULL;
	if (t->n >= RUN_PROCS) {
		if (!run_fold(t)) {
			t->untracked++;
			return NULL;
		}
		/* The removal may have moved the empty slot of the probe. */
		for (i = run_home(pid); t->used[i]; i = (i + 1) & (RUN_SLOTS - 1))
			;
	}
	t->used[i] = true;
	t->n++;
	memset(&t->slot[i], 0, sizeof(t->slot[i]));
	t->slot[i].pid = pid;
	t->slot[i].asid = -1;
	return &t->slot[i];
}

/* The run's rows for the summary, copied out of the table. */
struct row *run_rows(size_t *n)
{
	struct row *rows = NULL;

	*n = 0;
	if (st.table.n) {
		rows = calloc(st.table.n, sizeof(*rows));
		for (size_t i = 0; rows && i < RUN_SLOTS; i++)
			if (st.table.used[i])
				rows[(*n)++] = st.table.slot[i];
	}
	return rows;
}

/* Reading the maps */

static void add_global(struct tlbtop_global *sum, const struct tlbtop_global *a)
{
	__u64 *s = (__u64 *)sum;
	const __u64 *x = (const __u64 *)a;

	for (size_t i = 0; i < sizeof(*sum) / sizeof(__u64); i++)
		s[i] += x[i];
}

static void sub_global(struct tlbtop_global *d, const struct tlbtop_global *cur,
		       const struct tlbtop_global *prev)
{
	__u64 *o = (__u64 *)d;
	const __u64 *c = (const __u64 *)cur, *p = (const __u64 *)prev;

	for (size_t i = 0; i < sizeof(*d) / sizeof(__u64); i++)
		o[i] = c[i] - p[i];
}

/* Sum a per-CPU array element over the CPUs. */
static int read_pcpu_sum(int fd, __u32 key, __u64 *out, size_t words)
{
	size_t stride = words * sizeof(__u64);

	memset(out, 0, stride);
	if (bpf_map_lookup_elem(fd, &key, st.pcpu_buf))
		return -errno;
	for (int c = 0; c < st.ncpus; c++) {
		const __u64 *v = (const __u64 *)((char *)st.pcpu_buf + (size_t)c * stride);

		for (size_t i = 0; i < words; i++)
			out[i] += v[i];
	}
	return 0;
}

static void read_totals(struct tlbtop_global *g, struct tlbtop_hist *h)
{
	read_pcpu_sum(st.fd_globals, 0, (__u64 *)g, sizeof(*g) / sizeof(__u64));
	read_pcpu_sum(st.fd_hist, 0, h->slots, TLBTOP_HIST_SLOTS);
}

/* The mms map: which tgid holds which global ASID. */
static void read_mms(void)
{
	__u64 none = 0;		/* no mm there: the walk starts at the first key */
	size_t n = 0;

	while (n < TLBTOP_MAX_MMS &&
	       !bpf_map_get_next_key(st.fd_mms, n ? &st.mm_keys[n - 1] : &none,
				     &st.mm_keys[n]))
		n++;
	st.nmm = 0;
	for (size_t i = 0; i < n; i++)
		if (!bpf_map_lookup_elem(st.fd_mms, &st.mm_keys[i], &st.mm[st.nmm]))
			st.nmm++;
}

static const struct tlbtop_mm *mm_of(__u32 tgid)
{
	for (size_t i = 0; i < st.nmm; i++)
		if (st.mm[i].tgid == tgid)
			return &st.mm[i];
	return NULL;
}

static struct row *period_row(struct period *p)
{
	if (p->nrows == p->rows_cap) {
		size_t cap = p->rows_cap ? p->rows_cap * 2 : 64;
		struct row *r = realloc(p->rows, cap * sizeof(*r));

		if (!r)
			return NULL;
		p->rows = r;
		p->rows_cap = cap;
	}
	return &p->rows[p->nrows++];
}

/* Read and empty one per-process buffer into st.iv.rows. */
static void drain_procs(int fd, __u64 since_ns)
{
	size_t n = 0, stride = sizeof(struct tlbtop_proc);
	__u32 none = UINT32_MAX;	/* no such tgid: the walk starts at the first key */

	while (n < TLBTOP_MAX_PROCS &&
	       !bpf_map_get_next_key(fd, n ? &st.keys[n - 1] : &none, &st.keys[n]))
		n++;
	st.iv.nrows = 0;
	for (size_t k = 0; k < n; k++) {
		struct row *r, *t;
		const struct tlbtop_mm *mm;

		if (bpf_map_lookup_elem(fd, &st.keys[k], st.pcpu_buf)) {
			bpf_map_delete_elem(fd, &st.keys[k]);
			continue;
		}
		bpf_map_delete_elem(fd, &st.keys[k]);
		r = period_row(&st.iv);
		if (!r)
			continue;
		memset(r, 0, sizeof(*r));
		r->pid = st.keys[k];
		r->asid = -1;
		for (int c = 0; c < st.ncpus; c++) {
			const struct tlbtop_proc *v = (const struct tlbtop_proc *)
				((char *)st.pcpu_buf + (size_t)c * stride);

			if (!v->events)
				continue;
			r->cpus++;
			if (c < RUN_CPU_BITS)
				r->cpumask[c / 64] |= 1ULL << (c % 64);
			if (!r->comm[0] && v->comm[0])
				memcpy(r->comm, v->comm, sizeof(r->comm));
			r->shootdowns += v->ipi_shootdowns;
			r->ipis += v->ipis_sent;
			r->bcast += v->bcast_flushes;
			r->avoided += st.estimate ? v->ipis_avoidable : v->ipis_avoided;
			r->local_only += v->local_only;
			r->invlpgb += v->invlpgb;
			r->invlpgb_pages += v->invlpgb_pages;
			r->tlbsync_waits += v->tlbsync_waits;
			r->tlbsync_ns += v->tlbsync_ns;
			r->assigns += v->asid_assigns;
		}
		r->comm[sizeof(r->comm) - 1] = '\0';
		mm = mm_of(r->pid);
		if (mm) {
			r->asid = (int)mm->asid;
			if (mm->assigned_ns >= since_ns && mm->cpus > r->cpus)
				r->cpus = mm->cpus;
			if (!r->comm[0])
				memcpy(r->comm, mm->comm, sizeof(r->comm));
		}
		if (!r->comm[0])
			strcpy(r->comm, "?");

		/* The whole run's table. */
		t = run_find(&st.table, r->pid, true);
		if (!t)
			continue;
		if (!t->comm[0] || strcmp(t->comm, r->comm))
			memcpy(t->comm, r->comm, sizeof(t->comm));
		if (r->asid >= 0)
			t->asid = r->asid;
		row_add(t, r);
		t->cpus = 0;
		for (int w = 0; w < RUN_CPU_BITS / 64; w++) {
			t->cpumask[w] |= r->cpumask[w];
			t->cpus += (__u32)__builtin_popcountll(t->cpumask[w]);
		}
		if (r->cpus > t->cpus)	/* from mm_cpumask at assign */
			t->cpus = r->cpus;
	}
}

/*
 * End the current period: flip the buffers, let programs that started
 * before the flip finish, then read the one no longer written and the
 * counters, and add everything to the run's totals.
 */
void collect(void)
{
	__u32 old = st.skel->bss->gen & 1;
	struct timespec ts = { 0, DRAIN_DELAY_NS };
	struct tlbtop_global g;
	struct tlbtop_hist h;
	__u64 now, since = st.prev_ns;
	__u64 m;

	__atomic_store_n(&st.skel->bss->gen, st.skel->bss->gen + 1, __ATOMIC_SEQ_CST);
	now = now_ns();
	read_totals(&g, &h);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;

	sub_global(&st.iv.g, &g, &st.prev_g);
	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		st.iv.h.slots[i] = h.slots[i] - st.prev_h.slots[i];
	st.prev_g = g;
	st.prev_h = h;

	/* The per-interval maximum: per CPU, in the old slot; then zero it. */
	st.iv.max_ns = 0;
	if (!bpf_map_lookup_elem(st.fd_maxes, &old, st.pcpu_buf)) {
		for (int c = 0; c < st.ncpus; c++) {
			m = ((const struct tlbtop_max *)st.pcpu_buf)[c].tlbsync_max_ns;
			if (m > st.iv.max_ns)
				st.iv.max_ns = m;
		}
		memset(st.pcpu_buf, 0, (size_t)st.ncpus * sizeof(struct tlbtop_max));
		bpf_map_update_elem(st.fd_maxes, &old, st.pcpu_buf, BPF_ANY);
	}

	read_mms();
	drain_procs(st.fd_procs[old], since);
	read_debugfs(&st.dbg);
	source_refresh();

	st.iv.secs = (double)(now - st.prev_ns) / 1e9;
	st.prev_ns = now;
	add_global(&st.run.g, &st.iv.g);
	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		st.run.h.slots[i] += st.iv.h.slots[i];
	if (st.iv.max_ns > st.run.max_ns)
		st.run.max_ns = st.iv.max_ns;
	st.run.secs += st.iv.secs;
}

/* The TLBSYNC histogram */

static __u64 hist_total(const struct tlbtop_hist *h)
{
	__u64 n = 0;

	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		n += h->slots[i];
	return n;
}

/* The upper end of the bucket that holds the p-th percentile. */
static __u64 hist_percentile(const struct tlbtop_hist *h, double p)
{
	__u64 total = hist_total(h), cum = 0, want;

	if (!total)
		return 0;
	want = (__u64)((double)total * p / 100.0);
	if ((double)want < (double)total * p / 100.0)
		want++;
	if (!want)
		want = 1;
	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++) {
		cum += h->slots[i];
		if (cum >= want)
			return bucket_hi(i);
	}
	return bucket_hi(TLBTOP_HIST_SLOTS - 1);
}

/*
 * The percentile as shown: the upper end of its bucket, but no more than
 * the period's largest wait when that is known. A bucket spans a factor
 * of two, so its upper end can be far above every wait in it: the summary
 * once said "p99 <= 33.55 ms, max 27.35 ms".
 */
__u64 period_percentile(const struct period *p, double pct)
{
	__u64 v = hist_percentile(&p->h, pct);

	if (p->max_ns && v > p->max_ns)
		v = p->max_ns;
	return v;
}
