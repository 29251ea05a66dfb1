// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: top for TLB flushing under broadcast TLB invalidation (AMD
 * INVLPGB) and global ASIDs. The BPF side (bpf/tlbtop.bpf.c) counts the
 * kernel's tlb:*, csd:/ipi: and vmscan: events in maps; once an interval
 * this reads them, with debugfs's x86/broadcast_tlb/, and prints a
 * header and one row per process. At exit it prints a summary of the
 * whole run with a histogram of the TLBSYNC waits. See docs/tlbtop.md.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tlbtop.h"
#include "tlbtop.skel.h"

#define BTLB_DIR	"/sys/kernel/debug/x86/broadcast_tlb"
#define VMLINUX_BTF	"/sys/kernel/btf/vmlinux"
#define RUN_PROCS	512	/* processes remembered for the summary */
#define RUN_SLOTS	(2 * RUN_PROCS)	/* its hash table: a power of two */
#define RUN_CPU_BITS	1024	/* CPUs a process ran on, for the summary */
#define MAX_KV		32
#define DRAIN_DELAY_NS	5000000	/* after a flip, for programs still running */

/* Options */

enum sort_key {
	SORT_PID, SORT_COMM, SORT_CPUS, SORT_ASID, SORT_FLUSHES, SORT_BCAST,
	SORT_IPIS, SORT_AVOIDED, SORT_INVLPGB, SORT_TLBSYNC,
};

static const struct {
	const char *name;
	enum sort_key key;
} sort_names[] = {
	{ "pid", SORT_PID }, { "comm", SORT_COMM }, { "cpus", SORT_CPUS },
	{ "asid", SORT_ASID }, { "flushes", SORT_FLUSHES },
	{ "bcast", SORT_BCAST }, { "ipis", SORT_IPIS },
	{ "ipis_avoided", SORT_AVOIDED }, { "invlpgb", SORT_INVLPGB },
	{ "tlbsync", SORT_TLBSYNC },
};

static struct env {
	pid_t pid;
	unsigned long rows;
	enum sort_key sort;
	bool noclear;
	bool batch;
	bool json;
	bool verbose;
	unsigned long interval;
	unsigned long count;	/* 0: until a signal */
	int nargs;
} env = {
	.rows = 20,
	.sort = SORT_AVOIDED,
	.interval = 1,
};

const char *argp_program_version = "tlbtop 1.0";
static const char doc[] =
"Show TLB flushing by process: IPI shootdowns, broadcast (INVLPGB) flushes,\n"
"the IPIs they avoid, TLBSYNC waits and the global ASID pool.\n"
"\n"
"INTERVAL is in seconds (1..86400, default 1). COUNT intervals (1..10^9)\n"
"are shown, by default until SIGINT or SIGTERM, then a summary of the run."
"\v"
"COLUMNS for -s: pid, comm, cpus, asid, flushes, bcast, ipis, ipis_avoided\n"
"(the default), invlpgb, tlbsync.\n"
"\n"
"EXAMPLES:\n"
"    tlbtop                    # refresh every second\n"
"    tlbtop 5 10               # 10 intervals of 5 s, then the summary\n"
"    tlbtop -p 1234 -C         # PID 1234's row only, no screen clearing\n"
"    tlbtop -b -s flushes 1 3  # plain text, rows sorted by flushes\n"
"    tlbtop -j 1 5             # one JSON object per interval, one at exit\n"
"\n"
"Exit status: 0 done, 2 bad option or argument, 3 could not trace (not\n"
"root, no BTF, a kernel without the tracepoints, load or attach failed).\n"
"See docs/tlbtop.md for every field.";

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Show only this process's row (the header stays system-wide)", 0 },
	{ "rows", 'r', "ROWS", 0, "Rows to show (default 20)", 0 },
	{ "sort", 's', "COLUMN", 0, "Sort the rows by COLUMN (default ipis_avoided)", 0 },
	{ "noclear", 'C', NULL, 0, "Do not clear the screen", 0 },
	{ "batch", 'b', NULL, 0, "Batch mode: plain text, no terminal control", 0 },
	{ "json", 'j', NULL, 0, "One JSON object per interval and one at exit, a line each", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's debug output", 0 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0 },
	{ 0 },
};

/* A bad option or argument: the message, the usage line, exit 2. */
static void bad_usage(struct argp_state *state, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void bad_usage(struct argp_state *state, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	argp_state_help(state, stderr, ARGP_HELP_USAGE | ARGP_HELP_SEE | ARGP_HELP_EXIT_ERR);
	exit(EXIT_USAGE);	/* not reached: argp exits with argp_err_exit_status */
}

/* Plain decimal digits in [min, max], else bad_usage(). */
static unsigned long long parse_num(struct argp_state *state, const char *what,
				    const char *arg, unsigned long long min,
				    unsigned long long max)
{
	unsigned long long v = 0;
	const char *p;

	for (p = arg; *p >= '0' && *p <= '9'; p++) {
		if (v > (ULLONG_MAX - (unsigned)(*p - '0')) / 10)
			bad_usage(state, "%s: '%s' is too large (at most %llu)", what, arg, max);
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (p == arg || *p)
		bad_usage(state, "%s: '%s' is not a number", what, arg);
	if (v < min || v > max)
		bad_usage(state, "%s: %s is out of range (%llu..%llu)", what, arg, min, max);
	return v;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'p':
		env.pid = (pid_t)parse_num(state, "option -p", arg, 1, 4194304);
		break;
	case 'r':
		env.rows = parse_num(state, "option -r", arg, 1, 1000000);
		break;
	case 's': {
		size_t i;

		for (i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
			if (!strcmp(arg, sort_names[i].name))
				break;
		if (i == sizeof(sort_names) / sizeof(sort_names[0]))
			bad_usage(state, "option -s: unknown column '%s' (pid, comm, cpus, asid, flushes, bcast, ipis, ipis_avoided, invlpgb, tlbsync)",
				  arg);
		env.sort = sort_names[i].key;
		break;
	}
	case 'C':
		env.noclear = true;
		break;
	case 'b':
		env.batch = true;
		break;
	case 'j':
		env.json = true;
		break;
	case 'v':
		env.verbose = true;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_END:
		if (env.pid && kill(env.pid, 0) && errno == ESRCH)
			bad_usage(state, "option -p: no process with PID %d", (int)env.pid);
		break;
	case ARGP_KEY_ARG:
		if (env.nargs == 0)
			env.interval = parse_num(state, "INTERVAL", arg, 1, 86400);
		else if (env.nargs == 1)
			env.count = parse_num(state, "COUNT", arg, 1, 1000000000);
		else
			bad_usage(state, "unexpected argument '%s'", arg);
		env.nargs++;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Errors before anything is loaded: message, exit 3. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_ERROR);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!env.verbose)
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* Checks before loading */

static bool has_cap(unsigned int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

struct event {
	const char *sys;
	const char *name;
	unsigned int nargs;	/* TP_PROTO's arguments */
	bool present;
};

/*
 * Whether the running kernel has tracepoint 'name' as tp_btf sees it:
 * a typedef btf_trace_<name>, pointer to a function whose arguments are
 * void *__data and the TP_PROTO. Returns its TP_PROTO argument count,
 * or -1 when it is absent.
 */
static int btf_tracepoint_args(const struct btf *btf, const char *name)
{
	char tname[128];
	const struct btf_type *t;
	int id;

	snprintf(tname, sizeof(tname), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;	/* pointer */
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -1;
	return (int)btf_vlen(t) - 1;
}

/* flush_tlb_func's address from /proc/kallsyms (a static function). */
static unsigned long long find_flush_tlb_func(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	unsigned long long addr, found = 0;
	bool seen = false;

	if (!f)
		die("cannot open /proc/kallsyms: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (strcmp(name, "flush_tlb_func") &&
		    strncmp(name, "flush_tlb_func.", 15))
			continue;
		seen = true;
		found = addr;
		break;
	}
	fclose(f);
	if (!seen)
		die("the kernel has no symbol flush_tlb_func in /proc/kallsyms, which tlbtop needs to tell TLB shootdown IPIs from others");
	if (!found)
		die("/proc/kallsyms hides flush_tlb_func's address (kernel.kptr_restrict?): run tlbtop as root");
	return found;
}

/* debugfs: x86/broadcast_tlb/ */

struct kv {
	int n;
	char key[MAX_KV][48];
	unsigned long long val[MAX_KV];
};

/* A file of "KEY VALUE" lines; false when it cannot be read. */
static bool read_kv(const char *path, struct kv *kv)
{
	FILE *f = fopen(path, "r");
	char line[256];

	kv->n = 0;
	if (!f)
		return false;
	while (kv->n < MAX_KV && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%47s %llu", kv->key[kv->n], &kv->val[kv->n]) == 2)
			kv->n++;
	}
	fclose(f);
	return true;
}

static bool kv_get(const struct kv *kv, const char *key, unsigned long long *v)
{
	for (int i = 0; i < kv->n; i++)
		if (!strcmp(kv->key[i], key)) {
			*v = kv->val[i];
			return true;
		}
	return false;
}

/* Keys that are levels, not counters: no difference is taken of them. */
static bool kv_is_level(const char *key)
{
	return !strcmp(key, "capacity") || !strcmp(key, "in_use") ||
	       !strcmp(key, "available") || !strcmp(key, "awaiting_reset") ||
	       !strcmp(key, "invlpgb_count_max");
}

struct debugfs {
	bool have_mode;
	char mode[32];
	bool have_pool;
	struct kv pool;		/* global_asid */
	bool have_soft;
	struct kv soft;		/* soft */
};

static void read_debugfs(struct debugfs *d)
{
	FILE *f = fopen(BTLB_DIR "/mode", "r");

	d->have_mode = false;
	if (f) {
		if (fscanf(f, "%31s", d->mode) == 1)
			d->have_mode = true;
		fclose(f);
	}
	d->have_pool = read_kv(BTLB_DIR "/global_asid", &d->pool);
	d->have_soft = read_kv(BTLB_DIR "/soft", &d->soft);
}

static const char *mode_desc(const struct debugfs *d)
{
	if (!d->have_mode)
		return "unknown (no " BTLB_DIR ")";
	if (!strcmp(d->mode, "hardware"))
		return "hardware INVLPGB";
	if (!strcmp(d->mode, "soft"))
		return "software model";
	if (!strcmp(d->mode, "soft,drop"))
		return "software model dropping";
	if (!strcmp(d->mode, "none"))
		return "none";
	return d->mode;
}

/* Process rows */

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

static __u64 row_flushes(const struct row *r)
{
	return r->shootdowns + r->bcast + r->local_only;
}

static double row_tlbsync_mean(const struct row *r)
{
	return r->tlbsync_waits ? (double)r->tlbsync_ns / (double)r->tlbsync_waits : 0;
}

static int row_cmp(const void *a, const void *b)
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

/* State */

struct period {
	double secs;
	struct tlbtop_global g;		/* counts in the period */
	struct tlbtop_hist h;
	__u64 max_ns;
	struct row *rows;
	size_t nrows;
	size_t rows_cap;
};

static struct state {
	struct tlbtop_bpf *skel;
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
} st;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("out of memory");
	return p;
}

/* Fault every page in now, not as the table fills. */
static void *xcalloc_touched(size_t n, size_t size)
{
	char *p = xcalloc(n, size);

	for (size_t i = 0; i < n * size; i += 4096)
		((volatile char *)p)[i] = 0;
	return p;
}

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
			r->avoided += v->ipis_avoided;
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
static void collect(void)
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

	st.iv.secs = (double)(now - st.prev_ns) / 1e9;
	st.prev_ns = now;
	add_global(&st.run.g, &st.iv.g);
	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		st.run.h.slots[i] += st.iv.h.slots[i];
	if (st.iv.max_ns > st.run.max_ns)
		st.run.max_ns = st.iv.max_ns;
	st.run.secs += st.iv.secs;
}

/* Output */

static __u64 hist_total(const struct tlbtop_hist *h)
{
	__u64 n = 0;

	for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
		n += h->slots[i];
	return n;
}

/* Bucket i holds [2^i, 2^(i+1) - 1] ns (bucket 0: 0 and 1). */
static __u64 bucket_lo(int i) { return i ? 1ULL << i : 0; }
static __u64 bucket_hi(int i) { return (1ULL << (i + 1)) - 1; }

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

static void print_header(const struct period *p, const struct debugfs *d,
			 const char *title)
{
	const struct tlbtop_global *g = &p->g;
	unsigned long long cap, in_use;
	char mean[32], p99[32], max[32];
	__u64 waits = g->tlbsync_waits;

	out("%s  mode: %s  (%.2f s)\n", title, mode_desc(d), p->secs);
	if (d->have_pool && kv_get(&d->pool, "capacity", &cap) &&
	    kv_get(&d->pool, "in_use", &in_use))
		out("ASID pool: %llu in use of %llu (%.1f%%); ", in_use, cap,
		    cap ? 100.0 * (double)in_use / (double)cap : 0.0);
	else
		out("ASID pool: - (no debugfs); ");
	out("%llu assigned, %llu freed, %llu resets; %llu transitions done\n",
	    (unsigned long long)g->asid_assigns, (unsigned long long)g->asid_frees,
	    (unsigned long long)g->asid_resets,
	    (unsigned long long)g->asid_transitions);
	out("Flushes:   %llu IPI shootdown, %llu broadcast, %llu local only\n",
	    (unsigned long long)g->ipi_shootdowns,
	    (unsigned long long)g->bcast_flushes,
	    (unsigned long long)g->local_only);
	out("IPIs:      %llu sent, %llu avoided\n",
	    (unsigned long long)g->ipis_sent, (unsigned long long)g->ipis_avoided);
	out("INVLPGB:   %llu issued, %llu pages", (unsigned long long)g->invlpgb,
	    (unsigned long long)g->invlpgb_pages);
	if (g->invlpgb_pmd_pages)
		out(" + %llu 2M pages", (unsigned long long)g->invlpgb_pmd_pages);
	out(", %llu full\n", (unsigned long long)g->invlpgb_full);
	if (waits) {
		fmt_ns((double)g->tlbsync_ns / (double)waits, mean, sizeof(mean));
		fmt_ns((double)hist_percentile(&p->h, 99), p99, sizeof(p99));
		fmt_ns((double)p->max_ns, max, sizeof(max));
		out("TLBSYNC:   %llu waits, mean %s, p99 <= %s, max %s\n",
		    (unsigned long long)waits, mean, p99, max);
	} else {
		out("TLBSYNC:   0 waits\n");
	}
	out("Reclaim:   %llu batch flushes (%llu with INVLPGBs pending), %llu pages reclaimed, ",
	    (unsigned long long)g->batch_flushes,
	    (unsigned long long)g->batch_pending,
	    (unsigned long long)g->reclaim_pages);
	if (g->reclaim_pages)
		out("%.1f flushes/1000 pages\n",
		    1000.0 * (double)g->batch_flushes / (double)g->reclaim_pages);
	else
		out("- flushes/1000 pages\n");
}

static void print_rows(struct row *rows, size_t n)
{
	char mean[32];

	qsort(rows, n, sizeof(*rows), row_cmp);
	out("\n%7s %-16s %4s %5s %9s %9s %9s %9s %9s %9s\n", "PID", "COMM",
	    "CPUS", "ASID", "FLUSHES", "BCAST", "IPIS", "AVOIDED", "INVLPGB",
	    "TLBSYNC");
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
		out("%7u %-16s %4u %5s %9llu %9llu %9llu %9llu %9llu %9s\n",
		    r->pid, r->comm, r->cpus, asid,
		    (unsigned long long)row_flushes(r),
		    (unsigned long long)r->bcast, (unsigned long long)r->ipis,
		    (unsigned long long)r->avoided,
		    (unsigned long long)r->invlpgb, mean);
	}
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

static void json_opt_u64(struct json *j, const char *key, bool have, unsigned long long v)
{
	if (have)
		json_u64(j, key, v);
	else
		json_null(j, key);
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

	json_obj_begin(j, "asid_pool");
	json_opt_u64(j, "capacity", have_cap, cap);
	json_opt_u64(j, "in_use", have_use, in_use);
	json_opt_u64(j, "available", have_av, avail);
	if (have_cap && have_use && cap)
		json_double(j, "pressure_pct", 100.0 * (double)in_use / (double)cap);
	else
		json_null(j, "pressure_pct");
	json_u64(j, "assigns", g->asid_assigns);
	json_u64(j, "frees", g->asid_frees);
	json_u64(j, "resets", g->asid_resets);
	if (st.skel->bss->last_available_ns)
		json_u64(j, "available_last_event", st.skel->bss->last_available);
	else
		json_null(j, "available_last_event");
	json_obj_end(j);
	json_u64(j, "asid_transitions", g->asid_transitions);

	json_obj_begin(j, "flushes");
	json_u64(j, "ipi_shootdown", g->ipi_shootdowns);
	json_u64(j, "broadcast", g->bcast_flushes);
	json_u64(j, "local_only", g->local_only);
	json_u64(j, "local", g->local_flushes);
	json_u64(j, "remote_send", g->multi_flushes);
	json_u64(j, "remote_received", g->remote_flushes);
	json_obj_end(j);
	json_u64(j, "ipis_sent", g->ipis_sent);
	json_u64(j, "ipis_avoided", g->ipis_avoided);

	json_obj_begin(j, "invlpgb");
	json_u64(j, "issued", g->invlpgb);
	json_u64(j, "pages", g->invlpgb_pages);
	json_u64(j, "pmd_pages", g->invlpgb_pmd_pages);
	json_u64(j, "full", g->invlpgb_full);
	json_u64(j, "in_broadcast_flushes", g->bcast_invlpgbs);
	json_obj_end(j);

	json_obj_begin(j, "tlbsync");
	json_u64(j, "waits", g->tlbsync_waits);
	json_u64(j, "invlpgbs", g->tlbsync_invlpgbs);
	json_u64(j, "total_ns", g->tlbsync_ns);
	if (g->tlbsync_waits) {
		json_double(j, "mean_ns", (double)g->tlbsync_ns / (double)g->tlbsync_waits);
		json_u64(j, "p99_ns", hist_percentile(&p->h, 99));
		json_u64(j, "max_ns", p->max_ns);
	} else {
		json_null(j, "mean_ns");
		json_null(j, "p99_ns");
		json_null(j, "max_ns");
	}
	json_obj_end(j);

	json_obj_begin(j, "reclaim");
	json_u64(j, "batch_flushes", g->batch_flushes);
	json_u64(j, "batch_pending", g->batch_pending);
	json_u64(j, "batch_ipis", g->batch_ipis);
	json_u64(j, "pages_scanned", g->reclaim_scanned);
	json_u64(j, "pages_reclaimed", g->reclaim_pages);
	if (g->reclaim_pages)
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
		json_u64(j, "bcast", r->bcast);
		json_u64(j, "local_only", r->local_only);
		json_u64(j, "ipis", r->ipis);
		json_u64(j, "ipis_avoided", r->avoided);
		json_u64(j, "invlpgb", r->invlpgb);
		json_u64(j, "invlpgb_pages", r->invlpgb_pages);
		json_u64(j, "asid_assigns", r->assigns);
		json_u64(j, "tlbsync_waits", r->tlbsync_waits);
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

static void check_output(void)
{
	if (fflush(stdout) || ferror(stdout))
		st.out_error = true;
}

static void print_interval(void)
{
	char title[64];
	time_t now = time(NULL);
	struct tm tm;

	if (env.json) {
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
		check_output();
		return;
	}
	if (st.clear)
		out("\033[H\033[2J");
	localtime_r(&now, &tm);
	strftime(title, sizeof(title), "%H:%M:%S", &tm);
	print_header(&st.iv, &st.dbg, title);
	print_rows(st.iv.rows, st.iv.nrows);
	if (!st.clear)
		out("\n");
	check_output();
}

static void print_summary(void)
{
	struct row *rows = NULL;
	size_t n = 0;
	char title[128];
	struct tm tm;

	if (st.table.n) {
		rows = calloc(st.table.n, sizeof(*rows));
		for (size_t i = 0; rows && i < RUN_SLOTS; i++)
			if (st.table.used[i])
				rows[n++] = st.table.slot[i];
	}
	if (env.json) {
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
		json_arr_begin(&j, "tlbsync_hist");
		{
			int last = -1;

			for (int i = 0; i < TLBTOP_HIST_SLOTS; i++)
				if (st.run.h.slots[i])
					last = i;
			for (int i = 0; i <= last; i++) {
				json_obj_begin(&j, NULL);
				json_u64(&j, "lo_ns", bucket_lo(i));
				json_u64(&j, "hi_ns", bucket_hi(i));
				json_u64(&j, "count", st.run.h.slots[i]);
				json_obj_end(&j);
			}
		}
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	} else {
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
		print_hist(&st.run.h);
	}
	free(rows);
	check_output();
}

/* Main */

static struct tlbtop_bpf *load_and_attach(void)
{
	struct tlbtop_bpf *skel;
	struct btf *btf;
	struct event ev[] = {
		{ "tlb", "global_asid_assign", 4, false },
		{ "tlb", "global_asid_free", 3, false },
		{ "tlb", "global_asid_reset", 2, false },
		{ "tlb", "global_asid_transition_done", 2, false },
		{ "tlb", "invlpgb_issue", 5, false },
		{ "tlb", "tlbsync_wait", 2, false },
		{ "tlb", "broadcast_flush", 8, false },
		{ "tlb", "tlbbatch_flush", 2, false },
		{ "tlb", "tlb_flush", 2, false },
		{ "vmscan", "mm_vmscan_lru_shrink_inactive", 6, false },
		/* the shootdown sends: csd_queue_cpu, or else both ipi_send_* */
		{ "csd", "csd_queue_cpu", 4, false },
		{ "ipi", "ipi_send_cpu", 3, false },
		{ "ipi", "ipi_send_cpumask", 3, false },
	};
	const size_t nev = sizeof(ev) / sizeof(ev[0]);
	const size_t ncsd = nev - 3;	/* index of csd_queue_cpu */
	unsigned long long ftf;
	size_t missing = 0;
	char err[128];
	int e;

	if (!has_cap(CAP_SYS_ADMIN) && !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON)))
		die("needs root to load BPF programs and read debugfs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): run it as root");
	if (access(VMLINUX_BTF, R_OK))
		die("the kernel has no BTF (%s: %s): tlbtop needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		    VMLINUX_BTF, strerror(errno));
	btf = btf__load_vmlinux_btf();
	if (!btf)
		die("cannot read the kernel's BTF (%s): %s", VMLINUX_BTF, strerror(errno));

	for (size_t i = 0; i < nev; i++) {
		int n = btf_tracepoint_args(btf, ev[i].name);

		ev[i].present = n >= 0;
		if (n >= 0 && (unsigned)n != ev[i].nargs) {
			btf__free(btf);
			die("the kernel's tracepoint %s:%s has %d arguments, tlbtop expects %u: tlbtop does not match this kernel",
			    ev[i].sys, ev[i].name, n, ev[i].nargs);
		}
	}
	btf__free(btf);
	for (size_t i = 0; i < nev; i++) {
		if (ev[i].present)
			continue;
		if (i > ncsd && ev[ncsd].present)
			continue;	/* ipi_send_*: not needed with csd_queue_cpu */
		if (i == ncsd && ev[ncsd + 1].present && ev[ncsd + 2].present)
			continue;	/* csd_queue_cpu: ipi_send_* will do */
		fprintf(stderr, "%s: the kernel has no tracepoint %s:%s: boot the patched kernel (make kernel)\n",
			prog_name, ev[i].sys, ev[i].name);
		missing++;
	}
	if (missing)
		exit(EXIT_ERROR);
	ftf = find_flush_tlb_func();

	skel = tlbtop_bpf__open();
	if (!skel)
		die("cannot open the BPF object: %s", strerror(errno));
	skel->rodata->targ_tgid = (__u32)env.pid;
	skel->rodata->flush_tlb_func_addr = ftf;
	skel->rodata->nr_cpu_words = (__u32)((st.ncpus + 63) / 64);
	if (skel->rodata->nr_cpu_words > TLBTOP_MAX_MASK_WORDS)
		skel->rodata->nr_cpu_words = TLBTOP_MAX_MASK_WORDS;
	if (ev[ncsd].present) {
		bpf_program__set_autoload(skel->progs.ipi_send_cpu, false);
		bpf_program__set_autoload(skel->progs.ipi_send_cpumask, false);
	} else {
		bpf_program__set_autoload(skel->progs.csd_queue_cpu, false);
	}

	e = tlbtop_bpf__load(skel);
	if (e) {
		libbpf_strerror(e, err, sizeof(err));
		fprintf(stderr, "%s: loading the BPF programs failed: %s%s\n",
			prog_name, err, env.verbose ? "" : " (-v shows libbpf's log)");
		tlbtop_bpf__destroy(skel);
		exit(EXIT_ERROR);
	}
	e = tlbtop_bpf__attach(skel);
	if (e) {
		libbpf_strerror(e, err, sizeof(err));
		fprintf(stderr, "%s: attaching the BPF programs failed: %s%s\n",
			prog_name, err, env.verbose ? "" : " (-v shows libbpf's log)");
		tlbtop_bpf__destroy(skel);
		exit(EXIT_ERROR);
	}
	/* Count from now on, with every program in place. */
	__atomic_store_n(&skel->bss->armed, 1, __ATOMIC_SEQ_CST);
	return skel;
}

static void free_state(void)
{
	tlbtop_bpf__destroy(st.skel);
	st.skel = NULL;
	free(st.pcpu_buf);
	free(st.keys);
	free(st.mm_keys);
	free(st.mm);
	free(st.iv.rows);
	free(st.table.slot);
	free(st.table.used);
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.args_doc = "[INTERVAL [COUNT]]",
		.doc = doc,
	};
	sigset_t sigs;
	struct timespec wait;
	__u64 next;
	size_t biggest;
	int sig;

	prog_name = "tlbtop";
	argv[0] = (char *)prog_name;	/* for argp's and getopt's messages */
	argp_err_exit_status = EXIT_USAGE;
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_USAGE;
	libbpf_set_print(libbpf_print);

	/*
	 * SIGINT and SIGTERM are taken with sigtimedwait() between intervals;
	 * blocked from here on, so that one during loading waits for it.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	st.ncpus = libbpf_num_possible_cpus();
	if (st.ncpus <= 0)
		die("cannot count the possible CPUs");
	st.skel = load_and_attach();
	st.fd_globals = bpf_map__fd(st.skel->maps.globals);
	st.fd_hist = bpf_map__fd(st.skel->maps.hist);
	st.fd_maxes = bpf_map__fd(st.skel->maps.maxes);
	st.fd_procs[0] = bpf_map__fd(st.skel->maps.procs0);
	st.fd_procs[1] = bpf_map__fd(st.skel->maps.procs1);
	st.fd_mms = bpf_map__fd(st.skel->maps.mms);
	biggest = sizeof(struct tlbtop_proc);
	if (sizeof(struct tlbtop_global) > biggest)
		biggest = sizeof(struct tlbtop_global);
	if (sizeof(struct tlbtop_hist) > biggest)
		biggest = sizeof(struct tlbtop_hist);
	st.pcpu_buf_size = (size_t)st.ncpus * ((biggest + 7) & ~(size_t)7);
	st.pcpu_buf = xcalloc(1, st.pcpu_buf_size);
	st.keys = xcalloc(TLBTOP_MAX_PROCS, sizeof(*st.keys));
	st.mm_keys = xcalloc(TLBTOP_MAX_MMS, sizeof(*st.mm_keys));
	st.mm = xcalloc(TLBTOP_MAX_MMS, sizeof(*st.mm));
	st.table.slot = xcalloc_touched(RUN_SLOTS, sizeof(*st.table.slot));
	st.table.used = xcalloc_touched(RUN_SLOTS, sizeof(*st.table.used));
	st.clear = !env.noclear && !env.batch && !env.json && isatty(STDOUT_FILENO);

	/* The counters start at 0 with the maps, at load: prev_g and prev_h. */
	read_debugfs(&st.dbg_start);
	st.dbg = st.dbg_start;
	st.start_ns = st.prev_ns = now_ns();
	st.start_time = time(NULL);
	fprintf(stderr, "Tracing TLB flushes, every %lu s... Hit Ctrl-C to end.\n",
		env.interval);

	next = st.start_ns + (__u64)env.interval * 1000000000ULL;
	for (;;) {
		__u64 now = now_ns();

		sig = 0;
		if (now < next) {
			wait.tv_sec = (time_t)((next - now) / 1000000000ULL);
			wait.tv_nsec = (long)((next - now) % 1000000000ULL);
			sig = sigtimedwait(&sigs, NULL, &wait);
			if (sig < 0 && errno == EINTR)
				continue;
		}
		if (sig > 0)
			break;
		collect();
		st.intervals++;
		print_interval();
		if (st.out_error)
			break;
		if (env.count && st.intervals >= env.count)
			break;
		next += (__u64)env.interval * 1000000000ULL;
	}
	if (sig > 0)		/* the part of an interval before the signal */
		collect();
	if (!st.out_error)
		print_summary();
	free_state();
	return st.out_error ? EXIT_ERROR : 0;
}
