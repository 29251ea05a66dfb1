/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the test workloads in tools/: exit statuses, error
 * messages, option parsing with range checks, CPU lists, a monotonic
 * clock and a small JSON writer.
 */
#ifndef TOOLS_COMMON_H
#define TOOLS_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, the same for every tool. */
#define EXIT_PASS	0	/* ran, every check passed */
#define EXIT_CHECK	1	/* ran, a data check failed */
#define EXIT_USAGE	2	/* bad option or argument */
#define EXIT_ERROR	3	/* could not run: a system call failed */

/* Set by each tool's main() before anything else (used in messages). */
extern const char *prog_name;

/* Message "prog: ...", a hint to use --help, then exit(EXIT_USAGE). */
void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Message "prog: error: ...", then exit(EXIT_ERROR). */
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* As fatal(), with ": strerror(errno)" appended. */
void fatal_errno(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Message "prog: warning: ..." on stderr. */
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For getopt_long's '?' case: getopt has printed why; add the hint, exit 2. */
void usage_bad_option(void) __attribute__((noreturn));
/* Exit 2 if any argument is left after the options. */
void usage_no_operands(int argc, char **argv, int optind_);

/*
 * Option values. Each takes the option's name (for the message) and its
 * argument, and exits with EXIT_USAGE on anything that is not a valid
 * value in [min, max].
 */
uint64_t opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max);
/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
uint64_t opt_size(const char *opt, const char *arg, uint64_t min, uint64_t max);
/* Seconds, fractions allowed: min < value <= max. */
double opt_seconds(const char *opt, const char *arg, double min, double max);

/* A list of CPU numbers, in the order given ("0-3,6,8-9"). */
struct cpulist {
	int n;
	int *cpu;
};

/*
 * Parse a CPU list; every CPU in it must be in this process's affinity
 * mask (online and allowed), else EXIT_USAGE.
 */
void opt_cpulist(const char *opt, const char *arg, struct cpulist *out);
/* The CPUs this process may run on, ascending. */
void cpulist_available(struct cpulist *out);
/*
 * A tool's CPU list: ARG parsed as opt_cpulist() does when it is given,
 * else the first N CPUs this process may run on. At least MIN CPUs, else
 * EXIT_USAGE with WHAT ("a freer and at least one reader") in the message.
 */
void opt_cpulist_or_first(const char *opt, const char *arg, int n, int min,
			  const char *what, struct cpulist *out);
/* Format as a compact range list ("0-3,6") into buf. */
void cpulist_format(const struct cpulist *cl, char *buf, size_t len);
void cpulist_free(struct cpulist *cl);
bool cpu_available(int cpu);

/* Pin the calling thread to one CPU; returns 0 or an errno value. */
int pin_self(int cpu);
/* The same, exit(EXIT_ERROR) when it fails. */
void pin_self_or_die(int cpu);
/* Spin (with PAUSE, no system call) until *v == want. */
void spin_until(const atomic_uint *v, unsigned int want);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);
/*
 * Sleep for ns nanoseconds, in slices of at most 10 ms; return early once
 * *stop (if stop is not NULL) is nonzero.
 */
void sleep_ns(uint64_t ns, const atomic_int *stop);
/* Call fn on SIGINT and SIGTERM (no SA_RESTART), to end a run early. */
void on_stop_signals(void (*fn)(int));

/* Human-readable byte count ("256 MiB", "1.5 GiB", "4096 B"). */
void fmt_bytes(uint64_t bytes, char *buf, size_t len);

/*
 * JSON writer. Values inside an object take a key; values inside an
 * array (and the top-level value) take key NULL. The writer inserts
 * commas and escapes strings; json_end() adds the final newline.
 */
#define JSON_MAX_DEPTH 16
struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

void json_start(struct json *j, FILE *f);
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_double(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_str(struct json *j, const char *key, const char *s);
void json_null(struct json *j, const char *key);
void json_end(struct json *j);

#endif /* TOOLS_COMMON_H */
