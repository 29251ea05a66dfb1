// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim: a multi-threaded workload that forces page reclaim.
 *
 * It is meant to run inside a cgroup v2 memory cgroup whose memory.max is
 * below its working set, with swap (zram) available. The working set is
 * an anonymous region plus a MAP_SHARED mapping of a file (dirty file
 * pages). Each pass writes a pattern derived from (region, page index,
 * pass) into every word of every page, then reads every page back and
 * checks it. Threads work on disjoint slices; each thread verifies the
 * slice another thread wrote, so pages are written on one CPU, reclaimed,
 * and read back on another.
 *
 * With --cgroup the tool creates the cgroup itself, sets memory.max and
 * memory.swap.max, moves itself in, and at exit moves itself back to the
 * parent and removes the cgroup.
 *
 * With --hot, each thread also keeps a few pages of its own that it
 * updates between every two pages of its sweeps: a counter it increments,
 * checked against the last value it wrote. The pages stay in the thread's
 * TLB while reclaim takes them (the hardware sets the accessed bit only
 * when it loads a translation, so a page used through a cached one looks
 * idle). A write that goes through a translation reclaim should have
 * flushed lands in the freed page and is lost: the page comes back from
 * swap with an older count.
 *
 * With --lock, the tool's own memory (code, data, heap, thread stacks) is
 * locked before the working set is mapped, so that reclaim takes only the
 * working set and a write through a stale translation corrupts the data
 * that the check reads, not the tool's own state.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define MAX_THREADS	256
#define MAX_RECS	8
#define MAX_PASSES	1000000
#define MAX_SIZE	(1ULL << 40)
#define MAX_PASS_TEXT	10	/* passes listed one by one in the text report */
#define MAX_PASS_LIST	1000	/* ... and in the JSON report */
#define MAX_HOT		64	/* hot pages per thread */
#define SPARSE_WORDS	16	/* words of pattern in a page with --sparse */
#define LOCK_STACK	(256 << 10)	/* a thread's stack with --lock */

enum { R_ANON, R_FILE, NREGIONS, R_HOT = NREGIONS };
static const char *const region_name[NREGIONS + 1] = { "anon", "file", "hot" };

struct region {
	char *base;
	size_t pages;
};

struct mismatch {
	int region;
	int pass;
	int verifier;		/* thread that read it */
	int writer;		/* thread that wrote it */
	uint64_t page;		/* page index in the region */
	uint64_t word;		/* first bad 64-bit word in the page */
	uint64_t expected;
	uint64_t got;
	void *addr;
};

struct worker {
	int index;
	int cpu;
	pthread_t thread;
	uint64_t written;
	uint64_t verified;
	uint64_t mismatches;
	struct mismatch rec[MAX_RECS];
	int nrec;
	int err;
	uint64_t hot_checks;
	uint64_t hot_mismatches;
	unsigned int hot_next;
	uint64_t hot_val[MAX_HOT];	/* the last count written to each */
} __attribute__((aligned(64)));

static struct region regions[NREGIONS];
static struct worker *workers;
static int nthreads = 4;
static int npasses = 3;
static size_t page_size;
static pthread_barrier_t barrier;
static uint64_t warmup_ns = 500000000ULL;
static char *warm_base;
static char *hot_base;
static int nhot;
static size_t pattern_words;	/* words that carry the pattern; the rest are 0 */
/* Phase times: the start, and when the last thread finished each phase. */
static _Atomic uint64_t t_start, *t_write, *t_verify;
static atomic_int stop;
static volatile sig_atomic_t signalled;

/* Cleanup state. */
static char file_path[PATH_MAX];
static bool file_created;
static char cg_path[PATH_MAX];
static char cg_parent[PATH_MAX];
static bool cg_created, cg_moved;

/* Statistics */

struct stat_key {
	const char *name;
	bool have;
	uint64_t before;
	uint64_t after;
};

#define K(n) { .name = n }
static struct stat_key vm_keys[] = {
	K("pgsteal_kswapd"), K("pgsteal_direct"), K("pgsteal_khugepaged"),
	K("pgsteal_proactive"), K("pgsteal_anon"), K("pgsteal_file"),
	K("pgscan_kswapd"), K("pgscan_direct"), K("pgscan_khugepaged"),
	K("pgscan_proactive"), K("pswpin"), K("pswpout"), K("zswpin"),
	K("zswpout"), K("swpout_zero"), K("pgmajfault"),
	K("workingset_refault_anon"), K("workingset_refault_file"),
	K("nr_tlb_remote_flush"), K("nr_tlb_remote_flush_received"),
	K("nr_tlb_local_flush_all"), K("nr_tlb_local_flush_one"),
	{ .name = NULL }
};

static struct stat_key cg_keys[] = {
	K("pgsteal"), K("pgscan"), K("pgsteal_kswapd"), K("pgsteal_direct"),
	K("pgscan_kswapd"), K("pgscan_direct"), K("pswpin"), K("pswpout"),
	K("zswpin"), K("zswpout"), K("swpout_zero"), K("pgmajfault"),
	K("workingset_refault_anon"), K("workingset_refault_file"),
	{ .name = NULL }
};

static struct stat_key ev_keys[] = {
	K("low"), K("high"), K("max"), K("oom"), K("oom_kill"),
	{ .name = NULL }
};
#undef K

/* Read a small file into buf (NUL-terminated); -1 with errno on failure. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off + 1 < len) {
		ssize_t n = read(fd, buf + off, len - 1 - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(s);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, len);
	if (n != (ssize_t)len) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

/* Fill keys from "name value" lines; after ? into .after : into .before. */
static void read_stats(const char *path, struct stat_key *keys, bool after)
{
	static char buf[65536];
	char *line, *save = NULL;

	if (read_small(path, buf, sizeof(buf)) < 0)
		fatal_errno("cannot read %s", path);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		for (struct stat_key *k = keys; k->name; k++) {
			if (strcmp(k->name, line))
				continue;
			uint64_t v = strtoull(sp + 1, NULL, 10);

			if (after) {
				k->after = v;
			} else {
				k->before = v;
				k->have = true;
			}
			break;
		}
	}
}

static struct stat_key *key(struct stat_key *keys, const char *name)
{
	for (struct stat_key *k = keys; k->name; k++)
		if (!strcmp(k->name, name))
			return k->have ? k : NULL;
	return NULL;
}

static uint64_t delta(const struct stat_key *k)
{
	return k->after >= k->before ? k->after - k->before : 0;
}

/* Sum of the deltas of the named keys that exist; false if none does. */
static bool sum_deltas(struct stat_key *keys, const char *const *names,
		       uint64_t *out)
{
	bool any = false;

	*out = 0;
	for (; *names; names++) {
		struct stat_key *k = key(keys, *names);

		if (k) {
			*out += delta(k);
			any = true;
		}
	}
	return any;
}

/* Cgroup handling */

static void cg_file(char *buf, size_t len, const char *dir, const char *name)
{
	if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
		fatal("path too long: %s/%s", dir, name);
}

static bool word_in(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

static uint64_t read_u64_file(const char *dir, const char *name, bool *ok)
{
	char p[PATH_MAX], buf[64];

	cg_file(p, sizeof(p), dir, name);
	*ok = read_small(p, buf, sizeof(buf)) > 0 && buf[0] >= '0' && buf[0] <= '9';
	return *ok ? strtoull(buf, NULL, 10) : 0;
}

static void cg_check_args(const char *path)
{
	char tmp[PATH_MAX];
	struct statfs sfs;

	if (strlen(path) >= sizeof(cg_path) - 64)
		usage_error("option --cgroup: path too long");
	snprintf(cg_path, sizeof(cg_path), "%s", path);
	while (strlen(cg_path) > 1 && cg_path[strlen(cg_path) - 1] == '/')
		cg_path[strlen(cg_path) - 1] = '\0';
	snprintf(tmp, sizeof(tmp), "%s", cg_path);
	snprintf(cg_parent, sizeof(cg_parent), "%s", dirname(tmp));
	if (statfs(cg_parent, &sfs))
		usage_error("option --cgroup: cannot access parent %s: %s",
			    cg_parent, strerror(errno));
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		usage_error("option --cgroup: %s is not a cgroup v2 directory",
			    cg_parent);
	if (!strcmp(cg_path, cg_parent))
		usage_error("option --cgroup: '%s' names no new cgroup", path);
}

static void cg_setup(uint64_t limit)
{
	char p[PATH_MAX], buf[4096], num[32];

	cg_file(p, sizeof(p), cg_parent, "cgroup.controllers");
	if (read_small(p, buf, sizeof(buf)) < 0)
		fatal_errno("cannot read %s", p);
	if (!word_in(buf, "memory"))
		fatal("the memory controller is not available in %s", cg_parent);
	cg_file(p, sizeof(p), cg_parent, "cgroup.subtree_control");
	if (read_small(p, buf, sizeof(buf)) < 0)
		fatal_errno("cannot read %s", p);
	if (!word_in(buf, "memory") && write_str(p, "+memory"))
		fatal_errno("cannot enable the memory controller in %s", p);

	if (mkdir(cg_path, 0755)) {
		if (errno == EEXIST)
			fatal("%s already exists; remove it (rmdir) or choose another --cgroup",
			      cg_path);
		fatal_errno("cannot create cgroup %s", cg_path);
	}
	cg_created = true;

	snprintf(num, sizeof(num), "%llu", (unsigned long long)limit);
	cg_file(p, sizeof(p), cg_path, "memory.max");
	if (write_str(p, num))
		fatal_errno("cannot set %s to %s", p, num);
	cg_file(p, sizeof(p), cg_path, "memory.swap.max");
	if (write_str(p, "max"))
		warn_msg("cannot set %s to max: %s (no swap accounting?)", p,
			 strerror(errno));
	snprintf(num, sizeof(num), "%d", (int)getpid());
	cg_file(p, sizeof(p), cg_path, "cgroup.procs");
	if (write_str(p, num))
		fatal_errno("cannot move into %s", cg_path);
	cg_moved = true;
}

static void cleanup(void)
{
	char p[PATH_MAX], num[32];

	for (int r = 0; r < NREGIONS; r++) {
		if (regions[r].base)
			munmap(regions[r].base, regions[r].pages * page_size);
		regions[r].base = NULL;
	}
	if (file_created) {
		if (unlink(file_path))
			warn_msg("cannot remove %s: %s", file_path, strerror(errno));
		file_created = false;
	}
	if (cg_moved) {
		snprintf(num, sizeof(num), "%d", (int)getpid());
		cg_file(p, sizeof(p), cg_parent, "cgroup.procs");
		if (write_str(p, num))
			warn_msg("cannot move back to %s: %s", cg_parent,
				 strerror(errno));
		cg_moved = false;
	}
	if (cg_created) {
		/* The cgroup can stay busy for a moment after we left it. */
		for (int tries = 0; ; tries++) {
			if (!rmdir(cg_path) || errno == ENOENT)
				break;
			if (errno != EBUSY || tries == 100) {
				warn_msg("cannot remove cgroup %s: %s", cg_path,
					 strerror(errno));
				break;
			}
			sleep_ns(20000000ull, NULL);
		}
		cg_created = false;
	}
}

/* The pattern: distinct per (region, pass, page) and per word. */
static inline uint64_t pattern_base(int region, int pass, uint64_t page)
{
	uint64_t x = ((uint64_t)(region + 1) << 60) ^ ((uint64_t)pass << 40) ^ page;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#define WORD_STEP 0x9e3779b97f4a7c15ULL

/* Word k of a page: the pattern word v, or 0 past pattern_words (--sparse). */
static inline uint64_t word_value(size_t k, uint64_t v)
{
	return k < pattern_words ? v : 0;
}

static void slice(size_t pages, int i, size_t *lo, size_t *hi)
{
	*lo = (size_t)((unsigned __int128)pages * (unsigned)i / (unsigned)nthreads);
	*hi = (size_t)((unsigned __int128)pages * (unsigned)(i + 1) / (unsigned)nthreads);
}

static void record(struct worker *w, int region, int pass, int writer,
		   uint64_t page, uint64_t word, uint64_t expected,
		   uint64_t got, void *addr)
{
	struct mismatch *m;

	w->mismatches++;
	if (w->nrec == MAX_RECS)
		return;
	m = &w->rec[w->nrec++];
	m->region = region;
	m->pass = pass;
	m->verifier = w->index;
	m->writer = writer;
	m->page = page;
	m->word = word;
	m->expected = expected;
	m->got = got;
	m->addr = addr;
}

/* Check the count in hot page i of this thread and, with bump, add one. */
static void hot_check(struct worker *w, int pass, unsigned int i, bool bump)
{
	size_t page = (size_t)w->index * (size_t)nhot + i;
	volatile uint64_t *p = (volatile uint64_t *)(hot_base + page * page_size);
	uint64_t got = *p;

	w->hot_checks++;
	if (got != w->hot_val[i]) {
		w->hot_mismatches++;
		record(w, R_HOT, pass, w->index, page, 0, w->hot_val[i], got, (void *)p);
		/* Go on from what the page holds: one loss, one mismatch. */
		w->hot_val[i] = got;
	}
	if (bump)
		*p = ++w->hot_val[i];
}

static inline void hot_touch(struct worker *w, int pass)
{
	if (!nhot)
		return;
	hot_check(w, pass, w->hot_next, true);
	if (++w->hot_next == (unsigned int)nhot)
		w->hot_next = 0;
}

static void write_slice(struct worker *w, int pass)
{
	size_t words = page_size / sizeof(uint64_t);

	for (int r = 0; r < NREGIONS; r++) {
		size_t lo, hi;

		slice(regions[r].pages, w->index, &lo, &hi);
		for (size_t pg = lo; pg < hi; pg++) {
			uint64_t *p = (uint64_t *)(regions[r].base + pg * page_size);
			uint64_t v = pattern_base(r, pass, pg);

			if (atomic_load_explicit(&stop, memory_order_relaxed))
				return;
			for (size_t k = 0; k < words; k++, v += WORD_STEP)
				p[k] = word_value(k, v);
			w->written++;
			hot_touch(w, pass);
		}
	}
}

static void verify_slice(struct worker *w, int pass)
{
	size_t words = page_size / sizeof(uint64_t);
	/* Another thread's slice (when there are others), rotating by pass. */
	int owner = nthreads == 1 ? 0 :
		(w->index + 1 + (pass - 1) % (nthreads - 1)) % nthreads;

	for (int r = 0; r < NREGIONS; r++) {
		size_t lo, hi;

		slice(regions[r].pages, owner, &lo, &hi);
		for (size_t pg = lo; pg < hi; pg++) {
			const volatile uint64_t *p =
				(const uint64_t *)(regions[r].base + pg * page_size);
			uint64_t base = pattern_base(r, pass, pg), v = base;
			size_t k;

			if (atomic_load_explicit(&stop, memory_order_relaxed))
				return;
			for (k = 0; k < words; k++, v += WORD_STEP)
				if (p[k] != word_value(k, v))
					break;
			w->verified++;
			hot_touch(w, pass);
			if (k == words)
				continue;
			record(w, r, pass, owner, pg, k, word_value(k, v), p[k],
			       (void *)&p[k]);
		}
	}
}

static int cmp_mismatch(const void *a, const void *b)
{
	const struct mismatch *x = a, *y = b;

	if (x->pass != y->pass)
		return x->pass < y->pass ? -1 : 1;
	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	return x->page < y->page ? -1 : x->page > y->page;
}

/* A phase ends when its last thread finishes: keep the latest time. */
static void time_max(_Atomic uint64_t *t)
{
	uint64_t now = now_ns(), old = atomic_load(t);

	while (old < now && !atomic_compare_exchange_weak(t, &old, now))
		;
}

/*
 * All threads at once write a page of their own and MADV_DONTNEED it, over
 * and over: the process flushes while running on several CPUs, which is
 * what makes a kernel with the series give it a global ASID (it looks now
 * and then, not at every flush). Reclaim's flushes are then broadcasts.
 */
static void warm_up(struct worker *w)
{
	volatile char *p = warm_base + (size_t)w->index * page_size;
	uint64_t end = now_ns() + warmup_ns;

	while (now_ns() < end && !atomic_load_explicit(&stop, memory_order_relaxed)) {
		*p = 1;
		madvise((void *)p, page_size, MADV_DONTNEED);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	if (w->cpu >= 0)
		w->err = pin_self(w->cpu);
	pthread_barrier_wait(&barrier);
	if (warmup_ns && !w->err)
		warm_up(w);
	if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
		atomic_store(&t_start, now_ns());
	for (int pass = 1; pass <= npasses; pass++) {
		if (!w->err)
			write_slice(w, pass);
		time_max(&t_write[pass - 1]);
		pthread_barrier_wait(&barrier);
		if (!w->err)
			verify_slice(w, pass);
		time_max(&t_verify[pass - 1]);
		pthread_barrier_wait(&barrier);
	}
	/* The last word on each hot page. */
	for (int i = 0; i < nhot && !w->err &&
	     !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		hot_check(w, npasses, (unsigned int)i, false);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	signalled = 1;
	atomic_store(&stop, 1);
}

static void usage(void)
{
	printf(
"Usage: %s [OPTION]...\n"
"A reclaim workload: each pass writes a pattern into every page of an\n"
"anonymous region and of a file mapped MAP_SHARED (dirty file pages), then\n"
"reads every page back and checks it. Run it in a memory cgroup whose\n"
"memory.max is below the working set, with swap available.\n"
"\n"
"  -m, --anon=SIZE      anonymous working set (default 256M; K, M, G, T)\n"
"  -f, --file=SIZE      file working set (default 64M)\n"
"  -D, --dir=DIR        directory for the file (default /tmp); the file is\n"
"                       created there and removed at exit\n"
"  -p, --passes=N       passes, 1..%d (default 3)\n"
"  -t, --threads=N      threads, 1..%d (default 4), on disjoint slices\n"
"  -c, --cpus=CPULIST   pin thread i to the i-th CPU of the list\n"
"      --cgroup=PATH    create this cgroup v2 directory, set its memory.max\n"
"                       and memory.swap.max=max, run inside it, remove it at\n"
"                       exit\n"
"      --limit=SIZE     memory.max for --cgroup (default: half of anon+file)\n"
"      --hot=N          each thread also updates N pages of its own (0..%d,\n"
"                       default 0) between every two pages of its sweeps and\n"
"                       checks that no update was lost\n"
"      --sparse         only the first %d words of a page carry the pattern,\n"
"                       the rest are zero: pages compress well, so swap on\n"
"                       zram frees memory (for reclaim without a cgroup)\n"
"      --lock           lock the tool's own memory (code, data, heap, thread\n"
"                       stacks) before mapping the working set: reclaim\n"
"                       takes only the working set\n"
"      --warmup=SECS    before the first pass, all threads flush a page of\n"
"                       their own for SECS (default 0.5, 0 for none), so\n"
"                       that a kernel with the series gives the process a\n"
"                       global ASID and reclaim flushes it by broadcast\n"
"  -q, --quiet          print only the summary line\n"
"      --json           print one JSON object instead of the text report\n"
"  -h, --help           show this help\n"
"\n"
"Exit status: 0 every page read back right, 1 a page did not, 2 bad option or\n"
"argument, 3 a system call failed or the run was interrupted.\n",
	       prog_name, MAX_PASSES, MAX_THREADS, MAX_HOT, SPARSE_WORDS);
}

static void json_keys(struct json *j, const char *name, struct stat_key *keys)
{
	json_obj_begin(j, name);
	for (struct stat_key *k = keys; k->name; k++) {
		if (k->have)
			json_u64(j, k->name, delta(k));
		else
			json_null(j, k->name);
	}
	json_obj_end(j);
}

static void print_keys(const char *title, struct stat_key *keys)
{
	int n = 0;

	printf("%s:", title);
	for (struct stat_key *k = keys; k->name; k++)
		if (k->have)
			printf("%s %s %llu", n++ % 4 ? "," : "\n ", k->name,
			       (unsigned long long)delta(k));
	printf("%s\n", n ? "" : " (none)");
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_CGROUP, OPT_LIMIT, OPT_WARMUP, OPT_HOT, OPT_SPARSE,
	       OPT_LOCK };
	static const struct option longopts[] = {
		{ "anon",    required_argument, NULL, 'm' },
		{ "file",    required_argument, NULL, 'f' },
		{ "dir",     required_argument, NULL, 'D' },
		{ "passes",  required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "cpus",    required_argument, NULL, 'c' },
		{ "cgroup",  required_argument, NULL, OPT_CGROUP },
		{ "limit",   required_argument, NULL, OPT_LIMIT },
		{ "warmup",  required_argument, NULL, OPT_WARMUP },
		{ "hot",     required_argument, NULL, OPT_HOT },
		{ "sparse",  no_argument,       NULL, OPT_SPARSE },
		{ "lock",    no_argument,       NULL, OPT_LOCK },
		{ "quiet",   no_argument,       NULL, 'q' },
		{ "json",    no_argument,       NULL, OPT_JSON },
		{ "help",    no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const steal_vm[] = { "pgsteal_kswapd", "pgsteal_direct",
		"pgsteal_khugepaged", "pgsteal_proactive", NULL };
	static const char *const scan_vm[] = { "pgscan_kswapd", "pgscan_direct",
		"pgscan_khugepaged", "pgscan_proactive", NULL };
	static const char *const steal_cg[] = { "pgsteal", NULL };
	static const char *const scan_cg[] = { "pgscan", NULL };
	static const char *const swpout[] = { "pswpout", NULL };
	static const char *const refault[] = { "workingset_refault_anon",
		"workingset_refault_file", NULL };
	uint64_t anon_bytes = 256ULL << 20, file_bytes = 64ULL << 20, limit = 0;
	const char *dir = "/tmp", *cgroup = NULL;
	struct cpulist cpus = { 0, NULL };
	bool quiet = false, json = false, limit_set = false, sparse = false;
	bool lock = false;
	char *stacks = NULL;
	pthread_attr_t attr;
	int opt, ret, fd = -1, started;
	uint64_t t0, written = 0, verified = 0, bad = 0, hot_checks = 0, hot_bad = 0;
	uint64_t reclaimed = 0, scanned = 0, swapped = 0, refaults = 0;
	const char *reclaimed_src = NULL, *scanned_src = NULL, *swapped_src = NULL;
	const char *refault_src = NULL;
	uint64_t peak = 0, swap_peak = 0, swap_cur = 0;
	bool have_peak = false, have_swap_peak = false, have_swap_cur = false;
	struct mismatch recs[MAX_RECS * MAX_THREADS];
	int nrecs = 0;
	uint64_t w_total = 0, v_total = 0, w_max = 0, v_max = 0;
	char path[PATH_MAX], b1[32], b2[32], b3[32];
	struct stat st;
	struct sigaction sa;

	prog_name = "reclaim";
	argv[0] = (char *)prog_name;	/* getopt's messages name the tool */
	while ((opt = getopt_long(argc, argv, "m:f:D:p:t:c:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			anon_bytes = opt_size("-m", optarg, 0, MAX_SIZE);
			break;
		case 'f':
			file_bytes = opt_size("-f", optarg, 0, MAX_SIZE);
			break;
		case 'D':
			dir = optarg;
			break;
		case 'p':
			npasses = (int)opt_u64("-p", optarg, 1, MAX_PASSES);
			break;
		case 't':
			nthreads = (int)opt_u64("-t", optarg, 1, MAX_THREADS);
			break;
		case 'c':
			cpulist_free(&cpus);
			opt_cpulist("-c", optarg, &cpus);
			break;
		case OPT_CGROUP:
			cgroup = optarg;
			break;
		case OPT_LIMIT:
			limit = opt_size("--limit", optarg, 1ULL << 20, MAX_SIZE);
			limit_set = true;
			break;
		case OPT_WARMUP:
			warmup_ns = strcmp(optarg, "0") == 0 ? 0 :
				(uint64_t)(opt_seconds("--warmup", optarg, 0, 60) * 1e9);
			break;
		case OPT_SPARSE:
			sparse = true;
			break;
		case OPT_LOCK:
			lock = true;
			break;
		case OPT_HOT:
			nhot = (int)opt_u64("--hot", optarg, 0, MAX_HOT);
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			usage();
			return EXIT_PASS;
		default:
			usage_bad_option();
		}
	}
	usage_no_operands(argc, argv, optind);

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	pattern_words = sparse ? SPARSE_WORDS : page_size / sizeof(uint64_t);
	anon_bytes = (anon_bytes + page_size - 1) & ~(uint64_t)(page_size - 1);
	file_bytes = (file_bytes + page_size - 1) & ~(uint64_t)(page_size - 1);
	if (!anon_bytes && !file_bytes)
		usage_error("-m and -f are both 0: nothing to do");
	if (limit_set && !cgroup)
		usage_error("option --limit needs --cgroup");
	if (file_bytes) {
		if (stat(dir, &st))
			usage_error("option -D: %s: %s", dir, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			usage_error("option -D: %s is not a directory", dir);
	}
	if (cgroup) {
		cg_check_args(cgroup);
		if (!limit_set)
			limit = ((anon_bytes + file_bytes) / 2) & ~(uint64_t)(page_size - 1);
		if (limit < (1ULL << 20))
			limit = 1ULL << 20;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	atexit(cleanup);

	workers = aligned_alloc(64, sizeof(*workers) * (size_t)nthreads);
	t_write = calloc((size_t)npasses, sizeof(*t_write));
	t_verify = calloc((size_t)npasses, sizeof(*t_verify));
	if (!workers || !t_write || !t_verify)
		fatal("out of memory");
	if ((ret = pthread_attr_init(&attr))) {
		errno = ret;
		fatal_errno("pthread_attr_init");
	}
	if (lock) {
		/* Everything mapped so far, thread stacks included; not the rest. */
		stacks = mmap(NULL, (size_t)LOCK_STACK * (size_t)nthreads,
			      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (stacks == MAP_FAILED)
			fatal_errno("mmap of the thread stacks");
		if (mlockall(MCL_CURRENT))
			fatal_errno("mlockall (--lock)");
	}

	if (cgroup) {
		cg_setup(limit);
		if (limit >= anon_bytes + file_bytes)
			warn_msg("memory.max is not below the working set: little reclaim expected");
	}

	/* The regions: allocated after moving into the cgroup, so charged there. */
	regions[R_ANON].pages = anon_bytes / page_size;
	regions[R_FILE].pages = file_bytes / page_size;
	if (anon_bytes) {
		regions[R_ANON].base = mmap(NULL, anon_bytes, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
					    -1, 0);
		if (regions[R_ANON].base == MAP_FAILED) {
			regions[R_ANON].base = NULL;
			fatal_errno("mmap of %llu anonymous bytes",
				    (unsigned long long)anon_bytes);
		}
		/* Base pages: reclaim works page by page. */
		madvise(regions[R_ANON].base, anon_bytes, MADV_NOHUGEPAGE);
	}
	if (file_bytes) {
		if ((size_t)snprintf(file_path, sizeof(file_path), "%s/reclaim.XXXXXX",
				     dir) >= sizeof(file_path))
			fatal("path too long: %s", dir);
		fd = mkstemp(file_path);
		if (fd < 0)
			fatal_errno("cannot create a file in %s", dir);
		file_created = true;
		ret = posix_fallocate(fd, 0, (off_t)file_bytes);
		if (ret) {
			if (ret != EOPNOTSUPP && ret != EINVAL) {
				errno = ret;
				fatal_errno("cannot allocate %llu bytes for %s",
					    (unsigned long long)file_bytes, file_path);
			}
			if (ftruncate(fd, (off_t)file_bytes))
				fatal_errno("cannot size %s", file_path);
		}
		regions[R_FILE].base = mmap(NULL, file_bytes, PROT_READ | PROT_WRITE,
					    MAP_SHARED, fd, 0);
		if (regions[R_FILE].base == MAP_FAILED) {
			regions[R_FILE].base = NULL;
			fatal_errno("mmap of %s", file_path);
		}
		close(fd);
	}

	if (warmup_ns) {
		warm_base = mmap(NULL, page_size * (size_t)nthreads, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (warm_base == MAP_FAILED)
			fatal_errno("mmap of the warm-up pages");
	}
	if (nhot) {
		size_t len = page_size * (size_t)nhot * (size_t)nthreads;

		hot_base = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (hot_base == MAP_FAILED)
			fatal_errno("mmap of the hot pages");
		madvise(hot_base, len, MADV_NOHUGEPAGE);
	}
	memset(workers, 0, sizeof(*workers) * (size_t)nthreads);

	read_stats("/proc/vmstat", vm_keys, false);
	if (cgroup) {
		cg_file(path, sizeof(path), cg_path, "memory.stat");
		read_stats(path, cg_keys, false);
		cg_file(path, sizeof(path), cg_path, "memory.events");
		read_stats(path, ev_keys, false);
	}

	if ((ret = pthread_barrier_init(&barrier, NULL, (unsigned)nthreads))) {
		errno = ret;
		fatal_errno("pthread_barrier_init");
	}
	for (started = 0; started < nthreads; started++) {
		workers[started].index = started;
		workers[started].cpu = cpus.n ? cpus.cpu[started % cpus.n] : -1;
		if (stacks)
			pthread_attr_setstack(&attr, stacks + (size_t)started * LOCK_STACK,
					      LOCK_STACK);
		ret = pthread_create(&workers[started].thread, &attr, worker_main,
				     &workers[started]);
		if (ret) {
			errno = ret;
			/* The barrier cannot be released without everyone. */
			fprintf(stderr, "%s: error: cannot start thread %d of %d: %s\n",
				prog_name, started + 1, nthreads, strerror(ret));
			cleanup();
			_exit(EXIT_ERROR);
		}
	}

	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_barrier_destroy(&barrier);
	pthread_attr_destroy(&attr);
	if (stacks) {
		munmap(stacks, (size_t)LOCK_STACK * (size_t)nthreads);
		munlockall();
	}
	t0 = t_start;
	if (warm_base)
		munmap(warm_base, page_size * (size_t)nthreads);
	if (hot_base)
		munmap(hot_base, page_size * (size_t)nhot * (size_t)nthreads);

	read_stats("/proc/vmstat", vm_keys, true);
	if (cgroup) {
		cg_file(path, sizeof(path), cg_path, "memory.stat");
		read_stats(path, cg_keys, true);
		cg_file(path, sizeof(path), cg_path, "memory.events");
		read_stats(path, ev_keys, true);
		peak = read_u64_file(cg_path, "memory.peak", &have_peak);
		swap_peak = read_u64_file(cg_path, "memory.swap.peak", &have_swap_peak);
		swap_cur = read_u64_file(cg_path, "memory.swap.current", &have_swap_cur);
	}
	cleanup();

	ret = EXIT_PASS;
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		if (w->err) {
			fprintf(stderr, "%s: error: thread %d: pinning to CPU %d: %s\n",
				prog_name, i, w->cpu, strerror(w->err));
			ret = EXIT_ERROR;
		}
		written += w->written;
		verified += w->verified;
		bad += w->mismatches;
		hot_checks += w->hot_checks;
		hot_bad += w->hot_mismatches;
		for (int k = 0; k < w->nrec; k++)
			recs[nrecs++] = w->rec[k];
	}
	qsort(recs, (size_t)nrecs, sizeof(recs[0]), cmp_mismatch);
	if (nrecs > MAX_RECS)
		nrecs = MAX_RECS;
	for (int p = 0; p < npasses; p++) {
		uint64_t w_ns = t_write[p] - (p ? t_verify[p - 1] : t0);
		uint64_t v_ns = t_verify[p] - t_write[p];

		w_total += w_ns;
		v_total += v_ns;
		w_max = w_ns > w_max ? w_ns : w_max;
		v_max = v_ns > v_max ? v_ns : v_max;
	}
	if (signalled) {
		fprintf(stderr, "%s: error: interrupted by a signal\n", prog_name);
		ret = EXIT_ERROR;
	}
	if (ret == EXIT_PASS && bad)
		ret = EXIT_CHECK;

	/* Headline numbers: the cgroup's own where it has them. */
	if (cgroup && sum_deltas(cg_keys, steal_cg, &reclaimed))
		reclaimed_src = "memory.stat pgsteal";
	else if (sum_deltas(vm_keys, steal_vm, &reclaimed))
		reclaimed_src = "/proc/vmstat pgsteal_*";
	if (cgroup && sum_deltas(cg_keys, scan_cg, &scanned))
		scanned_src = "memory.stat pgscan";
	else if (sum_deltas(vm_keys, scan_vm, &scanned))
		scanned_src = "/proc/vmstat pgscan_*";
	if (cgroup && sum_deltas(cg_keys, swpout, &swapped))
		swapped_src = "memory.stat pswpout";
	else if (sum_deltas(vm_keys, swpout, &swapped))
		swapped_src = "/proc/vmstat pswpout";
	if (cgroup && sum_deltas(cg_keys, refault, &refaults))
		refault_src = "memory.stat workingset_refault_*";
	else if (sum_deltas(vm_keys, refault, &refaults))
		refault_src = "/proc/vmstat workingset_refault_*";

	if (json) {
		struct json j;

		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "reclaim");
		json_u64(&j, "anon_bytes", anon_bytes);
		json_u64(&j, "file_bytes", file_bytes);
		json_str(&j, "dir", dir);
		json_u64(&j, "passes", (uint64_t)npasses);
		json_u64(&j, "threads", (uint64_t)nthreads);
		json_bool(&j, "sparse", sparse);
		json_bool(&j, "lock", lock);
		json_u64(&j, "hot_pages_per_thread", (uint64_t)nhot);
		json_double(&j, "warmup_s", (double)warmup_ns / 1e9);
		json_u64(&j, "page_size", page_size);
		if (cgroup) {
			json_str(&j, "cgroup", cg_path);
			json_u64(&j, "limit_bytes", limit);
		} else {
			json_null(&j, "cgroup");
			json_null(&j, "limit_bytes");
		}
		json_double(&j, "elapsed_s", (double)(t_verify[npasses - 1] - t0) / 1e9);
		json_double(&j, "write_s", (double)w_total / 1e9);
		json_double(&j, "verify_s", (double)v_total / 1e9);
		json_double(&j, "write_s_max", (double)w_max / 1e9);
		json_double(&j, "verify_s_max", (double)v_max / 1e9);
		json_bool(&j, "per_pass_truncated", npasses > MAX_PASS_LIST);
		json_arr_begin(&j, "per_pass");
		for (int p = 0; p < npasses && p < MAX_PASS_LIST; p++) {
			uint64_t prev = p ? t_verify[p - 1] : t0;

			json_obj_begin(&j, NULL);
			json_u64(&j, "pass", (uint64_t)p + 1);
			json_double(&j, "write_s", (double)(t_write[p] - prev) / 1e9);
			json_double(&j, "verify_s", (double)(t_verify[p] - t_write[p]) / 1e9);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_u64(&j, "pages_touched", written);
		json_u64(&j, "pages_verified", verified);
		json_u64(&j, "mismatches", bad);
		json_u64(&j, "hot_checks", hot_checks);
		json_u64(&j, "hot_mismatches", hot_bad);
		json_arr_begin(&j, "first_mismatches");
		for (int k = 0; k < nrecs; k++) {
			char a[32];

			snprintf(a, sizeof(a), "%p", recs[k].addr);
			json_obj_begin(&j, NULL);
			json_str(&j, "region", region_name[recs[k].region]);
			json_u64(&j, "pass", (uint64_t)recs[k].pass);
			json_u64(&j, "page", recs[k].page);
			json_u64(&j, "word", recs[k].word);
			json_str(&j, "address", a);
			json_u64(&j, "expected", recs[k].expected);
			json_u64(&j, "got", recs[k].got);
			json_u64(&j, "written_by_thread", (uint64_t)recs[k].writer);
			json_u64(&j, "read_by_thread", (uint64_t)recs[k].verifier);
			json_obj_end(&j);
		}
		json_arr_end(&j);
#define JSON_SRC(name, val, src) do {					\
		if (src) {						\
			json_u64(&j, name, val);			\
			json_str(&j, name "_source", src);		\
		} else {						\
			json_null(&j, name);				\
			json_null(&j, name "_source");			\
		}							\
	} while (0)
		JSON_SRC("pages_reclaimed", reclaimed, reclaimed_src);
		JSON_SRC("pages_scanned", scanned, scanned_src);
		JSON_SRC("pages_swapped_out", swapped, swapped_src);
		JSON_SRC("refaults", refaults, refault_src);
		json_keys(&j, "vmstat", vm_keys);
		if (cgroup) {
			json_keys(&j, "memory_stat", cg_keys);
			json_keys(&j, "memory_events", ev_keys);
			if (have_peak)
				json_u64(&j, "memory_peak_bytes", peak);
			else
				json_null(&j, "memory_peak_bytes");
			if (have_swap_peak)
				json_u64(&j, "memory_swap_peak_bytes", swap_peak);
			else
				json_null(&j, "memory_swap_peak_bytes");
			if (have_swap_cur)
				json_u64(&j, "memory_swap_current_bytes", swap_cur);
			else
				json_null(&j, "memory_swap_current_bytes");
		} else {
			json_null(&j, "memory_stat");
			json_null(&j, "memory_events");
			json_null(&j, "memory_peak_bytes");
			json_null(&j, "memory_swap_peak_bytes");
			json_null(&j, "memory_swap_current_bytes");
		}
		json_str(&j, "result", ret == EXIT_PASS ? "pass" :
			 ret == EXIT_CHECK ? "fail" : "error");
		json_obj_end(&j);
		json_end(&j);
	} else if (quiet) {
		printf("reclaim: %llu pages touched, %llu verified, %llu mismatches (%llu on hot pages), %llu reclaimed, %llu swapped out: %s\n",
		       (unsigned long long)written, (unsigned long long)verified,
		       (unsigned long long)bad, (unsigned long long)hot_bad,
		       (unsigned long long)reclaimed,
		       (unsigned long long)swapped,
		       ret == EXIT_PASS ? "PASS" : ret == EXIT_CHECK ? "FAIL" : "ERROR");
	} else {
		fmt_bytes(anon_bytes, b1, sizeof(b1));
		fmt_bytes(file_bytes, b2, sizeof(b2));
		printf("reclaim: anonymous %s, file %s in %s, %d passes, %d threads\n",
		       b1, b2, dir, npasses, nthreads);
		if (cgroup) {
			fmt_bytes(limit, b3, sizeof(b3));
			printf("cgroup: %s, memory.max %s, memory.swap.max max\n",
			       cg_path, b3);
		}
		if (npasses > MAX_PASS_TEXT)
			printf("%d passes: write %.3f s (slowest pass %.3f s), verify %.3f s (slowest %.3f s)\n",
			       npasses, (double)w_total / 1e9, (double)w_max / 1e9,
			       (double)v_total / 1e9, (double)v_max / 1e9);
		for (int p = 0; p < npasses && npasses <= MAX_PASS_TEXT; p++) {
			uint64_t prev = p ? t_verify[p - 1] : t0;

			printf("pass %d: write %.3f s, verify %.3f s\n", p + 1,
			       (double)(t_write[p] - prev) / 1e9,
			       (double)(t_verify[p] - t_write[p]) / 1e9);
		}
		printf("pages touched: %llu\n", (unsigned long long)written);
		printf("pages verified: %llu\n", (unsigned long long)verified);
		printf("mismatches: %llu\n", (unsigned long long)bad);
		if (nhot)
			printf("hot pages: %d per thread, %llu checks, %llu lost updates\n",
			       nhot, (unsigned long long)hot_checks,
			       (unsigned long long)hot_bad);
		for (int k = 0; k < nrecs; k++)
			printf("  %s page %llu at %p (word %llu), pass %d: expected 0x%016llx, got 0x%016llx (written by thread %d, read by thread %d)\n",
			       region_name[recs[k].region],
			       (unsigned long long)recs[k].page, recs[k].addr,
			       (unsigned long long)recs[k].word, recs[k].pass,
			       (unsigned long long)recs[k].expected,
			       (unsigned long long)recs[k].got, recs[k].writer,
			       recs[k].verifier);
#define TEXT_SRC(title, val, src) do {					\
		if (src)						\
			printf("%s: %llu (%s)\n", title,		\
			       (unsigned long long)(val), src);		\
		else							\
			printf("%s: not available\n", title);		\
	} while (0)
		TEXT_SRC("pages reclaimed", reclaimed, reclaimed_src);
		TEXT_SRC("pages scanned", scanned, scanned_src);
		TEXT_SRC("pages swapped out", swapped, swapped_src);
		TEXT_SRC("refaults", refaults, refault_src);
		print_keys("/proc/vmstat changes", vm_keys);
		if (cgroup) {
			print_keys("memory.stat changes", cg_keys);
			print_keys("memory.events changes", ev_keys);
			if (have_peak) {
				fmt_bytes(peak, b1, sizeof(b1));
				printf("memory.peak: %s\n", b1);
			}
			if (have_swap_peak) {
				fmt_bytes(swap_peak, b1, sizeof(b1));
				printf("memory.swap.peak: %s\n", b1);
			}
		}
		printf("result: %s\n", ret == EXIT_PASS ? "PASS" :
		       ret == EXIT_CHECK ? "FAIL" : "ERROR");
	}

	free(workers);
	free(t_write);
	free(t_verify);
	cpulist_free(&cpus);
	return ret;
}
