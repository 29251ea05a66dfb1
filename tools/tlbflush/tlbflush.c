// SPDX-License-Identifier: GPL-2.0
/*
 * tlbflush: the will-it-scale tlb_flush2 pattern.
 *
 * N workers (threads sharing one mm, or with -P processes with an mm
 * each) loop over a private 1 MiB anonymous region. For every page:
 * write a byte, MADV_DONTNEED the page, check that it reads back as 0,
 * count one loop. After the whole region: munmap it and mmap it again.
 * With threads, every MADV_DONTNEED has to flush the TLB of every CPU
 * the mm is active on.
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#define REGION_SIZE	(1UL << 20)
#define MAX_WORKERS	256

struct worker {
	int index;
	int cpu;		/* -1: not pinned */
	pthread_t thread;
	uint64_t loops;
	uint64_t failures;
	uint64_t first_fail_loop;	/* loop number of the first failure */
	uint64_t first_fail_off;	/* page offset of the first failure */
	int first_fail_val;
	int err;		/* errno of a failed system call, 0 if none */
	const char *err_what;	/* which call failed */
} __attribute__((aligned(64)));

/* Lives in a MAP_SHARED anonymous mapping so that -P children share it. */
struct shared {
	atomic_int ready;	/* workers at the start line */
	atomic_int go;		/* 1: start, -1: abort */
	atomic_int stop;	/* set once the duration is over */
	struct worker w[];
};

static struct shared *sh;
static size_t page_size;
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	atomic_store(&sh->stop, 1);
}

static void worker_fail(struct worker *w, const char *what)
{
	w->err = errno;
	w->err_what = what;
	atomic_store(&sh->stop, 1);
}

static void run_worker(struct worker *w)
{
	char *region;
	uint64_t loops = 0, failures = 0;

	if (w->cpu >= 0) {
		int e = pin_self(w->cpu);

		if (e) {
			errno = e;
			worker_fail(w, "pinning to its CPU");
		}
	}

	region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED) {
		region = NULL;
		worker_fail(w, "mmap");
	}

	/* The start line. */
	atomic_fetch_add(&sh->ready, 1);
	while (atomic_load(&sh->go) == 0)
		sched_yield();
	if (atomic_load(&sh->go) < 0 || !region)
		goto out;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		for (size_t off = 0; off < REGION_SIZE; off += page_size) {
			volatile char *p = region + off;
			char v;

			*p = (char)(1 + loops % 255);
			if (madvise(region + off, page_size, MADV_DONTNEED)) {
				worker_fail(w, "madvise(MADV_DONTNEED)");
				goto out;
			}
			v = *p;
			if (v != 0) {
				if (!failures) {
					w->first_fail_loop = loops;
					w->first_fail_off = off;
					w->first_fail_val = (unsigned char)v;
				}
				failures++;
			}
			loops++;
			if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
				goto out;
		}
		if (munmap(region, REGION_SIZE)) {
			worker_fail(w, "munmap");
			region = NULL;
			goto out;
		}
		region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region == MAP_FAILED) {
			region = NULL;
			worker_fail(w, "mmap");
			goto out;
		}
	}
out:
	if (region)
		munmap(region, REGION_SIZE);
	w->loops = loops;
	w->failures = failures;
}

static void *thread_main(void *arg)
{
	run_worker(arg);
	return NULL;
}

static void usage(void)
{
	printf(
"Usage: %s [OPTION]...\n"
"The will-it-scale tlb_flush2 pattern: each worker writes a byte to a page of\n"
"its private 1 MiB anonymous region, MADV_DONTNEEDs the page and checks that\n"
"it reads back 0; after the whole region it unmaps and maps it again.\n"
"\n"
"  -t, --threads=N      number of workers, 1..%d (default 4)\n"
"  -P, --processes      workers are processes (fork, one mm each) instead of\n"
"                       threads sharing one mm\n"
"  -d, --duration=SECS  run time, fractions allowed, up to 86400 (default 5)\n"
"  -c, --cpus=CPULIST   pin worker i to the i-th CPU of the list (e.g. 0-7 or\n"
"                       0,2,4); the list is reused from the start when there\n"
"                       are more workers than CPUs\n"
"  -q, --quiet          print only the summary line\n"
"      --json           print one JSON object instead of the text report\n"
"  -h, --help           show this help\n"
"\n"
"Exit status: 0 all checks passed, 1 a page did not read back 0,\n"
"2 bad option or argument, 3 a system call failed.\n",
	       prog_name, MAX_WORKERS);
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256 };
	static const struct option longopts[] = {
		{ "threads",   required_argument, NULL, 't' },
		{ "processes", no_argument,       NULL, 'P' },
		{ "duration",  required_argument, NULL, 'd' },
		{ "cpus",      required_argument, NULL, 'c' },
		{ "quiet",     no_argument,       NULL, 'q' },
		{ "json",      no_argument,       NULL, OPT_JSON },
		{ "help",      no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int nworkers = 4;
	bool processes = false, quiet = false, json = false;
	double duration = 5.0;
	struct cpulist cpus = { 0, NULL };
	size_t shsize;
	int started = 0, opt, ret;
	uint64_t t0, t1, total = 0, failures = 0;
	double elapsed;
	char cpubuf[512];
	pid_t pids[MAX_WORKERS];

	prog_name = "tlbflush";
	argv[0] = (char *)prog_name;	/* getopt's messages name the tool */
	while ((opt = getopt_long(argc, argv, "t:Pd:c:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			nworkers = (int)opt_u64("-t", optarg, 1, MAX_WORKERS);
			break;
		case 'P':
			processes = true;
			break;
		case 'd':
			duration = opt_seconds("-d", optarg, 0, 86400);
			break;
		case 'c':
			cpulist_free(&cpus);
			opt_cpulist("-c", optarg, &cpus);
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
	shsize = sizeof(*sh) + (size_t)nworkers * sizeof(struct worker);
	shsize = (shsize + page_size - 1) & ~(page_size - 1);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fatal_errno("mmap of the shared page");
	for (int i = 0; i < nworkers; i++) {
		sh->w[i].index = i;
		sh->w[i].cpu = cpus.n ? cpus.cpu[i % cpus.n] : -1;
	}

	/* SIGINT/SIGTERM end the run early; the report still comes.
	 * Set before fork: the children share sh and stop with everyone. */
	on_stop_signals(on_signal);

	fflush(stdout);
	fflush(stderr);
	for (started = 0; started < nworkers; started++) {
		struct worker *w = &sh->w[started];

		if (processes) {
			/* pids stay private: the child must not write them into sh. */
			pid_t pid = fork();

			if (pid == 0) {
				cpulist_free(&cpus);
				run_worker(w);
				_exit(0);
			}
			if (pid < 0) {
				ret = errno;
				break;
			}
			pids[started] = pid;
		} else {
			ret = pthread_create(&w->thread, NULL, thread_main, w);
			if (ret)
				break;
		}
	}
	if (started < nworkers) {
		atomic_store(&sh->go, -1);
		for (int i = 0; i < started; i++) {
			if (processes)
				waitpid(pids[i], NULL, 0);
			else
				pthread_join(sh->w[i].thread, NULL);
		}
		errno = ret;
		fatal_errno("cannot start worker %d of %d", started + 1, nworkers);
	}

	/* Start everybody at once, let them run, then stop them. */
	while (atomic_load(&sh->ready) < nworkers)
		sched_yield();
	t0 = now_ns();
	atomic_store(&sh->go, 1);
	sleep_ns((uint64_t)(duration * 1e9), &sh->stop);
	atomic_store(&sh->stop, 1);
	t1 = now_ns();

	ret = EXIT_PASS;
	for (int i = 0; i < nworkers; i++) {
		struct worker *w = &sh->w[i];

		if (processes) {
			int status;

			if (waitpid(pids[i], &status, 0) < 0)
				fatal_errno("waitpid");
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				if (WIFSIGNALED(status))
					fprintf(stderr, "%s: error: worker %d (pid %d) killed by signal %d (%s)\n",
						prog_name, i, (int)pids[i],
						WTERMSIG(status),
						strsignal(WTERMSIG(status)));
				else
					fprintf(stderr, "%s: error: worker %d (pid %d) exited with status %d\n",
						prog_name, i, (int)pids[i],
						WEXITSTATUS(status));
				ret = EXIT_ERROR;
			}
		} else {
			pthread_join(w->thread, NULL);
		}
		if (w->err) {
			fprintf(stderr, "%s: error: worker %d: %s: %s\n", prog_name,
				i, w->err_what, strerror(w->err));
			ret = EXIT_ERROR;
		}
		total += w->loops;
		failures += w->failures;
	}
	if (ret == EXIT_PASS && failures)
		ret = EXIT_CHECK;

	elapsed = (double)(t1 - t0) / 1e9;
	cpulist_format(&cpus, cpubuf, sizeof(cpubuf));

	if (json) {
		struct json j;

		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "tlbflush");
		json_str(&j, "mode", processes ? "processes" : "threads");
		json_u64(&j, "workers", (uint64_t)nworkers);
		if (cpus.n)
			json_str(&j, "cpus", cpubuf);
		else
			json_null(&j, "cpus");
		json_double(&j, "duration_s", duration);
		json_double(&j, "elapsed_s", elapsed);
		json_bool(&j, "interrupted", interrupted);
		json_u64(&j, "region_bytes", REGION_SIZE);
		json_u64(&j, "page_size", page_size);
		json_u64(&j, "total_loops", total);
		json_double(&j, "loops_per_sec", (double)total / elapsed);
		json_u64(&j, "failed_checks", failures);
		json_arr_begin(&j, "per_worker");
		for (int i = 0; i < nworkers; i++) {
			struct worker *w = &sh->w[i];

			json_obj_begin(&j, NULL);
			json_u64(&j, "worker", (uint64_t)i);
			json_i64(&j, "cpu", w->cpu);
			json_u64(&j, "loops", w->loops);
			json_double(&j, "loops_per_sec", (double)w->loops / elapsed);
			json_u64(&j, "failed_checks", w->failures);
			if (w->failures) {
				json_obj_begin(&j, "first_failure");
				json_u64(&j, "loop", w->first_fail_loop);
				json_u64(&j, "page_offset", w->first_fail_off);
				json_u64(&j, "value", (uint64_t)w->first_fail_val);
				json_obj_end(&j);
			} else {
				json_null(&j, "first_failure");
			}
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_str(&j, "result", ret == EXIT_PASS ? "pass" :
			 ret == EXIT_CHECK ? "fail" : "error");
		json_obj_end(&j);
		json_end(&j);
	} else if (quiet) {
		printf("tlbflush: %s x%d: %llu loops in %.2f s, %.0f loops/s, %llu failed checks: %s\n",
		       processes ? "processes" : "threads", nworkers,
		       (unsigned long long)total, elapsed,
		       (double)total / elapsed, (unsigned long long)failures,
		       ret == EXIT_PASS ? "PASS" : ret == EXIT_CHECK ? "FAIL" : "ERROR");
	} else {
		printf("tlbflush: %d %s (%s), %lu KiB region each, %.2f s, CPUs %s%s\n",
		       nworkers, processes ? "processes" : "threads",
		       processes ? "one mm each" : "one shared mm",
		       REGION_SIZE >> 10, duration, cpus.n ? cpubuf : "not pinned",
		       interrupted ? " (interrupted)" : "");
		for (int i = 0; i < nworkers; i++) {
			struct worker *w = &sh->w[i];
			char cpu[16] = "-";

			if (w->cpu >= 0)
				snprintf(cpu, sizeof(cpu), "%d", w->cpu);
			printf("worker %3d cpu %3s: %12llu loops %12.0f loops/s %llu failed\n",
			       i, cpu, (unsigned long long)w->loops,
			       (double)w->loops / elapsed,
			       (unsigned long long)w->failures);
			if (w->failures)
				printf("  first failure: loop %llu, page offset 0x%llx read 0x%02x after MADV_DONTNEED\n",
				       (unsigned long long)w->first_fail_loop,
				       (unsigned long long)w->first_fail_off,
				       w->first_fail_val);
		}
		printf("total loops: %llu\n", (unsigned long long)total);
		printf("elapsed: %.3f s\n", elapsed);
		printf("loops/s: %.0f\n", (double)total / elapsed);
		printf("failed checks: %llu\n", (unsigned long long)failures);
		printf("result: %s\n", ret == EXIT_PASS ? "PASS" :
		       ret == EXIT_CHECK ? "FAIL" : "ERROR");
	}

	cpulist_free(&cpus);
	munmap(sh, shsize);
	return ret;
}
