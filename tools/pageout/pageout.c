// SPDX-License-Identifier: GPL-2.0
/*
 * pageout: lost writes after reclaim unmaps pages of a process that is in
 * transition to a global ASID.
 *
 * Reclaim defers its TLB flushes (arch_tlbbatch_add_pending()). For an mm
 * with a global ASID that is one INVLPGB of the global ASID's PCID; while
 * the mm is still in transition, the CPUs that run it on their per-CPU
 * ASIDs hold its translations under other PCIDs, which that INVLPGB does
 * not reach, so they must be flushed by IPI as well. A CPU that is missed
 * keeps a writable translation of a page that reclaim has copied to swap
 * and freed: its writes land in the freed page and are lost.
 *
 * One trial is one new process on the CPUs of --cpus:
 *   - one writer thread on each CPU but the first keeps a counter in a
 *     cache line of its own in every page of a region, reading each back
 *     before it increments it: a value other than the one it last wrote
 *     is a lost write (the page came back from swap without it);
 *   - the first CPU calls madvise(MADV_PAGEOUT) on the region, --calls
 *     times. Each call unmaps the pages through reclaim's batched flush,
 *     then flushes the accessed bits it cleared with flush_tlb_mm_range(),
 *     a flush by IPI until the process has a global ASID. The kernel looks
 *     for one at every 32nd such flush (the process runs on 4 CPUs); the
 *     call after the one that assigned it unmaps while the writers' CPUs
 *     are still on their per-CPU ASIDs (they run nothing else), which is
 *     the transition that this tool is for.
 * Each trial is a new process because an mm makes its transition once.
 * The writers spin in user space, so that nothing but a flush changes
 * what their TLBs hold. Needs swap (zram) for MADV_PAGEOUT to take pages.
 *
 * Exit: 0 no lost write, 1 lost writes, 2 usage, 3 could not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/common.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

#define PAGE		4096UL
#define LINE_WORDS	8	/* 64-byte cache line in 64-bit words */
#define MAX_WRITERS	(PAGE / (LINE_WORDS * sizeof(uint64_t)))

static struct {
	uint64_t trials, calls;
	unsigned int pages;
	uint64_t gap_us;
	struct cpulist cpus;
	bool quiet, json;
} opt = { .trials = 40, .calls = 64, .pages = 64, .gap_us = 500 };

/* What a trial's process reports to the parent (shared memory). */
struct result {
	uint64_t checks;	/* counters read back */
	uint64_t lost;		/* read back other than last written */
	uint64_t calls_ok;	/* madvise(MADV_PAGEOUT) calls that succeeded */
	int error;		/* errno of a failed madvise, or 0 */
};

/* In the trial's process. */
static char *region;
static atomic_int stop, started;
static struct result *res;

struct writer {
	int idx, cpu;
	uint64_t checks, lost;
};

static void *writer(void *arg)
{
	struct writer *w = arg;
	uint64_t *last;
	unsigned int p;

	last = calloc(opt.pages, sizeof(*last));
	if (pin_self(w->cpu) || !last)
		_exit(EXIT_ERROR);
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (p = 0; p < opt.pages; p++) {
			volatile uint64_t *c = (uint64_t *)(region + p * PAGE) +
					       w->idx * LINE_WORDS;
			uint64_t v = *c;

			w->checks++;
			if (v != last[p]) {
				w->lost++;
				last[p] = v;
			}
			*c = ++last[p];
		}
	}
	free(last);
	return NULL;
}

/* The trial's process: never returns. */
static void trial(void)
{
	unsigned int nw = opt.cpus.n - 1;
	struct writer *w;
	pthread_t *th;
	uint64_t k;
	unsigned int i;

	if (pin_self(opt.cpus.cpu[0]))
		_exit(EXIT_ERROR);
	region = mmap(NULL, opt.pages * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w = calloc(nw, sizeof(*w));
	th = calloc(nw, sizeof(*th));
	if (region == MAP_FAILED || !w || !th)
		_exit(EXIT_ERROR);
	memset(region, 0, opt.pages * PAGE);
	for (i = 0; i < nw; i++) {
		w[i].idx = i;
		w[i].cpu = opt.cpus.cpu[i + 1];
		if (pthread_create(&th[i], NULL, writer, &w[i]))
			_exit(EXIT_ERROR);
	}
	while (atomic_load(&started) != (int)nw)
		__builtin_ia32_pause();
	for (k = 0; k < opt.calls; k++) {
		uint64_t end = now_ns() + opt.gap_us * 1000;

		if (madvise(region, opt.pages * PAGE, MADV_PAGEOUT)) {
			res->error = errno;
			break;
		}
		res->calls_ok++;
		/* Let the writers fault the pages back in. */
		while (now_ns() < end)
			__builtin_ia32_pause();
	}
	atomic_store(&stop, 1);
	for (i = 0; i < nw; i++) {
		pthread_join(th[i], NULL);
		res->checks += w[i].checks;
		res->lost += w[i].lost;
	}
	_exit(EXIT_PASS);
}

static struct {
	uint64_t trials, checks, lost, lossy_trials, calls;
} tot;

static void report(void)
{
	bool ok = !tot.lost;
	char buf[256];
	struct json j;

	cpulist_format(&opt.cpus, buf, sizeof(buf));
	if (opt.json) {
		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "pageout");
		json_str(&j, "cpus", buf);
		json_u64(&j, "writers", (uint64_t)opt.cpus.n - 1);
		json_u64(&j, "pages", opt.pages);
		json_u64(&j, "trials", tot.trials);
		json_u64(&j, "pageout_calls", tot.calls);
		json_u64(&j, "checks", tot.checks);
		json_u64(&j, "lost_writes", tot.lost);
		json_u64(&j, "trials_with_lost_writes", tot.lossy_trials);
		json_str(&j, "result", ok ? "pass" : "fail");
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	if (!opt.quiet) {
		printf("CPUs %s: madvise(MADV_PAGEOUT) on the first, %d writers\n",
		       buf, opt.cpus.n - 1);
		printf("trials (processes): %llu\n", (unsigned long long)tot.trials);
		printf("pageout calls:      %llu\n", (unsigned long long)tot.calls);
		printf("counters read back: %llu\n", (unsigned long long)tot.checks);
	}
	printf("%s: %llu lost writes in %llu of %llu trials\n",
	       ok ? "PASS" : "FAIL", (unsigned long long)tot.lost,
	       (unsigned long long)tot.lossy_trials,
	       (unsigned long long)tot.trials);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-t TRIALS] [-n CALLS] [-p PAGES] [-g US] [-c CPUS] [-q | --json]\n"
		"Pages out a region with madvise(MADV_PAGEOUT) on the first CPU of CPUS\n"
		"while a thread on each other CPU keeps writing it, in a new process each\n"
		"trial: a write lost to reclaim is a writable translation that its TLB\n"
		"flush missed. Needs swap.\n"
		"  -t, --trials N  processes, one after the other (default 40)\n"
		"  -n, --calls N   madvise calls per trial (default 64)\n"
		"  -p, --pages N   region size in pages (default 64)\n"
		"  -g, --gap US    microseconds between two calls (default 500)\n"
		"  -c, --cpus L    the pager's CPU, then the writers' (default: the\n"
		"                  first 4 CPUs that this process may run on)\n"
		"  -q, --quiet     print only the summary line\n"
		"      --json      print one JSON object instead\n"
		"Exit: 0 no lost write, 1 lost writes, 2 usage, 3 could not run.\n",
		prog_name);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "trials", required_argument, NULL, 't' },
		{ "calls", required_argument, NULL, 'n' },
		{ "pages", required_argument, NULL, 'p' },
		{ "gap", required_argument, NULL, 'g' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cpus = NULL;
	uint64_t t;
	int c;

	prog_name = "pageout";
	while ((c = getopt_long(argc, argv, "t:n:p:g:c:qh", lo, NULL)) != -1) {
		switch (c) {
		case 't': opt.trials = opt_u64("--trials", optarg, 1, 1000000); break;
		case 'n': opt.calls = opt_u64("--calls", optarg, 1, 1000000); break;
		case 'p': opt.pages = opt_u64("--pages", optarg, 1, 1 << 20); break;
		case 'g': opt.gap_us = opt_u64("--gap", optarg, 0, 10000000); break;
		case 'c': cpus = optarg; break;
		case 'q': opt.quiet = true; break;
		case 'j': opt.json = true; break;
		case 'h': usage(stdout); return EXIT_PASS;
		default: usage_bad_option();
		}
	}
	usage_no_operands(argc, argv, optind);
	if (opt.quiet && opt.json)
		usage_error("-q and --json do not go together");
	opt_cpulist_or_first("--cpus", cpus, 4, 2,
			     "a pager and at least one writer", &opt.cpus);
	if ((unsigned int)opt.cpus.n - 1 > MAX_WRITERS)
		usage_error("--cpus: at most %lu writers", MAX_WRITERS);

	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		fatal_errno("mmap");
	for (t = 0; t < opt.trials; t++) {
		int status;
		pid_t pid;

		memset(res, 0, sizeof(*res));
		pid = fork();
		if (pid < 0)
			fatal_errno("fork");
		if (!pid)
			trial();
		if (waitpid(pid, &status, 0) < 0)
			fatal_errno("waitpid");
		if (WIFSIGNALED(status))
			fatal("trial %llu: killed by signal %d",
			      (unsigned long long)t, WTERMSIG(status));
		if (WEXITSTATUS(status))
			fatal("trial %llu: could not start (pinning, memory or threads)",
			      (unsigned long long)t);
		if (res->error) {
			errno = res->error;
			fatal_errno("madvise(MADV_PAGEOUT)");
		}
		tot.trials++;
		tot.calls += res->calls_ok;
		tot.checks += res->checks;
		tot.lost += res->lost;
		tot.lossy_trials += !!res->lost;
	}

	report();
	munmap(res, sizeof(*res));
	cpulist_free(&opt.cpus);
	return tot.lost ? EXIT_CHECK : EXIT_PASS;
}
