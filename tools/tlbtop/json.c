// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop -j: one JSON object a line, for each interval and for the
 * summary, written with tools/common's JSON writer. The fields are
 * described in docs/tlbtop.md; a value that is not known is null.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <stdlib.h>
#include <time.h>

#include "json.h"
#include "state.h"
#include "tlbtop.skel.h"

static void json_opt_u64(struct json *j, const char *key, bool have, unsigned long long v)
{
	if (have)
		json_u64(j, key, v);
	else
		json_null(j, key);
}

/* A count of the source's CAP_* cap, or null when it cannot give it. */
static void C(struct json *j, const char *key, unsigned int cap, unsigned long long v)
{
	json_opt_u64(j, key, cap && (st.caps & cap), v);
}

static void json_kv(struct json *j, const char *key, bool have, const struct kv *kv)
{
	if (!have) {
		json_null(j, key);
		return;
	}
	json_obj_begin(j, key);
	for (int i = 0; i < kv->n; i++)
		json_u64(j, kv->key[i], kv->val[i]);
	json_obj_end(j);
}

/* Differences of the counters (not the levels) of a debugfs file. */
static void json_kv_delta(struct json *j, const char *key, bool have,
			  const struct kv *now, bool have0, const struct kv *then)
{
	unsigned long long v0;

	if (!have || !have0) {
		json_null(j, key);
		return;
	}
	json_obj_begin(j, key);
	for (int i = 0; i < now->n; i++)
		if (!kv_is_level(now->key[i]) && kv_get(then, now->key[i], &v0))
			json_u64(j, now->key[i], now->val[i] - v0);
	json_obj_end(j);
}

/* The INVLPGB counts, or null when the source cannot count them. */
static void json_invlpgb(struct json *j, const struct tlbtop_global *g)
{
	if (!(st.caps & CAP_INVLPGB)) {
		json_null(j, "invlpgb");
		return;
	}
	json_obj_begin(j, "invlpgb");
	json_u64(j, "issued", g->invlpgb);
	json_u64(j, "pages", g->invlpgb_pages);
	json_u64(j, "pmd_pages", g->invlpgb_pmd_pages);
	json_u64(j, "full", g->invlpgb_full);
	json_u64(j, "in_broadcast_flushes", g->bcast_invlpgbs);
	json_obj_end(j);
}

/* The TLBSYNC waits, or null when the source cannot count them. */
static void json_tlbsync(struct json *j, const struct period *p)
{
	const struct tlbtop_global *g = &p->g;

	if (!(st.caps & CAP_TLBSYNC)) {
		json_null(j, "tlbsync");
		return;
	}
	json_obj_begin(j, "tlbsync");
	json_u64(j, "waits", g->tlbsync_waits);
	json_u64(j, "invlpgbs", g->tlbsync_invlpgbs);
	json_u64(j, "total_ns", g->tlbsync_ns);
	if (g->tlbsync_waits) {
		json_double(j, "mean_ns", (double)g->tlbsync_ns / (double)g->tlbsync_waits);
		/* at most max_ns: a bucket's upper end can be above it */
		json_u64(j, "p99_ns", period_percentile(p, 99));
		json_u64(j, "max_ns", p->max_ns);
	} else {
		json_null(j, "mean_ns");
		json_null(j, "p99_ns");
		json_null(j, "max_ns");
	}
	json_obj_end(j);
}

static void json_period(struct json *j, const struct period *p,
			const struct debugfs *d, struct row *rows, size_t nrows)
{
	const struct tlbtop_global *g = &p->g;
	unsigned long long cap = 0, in_use = 0, avail = 0;
	bool have_cap = d->have_pool && kv_get(&d->pool, "capacity", &cap);
	bool have_use = d->have_pool && kv_get(&d->pool, "in_use", &in_use);
	bool have_av = d->have_pool && kv_get(&d->pool, "available", &avail);

	if (d->have_mode)
		json_str(j, "mode", d->mode);
	else
		json_null(j, "mode");
	json_str(j, "mode_desc", mode_desc(d));
	json_str(j, "source", st.source);
	json_str(j, "kernel", st.kernel);
	if (st.invlpgb >= 0)
		json_bool(j, "invlpgb_in_use", st.invlpgb);
	else
		json_null(j, "invlpgb_in_use");
	json_bool(j, "estimate", st.estimate);

	json_obj_begin(j, "asid_pool");
	json_opt_u64(j, "capacity", have_cap, cap);
	json_opt_u64(j, "in_use", have_use, in_use);
	json_opt_u64(j, "available", have_av, avail);
	if (have_cap && have_use && cap)
		json_double(j, "pressure_pct", 100.0 * (double)in_use / (double)cap);
	else
		json_null(j, "pressure_pct");
	C(j, "assigns", CAP_ASID, g->asid_assigns);
	C(j, "frees", CAP_ASID, g->asid_frees);
	C(j, "resets", CAP_RESETS, g->asid_resets);
	if ((st.caps & CAP_POOL) && st.skel->bss->last_available_ns)
		json_u64(j, "available_last_event", st.skel->bss->last_available);
	else
		json_null(j, "available_last_event");
	json_obj_end(j);
	C(j, "asid_transitions", CAP_ASID, g->asid_transitions);

	json_obj_begin(j, "flushes");
	json_u64(j, "ipi_shootdown", g->ipi_shootdowns);
	C(j, "broadcast", CAP_BCAST, g->bcast_flushes);
	json_u64(j, "local_only", g->local_only);
	json_u64(j, "local", g->local_flushes);
	json_u64(j, "remote_send", g->multi_flushes);
	json_u64(j, "remote_received", g->remote_flushes);
	json_obj_end(j);
	json_u64(j, "ipis_sent", g->ipis_sent);
	C(j, "ipis_avoided", CAP_BCAST, g->ipis_avoided);
	C(j, "ipis_avoidable_estimate", CAP_ESTIMATE, g->ipis_avoidable);

	json_invlpgb(j, g);
	json_tlbsync(j, p);

	json_obj_begin(j, "reclaim");
	C(j, "batch_flushes", CAP_BATCH, g->batch_flushes);
	C(j, "batch_pending", CAP_PENDING, g->batch_pending);
	C(j, "batch_ipis", CAP_BATCH, g->batch_ipis);
	json_u64(j, "pages_scanned", g->reclaim_scanned);
	json_u64(j, "pages_reclaimed", g->reclaim_pages);
	if (g->reclaim_pages && (st.caps & CAP_BATCH))
		json_double(j, "flushes_per_1000",
			    1000.0 * (double)g->batch_flushes / (double)g->reclaim_pages);
	else
		json_null(j, "flushes_per_1000");
	json_obj_end(j);

	json_obj_begin(j, "debugfs");
	json_kv(j, "global_asid", d->have_pool, &d->pool);
	json_kv(j, "soft", d->have_soft, &d->soft);
	json_obj_end(j);

	qsort(rows, nrows, sizeof(*rows), row_cmp);
	json_u64(j, "processes_seen", nrows);
	json_arr_begin(j, "processes");
	for (size_t i = 0; i < nrows && i < env.rows; i++) {
		const struct row *r = &rows[i];

		json_obj_begin(j, NULL);
		json_u64(j, "pid", r->pid);
		json_str(j, "comm", r->comm);
		json_u64(j, "cpus", r->cpus);
		if (r->asid >= 0)
			json_u64(j, "asid", (unsigned)r->asid);
		else
			json_null(j, "asid");
		json_u64(j, "flushes", row_flushes(r));
		json_u64(j, "ipi_shootdowns", r->shootdowns);
		C(j, "bcast", CAP_BCAST, r->bcast);
		json_u64(j, "local_only", r->local_only);
		json_u64(j, "ipis", r->ipis);
		C(j, "ipis_avoided", st.estimate ? 0 : CAP_BCAST, r->avoided);
		C(j, "ipis_avoidable_estimate", CAP_ESTIMATE, r->avoided);
		C(j, "invlpgb", CAP_INVLPGB, r->invlpgb);
		C(j, "invlpgb_pages", CAP_INVLPGB, r->invlpgb_pages);
		C(j, "asid_assigns", CAP_ASID, r->assigns);
		C(j, "tlbsync_waits", CAP_TLBSYNC, r->tlbsync_waits);
		if (r->tlbsync_waits)
			json_double(j, "tlbsync_mean_ns", row_tlbsync_mean(r));
		else
			json_null(j, "tlbsync_mean_ns");
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_time(struct json *j, const char *key, time_t t)
{
	char buf[64];
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm);
	json_str(j, key, buf);
}

void json_interval(time_t now)
{
	struct json j;

	json_start(&j, stdout);
	json_obj_begin(&j, NULL);
	json_str(&j, "type", "interval");
	json_time(&j, "time", now);
	json_u64(&j, "n", st.intervals);
	json_double(&j, "elapsed_s", (double)(st.prev_ns - st.start_ns) / 1e9);
	json_double(&j, "interval_s", st.iv.secs);
	if (env.pid)
		json_u64(&j, "filter_pid", (unsigned)env.pid);
	else
		json_null(&j, "filter_pid");
	json_period(&j, &st.iv, &st.dbg, st.iv.rows, st.iv.nrows);
	json_obj_end(&j);
	json_end(&j);
}

/* The run's TLBSYNC histogram from its first to its last non-empty bucket. */
static void json_hist(struct json *j)
{
	int last = -1;

	if (!(st.caps & CAP_TLBSYNC)) {
		json_null(j, "tlbsync_hist");
		return;
	}
	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		if (st.run.h.slots[i])
			last = i;
	json_arr_begin(j, "tlbsync_hist");
	for (int i = 0; i <= last; i++) {
		json_obj_begin(j, NULL);
		json_u64(j, "lo_ns", bucket_lo(i));
		json_u64(j, "hi_ns", bucket_hi(i));
		json_u64(j, "count", st.run.h.slots[i]);
		json_obj_end(j);
	}
	json_arr_end(j);
}

void json_summary(struct row *rows, size_t n)
{
	struct json j;

	json_start(&j, stdout);
	json_obj_begin(&j, NULL);
	json_str(&j, "type", "summary");
	json_time(&j, "start", st.start_time);
	json_time(&j, "end", time(NULL));
	json_u64(&j, "intervals", st.intervals);
	json_double(&j, "elapsed_s", st.run.secs);
	if (env.pid)
		json_u64(&j, "filter_pid", (unsigned)env.pid);
	else
		json_null(&j, "filter_pid");
	json_period(&j, &st.run, &st.dbg, rows, n);
	json_u64(&j, "processes_folded", st.table.nfolded);
	json_u64(&j, "folded_flushes", row_flushes(&st.table.folded));
	json_u64(&j, "folded_ipis_avoided", st.table.folded.avoided);
	json_u64(&j, "processes_untracked", st.table.untracked);
	json_obj_begin(&j, "debugfs_delta");
	json_kv_delta(&j, "global_asid", st.dbg.have_pool, &st.dbg.pool,
		      st.dbg_start.have_pool, &st.dbg_start.pool);
	json_kv_delta(&j, "soft", st.dbg.have_soft, &st.dbg.soft,
		      st.dbg_start.have_soft, &st.dbg_start.soft);
	json_obj_end(&j);
	json_hist(&j);
	json_obj_end(&j);
	json_end(&j);
}
