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

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "source.h"
#include "state.h"
#include "tlbtop.skel.h"

#define VMLINUX_BTF	"/sys/kernel/btf/vmlinux"

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

/* The tracepoint source: the series' tracepoints, as tp_btf. */

static struct source_event tp_events[] = {
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
#define TP_NEVENTS	(sizeof(tp_events) / sizeof(tp_events[0]))
#define TP_CSD		(TP_NEVENTS - 3)	/* index of csd_queue_cpu */

static bool tp_available(const struct tlbtop_source *src, bool report)
{
	const struct source_event *ev = src->events;
	size_t missing = 0;

	for (size_t i = 0; i < src->nevents; i++) {
		if (ev[i].present)
			continue;
		if (i > TP_CSD && ev[TP_CSD].present)
			continue;	/* ipi_send_*: not needed with csd_queue_cpu */
		if (i == TP_CSD && ev[TP_CSD + 1].present && ev[TP_CSD + 2].present)
			continue;	/* csd_queue_cpu: ipi_send_* will do */
		if (report)
			fprintf(stderr, "%s: the kernel has no tracepoint %s:%s: boot the patched kernel (make kernel)\n",
				prog_name, ev[i].sys, ev[i].name);
		missing++;
	}
	return !missing;
}

/* The shootdown sends: csd_queue_cpu where there is one, else ipi_send_*. */
static void tp_setup(const struct tlbtop_source *src, struct tlbtop_bpf *skel)
{
	if (src->events[TP_CSD].present) {
		bpf_program__set_autoload(skel->progs.ipi_send_cpu, false);
		bpf_program__set_autoload(skel->progs.ipi_send_cpumask, false);
	} else {
		bpf_program__set_autoload(skel->progs.csd_queue_cpu, false);
	}
}

/* The sources, the preferred first. */
static const struct tlbtop_source sources[] = {
	{
		.name = "tracepoint",
		.events = tp_events,
		.nevents = TP_NEVENTS,
		.available = tp_available,
		.setup = tp_setup,
	},
};
#define NSOURCES	(sizeof(sources) / sizeof(sources[0]))

/* Choosing a source */

const struct tlbtop_source *source_pick(void)
{
	struct btf *btf;

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
			int n = btf_tracepoint_args(btf, ev[i].name);

			ev[i].present = n >= 0;
			if (n >= 0 && (unsigned)n != ev[i].nargs) {
				btf__free(btf);
				die("the kernel's tracepoint %s:%s has %d arguments, tlbtop expects %u: tlbtop does not match this kernel",
				    ev[i].sys, ev[i].name, n, ev[i].nargs);
			}
		}
	}
	btf__free(btf);

	for (size_t s = 0; s < NSOURCES; s++)
		if (sources[s].available(&sources[s], false))
			return &sources[s];
	/* None will do: say what the preferred one lacks. */
	sources[0].available(&sources[0], true);
	exit(EXIT_ERROR);
}

/* Loading */

struct tlbtop_bpf *load_and_attach(const struct tlbtop_source *src)
{
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
	src->setup(src, skel);

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
