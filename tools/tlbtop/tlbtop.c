// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: top for TLB flushing under broadcast TLB invalidation (AMD
 * INVLPGB) and global ASIDs. The BPF side (bpf/tlbtop.bpf.c) counts the
 * kernel's tlb:*, csd:/ipi: and vmscan: events in maps; once an interval
 * this reads them, with debugfs's x86/broadcast_tlb/, and prints a
 * header and one row per process. At exit it prints a summary of the
 * whole run with a histogram of the TLBSYNC waits. See docs/tlbtop.md.
 *
 * This file: the options, the state's setup and teardown, and the loop
 * of intervals. The checks and the loading are in source.c, the maps and
 * rows in rows.c, debugfs in debugfs.c, the output in screen.c (text)
 * and json.c (-j).
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <linux/types.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "json.h"
#include "screen.h"
#include "source.h"
#include "state.h"
#include "tlbtop.skel.h"

struct state st;

/* Options */

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

struct env env = {
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
"SOURCES: tracepoint needs the series' tlb: tracepoints (the patched kernel);\n"
"fentry needs only upstream's functions (6.15 and later count global ASIDs and\n"
"broadcasts; without INVLPGB in use, AVOIDABL is an estimate of the IPIs\n"
"upstream's rule would turn into broadcasts). What a source cannot count is\n"
"shown as - (null in JSON).\n"
"\n"
"Exit status: 0 done, 2 bad option or argument, 3 could not trace (not\n"
"root, no BTF, a kernel without the source's events, load or attach failed).\n"
"See docs/tlbtop.md for every field.";

static const struct argp_option opts[] = {
	{ "pid", 'p', "PID", 0, "Show only this process's row (the header stays system-wide)", 0 },
	{ "rows", 'r', "ROWS", 0, "Rows to show (default 20)", 0 },
	{ "sort", 's', "COLUMN", 0, "Sort the rows by COLUMN (default ipis_avoided)", 0 },
	{ "noclear", 'C', NULL, 0, "Do not clear the screen", 0 },
	{ "batch", 'b', NULL, 0, "Batch mode: plain text, no terminal control", 0 },
	{ "json", 'j', NULL, 0, "One JSON object per interval and one at exit, a line each", 0 },
	{ "source", 'S', "SOURCE", 0, "Where the counts come from: tracepoint (the series' tracepoints) or fentry (upstream's functions); default: the first the kernel has", 0 },
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
	case 'S':
		if (strcmp(arg, "tracepoint") && strcmp(arg, "fentry"))
			bad_usage(state, "option --source: unknown source '%s' (%s)",
				  arg, source_names());
		env.source = arg;
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
void die(const char *fmt, ...)
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

/* State */

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

/* Output: text or JSON */

static void check_output(void)
{
	if (fflush(stdout) || ferror(stdout))
		st.out_error = true;
}

static void print_interval(void)
{
	time_t now = time(NULL);

	if (env.json)
		json_interval(now);
	else
		screen_interval(now);
	check_output();
}

static void print_summary(void)
{
	struct row *rows;
	size_t n;

	rows = run_rows(&n);
	if (env.json)
		json_summary(rows, n);
	else
		screen_summary(rows, n);
	free(rows);
	check_output();
}

/* Main */

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.args_doc = "[INTERVAL [COUNT]]",
		.doc = doc,
	};
	const struct tlbtop_source *src;
	struct utsname uts;
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
	if (uname(&uts))
		die("uname: %s", strerror(errno));
	snprintf(st.kernel, sizeof(st.kernel), "%s", uts.release);
	src = source_pick(env.source);
	st.skel = load_and_attach(src);
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
