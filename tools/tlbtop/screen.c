// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: the text output, for a terminal or -b: the header of system-wide
 * counts, the process rows and, in the summary, the histogram of the
 * TLBSYNC waits.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "screen.h"
#include "state.h"
#include "tlbtop.skel.h"

static void fmt_ns(double ns, char *buf, size_t len)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* A count the source gives, or "-". */
static const char *num(unsigned int cap, __u64 v, char *buf, size_t len)
{
	if (!(st.caps & cap))
		return "-";
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static void print_header(const struct period *p, const struct debugfs *d,
			 const char *title)
{
	const struct tlbtop_global *g = &p->g;
	unsigned long long cap, in_use;
	char mean[32], p99[32], max[32], b[6][24];
	__u64 waits = g->tlbsync_waits;

	out("%s  mode: %s  source: %s, %s  (%.2f s)\n", title, mode_desc(d),
	    st.source, st.kernel, p->secs);
	if (d->have_pool && kv_get(&d->pool, "capacity", &cap) &&
	    kv_get(&d->pool, "in_use", &in_use))
		out("ASID pool: %llu in use of %llu (%.1f%%); ", in_use, cap,
		    cap ? 100.0 * (double)in_use / (double)cap : 0.0);
	else if ((st.caps & CAP_POOL) && st.skel->bss->last_available_ns)
		out("ASID pool: %u available; ", st.skel->bss->last_available);
	else
		out("ASID pool: -; ");
	out("%s assigned, %s freed, %s resets; %s transitions done\n",
	    num(CAP_ASID, g->asid_assigns, b[0], sizeof(b[0])),
	    num(CAP_ASID, g->asid_frees, b[1], sizeof(b[1])),
	    num(CAP_RESETS, g->asid_resets, b[2], sizeof(b[2])),
	    num(CAP_ASID, g->asid_transitions, b[3], sizeof(b[3])));
	out("Flushes:   %llu IPI shootdown, %s broadcast, %llu local only\n",
	    (unsigned long long)g->ipi_shootdowns,
	    num(CAP_BCAST, g->bcast_flushes, b[0], sizeof(b[0])),
	    (unsigned long long)g->local_only);
	out("IPIs:      %llu sent, %s avoided", (unsigned long long)g->ipis_sent,
	    num(CAP_BCAST, g->ipis_avoided, b[0], sizeof(b[0])));
	if (st.estimate)
		out(", %llu avoidable (estimate: no INVLPGB in use)",
		    (unsigned long long)g->ipis_avoidable);
	out("\n");
	if (st.caps & CAP_INVLPGB) {
		out("INVLPGB:   %llu issued, %llu pages", (unsigned long long)g->invlpgb,
		    (unsigned long long)g->invlpgb_pages);
		if (g->invlpgb_pmd_pages)
			out(" + %llu 2M pages", (unsigned long long)g->invlpgb_pmd_pages);
		out(", %llu full\n", (unsigned long long)g->invlpgb_full);
	} else {
		out("INVLPGB:   - (not traced by source %s)\n", st.source);
	}
	if (!(st.caps & CAP_TLBSYNC)) {
		out("TLBSYNC:   - (not traced by source %s)\n", st.source);
	} else if (waits) {
		fmt_ns((double)g->tlbsync_ns / (double)waits, mean, sizeof(mean));
		/* at most the max: a bucket's upper end can be above it */
		fmt_ns((double)period_percentile(p, 99), p99, sizeof(p99));
		fmt_ns((double)p->max_ns, max, sizeof(max));
		out("TLBSYNC:   %llu waits, mean %s, p99 <= %s, max %s\n",
		    (unsigned long long)waits, mean, p99, max);
	} else {
		out("TLBSYNC:   0 waits\n");
	}
	out("Reclaim:   %s batch flushes (%s with INVLPGBs pending), %llu pages reclaimed, ",
	    num(CAP_BATCH, g->batch_flushes, b[0], sizeof(b[0])),
	    num(CAP_PENDING, g->batch_pending, b[1], sizeof(b[1])),
	    (unsigned long long)g->reclaim_pages);
	if (g->reclaim_pages && (st.caps & CAP_BATCH))
		out("%.1f flushes/1000 pages\n",
		    1000.0 * (double)g->batch_flushes / (double)g->reclaim_pages);
	else
		out("- flushes/1000 pages\n");
}

static void print_rows(struct row *rows, size_t n)
{
	char mean[32], b[3][24];

	qsort(rows, n, sizeof(*rows), row_cmp);
	out("\n%7s %-16s %4s %5s %9s %9s %9s %9s %9s %9s\n", "PID", "COMM",
	    "CPUS", "ASID", "FLUSHES", "BCAST", "IPIS",
	    st.estimate ? "AVOIDABL" : "AVOIDED", "INVLPGB", "TLBSYNC");
	for (size_t i = 0; i < n && i < env.rows; i++) {
		const struct row *r = &rows[i];
		char asid[16];

		if (r->asid >= 0)
			snprintf(asid, sizeof(asid), "%d", r->asid);
		else
			strcpy(asid, "-");
		if (r->tlbsync_waits)
			fmt_ns(row_tlbsync_mean(r), mean, sizeof(mean));
		else
			strcpy(mean, "-");
		out("%7u %-16s %4u %5s %9llu %9s %9llu %9s %9s %9s\n",
		    r->pid, r->comm, r->cpus, asid,
		    (unsigned long long)row_flushes(r),
		    num(CAP_BCAST, r->bcast, b[0], sizeof(b[0])),
		    (unsigned long long)r->ipis,
		    num(st.estimate ? CAP_ESTIMATE : CAP_BCAST, r->avoided, b[1], sizeof(b[1])),
		    num(CAP_INVLPGB, r->invlpgb, b[2], sizeof(b[2])), mean);
	}
	if (st.estimate)
		out("AVOIDABL is an estimate: the IPIs of flushes of a process active on more than 3 CPUs, which upstream's rule would broadcast\n");
}

static void print_hist(const struct tlbtop_hist *h)
{
	int first = -1, last = -1, width;
	__u64 vmax = 0;

	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++) {
		if (h->slots[i] && first < 0)
			first = i;
		if (h->slots[i])
			last = i;
		if (h->slots[i] > vmax)
			vmax = h->slots[i];
	}
	out("\nTLBSYNC wait:\n");
	if (last < 0) {
		out("    no TLBSYNC waits\n");
		return;
	}
	width = last <= 32 ? 10 : 14;
	out("%*s%-*s : count    distribution\n", width + 1, "nsec",
	    width + 3, "");
	for (int i = first; i <= last; i++) {	/* from the first non-empty bucket */
		int stars = (int)(vmax ? h->slots[i] * 40 / vmax : 0);

		out("%*llu -> %-*llu : %-8llu |%-40.*s|\n", width,
		    (unsigned long long)bucket_lo(i), width,
		    (unsigned long long)bucket_hi(i),
		    (unsigned long long)h->slots[i], stars,
		    "****************************************");
	}
}

void screen_interval(time_t now)
{
	char title[64];
	struct tm tm;

	if (st.clear)
		out("\033[H\033[2J");
	localtime_r(&now, &tm);
	strftime(title, sizeof(title), "%H:%M:%S", &tm);
	print_header(&st.iv, &st.dbg, title);
	print_rows(st.iv.rows, st.iv.nrows);
	if (!st.clear)
		out("\n");
}

void screen_summary(struct row *rows, size_t n)
{
	char title[128];
	struct tm tm;

	localtime_r(&st.start_time, &tm);
	strftime(title, sizeof(title), "Summary since %H:%M:%S", &tm);
	if (st.clear)
		out("\033[H\033[2J");
	print_header(&st.run, &st.dbg, title);
	print_rows(rows, n);
	if (st.table.nfolded)
		out("(%llu exited processes with fewer flushes not shown: %llu flushes, %llu IPIs avoided)\n",
		    st.table.nfolded,
		    (unsigned long long)row_flushes(&st.table.folded),
		    (unsigned long long)st.table.folded.avoided);
	if (st.table.untracked)
		out("(%llu more processes not tracked)\n", st.table.untracked);
	if (st.caps & CAP_TLBSYNC)
		print_hist(&st.run.h);
	else
		out("\nTLBSYNC wait: - (not traced by source %s)\n", st.source);
}
