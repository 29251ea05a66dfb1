// SPDX-License-Identifier: GPL-2.0
/*
 * stalecheck: detect a missed TLB flush from user space.
 *
 * One writer thread keeps changing what a fixed virtual address A shows;
 * reader threads on other CPUs keep reading A. After each change the
 * writer publishes, with a release store, a word that tells readers the
 * lowest value any later successful read of A may return (the "floor").
 * A reader acquire-loads the published word, then reads A. Reading a
 * value below the floor, 0, or a value the writer has never written can
 * only come from a translation that should have been flushed.
 *
 * The page behind A is always a page of a memfd ("slot") mapped
 * MAP_PRIVATE, or a private anonymous copy of one (made by the writer's
 * own store through A). Slot pages are written through a second,
 * MAP_SHARED mapping W of the memfd. Values only grow over time; no value
 * visible at A is ever 0.
 *
 *   remap:    write g+1 into the next slot through W, mmap(MAP_FIXED) that
 *             slot over A, publish floor g+1. The old slot keeps g for
 *             NSLOTS more remaps, so a surviving old translation reads g.
 *   mprotect: mprotect(A, PROT_NONE), publish "PROT_NONE, floor g+1"
 *             (a read must now fault), let readers fault, write g+1 into
 *             the slot through W (A is still inaccessible), mprotect(A,
 *             PROT_READ|PROT_WRITE), publish floor g+1. A surviving old
 *             translation reads g.
 *   dontneed: store g+1 through A (copy-on-write: A now maps a private
 *             anonymous page), publish floor g+1; write g+2 into the slot
 *             through W, MADV_DONTNEED A (drops the private page, A shows
 *             the slot again), publish floor g+2. A surviving translation
 *             of the dropped page reads g+1 (or garbage once reused).
 *
 * With --pages N, A is N pages long and every change applies to all N
 * pages at once (one remap, mprotect or MADV_DONTNEED of the whole range,
 * so one ranged TLB flush); each reader reads the pages of A in turn.
 *
 * With --alone, A starts a 2 MiB-aligned area where nothing else is
 * mapped (guard mappings fill the 2 MiB areas on both sides), so each
 * remap also frees the page table that held A's 4 KiB entries: the flush
 * then covers cleared PTEs and a cleared PMD at once. Whether the area
 * stayed empty is checked in /proc/self/maps at the end ("alone").
 *
 * After every publication the writer waits (up to a timeout) until every
 * reader has completed a read that began after seeing it, so each reader
 * holds a translation of the current page in its TLB before the next
 * change, and sees every published state at least once.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NSLOTS		64	/* memfd pages cycled through by remap */
#define MAX_READERS	256
#define MAX_RECS	8	/* stale reads recorded in detail */
#define ACK_TIMEOUT_NS	20000000ull	/* 20 ms */
#define PROGRESS_EVERY	1024	/* reads between progress updates */

enum mode { M_REMAP, M_MPROTECT, M_DONTNEED, NMODES, M_ALL = NMODES };
static const char *const mode_name[NMODES] = { "remap", "mprotect", "dontneed" };

/*
 * The published word: floor << 3 | kind << 2 | mode. Publications only
 * grow: each one raises the floor, or turns PROT_NONE into RW at the
 * same floor.
 */
enum kind { K_NONE = 0, K_RW = 1 };
#define PUB(floor, kind, mode) \
	(((uint64_t)(floor) << 3) | ((uint64_t)(kind) << 2) | (uint64_t)(mode))
#define PUB_FLOOR(p)	((p) >> 3)
#define PUB_KIND(p)	((int)(((p) >> 2) & 1))
#define PUB_MODE(p)	((int)((p) & 3))

/* Written by the writer only; read by everyone. */
struct ctl {
	_Atomic uint64_t pub;	/* the published word */
	_Atomic uint64_t wgen;	/* highest value the writer has stored */
	atomic_int go;		/* 1: start, -1: abort */
	atomic_int stop;
} __attribute__((aligned(64)));

struct stale_rec {
	uint64_t t_ns;		/* since the start */
	uint64_t pub;		/* the publication the reader had seen */
	uint64_t value;		/* what it read */
	uint64_t wgen;		/* the writer's latest value, loaded after */
	int reader;
	int cpu;
};

struct reader {
	/* Written by the reader, polled by the writer. */
	_Atomic uint64_t ack __attribute__((aligned(64)));
	/* Written by the reader now and then, read by main. */
	_Atomic uint64_t progress __attribute__((aligned(64)));
	_Atomic uint64_t progress_stale;
	/* The reader's own. */
	uint64_t cur_pub __attribute__((aligned(64)));
	uint64_t last_ack;
	uint64_t nreads;	/* kept in memory: survives siglongjmp */
	uint64_t checked[NMODES];
	uint64_t faults[NMODES];
	uint64_t stale[NMODES];
	uint64_t events;	/* distinct (publication, value) stale pairs */
	uint64_t last_stale_pub;
	uint64_t last_stale_val;
	struct stale_rec rec[MAX_RECS];
	int nrec;
	int index;
	int cpu;
	bool shared_cpu;	/* another thread of ours is pinned to cpu */
	int err;
	pthread_t thread;
};

struct writer {
	uint64_t rounds[NMODES];
	_Atomic uint64_t progress_rounds;
	uint64_t ack_timeouts;
	uint64_t injected;
	int cpu;
	int err;
	const char *err_what;
	pthread_t thread;
};

static struct ctl ctl;
static struct reader *readers;
static struct writer writer;
static int nreaders;
static int cfg_mode = M_ALL;
static uint64_t cfg_inject;	/* every Nth change published before it is made */
static size_t page_size;
static unsigned npages = 1;	/* A's length in pages (--pages) */
static size_t span;		/* npages * page_size: A, and each slot */
static bool cfg_alone;		/* A alone in its 2 MiB (--alone) */

#define AREA_2M		(2UL << 20)
static char *page_a;		/* the address A */
static char *slots_w;		/* W: MAP_SHARED view of the memfd */
static int memfd = -1;
static uint64_t t_start;
static volatile sig_atomic_t interrupted;

static __thread sigjmp_buf tl_jb;
static __thread volatile sig_atomic_t tl_armed;

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	char *addr = si->si_addr;
	struct sigaction dfl;

	(void)uc;
	if (tl_armed && addr >= page_a && addr < page_a + span) {
		tl_armed = 0;
		siglongjmp(tl_jb, 1);
	}
	/* Not a probe of A: a real crash. Let it happen with the default. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

static void stop_handler(int sig)
{
	(void)sig;
	interrupted = 1;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void record_stale(struct reader *r, uint64_t pub, uint64_t v, uint64_t wg)
{
	int mode = PUB_MODE(pub);

	r->stale[mode]++;
	atomic_store_explicit(&r->progress_stale,
			      r->stale[0] + r->stale[1] + r->stale[2],
			      memory_order_relaxed);
	/* Repeated reads of the same stale value under the same publication
	 * are one event. */
	if (r->events && r->last_stale_pub == pub && r->last_stale_val == v)
		return;
	r->events++;
	r->last_stale_pub = pub;
	r->last_stale_val = v;
	if (r->nrec < MAX_RECS) {
		struct stale_rec *s = &r->rec[r->nrec++];

		s->t_ns = now_ns() - t_start;
		s->pub = pub;
		s->value = v;
		s->wgen = wg;
		s->reader = r->index;
		s->cpu = r->cpu;
	}
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	_Atomic uint64_t *a;

	if (r->cpu >= 0) {
		r->err = pin_self(r->cpu);
		if (r->err) {
			atomic_store(&ctl.stop, 1);
			return NULL;
		}
	}
	while (atomic_load(&ctl.go) == 0)
		sched_yield();

	while (!atomic_load_explicit(&ctl.stop, memory_order_relaxed)) {
		uint64_t p, v, wg;

		/* What was published before this read. */
		p = atomic_load_explicit(&ctl.pub, memory_order_acquire);
		r->cur_pub = p;
		if (sigsetjmp(tl_jb, 0)) {
			/* The read faulted: always a legitimate outcome. */
			p = r->cur_pub;
			r->faults[PUB_MODE(p)]++;
			r->checked[PUB_MODE(p)]++;
			goto done;
		}
		/* The pages of A in turn. */
		a = (_Atomic uint64_t *)(page_a + (r->nreads % npages) * page_size);
		tl_armed = 1;
		atomic_signal_fence(memory_order_seq_cst);
		v = atomic_load_explicit(a, memory_order_acquire);
		atomic_signal_fence(memory_order_seq_cst);
		tl_armed = 0;
		wg = atomic_load_explicit(&ctl.wgen, memory_order_acquire);
		r->checked[PUB_MODE(p)]++;
		if (v == 0 || v < PUB_FLOOR(p) || v > wg)
			record_stale(r, p, v, wg);
done:
		if (p != r->last_ack) {
			atomic_store_explicit(&r->ack, p, memory_order_release);
			r->last_ack = p;
			/* Let the writer (or other readers) on this CPU run. */
			if (r->shared_cpu)
				sched_yield();
		}
		if (++r->nreads % PROGRESS_EVERY == 0)
			atomic_store_explicit(&r->progress, r->nreads,
					      memory_order_relaxed);
	}
	atomic_store_explicit(&r->progress, r->nreads, memory_order_relaxed);
	return NULL;
}

static void publish(uint64_t floor, int kind, int mode)
{
	atomic_store_explicit(&ctl.pub, PUB(floor, kind, mode), memory_order_release);
}

/* Wait until every reader has finished a read begun after publication p. */
static void wait_acks(void)
{
	uint64_t p = atomic_load_explicit(&ctl.pub, memory_order_relaxed);
	uint64_t deadline = 0;

	for (int i = 0; i < nreaders; i++) {
		struct reader *r = &readers[i];
		unsigned spins = 0;

		while (atomic_load_explicit(&r->ack, memory_order_acquire) < p) {
			if (atomic_load_explicit(&ctl.stop, memory_order_relaxed))
				return;
			if (++spins < 1000) {
				cpu_relax();
				continue;
			}
			spins = 0;
			if (!deadline)
				deadline = now_ns() + ACK_TIMEOUT_NS;
			else if (now_ns() > deadline) {
				writer.ack_timeouts++;
				return;
			}
			sched_yield();
		}
	}
}

static void store_slot(unsigned slot, uint64_t g)
{
	atomic_store_explicit(&ctl.wgen, g, memory_order_relaxed);
	for (unsigned i = 0; i < npages; i++)
		atomic_store_explicit((_Atomic uint64_t *)(slots_w + (size_t)slot * span +
							   (size_t)i * page_size),
				      g, memory_order_release);
}

#define WCALL(expr, what) do {						\
	if (expr) {							\
		writer.err = errno;					\
		writer.err_what = what;					\
		atomic_store(&ctl.stop, 1);				\
		return NULL;						\
	}								\
} while (0)

static void *writer_main(void *arg)
{
	uint64_t g = 1;		/* the value A shows now */
	unsigned slot = 0;	/* the slot A maps now */
	uint64_t round = 0;

	(void)arg;
	if (writer.cpu >= 0) {
		int e = pin_self(writer.cpu);

		errno = e;
		WCALL(e, "pinning to its CPU");
	}
	while (atomic_load(&ctl.go) == 0)
		sched_yield();
	wait_acks();

	while (!atomic_load_explicit(&ctl.stop, memory_order_relaxed)) {
		int mode = cfg_mode == M_ALL ? (int)(round % NMODES) : cfg_mode;
		bool late = cfg_inject && round % cfg_inject == cfg_inject - 1;
		void *m;

		if (late)
			writer.injected++;
		switch (mode) {
		case M_REMAP:
			slot = (slot + 1) % NSLOTS;
			store_slot(slot, ++g);
			if (late) {
				publish(g, K_RW, mode);
				wait_acks();
			}
			m = mmap(page_a, span, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_FIXED, memfd,
				 (off_t)slot * (off_t)span);
			WCALL(m == MAP_FAILED, "mmap(MAP_FIXED)");
			if (m != page_a) {
				errno = EFAULT;
				WCALL(1, "mmap(MAP_FIXED) moved the page");
			}
			publish(g, K_RW, mode);
			wait_acks();
			break;
		case M_MPROTECT:
			if (!late)
				WCALL(mprotect(page_a, span, PROT_NONE),
				      "mprotect(PROT_NONE)");
			publish(g + 1, K_NONE, mode);
			wait_acks();
			if (late)
				WCALL(mprotect(page_a, span, PROT_NONE),
				      "mprotect(PROT_NONE)");
			store_slot(slot, ++g);
			WCALL(mprotect(page_a, span, PROT_READ | PROT_WRITE),
			      "mprotect(PROT_READ|PROT_WRITE)");
			publish(g, K_RW, mode);
			wait_acks();
			break;
		case M_DONTNEED:
			/* Copy-on-write: A now maps private anonymous pages. */
			atomic_store_explicit(&ctl.wgen, ++g, memory_order_relaxed);
			for (unsigned i = 0; i < npages; i++)
				atomic_store_explicit((_Atomic uint64_t *)(page_a + (size_t)i * page_size),
						      g, memory_order_release);
			publish(g, K_RW, mode);
			wait_acks();
			store_slot(slot, ++g);
			if (!late)
				WCALL(madvise(page_a, span, MADV_DONTNEED),
				      "madvise(MADV_DONTNEED)");
			publish(g, K_RW, mode);
			wait_acks();
			if (late)
				WCALL(madvise(page_a, span, MADV_DONTNEED),
				      "madvise(MADV_DONTNEED)");
			break;
		}
		writer.rounds[mode]++;
		round++;
		atomic_store_explicit(&writer.progress_rounds, round,
				      memory_order_relaxed);
	}
	return NULL;
}

static void usage(void)
{
	printf(
"Usage: %s [OPTION]...\n"
"Detect stale TLB entries: a writer thread keeps changing the mapping of a\n"
"page, reader threads on other CPUs keep reading it and check each value\n"
"against what the writer had published before the read.\n"
"\n"
"  -m, --mode=MODE      remap, mprotect, dontneed or all (default all: the\n"
"                       writer cycles through the three, one round each)\n"
"  -r, --readers=N      reader threads, 1..%d (default: one per CPU in the\n"
"                       reader CPU list)\n"
"  -c, --cpus=CPULIST   CPUs for the readers; reader i runs on the i-th CPU,\n"
"                       the list is reused when there are more readers\n"
"                       (default: every available CPU but the writer's)\n"
"  -w, --writer-cpu=CPU CPU for the writer (default: the first available)\n"
"  -d, --duration=SECS  run time, fractions allowed, up to 86400 (default 5\n"
"                       unless -n is given)\n"
"  -n, --reads=N        stop once at least N reads were checked in total\n"
"  -p, --pages=N        A is N pages, 1..64 (default 1): each change covers\n"
"                       all of them, one ranged TLB flush; readers read the\n"
"                       pages in turn\n"
"  -A, --alone          put A alone in a 2 MiB-aligned area, so that each\n"
"                       remap frees its page table too\n"
"  -i, --interval=SECS  print progress every SECS seconds (to stderr with\n"
"                       --json)\n"
"  -q, --quiet          print only the summary line\n"
"      --json           print one JSON object instead of the text report\n"
"      --expect-stale   invert the result: succeed only if a stale read was\n"
"                       seen (to show that a kernel which drops flushes is\n"
"                       caught)\n"
"      --inject-late=N  self-test: every Nth writer change is published\n"
"                       before it is made, which readers must see as stale\n"
"  -h, --help           show this help\n"
"\n"
"Exit status: 0 no stale read (with --expect-stale: at least one), 1 the\n"
"opposite, 2 bad option or argument, 3 a system call failed.\n",
	       prog_name, MAX_READERS);
}

/*
 * Map A for --alone: reserve 6 MiB, keep the 2 MiB-aligned area that
 * follows the first 2 MiB of it for A and nothing else, and leave the
 * rest reserved (PROT_NONE) so that no other mapping lands beside A in
 * the area.
 */
static void *map_alone(int fd)
{
	uintptr_t base, area;
	void *res, *a;

	res = mmap(NULL, 3 * AREA_2M, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	base = (uintptr_t)res;
	area = ((base + AREA_2M - 1) & ~(AREA_2M - 1)) + AREA_2M;
	if (munmap((void *)area, AREA_2M))
		return MAP_FAILED;
	a = mmap((void *)area, span, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_FIXED, fd, 0);
	return a;
}

/* Whether A is still the only mapping in its 2 MiB area: -1 if unknown */
static int area_alone(const void *a)
{
	uintptr_t lo = (uintptr_t)a & ~(AREA_2M - 1), hi = lo + AREA_2M;
	uintptr_t as = (uintptr_t)a, ae = as + span;
	unsigned long start, end;
	char line[512];
	int alone = 1;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &start, &end) != 2)
			continue;
		if (start < hi && end > lo && (start < as || end > ae))
			alone = 0;
	}
	fclose(f);
	return alone;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct stale_rec *x = a, *y = b;

	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static const char *pub_state(uint64_t p)
{
	if (PUB_KIND(p) == K_NONE)
		return "PROT_NONE";
	return "mapped";
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_EXPECT, OPT_INJECT };
	static const struct option longopts[] = {
		{ "mode",         required_argument, NULL, 'm' },
		{ "readers",      required_argument, NULL, 'r' },
		{ "cpus",         required_argument, NULL, 'c' },
		{ "writer-cpu",   required_argument, NULL, 'w' },
		{ "duration",     required_argument, NULL, 'd' },
		{ "reads",        required_argument, NULL, 'n' },
		{ "pages",        required_argument, NULL, 'p' },
		{ "alone",        no_argument,       NULL, 'A' },
		{ "interval",     required_argument, NULL, 'i' },
		{ "quiet",        no_argument,       NULL, 'q' },
		{ "json",         no_argument,       NULL, OPT_JSON },
		{ "expect-stale", no_argument,       NULL, OPT_EXPECT },
		{ "inject-late",  required_argument, NULL, OPT_INJECT },
		{ "help",         no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cpulist rcpus = { 0, NULL }, avail = { 0, NULL };
	int opt, ret, wcpu = -1;
	double duration = 0, interval = 0, elapsed;
	uint64_t max_reads = 0, t_end, next_progress, last_checked = 0;
	uint64_t checked = 0, faults = 0, stale = 0, rounds = 0, events = 0;
	uint64_t m_checked[NMODES] = { 0 }, m_faults[NMODES] = { 0 };
	uint64_t m_stale[NMODES] = { 0 };
	bool quiet = false, json = false, expect_stale = false;
	int alone;
	struct stale_rec all[MAX_RECS * 4];
	struct sigaction sa;
	char rbuf[512];
	int nall = 0, started = 0;
	FILE *prog_out;

	prog_name = "stalecheck";
	argv[0] = (char *)prog_name;	/* getopt's messages name the tool */
	while ((opt = getopt_long(argc, argv, "m:r:c:w:d:n:p:Ai:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "all"))
				cfg_mode = M_ALL;
			else {
				cfg_mode = -1;
				for (int i = 0; i < NMODES; i++)
					if (!strcmp(optarg, mode_name[i]))
						cfg_mode = i;
				if (cfg_mode < 0)
					usage_error("option -m: unknown mode '%s' (remap, mprotect, dontneed or all)",
						    optarg);
			}
			break;
		case 'r':
			nreaders = (int)opt_u64("-r", optarg, 1, MAX_READERS);
			break;
		case 'c':
			cpulist_free(&rcpus);
			opt_cpulist("-c", optarg, &rcpus);
			break;
		case 'w':
			wcpu = (int)opt_u64("-w", optarg, 0, CPU_SETSIZE - 1);
			if (!cpu_available(wcpu))
				usage_error("option -w: CPU %d is not available", wcpu);
			break;
		case 'd':
			duration = opt_seconds("-d", optarg, 0, 86400);
			break;
		case 'n':
			max_reads = opt_u64("-n", optarg, 1, 1000000000000000ull);
			break;
		case 'p':
			npages = (unsigned)opt_u64("-p", optarg, 1, 64);
			break;
		case 'A':
			cfg_alone = true;
			break;
		case 'i':
			interval = opt_seconds("-i", optarg, 0, 86400);
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_EXPECT:
			expect_stale = true;
			break;
		case OPT_INJECT:
			cfg_inject = opt_u64("--inject-late", optarg, 1, 1000000000);
			break;
		case 'h':
			usage();
			return EXIT_PASS;
		default:
			usage_bad_option();
		}
	}
	usage_no_operands(argc, argv, optind);
	if (!duration && !max_reads)
		duration = 5;

	/* CPUs: the writer on one, the readers on the others. */
	cpulist_available(&avail);
	if (wcpu < 0)
		wcpu = avail.cpu[0];
	if (!rcpus.n) {
		rcpus.cpu = malloc(sizeof(int) * (size_t)avail.n);
		if (!rcpus.cpu)
			fatal("out of memory");
		for (int i = 0; i < avail.n; i++)
			if (avail.cpu[i] != wcpu)
				rcpus.cpu[rcpus.n++] = avail.cpu[i];
		if (!rcpus.n) {
			warn_msg("only one CPU: the readers share it with the writer");
			rcpus.cpu[rcpus.n++] = wcpu;
		}
	}
	cpulist_free(&avail);
	if (!nreaders)
		nreaders = rcpus.n;
	for (int i = 0; i < rcpus.n && i < nreaders; i++)
		if (rcpus.cpu[i] == wcpu && !quiet && !json)
			warn_msg("reader %d shares CPU %d with the writer", i, wcpu);
	writer.cpu = wcpu;

	/* The memfd, its shared view W, and A, mapping slot 0 privately. */
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	memfd = memfd_create("stalecheck", MFD_CLOEXEC);
	if (memfd < 0)
		fatal_errno("memfd_create");
	span = npages * page_size;
	if (ftruncate(memfd, (off_t)(NSLOTS * span)))
		fatal_errno("ftruncate of the memfd");
	slots_w = mmap(NULL, NSLOTS * span, PROT_READ | PROT_WRITE,
		       MAP_SHARED, memfd, 0);
	if (slots_w == MAP_FAILED)
		fatal_errno("mmap of the memfd");
	store_slot(0, 1);
	if (cfg_alone)
		page_a = map_alone(memfd);
	else
		page_a = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			      memfd, 0);
	if (page_a == MAP_FAILED)
		fatal_errno("mmap of the test page");
	publish(1, K_RW, cfg_mode == M_ALL ? M_REMAP : cfg_mode);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = segv_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL))
		fatal_errno("sigaction");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	readers = aligned_alloc(64, sizeof(*readers) * (size_t)nreaders);
	if (!readers)
		fatal("out of memory");
	memset(readers, 0, sizeof(*readers) * (size_t)nreaders);
	for (int i = 0; i < nreaders; i++) {
		readers[i].index = i;
		readers[i].cpu = rcpus.cpu[i % rcpus.n];
	}
	for (int i = 0; i < nreaders; i++) {
		readers[i].shared_cpu = readers[i].cpu == wcpu;
		for (int k = 0; k < nreaders; k++)
			if (k != i && readers[k].cpu == readers[i].cpu)
				readers[i].shared_cpu = true;
	}
	for (started = 0; started < nreaders; started++) {
		ret = pthread_create(&readers[started].thread, NULL, reader_main,
				     &readers[started]);
		if (ret)
			break;
	}
	if (started == nreaders) {
		ret = pthread_create(&writer.thread, NULL, writer_main, NULL);
		if (ret)
			writer.thread = 0;
	}
	if (ret) {
		atomic_store(&ctl.stop, 1);
		atomic_store(&ctl.go, -1);
		for (int i = 0; i < started; i++)
			pthread_join(readers[i].thread, NULL);
		errno = ret;
		fatal_errno("cannot start a thread");
	}

	prog_out = json ? stderr : stdout;
	t_start = now_ns();
	t_end = t_start + (uint64_t)(duration * 1e9);
	next_progress = t_start + (uint64_t)(interval * 1e9);
	atomic_store(&ctl.go, 1);
	for (;;) {
		uint64_t now;

		sleep_ns(10000000ull, &ctl.stop);
		now = now_ns();
		if (atomic_load(&ctl.stop) || interrupted)
			break;
		if (duration && now >= t_end)
			break;
		if (max_reads || interval) {
			checked = 0;
			stale = 0;
			for (int i = 0; i < nreaders; i++) {
				checked += atomic_load_explicit(&readers[i].progress,
								memory_order_relaxed);
				stale += atomic_load_explicit(&readers[i].progress_stale,
							      memory_order_relaxed);
			}
			if (max_reads && checked >= max_reads)
				break;
			if (interval && now >= next_progress && !quiet) {
				double t = (double)(now - t_start) / 1e9;
				double dt = interval + (double)(now - next_progress) / 1e9;

				fprintf(prog_out, "[%8.1f s] checked %llu reads (%.0f/s), %llu writer rounds, %llu stale\n",
					t, (unsigned long long)checked,
					(double)(checked - last_checked) / dt,
					(unsigned long long)atomic_load_explicit(
						&writer.progress_rounds, memory_order_relaxed),
					(unsigned long long)stale);
				fflush(prog_out);
				last_checked = checked;
				next_progress = now + (uint64_t)(interval * 1e9);
			}
		}
	}
	atomic_store(&ctl.stop, 1);
	pthread_join(writer.thread, NULL);
	for (int i = 0; i < nreaders; i++)
		pthread_join(readers[i].thread, NULL);
	elapsed = (double)(now_ns() - t_start) / 1e9;

	ret = EXIT_PASS;
	if (writer.err) {
		fprintf(stderr, "%s: error: writer: %s: %s\n", prog_name,
			writer.err_what, strerror(writer.err));
		ret = EXIT_ERROR;
	}
	checked = 0;
	for (int i = 0; i < nreaders; i++) {
		struct reader *r = &readers[i];

		if (r->err) {
			fprintf(stderr, "%s: error: reader %d: pinning to CPU %d: %s\n",
				prog_name, i, r->cpu, strerror(r->err));
			ret = EXIT_ERROR;
		}
		for (int m = 0; m < NMODES; m++) {
			m_checked[m] += r->checked[m];
			m_faults[m] += r->faults[m];
			m_stale[m] += r->stale[m];
		}
		events += r->events;
		for (int k = 0; k < r->nrec && nall < (int)(sizeof(all) / sizeof(all[0])); k++)
			all[nall++] = r->rec[k];
	}
	qsort(all, (size_t)nall, sizeof(all[0]), cmp_rec);
	if (nall > MAX_RECS)
		nall = MAX_RECS;
	checked = faults = stale = rounds = 0;
	for (int m = 0; m < NMODES; m++) {
		checked += m_checked[m];
		faults += m_faults[m];
		stale += m_stale[m];
		rounds += writer.rounds[m];
	}
	if (ret == EXIT_PASS && (expect_stale ? stale == 0 : stale != 0))
		ret = EXIT_CHECK;
	alone = cfg_alone ? area_alone(page_a) : -1;
	if (cfg_alone && alone != 1) {
		fprintf(stderr, "%s: error: %s\n", prog_name, alone < 0 ?
			"cannot read /proc/self/maps to check --alone" :
			"another mapping landed in A's 2 MiB area: --alone did not hold");
		ret = EXIT_ERROR;
	}
	cpulist_format(&(struct cpulist){ .n = nreaders < rcpus.n ? nreaders : rcpus.n,
					  .cpu = rcpus.cpu }, rbuf, sizeof(rbuf));

	if (json) {
		struct json j;

		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "stalecheck");
		json_str(&j, "mode", cfg_mode == M_ALL ? "all" : mode_name[cfg_mode]);
		json_u64(&j, "pages", npages);
		if (cfg_alone)
			json_bool(&j, "alone", alone == 1);
		else
			json_null(&j, "alone");
		json_i64(&j, "writer_cpu", wcpu);
		json_u64(&j, "readers", (uint64_t)nreaders);
		json_str(&j, "reader_cpus", rbuf);
		if (duration)
			json_double(&j, "duration_s", duration);
		else
			json_null(&j, "duration_s");
		if (max_reads)
			json_u64(&j, "target_reads", max_reads);
		else
			json_null(&j, "target_reads");
		json_double(&j, "elapsed_s", elapsed);
		json_bool(&j, "interrupted", interrupted);
		json_u64(&j, "checked_reads", checked);
		json_double(&j, "reads_per_sec", (double)checked / elapsed);
		json_double(&j, "reads_per_sec_per_reader",
			    (double)checked / elapsed / nreaders);
		json_u64(&j, "faults", faults);
		json_u64(&j, "writer_rounds", rounds);
		json_u64(&j, "ack_timeouts", writer.ack_timeouts);
		json_u64(&j, "stale_reads", stale);
		json_u64(&j, "stale_events", events);
		json_obj_begin(&j, "per_mode");
		for (int m = 0; m < NMODES; m++) {
			json_obj_begin(&j, mode_name[m]);
			json_u64(&j, "writer_rounds", writer.rounds[m]);
			json_u64(&j, "checked_reads", m_checked[m]);
			json_u64(&j, "faults", m_faults[m]);
			json_u64(&j, "stale_reads", m_stale[m]);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_arr_begin(&j, "first_stale");
		for (int k = 0; k < nall; k++) {
			json_obj_begin(&j, NULL);
			json_double(&j, "time_s", (double)all[k].t_ns / 1e9);
			json_u64(&j, "reader", (uint64_t)all[k].reader);
			json_i64(&j, "cpu", all[k].cpu);
			json_str(&j, "mode", mode_name[PUB_MODE(all[k].pub)]);
			json_str(&j, "state", pub_state(all[k].pub));
			json_u64(&j, "floor", PUB_FLOOR(all[k].pub));
			json_u64(&j, "value", all[k].value);
			json_u64(&j, "writer_value", all[k].wgen);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_arr_begin(&j, "per_reader");
		for (int i = 0; i < nreaders; i++) {
			struct reader *r = &readers[i];
			uint64_t c = r->checked[0] + r->checked[1] + r->checked[2];

			json_obj_begin(&j, NULL);
			json_u64(&j, "reader", (uint64_t)i);
			json_i64(&j, "cpu", r->cpu);
			json_u64(&j, "checked_reads", c);
			json_double(&j, "reads_per_sec", (double)c / elapsed);
			json_u64(&j, "faults", r->faults[0] + r->faults[1] + r->faults[2]);
			json_u64(&j, "stale_reads", r->stale[0] + r->stale[1] + r->stale[2]);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_bool(&j, "expect_stale", expect_stale);
		json_u64(&j, "inject_late", cfg_inject);
		json_u64(&j, "injected", writer.injected);
		json_str(&j, "result", ret == EXIT_PASS ? "pass" :
			 ret == EXIT_CHECK ? "fail" : "error");
		json_obj_end(&j);
		json_end(&j);
	} else if (quiet) {
		printf("stalecheck: %llu reads checked in %.2f s (%.0f/s per reader), %llu writer rounds, %llu stale reads: %s\n",
		       (unsigned long long)checked, elapsed,
		       (double)checked / elapsed / nreaders,
		       (unsigned long long)rounds, (unsigned long long)stale,
		       ret == EXIT_PASS ? "PASS" : ret == EXIT_CHECK ? "FAIL" : "ERROR");
	} else {
		printf("stalecheck: mode %s, writer on CPU %d, %d reader%s on CPU%s %s%s\n",
		       cfg_mode == M_ALL ? "all" : mode_name[cfg_mode], wcpu,
		       nreaders, nreaders == 1 ? "" : "s",
		       rcpus.n == 1 ? "" : "s", rbuf,
		       interrupted ? " (interrupted)" : "");
		printf("elapsed: %.3f s\n", elapsed);
		printf("checked reads: %llu (%.0f/s, %.0f/s per reader)\n",
		       (unsigned long long)checked, (double)checked / elapsed,
		       (double)checked / elapsed / nreaders);
		printf("faults taken: %llu\n", (unsigned long long)faults);
		printf("writer rounds: %llu (%.0f/s), reader wait timeouts: %llu\n",
		       (unsigned long long)rounds, (double)rounds / elapsed,
		       (unsigned long long)writer.ack_timeouts);
		for (int m = 0; m < NMODES; m++)
			printf("  %-9s rounds %12llu  reads %14llu  faults %12llu  stale %llu\n",
			       mode_name[m], (unsigned long long)writer.rounds[m],
			       (unsigned long long)m_checked[m],
			       (unsigned long long)m_faults[m],
			       (unsigned long long)m_stale[m]);
		for (int i = 0; i < nreaders; i++) {
			struct reader *r = &readers[i];
			uint64_t c = r->checked[0] + r->checked[1] + r->checked[2];

			printf("reader %3d cpu %3d: %14llu reads %12.0f reads/s %12llu faults %llu stale\n",
			       i, r->cpu, (unsigned long long)c, (double)c / elapsed,
			       (unsigned long long)(r->faults[0] + r->faults[1] + r->faults[2]),
			       (unsigned long long)(r->stale[0] + r->stale[1] + r->stale[2]));
		}
		if (cfg_inject)
			printf("injected late publications: %llu (self-test)\n",
			       (unsigned long long)writer.injected);
		printf("stale reads: %llu (%llu distinct events)\n",
		       (unsigned long long)stale, (unsigned long long)events);
		for (int k = 0; k < nall; k++)
			printf("  stale at %.6f s: reader %d (CPU %d) read %llu; before the read the writer had published \"%s: page %s, reads must return >= %llu\"; writer's latest value %llu\n",
			       (double)all[k].t_ns / 1e9, all[k].reader, all[k].cpu,
			       (unsigned long long)all[k].value,
			       mode_name[PUB_MODE(all[k].pub)], pub_state(all[k].pub),
			       (unsigned long long)PUB_FLOOR(all[k].pub),
			       (unsigned long long)all[k].wgen);
		printf("result: %s%s\n", ret == EXIT_PASS ? "PASS" :
		       ret == EXIT_CHECK ? "FAIL" : "ERROR",
		       expect_stale ? " (stale reads expected)" : "");
	}

	free(readers);
	cpulist_free(&rcpus);
	munmap(page_a, span);
	munmap(slots_w, NSLOTS * span);
	close(memfd);
	return ret;
}
