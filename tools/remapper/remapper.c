// SPDX-License-Identifier: GPL-2.0
/*
 * remapper: one thread remaps a page on a steady period while reader
 * threads, pinned to other CPUs, keep reading it.
 *
 * Every remap (mmap MAP_FIXED over the page) flushes the page on every CPU
 * the process is active on, and all the flushes come from one thread: the
 * pattern of a purger or a remapper beside its readers. The kernel looks
 * for a global ASID for a process at its IPI flushes, at first only when
 * the flushing thread's pid matches the jiffies in their low 5 bits. With
 * --avoid-pid-slot, each remap is timed so that the jiffies, when the
 * flush ends, are as far as they can be from that slot; the jiffies are
 * read from /proc/timer_list. The report says how many flushes ended in
 * the slot all the same.
 *
 * The pages come from a memfd, two of them in turn, each written with the
 * remap's number before it is mapped. With --read-remapped, each reader
 * reads that page and checks that it never reads back a number older than
 * the one the writer published after its latest remap returned: an older
 * one comes through a stale TLB entry. Readers that do so fault on the new
 * page and wait for the mmap lock that the remap holds, so at the end of
 * each flush they are asleep and their CPUs idle, which the kernel's test
 * for a process "active on 4 or more CPUs" sees. By default the readers
 * read memory of their own instead and keep their CPUs busy in the process.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_READERS	255
#define SLOTS		32	/* the kernel's pid/jiffies check: low 5 bits */
#define FILE_PAGES	2
#define SPIN_NS		(30 * 1000000ULL)	/* --avoid-pid-slot spins this long */

struct reader {
	int cpu;
	pthread_t thread;
	uint64_t reads;
	uint64_t stale;		/* reads older than the published value */
	int err;
} __attribute__((aligned(64)));

static volatile uint64_t *page;		/* the remapped page */
static int memfd;
static atomic_uint_fast64_t published;	/* value the readers must see at least */
static atomic_int ready, stop;
static bool read_remapped;
static size_t page_size;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	if (r->cpu >= 0)
		r->err = pin_self(r->cpu);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (read_remapped) {
			uint64_t want = atomic_load_explicit(&published,
							     memory_order_acquire);

			if (*page < want)
				r->stale++;
		} else {
			/* Its own cache line: busy in the process, no fault. */
			*(volatile uint64_t *)&r->stale;
		}
		r->reads++;
	}
	return NULL;
}

/*
 * The jiffies as a function of CLOCK_MONOTONIC, from two readings of
 * /proc/timer_list: "now at N nsecs", then "jiffies: J" in each CPU's
 * tick section.
 */
struct jclock {
	uint64_t t0_ns;
	uint64_t j0;
	double ns_per_jiffy;
};

static int read_timer_list(uint64_t *now_ns_out, uint64_t *jiffies_out)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[256];
	bool have_now = false, have_j = false;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && !(have_now && have_j)) {
		unsigned long long v;

		if (!have_now && sscanf(line, "now at %llu nsecs", &v) == 1) {
			*now_ns_out = v;
			have_now = true;
		} else if (!have_j && sscanf(line, "jiffies: %llu", &v) == 1) {
			*jiffies_out = v;
			have_j = true;
		}
	}
	fclose(f);
	return have_now && have_j ? 0 : -1;
}

static void jclock_init(struct jclock *jc)
{
	uint64_t t1, j1;
	double hz;

	if (read_timer_list(&jc->t0_ns, &jc->j0))
		fatal("cannot read the jiffies from /proc/timer_list (needs CONFIG_PROC_FS)");
	sleep_ns(400 * 1000000ULL, NULL);
	if (read_timer_list(&t1, &j1) || j1 <= jc->j0 || t1 <= jc->t0_ns)
		fatal("the jiffies in /proc/timer_list do not advance");
	/* Round to the nearest usual HZ: the two readings are not atomic. */
	hz = (double)(j1 - jc->j0) * 1e9 / (double)(t1 - jc->t0_ns);
	{
		static const int usual[] = { 100, 250, 300, 1000 };
		int best = usual[0];

		for (size_t i = 1; i < sizeof(usual) / sizeof(usual[0]); i++)
			if (fabs(hz - usual[i]) < fabs(hz - best))
				best = usual[i];
		jc->ns_per_jiffy = 1e9 / best;
	}
	jc->t0_ns = t1;
	jc->j0 = j1;
}

static uint64_t jclock_jiffies(const struct jclock *jc, uint64_t t_ns)
{
	return jc->j0 + (uint64_t)((double)(t_ns - jc->t0_ns) / jc->ns_per_jiffy);
}

/* The first time after t_ns at which jiffies % SLOTS == slot. */
static uint64_t jclock_next_slot(const struct jclock *jc, uint64_t t_ns, unsigned int slot)
{
	uint64_t j = jclock_jiffies(jc, t_ns) + 1;

	j += (slot + SLOTS - j % SLOTS) % SLOTS;
	/* Aim at the middle of the jiffy. */
	return jc->t0_ns + (uint64_t)(((double)(j - jc->j0) + 0.5) * jc->ns_per_jiffy);
}

static void usage(void)
{
	printf(
"Usage: %s [OPTION]...\n"
"One writer thread remaps a page every PERIOD while reader threads pinned to\n"
"other CPUs keep reading (their own memory, or with --read-remapped the page,\n"
"checking that they never see an older value).\n"
"\n"
"  -t, --readers=N       reader threads, 1..%d (default 7)\n"
"  -c, --cpus=CPULIST    the writer on the first CPU, reader i on the next\n"
"                        ones (reused from the start when short; default: not\n"
"                        pinned)\n"
"  -d, --duration=SECS   run time, fractions allowed (default 10)\n"
"  -p, --period=MS       time between remaps in milliseconds (default 128:\n"
"                        32 jiffies at HZ=250)\n"
"      --avoid-pid-slot  time each remap so that its flush ends with the\n"
"                        jiffies as far as possible from the writer's pid\n"
"                        in their low 5 bits (a multiple of 32 jiffies\n"
"                        replaces --period)\n"
"      --lead=MS         with --avoid-pid-slot: how long a remap's flush\n"
"                        takes at first, to aim its end; then learnt from\n"
"                        the remaps (default 20)\n"
"      --read-remapped   the readers read the remapped page and check it (they\n"
"                        then wait for the mmap lock during each remap)\n"
"      --json            print one JSON object instead of the text report\n"
"  -h, --help            show this help\n"
"\n"
"Exit status: 0 all checks passed, 1 a reader saw an older value,\n"
"2 bad option or argument, 3 a system call failed.\n",
	       prog_name, MAX_READERS);
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_AVOID, OPT_LEAD, OPT_READ };
	static const struct option longopts[] = {
		{ "readers",        required_argument, NULL, 't' },
		{ "cpus",           required_argument, NULL, 'c' },
		{ "duration",       required_argument, NULL, 'd' },
		{ "period",         required_argument, NULL, 'p' },
		{ "avoid-pid-slot", no_argument,       NULL, OPT_AVOID },
		{ "lead",           required_argument, NULL, OPT_LEAD },
		{ "read-remapped",  no_argument,       NULL, OPT_READ },
		{ "json",           no_argument,       NULL, OPT_JSON },
		{ "help",           no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int nreaders = 7, opt, started, ret = EXIT_PASS, werr;
	bool avoid = false, json = false;
	double duration = 10.0;
	uint64_t period_ns = 128 * 1000000ULL, lead_ns = 20 * 1000000ULL;
	uint64_t remaps = 0, in_slot = 0, reads = 0, stale = 0, t0, t1, next;
	struct cpulist cpus = { 0, NULL };
	struct reader *rd;
	struct jclock jc = { 0, 0, 0 };
	unsigned int pid_slot, aim_slot = 0;
	pid_t tid;
	char cpubuf[512];

	prog_name = "remapper";
	argv[0] = (char *)prog_name;
	while ((opt = getopt_long(argc, argv, "t:c:d:p:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			nreaders = (int)opt_u64("-t", optarg, 1, MAX_READERS);
			break;
		case 'c':
			cpulist_free(&cpus);
			opt_cpulist("-c", optarg, &cpus);
			break;
		case 'd':
			duration = opt_seconds("-d", optarg, 0, 86400);
			break;
		case 'p':
			period_ns = opt_u64("-p", optarg, 1, 60000) * 1000000ULL;
			break;
		case OPT_AVOID:
			avoid = true;
			break;
		case OPT_LEAD:
			lead_ns = opt_u64("--lead", optarg, 0, 1000) * 1000000ULL;
			break;
		case OPT_READ:
			read_remapped = true;
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
	memfd = memfd_create("remapper", 0);
	if (memfd < 0)
		fatal_errno("memfd_create");
	if (ftruncate(memfd, (off_t)(FILE_PAGES * page_size)))
		fatal_errno("ftruncate");
	page = mmap(NULL, page_size, PROT_READ, MAP_SHARED | MAP_POPULATE, memfd, 0);
	if (page == MAP_FAILED)
		fatal_errno("mmap");
	rd = calloc((size_t)nreaders, sizeof(*rd));
	if (!rd)
		fatal_errno("calloc");

	/* The writer is this thread: its pid is the one the kernel checks. */
	tid = (pid_t)syscall(SYS_gettid);
	pid_slot = (unsigned int)tid % SLOTS;
	if (cpus.n && (werr = pin_self(cpus.cpu[0]))) {
		errno = werr;
		fatal_errno("pinning the writer to CPU %d", cpus.cpu[0]);
	}
	if (avoid) {
		jclock_init(&jc);
		aim_slot = (pid_slot + SLOTS / 2) % SLOTS;
		period_ns = (uint64_t)(SLOTS * jc.ns_per_jiffy);
	}

	on_stop_signals(on_signal);

	for (started = 0; started < nreaders; started++) {
		rd[started].cpu = cpus.n ? cpus.cpu[(started + 1) % cpus.n] : -1;
		werr = pthread_create(&rd[started].thread, NULL, reader_main, &rd[started]);
		if (werr)
			break;
	}
	if (started < nreaders) {
		atomic_store(&stop, 1);
		for (int i = 0; i < started; i++)
			pthread_join(rd[i].thread, NULL);
		errno = werr;
		fatal_errno("cannot start reader %d of %d", started + 1, nreaders);
	}
	while (atomic_load(&ready) < nreaders)
		sched_yield();

	t0 = now_ns();
	next = t0;
	while (!atomic_load(&stop)) {
		uint64_t now = now_ns(), start, done;
		void *p;

		if (now - t0 >= (uint64_t)(duration * 1e9))
			break;
		if (avoid) {
			/*
			 * Sleep to shortly before the start, then spin: a
			 * wakeup can come late by more than the slot is wide.
			 */
			next = jclock_next_slot(&jc, now + lead_ns + SPIN_NS, aim_slot) - lead_ns;
			if (next > now + SPIN_NS)
				sleep_ns(next - now - SPIN_NS, &stop);
			while (now_ns() < next && !atomic_load(&stop))
				;
		} else if (next > now) {
			sleep_ns(next - now, &stop);
		}
		if (atomic_load(&stop))
			break;
		start = now_ns();

		/*
		 * The next file page gets the new number first; once the
		 * remap has returned, no reader may still read the old page
		 * through its TLB, which the published number lets them check.
		 */
		{
			uint64_t v = remaps + 1;
			off_t off = (off_t)((remaps + 1) % FILE_PAGES * page_size);

			if (pwrite(memfd, &v, sizeof(v), off) != (ssize_t)sizeof(v))
				p = MAP_FAILED;
			else
				p = mmap((void *)page, page_size, PROT_READ,
					 MAP_SHARED | MAP_FIXED | MAP_POPULATE, memfd, off);
		}
		if (p == MAP_FAILED) {
			werr = errno;
			atomic_store(&stop, 1);
			errno = werr;
			fatal_errno("remapping the page");
		}
		atomic_store_explicit(&published, remaps + 1, memory_order_release);
		done = now_ns();
		remaps++;
		if (avoid) {
			if (jclock_jiffies(&jc, done) % SLOTS == pid_slot)
				in_slot++;
			/* Aim the next one with what this one took. */
			lead_ns = (3 * lead_ns + (done - start)) / 4;
		}
		if (!avoid)
			next += period_ns;
	}
	atomic_store(&stop, 1);
	t1 = now_ns();
	for (int i = 0; i < nreaders; i++) {
		pthread_join(rd[i].thread, NULL);
		if (rd[i].err) {
			fprintf(stderr, "%s: error: pinning reader %d to CPU %d: %s\n",
				prog_name, i, rd[i].cpu, strerror(rd[i].err));
			ret = EXIT_ERROR;
		}
		reads += rd[i].reads;
		stale += rd[i].stale;
	}
	if (ret == EXIT_PASS && stale)
		ret = EXIT_CHECK;
	cpulist_format(&cpus, cpubuf, sizeof(cpubuf));

	if (json) {
		struct json j;

		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "remapper");
		json_u64(&j, "readers", (uint64_t)nreaders);
		if (cpus.n)
			json_str(&j, "cpus", cpubuf);
		else
			json_null(&j, "cpus");
		json_i64(&j, "writer_tid", tid);
		json_u64(&j, "pid_slot", pid_slot);
		json_bool(&j, "avoid_pid_slot", avoid);
		json_bool(&j, "read_remapped", read_remapped);
		if (avoid) {
			json_u64(&j, "aim_slot", aim_slot);
			json_double(&j, "hz", 1e9 / jc.ns_per_jiffy);
			json_u64(&j, "remaps_ended_in_pid_slot", in_slot);
		}
		json_double(&j, "period_ms", (double)period_ns / 1e6);
		json_double(&j, "elapsed_s", (double)(t1 - t0) / 1e9);
		json_u64(&j, "remaps", remaps);
		json_u64(&j, "reads", reads);
		json_u64(&j, "stale_reads", stale);
		json_str(&j, "result", ret == EXIT_PASS ? "pass" :
			 ret == EXIT_CHECK ? "fail" : "error");
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("remapper: writer tid %d (pid slot %u), %d readers, CPUs %s\n",
		       (int)tid, pid_slot, nreaders, cpus.n ? cpubuf : "not pinned");
		if (avoid)
			printf("remaps aimed at jiffies slot %u (HZ %.0f), %llu ended in the pid slot\n",
			       aim_slot, 1e9 / jc.ns_per_jiffy,
			       (unsigned long long)in_slot);
		printf("remaps: %llu in %.2f s, every %.1f ms\n",
		       (unsigned long long)remaps, (double)(t1 - t0) / 1e9,
		       (double)period_ns / 1e6);
		if (read_remapped)
			printf("reads: %llu, older than published: %llu\n",
			       (unsigned long long)reads, (unsigned long long)stale);
		else
			printf("reads of the readers' own memory: %llu\n",
			       (unsigned long long)reads);
		printf("result: %s\n", ret == EXIT_PASS ? "PASS" :
		       ret == EXIT_CHECK ? "FAIL" : "ERROR");
	}
	cpulist_free(&cpus);
	free(rd);
	munmap((void *)page, page_size);
	close(memfd);
	return ret;
}
