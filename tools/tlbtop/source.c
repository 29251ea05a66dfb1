// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: the checks before anything is loaded (root, BTF, the kernel's
 * events, flush_tlb_func's address), the sources and the choice of one,
 * and the loading, attaching and arming of the BPF programs. Each check
 * that fails says what is missing and exits with EXIT_ERROR (3).
 */
#define _GNU_SOURCE
#include "../common/common.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "source.h"
#include "state.h"
#include "tlbtop.skel.h"

#define VMLINUX_BTF	"/sys/kernel/btf/vmlinux"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

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

/*
 * Whether the running kernel has function 'name' for fentry: a BTF FUNC.
 * Returns its argument count, or -1 when it is absent (or inlined).
 */
static int btf_func_args(const struct btf *btf, const char *name)
{
	const struct btf_type *t;
	int id;

	id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t))
		return -1;
	return (int)btf_vlen(t);
}

/* Whether struct 'sname' of the kernel has a member 'member'. */
static bool btf_has_member(const struct btf *btf, const char *sname,
			   const char *member)
{
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (unsigned int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return true;
	return false;
}

/*
 * A symbol's address from /proc/kallsyms: name itself, or, with
 * 'suffixes' set and no such symbol, name.<suffix> (a static function the
 * compiler renamed, name.isra.0 say), never name.cold (the function's
 * unlikely part, split off). 0 when the kernel has no such symbol; die()
 * when it hides the addresses.
 */
static unsigned long long kallsyms_addr(const char *name, bool suffixes)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	unsigned long long addr, exact = 0, renamed = 0;
	size_t len = strlen(name);
	bool seen = false;

	if (!f)
		die("cannot open /proc/kallsyms: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3)
			continue;
		if (!strcmp(sym, name)) {
			seen = true;
			exact = addr;
			break;
		}
		if (suffixes && !strncmp(sym, name, len) && sym[len] == '.' &&
		    strcmp(sym + len, ".cold") && !renamed) {
			seen = true;
			renamed = addr;
		}
	}
	fclose(f);
	if (seen && !exact && !renamed)
		die("/proc/kallsyms hides %s's address (kernel.kptr_restrict?): run tlbtop as root",
		    name);
	return exact ? exact : renamed;
}

/* flush_tlb_func's address (a static function). */
static unsigned long long find_flush_tlb_func(void)
{
	unsigned long long a = kallsyms_addr("flush_tlb_func", true);

	if (!a)
		die("the kernel has no symbol flush_tlb_func in /proc/kallsyms, which tlbtop needs to tell TLB shootdown IPIs from others");
	return a;
}

/* The shootdown sends: csd_queue_cpu, or else both ipi_send_*. */
#define SEND_EVENTS \
	{ "csd", "csd_queue_cpu", 4, 0, false }, \
	{ "ipi", "ipi_send_cpu", 3, 0, false }, \
	{ "ipi", "ipi_send_cpumask", 3, 0, false }

/* The events a source cannot do without that the kernel lacks. */
static size_t missing(const struct tlbtop_source *src, bool report,
		      const char *hint)
{
	const struct source_event *ev = src->events;
	size_t n = 0, csd = 0;

	while (csd < src->nevents && strcmp(ev[csd].name, "csd_queue_cpu"))
		csd++;
	for (size_t i = 0; i < src->nevents; i++) {
		if (ev[i].present || ev[i].caps)
			continue;
		if (i > csd && i <= csd + 2 && ev[csd].present)
			continue;	/* ipi_send_*: not needed with csd_queue_cpu */
		if (i == csd && ev[csd + 1].present && ev[csd + 2].present)
			continue;	/* csd_queue_cpu: ipi_send_* will do */
		if (report && ev[i].sys)
			fprintf(stderr, "%s: source %s: the kernel has no tracepoint %s:%s%s\n",
				prog_name, src->name, ev[i].sys, ev[i].name, hint);
		else if (report)
			fprintf(stderr, "%s: source %s: the kernel has no function %s in its BTF (absent or inlined)%s\n",
				prog_name, src->name, ev[i].name, hint);
		n++;
	}
	return n;
}

/* The tracepoint source: the series' tracepoints, as tp_btf. */

static struct source_event tp_events[] = {
	{ "tlb", "global_asid_assign", 4, 0, false },
	{ "tlb", "global_asid_free", 3, 0, false },
	{ "tlb", "global_asid_reset", 2, 0, false },
	{ "tlb", "global_asid_transition_done", 2, 0, false },
	{ "tlb", "invlpgb_issue", 5, 0, false },
	{ "tlb", "tlbsync_wait", 2, 0, false },
	{ "tlb", "broadcast_flush", 8, 0, false },
	{ "tlb", "tlbbatch_flush", 2, 0, false },
	{ "tlb", "tlb_flush", 2, 0, false },
	{ "vmscan", "mm_vmscan_lru_shrink_inactive", 6, 0, false },
	SEND_EVENTS,
};

static bool tp_available(const struct tlbtop_source *src, bool report)
{
	return !missing(src, report, ": boot the patched kernel (make kernel), or use --source=fentry");
}

/*
 * The fentry source: upstream's own functions. Needed: flush_tlb_mm_range
 * and upstream's tracepoints; the rest add what they name.
 */
static struct source_event fentry_events[] = {
	{ NULL, "flush_tlb_mm_range", 5, 0, false },
	{ NULL, "mm_free_global_asid", 1, CAP_ASID | CAP_BCAST | CAP_POOL, false },
	{ NULL, "arch_tlbbatch_flush", 1, CAP_BATCH | CAP_PENDING, false },
	{ NULL, "native_flush_tlb_multi", 2, CAP_ESTIMATE, false },
	{ "tlb", "tlb_flush", 2, 0, false },
	{ "vmscan", "mm_vmscan_lru_shrink_inactive", 6, 0, false },
	SEND_EVENTS,
};

static bool fentry_available(const struct tlbtop_source *src, bool report)
{
	return !missing(src, report, "");
}

/* The sources, the preferred first. */
static const struct tlbtop_source sources[] = {
	{
		.name = "tracepoint",
		.events = tp_events,
		.nevents = ARRAY_SIZE(tp_events),
		.caps = CAP_ASID | CAP_RESETS | CAP_BCAST | CAP_INVLPGB |
			CAP_TLBSYNC | CAP_BATCH | CAP_PENDING | CAP_POOL,
		.available = tp_available,
	},
	{
		.name = "fentry",
		.events = fentry_events,
		.nevents = ARRAY_SIZE(fentry_events),
		.caps = CAP_ASID | CAP_BCAST | CAP_BATCH | CAP_PENDING |
			CAP_POOL | CAP_ESTIMATE,
		.available = fentry_available,
	},
};
#define NSOURCES	ARRAY_SIZE(sources)

const char *source_names(void)
{
	return "tracepoint, fentry";
}

/* Choosing a source */

static bool fentry_has_unmapped_pages;
static bool fentry_has_tlbstate;

const struct tlbtop_source *source_pick(const char *want)
{
	const struct tlbtop_source *src = NULL;
	struct btf *btf;

	if (want) {
		for (size_t s = 0; s < NSOURCES; s++)
			if (!strcmp(sources[s].name, want))
				src = &sources[s];
		if (!src)
			die("--source: unknown source '%s' (%s)", want, source_names());
	}
	if (!has_cap(CAP_SYS_ADMIN) && !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON)))
		die("needs root to load BPF programs and read debugfs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): run it as root");
	if (access(VMLINUX_BTF, R_OK))
		die("the kernel has no BTF (%s: %s): tlbtop needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		    VMLINUX_BTF, strerror(errno));
	btf = btf__load_vmlinux_btf();
	if (!btf)
		die("cannot read the kernel's BTF (%s): %s", VMLINUX_BTF, strerror(errno));

	/*
	 * Which events the kernel has. One with other arguments than the BPF
	 * program was written for is not a missing event but a tlbtop built
	 * for another kernel: that ends the run whatever the source.
	 */
	for (size_t s = 0; s < NSOURCES; s++) {
		struct source_event *ev = sources[s].events;

		for (size_t i = 0; i < sources[s].nevents; i++) {
			int n = ev[i].sys ? btf_tracepoint_args(btf, ev[i].name) :
					    btf_func_args(btf, ev[i].name);

			ev[i].present = n >= 0;
			if (n >= 0 && (unsigned)n != ev[i].nargs) {
				btf__free(btf);
				die("the kernel's %s %s has %d arguments, tlbtop expects %u: tlbtop does not match this kernel",
				    ev[i].sys ? "tracepoint" : "function", ev[i].name, n, ev[i].nargs);
			}
		}
	}
	fentry_has_unmapped_pages = btf_has_member(btf, "arch_tlbflush_unmap_batch",
						   "unmapped_pages");
	fentry_has_tlbstate = btf__find_by_name_kind(btf, "cpu_tlbstate", BTF_KIND_VAR) > 0 &&
			      btf__find_by_name_kind(btf, "cpu_tlbstate_shared", BTF_KIND_VAR) > 0;
	btf__free(btf);

	if (src) {
		if (!src->available(src, true))
			exit(EXIT_ERROR);
		return src;
	}
	for (size_t s = 0; s < NSOURCES; s++)
		if (sources[s].available(&sources[s], false))
			return &sources[s];
	/* None will do: say what each lacks. */
	for (size_t s = 0; s < NSOURCES; s++)
		sources[s].available(&sources[s], true);
	exit(EXIT_ERROR);
}

/*
 * Whether program 'prog' belongs to source src: the program of a
 * tracepoint it has, fentry_/fexit_ of a function it has, and the fentry
 * source's reader of kernel state.
 */
static bool source_loads(const struct tlbtop_source *src, const char *prog)
{
	const struct source_event *ev = src->events;
	bool csd = false;

	for (size_t i = 0; i < src->nevents; i++)
		if (!strcmp(ev[i].name, "csd_queue_cpu") && ev[i].present)
			csd = true;
	if (!strcmp(prog, "read_kernel_state"))
		return !strcmp(src->name, "fentry");
	for (size_t i = 0; i < src->nevents; i++) {
		const char *fn = prog;

		if (!ev[i].present)
			continue;
		if (ev[i].sys) {
			if (strcmp(prog, ev[i].name))
				continue;
			return !(csd && !strncmp(prog, "ipi_send_", 9));
		}
		if (!strncmp(fn, "fentry_", 7))
			fn += 7;
		else if (!strncmp(fn, "fexit_", 6))
			fn += 6;
		else
			continue;
		if (!strcmp(fn, ev[i].name)) {
			if (!strcmp(fn, "native_flush_tlb_multi"))
				return fentry_has_tlbstate;
			return true;
		}
	}
	return false;
}

/* What src counts on this kernel, before what the load tells. */
static unsigned int source_caps(const struct tlbtop_source *src)
{
	unsigned int caps = src->caps;

	for (size_t i = 0; i < src->nevents; i++)
		if (!src->events[i].present)
			caps &= ~src->events[i].caps;
	if (!strcmp(src->name, "fentry")) {
		if (!fentry_has_unmapped_pages)
			caps &= ~CAP_PENDING;
		if (!fentry_has_tlbstate)
			caps &= ~CAP_ESTIMATE;
	}
	return caps;
}

/* Loading */

struct tlbtop_bpf *load_and_attach(const struct tlbtop_source *src)
{
	struct bpf_program *prog;
	struct tlbtop_bpf *skel;
	unsigned long long ftf;
	char err[128];
	int e;

	ftf = find_flush_tlb_func();

	skel = tlbtop_bpf__open();
	if (!skel)
		die("cannot open the BPF object: %s", strerror(errno));
	skel->rodata->targ_tgid = (__u32)env.pid;
	skel->rodata->flush_tlb_func_addr = ftf;
	skel->rodata->nr_cpu_words = (__u32)((st.ncpus + 63) / 64);
	if (skel->rodata->nr_cpu_words > TLBTOP_MAX_MASK_WORDS)
		skel->rodata->nr_cpu_words = TLBTOP_MAX_MASK_WORDS;
	st.caps = source_caps(src);
	if (!strcmp(src->name, "fentry")) {
		skel->rodata->boot_cpu_data_addr = kallsyms_addr("boot_cpu_data", false);
		if (st.caps & CAP_POOL)
			skel->rodata->asid_available_addr =
				kallsyms_addr("global_asid_available", false);
		if (!skel->rodata->asid_available_addr)
			st.caps &= ~CAP_POOL;
	}
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, source_loads(src, bpf_program__name(prog)));

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
	st.source = src->name;
	st.skel = skel;
	st.invlpgb = -1;
	if (!strcmp(src->name, "fentry")) {
		source_refresh();
		st.invlpgb = skel->data->invlpgb_enabled;
		/*
		 * Without INVLPGB in use, nothing is broadcast: what the
		 * IPIs would have saved is the estimate.
		 */
		if (st.invlpgb != 1 && (st.caps & CAP_ESTIMATE)) {
			st.estimate = true;
			skel->bss->estimate = true;
		}
	}
	if (!st.estimate)
		st.caps &= ~CAP_ESTIMATE;
	/* Count from now on, with every program in place. */
	__atomic_store_n(&skel->bss->armed, 1, __ATOMIC_SEQ_CST);
	return skel;
}

void source_refresh(void)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int fd;

	if (!st.skel || !bpf_program__autoload(st.skel->progs.read_kernel_state))
		return;
	fd = bpf_program__fd(st.skel->progs.read_kernel_state);
	if (bpf_prog_test_run_opts(fd, &opts) && env.verbose)
		fprintf(stderr, "%s: reading the kernel's state failed: %s\n",
			prog_name, strerror(errno));
}
