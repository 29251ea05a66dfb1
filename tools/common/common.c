// SPDX-License-Identifier: GPL-2.0
/* Shared helpers for the tools/ workloads; see common.h. */
#define _GNU_SOURCE
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *prog_name = "tool";

static void vmsg(const char *tag, const char *fmt, va_list ap, int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", prog_name, tag);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap, 0);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", prog_name);
	exit(EXIT_USAGE);
}

void usage_bad_option(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog_name);
	exit(EXIT_USAGE);
}

void usage_no_operands(int argc, char **argv, int optind_)
{
	if (optind_ < argc)
		usage_error("unexpected argument '%s'", argv[optind_]);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap, 0);
	va_end(ap);
	exit(EXIT_ERROR);
}

void fatal_errno(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap, err);
	va_end(ap);
	exit(EXIT_ERROR);
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap, 0);
	va_end(ap);
}

/* Digits only (no sign, no blanks); 0 on success, -1 if malformed/overflow. */
static int parse_digits(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return 0;
}

uint64_t opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
	const char *end;
	uint64_t v;

	if (parse_digits(arg, &end, &v) || *end)
		usage_error("option %s: '%s' is not a number", opt, arg);
	if (v < min || v > max)
		usage_error("option %s: %s is out of range (%llu..%llu)", opt,
			    arg, (unsigned long long)min,
			    (unsigned long long)max);
	return v;
}

uint64_t opt_size(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
	const char *end;
	uint64_t v;
	unsigned shift = 0;
	char minb[32], maxb[32];

	if (parse_digits(arg, &end, &v))
		usage_error("option %s: '%s' is not a size (e.g. 4096, 64K, 256M, 2G)",
			    opt, arg);
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	default:
		usage_error("option %s: '%s' is not a size (e.g. 4096, 64K, 256M, 2G)",
			    opt, arg);
	}
	if (*end && end[1])
		usage_error("option %s: '%s' is not a size (e.g. 4096, 64K, 256M, 2G)",
			    opt, arg);
	if (shift && v > (UINT64_MAX >> shift))
		usage_error("option %s: %s is too large", opt, arg);
	v <<= shift;
	if (v < min || v > max) {
		fmt_bytes(min, minb, sizeof(minb));
		fmt_bytes(max, maxb, sizeof(maxb));
		usage_error("option %s: %s is out of range (%s..%s)", opt, arg,
			    minb, maxb);
	}
	return v;
}

double opt_seconds(const char *opt, const char *arg, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	if (!*arg || isspace((unsigned char)*arg))
		usage_error("option %s: '%s' is not a number of seconds", opt, arg);
	v = strtod(arg, &end);
	if (errno || *end || end == arg || !isfinite(v))
		usage_error("option %s: '%s' is not a number of seconds", opt, arg);
	if (!(v > min) || v > max)
		usage_error("option %s: %s is out of range (more than %g, at most %g seconds)",
			    opt, arg, min, max);
	return v;
}

static bool affinity_mask(cpu_set_t *set)
{
	CPU_ZERO(set);
	return sched_getaffinity(0, sizeof(*set), set) == 0;
}

bool cpu_available(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE || !affinity_mask(&set))
		return false;
	return CPU_ISSET(cpu, &set);
}

static void cpulist_push(struct cpulist *cl, int cpu, int *cap)
{
	if (cl->n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		int *n = realloc(cl->cpu, (size_t)ncap * sizeof(*n));

		if (!n)
			fatal("out of memory");
		cl->cpu = n;
		*cap = ncap;
	}
	cl->cpu[cl->n++] = cpu;
}

void cpulist_available(struct cpulist *out)
{
	cpu_set_t set;
	int cap = 0;

	out->n = 0;
	out->cpu = NULL;
	if (!affinity_mask(&set))
		fatal_errno("sched_getaffinity");
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpulist_push(out, c, &cap);
	if (!out->n)
		fatal("no CPU available");
}

void opt_cpulist_or_first(const char *opt, const char *arg, int n, int min,
			  const char *what, struct cpulist *out)
{
	if (arg) {
		opt_cpulist(opt, arg, out);
	} else {
		cpulist_available(out);
		if (out->n > n)
			out->n = n;
	}
	if (out->n < min)
		usage_error("%s: need %s", opt, what);
}

void opt_cpulist(const char *opt, const char *arg, struct cpulist *out)
{
	const char *p = arg, *end;
	int cap = 0;
	char avail[256];
	struct cpulist av;

	out->n = 0;
	out->cpu = NULL;
	for (;;) {
		uint64_t a, b;

		if (parse_digits(p, &end, &a) || a >= CPU_SETSIZE)
			goto bad;
		b = a;
		p = end;
		if (*p == '-') {
			if (parse_digits(p + 1, &end, &b) || b >= CPU_SETSIZE ||
			    b < a)
				goto bad;
			p = end;
		}
		for (uint64_t c = a; c <= b; c++) {
			if (!cpu_available((int)c)) {
				cpulist_available(&av);
				cpulist_format(&av, avail, sizeof(avail));
				cpulist_free(&av);
				cpulist_free(out);
				usage_error("option %s: CPU %llu is not available (available: %s)",
					    opt, (unsigned long long)c, avail);
			}
			cpulist_push(out, (int)c, &cap);
		}
		if (!*p)
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	return;
bad:
	cpulist_free(out);
	usage_error("option %s: '%s' is not a CPU list (e.g. 0-3 or 0,2,4)",
		    opt, arg);
}

void cpulist_format(const struct cpulist *cl, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < cl->n && off < len; ) {
		int j = i;
		int w;

		while (j + 1 < cl->n && cl->cpu[j + 1] == cl->cpu[j] + 1)
			j++;
		if (j > i)
			w = snprintf(buf + off, len - off, "%s%d-%d",
				     off ? "," : "", cl->cpu[i], cl->cpu[j]);
		else
			w = snprintf(buf + off, len - off, "%s%d",
				     off ? "," : "", cl->cpu[i]);
		if (w < 0)
			break;
		off += (size_t)w;
		i = j + 1;
	}
}

void cpulist_free(struct cpulist *cl)
{
	free(cl->cpu);
	cl->cpu = NULL;
	cl->n = 0;
}

int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void pin_self_or_die(int cpu)
{
	int err = pin_self(cpu);

	if (err)
		fatal("pinning to CPU %d: %s", cpu, strerror(err));
}

void spin_until(const atomic_uint *v, unsigned int want)
{
	while (atomic_load(v) != want)
		__builtin_ia32_pause();
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns, const atomic_int *stop)
{
	uint64_t end = now_ns() + ns;

	for (;;) {
		uint64_t now = now_ns(), left, slice;
		struct timespec ts;

		if (now >= end || (stop && atomic_load(stop)))
			return;
		left = end - now;
		slice = left < 10000000ull ? left : 10000000ull;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)slice;
		nanosleep(&ts, NULL);
	}
}

void fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int u = 0;
	double v = (double)b;

	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
}

/* JSON writer */

void json_start(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
}

static void json_put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void json_key(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		json_put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void json_push(struct json *j, const char *key, char open)
{
	json_key(j, key);
	fputc(open, j->f);
	if (j->depth + 1 >= JSON_MAX_DEPTH)
		fatal("JSON nesting too deep");
	j->first[++j->depth] = true;
}

void json_obj_begin(struct json *j, const char *key) { json_push(j, key, '{'); }
void json_arr_begin(struct json *j, const char *key) { json_push(j, key, '['); }

void json_obj_end(struct json *j)
{
	fputc('}', j->f);
	j->depth--;
}

void json_arr_end(struct json *j)
{
	fputc(']', j->f);
	j->depth--;
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_double(struct json *j, const char *key, double v)
{
	json_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.10g", v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_put_string(j->f, s);
}

void json_null(struct json *j, const char *key)
{
	json_key(j, key);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

void on_stop_signals(void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
