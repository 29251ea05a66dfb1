// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: kernel side. Counts the events of broadcast TLB invalidation
 * (global ASIDs, INVLPGB, TLBSYNC, broadcast flushes) and of the IPI
 * shootdowns they replace, per process and system-wide, in maps that
 * userspace (tools/tlbtop/) reads once an interval. Nothing is
 * sent per event.
 *
 * Two sources of events, chosen by userspace (tools/tlbtop/source.c) with
 * bpf_program__set_autoload() before the load:
 *  - "tracepoint": the series' tlb: tracepoints, as tp_btf programs whose
 *    arguments are the tracepoint's TP_PROTO;
 *  - "fentry": for kernels without them (upstream 6.15 and later, or no
 *    INVLPGB at all), fentry/fexit on the functions upstream has out of
 *    line: flush_tlb_mm_range() (broadcast flushes; a global ASID that
 *    appears across the call is an assign, an asid_transition that ends
 *    across it a transition done), mm_free_global_asid(),
 *    arch_tlbbatch_flush(), and native_flush_tlb_multi() for the estimate.
 *    INVLPGB and TLBSYNC are inline there: they are not counted.
 * Both share upstream's own tracepoints (tlb:tlb_flush, csd_queue_cpu or
 * ipi_send_*, vmscan) and every map.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "tlbtop.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by userspace before load. */
const volatile __u32 targ_tgid = 0;		/* -p: only this process's rows */
const volatile __u64 flush_tlb_func_addr = 0;	/* from /proc/kallsyms */
const volatile __u32 nr_cpu_words = 1;		/* 64-bit words of a cpumask */
/* fentry source: from /proc/kallsyms, 0 when the kernel has none. */
const volatile __u64 boot_cpu_data_addr = 0;
const volatile __u64 asid_available_addr = 0;	/* global_asid_available */
/* Set by userspace, fentry source without INVLPGB in use: count the IPIs avoidable. */
bool estimate = false;

/*
 * Written by userspace while running (the skeleton's mmapped .bss):
 * which of the two per-process maps and max slots events go to.
 */
__u32 gen = 0;
/*
 * Set once every program is attached: the programs are attached one by
 * one, and counting before the last one is in would make the first
 * interval disagree with itself (broadcast flushes without their INVLPGBs).
 */
__u32 armed = 0;
/* 'available' of the latest global_asid_{assign,free,reset} event. */
__u32 last_available = 0;
__u64 last_available_ns = 0;
/* Set by read_kernel_state(): the kernel uses INVLPGB (-1: unknown). */
int invlpgb_enabled = -1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tlbtop_global);
} globals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tlbtop_hist);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct tlbtop_max);
} maxes SEC(".maps");

/*
 * Per-process counters, keyed by tgid, in two buffers. Userspace flips
 * 'gen', then drains and deletes every key of the buffer no longer
 * written, so a process that exited is gone after at most two intervals
 * and the maps hold only processes active in the last interval. Not
 * preallocated: an element deleted under a program still running keeps
 * its memory until an RCU grace period ends.
 */
struct procs_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, TLBTOP_MAX_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct tlbtop_proc);
};
struct procs_map procs0 SEC(".maps");
struct procs_map procs1 SEC(".maps");

/* mms that hold a global ASID, keyed by the mm's address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TLBTOP_MAX_MMS);
	__type(key, __u64);
	__type(value, struct tlbtop_mm);
} mms SEC(".maps");

/*
 * Per CPU: where the current flush is, to tell a "local only" flush from
 * the local half of an IPI shootdown. On the sending CPU a shootdown is
 * tlb_flush(REMOTE_SEND_IPI), then one csd_queue_cpu (flush_tlb_func) per
 * target CPU, then, when this CPU is in the mask, tlb_flush(LOCAL_*) from
 * the local flush_tlb_func; preemption is off all along, so the task is
 * the same. A local-only flush is a tlb_flush(LOCAL_*) that no send by
 * the same task came before since the last flush on this CPU.
 */
#define FS_IDLE		0
#define FS_ARMED	1	/* tlb_flush(REMOTE_SEND_IPI) seen */
#define FS_SENT		2	/* ... and flush_tlb_func sent to a CPU */

struct flush_state {
	__u32 pid;
	__u32 state;
	/*
	 * fentry source, estimate: set across native_flush_tlb_multi() when
	 * its mm is one upstream's rule gives a global ASID; the sends in
	 * between are IPIs avoidable.
	 */
	__u32 eligible;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flush_state);
} fstate SEC(".maps");

static __always_inline struct tlbtop_global *global(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&globals, &zero);
}

static __always_inline struct flush_state *flush_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fstate, &zero);
}

static __always_inline void leader_comm(char *dst)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct task_struct *leader = BPF_CORE_READ(t, group_leader);

	bpf_core_read_str(dst, TLBTOP_COMM_LEN, &leader->comm);
}

/* The current process's counters in this interval's buffer, or NULL. */
static __always_inline struct tlbtop_proc *proc(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct tlbtop_proc *p;
	void *map;

	if (targ_tgid && tgid != targ_tgid)
		return NULL;
	map = (gen & 1) ? (void *)&procs1 : (void *)&procs0;
	p = bpf_map_lookup_elem(map, &tgid);
	if (!p) {
		struct tlbtop_proc zero = {};

		leader_comm(zero.comm);
		bpf_map_update_elem(map, &tgid, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(map, &tgid);
		if (!p)
			return NULL;	/* full: the process is not counted */
	}
	p->events++;
	return p;
}

static __always_inline __u64 popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* flush_tlb_func was sent to ncpus other CPUs by the current task. */
static __always_inline void count_shootdown_send(__u64 ncpus)
{
	__u32 pid = (__u32)bpf_get_current_pid_tgid();
	struct tlbtop_global *g = global();
	struct flush_state *st = flush_state();
	struct tlbtop_proc *p;
	bool first;

	if (!g || !st)
		return;
	first = !(st->state == FS_SENT && st->pid == pid);
	if (first) {
		g->ipi_shootdowns++;
		st->state = FS_SENT;
		st->pid = pid;
	}
	g->ipis_sent += ncpus;
	if (st->eligible)
		g->ipis_avoidable += ncpus;
	p = proc();
	if (p) {
		if (first)
			p->ipi_shootdowns++;
		p->ipis_sent += ncpus;
		if (st->eligible)
			p->ipis_avoidable += ncpus;
	}
}

/*
 * 6.5 and later trace each CPU that smp_call_function_many_cond() queues
 * work for here, with the function; ipi_send_* then name only the generic
 * IPI handler. Userspace loads this or the two below, never both.
 *
 * raw_tp, not tp_btf: the verifier refuses a tp_btf program's read of an
 * argument that points to a function (func is a smp_call_func_t). The
 * arguments are the same TP_PROTO, as plain u64s.
 */
SEC("raw_tp/csd_queue_cpu")
int BPF_PROG(csd_queue_cpu, unsigned int cpu, unsigned long callsite,
	     void *func, void *csd)
{
	if (!armed || (__u64)func != flush_tlb_func_addr)
		return 0;
	count_shootdown_send(1);
	return 0;
}

/* Kernels that trace the function in ipi_send_cpu(mask) (6.4). */
SEC("tp_btf/ipi_send_cpu")
int BPF_PROG(ipi_send_cpu, unsigned int cpu, unsigned long callsite,
	     void *callback)
{
	if (!armed || (__u64)callback != flush_tlb_func_addr)
		return 0;
	count_shootdown_send(1);
	return 0;
}

SEC("tp_btf/ipi_send_cpumask")
int BPF_PROG(ipi_send_cpumask, const struct cpumask *mask,
	     unsigned long callsite, void *callback)
{
	__u64 n = 0;

	if (!armed || (__u64)callback != flush_tlb_func_addr)
		return 0;
	for (int i = 0; i < TLBTOP_MAX_MASK_WORDS; i++) {
		__u64 w = 0;

		if (i >= nr_cpu_words)
			break;
		bpf_core_read(&w, sizeof(w), &mask->bits[i]);
		n += popcount64(w);
	}
	count_shootdown_send(n);
	return 0;
}

SEC("tp_btf/tlb_flush")
int BPF_PROG(tlb_flush, int reason, unsigned long pages)
{
	__u32 pid = (__u32)bpf_get_current_pid_tgid();
	struct tlbtop_global *g;
	struct flush_state *st;
	struct tlbtop_proc *p;

	if (!armed || reason == TLBTOP_FLUSH_ON_TASK_SWITCH)
		return 0;
	g = global();
	st = flush_state();
	if (!g || !st)
		return 0;
	switch (reason) {
	case TLBTOP_REMOTE_SEND_IPI:
		g->multi_flushes++;
		st->state = FS_ARMED;
		st->pid = pid;
		break;
	case TLBTOP_REMOTE_SHOOTDOWN:
		g->remote_flushes++;
		break;
	case TLBTOP_LOCAL_SHOOTDOWN:
	case TLBTOP_LOCAL_MM_SHOOTDOWN:
		g->local_flushes++;
		if (!(st->state == FS_SENT && st->pid == pid)) {
			g->local_only++;
			p = proc();
			if (p)
				p->local_only++;
		}
		st->state = FS_IDLE;
		break;
	}
	return 0;
}

/*
 * Note that mm holds global ASID asid. The process is mm->owner's
 * (CONFIG_MEMCG), else the current task's.
 */
static __always_inline long note_mm_flags(struct mm_struct *mm, __u32 asid,
					  __u32 cpus, __u64 assigned_ns,
					  __u64 flags)
{
	struct task_struct *owner = NULL;
	struct tlbtop_mm v = {};
	__u64 key = (__u64)mm;

	if (bpf_core_field_exists(mm->owner))
		owner = BPF_CORE_READ(mm, owner);
	if (owner) {
		v.tgid = BPF_CORE_READ(owner, tgid);
		bpf_core_read_str(v.comm, sizeof(v.comm), &owner->comm);
	} else {
		v.tgid = bpf_get_current_pid_tgid() >> 32;
		leader_comm(v.comm);
	}
	v.asid = asid;
	v.cpus = cpus;
	v.assigned_ns = assigned_ns;
	return bpf_map_update_elem(&mms, &key, &v, flags);
}

static __always_inline void note_mm(struct mm_struct *mm, __u32 asid,
				    __u32 cpus, __u64 assigned_ns)
{
	note_mm_flags(mm, asid, cpus, assigned_ns, BPF_ANY);
}

SEC("tp_btf/broadcast_flush")
int BPF_PROG(broadcast_flush, struct mm_struct *mm, u16 asid,
	     unsigned long start, unsigned long end, unsigned int stride_shift,
	     bool freed_tables, unsigned int invlpgbs, unsigned int cpus)
{
	struct tlbtop_global *g = global();
	__u64 key = (__u64)mm;
	struct tlbtop_proc *p;
	struct tlbtop_mm *m;

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->bcast_flushes++;
	g->bcast_invlpgbs += invlpgbs;
	g->ipis_avoided += cpus;

	/* An mm that got its ASID before tlbtop started is learnt here. */
	m = bpf_map_lookup_elem(&mms, &key);
	if (!m || m->asid != asid)
		note_mm(mm, asid, 0, 0);

	p = proc();
	if (p) {
		p->bcast_flushes++;
		p->ipis_avoided += cpus;
	}
	return 0;
}

SEC("tp_btf/invlpgb_issue")
int BPF_PROG(invlpgb_issue, unsigned long pcid, unsigned long addr,
	     u16 nr_pages, bool pmd_stride, u8 flags)
{
	struct tlbtop_global *g = global();
	struct tlbtop_proc *p;

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->invlpgb++;
	if (flags & TLBTOP_INVLPGB_VA) {
		if (pmd_stride)
			g->invlpgb_pmd_pages += nr_pages;
		else
			g->invlpgb_pages += nr_pages;
	} else {
		g->invlpgb_full++;
	}
	p = proc();
	if (p) {
		p->invlpgb++;
		if (flags & TLBTOP_INVLPGB_VA)
			p->invlpgb_pages += nr_pages;
	}
	return 0;
}

SEC("tp_btf/tlbsync_wait")
int BPF_PROG(tlbsync_wait, u64 ns, unsigned int invlpgbs)
{
	struct tlbtop_global *g = global();
	__u32 zero = 0, slot, mkey = gen & 1;
	struct tlbtop_hist *h;
	struct tlbtop_max *m;
	struct tlbtop_proc *p;

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->tlbsync_waits++;
	g->tlbsync_ns += ns;
	g->tlbsync_invlpgbs += invlpgbs;
	h = bpf_map_lookup_elem(&hist, &zero);
	if (h) {
		slot = log2_u64(ns);
		if (slot >= TLBTOP_HIST_SLOTS)
			slot = TLBTOP_HIST_SLOTS - 1;
		h->slots[slot]++;
	}
	m = bpf_map_lookup_elem(&maxes, &mkey);
	if (m && ns > m->tlbsync_max_ns)
		m->tlbsync_max_ns = ns;
	p = proc();
	if (p) {
		p->tlbsync_waits++;
		p->tlbsync_ns += ns;
	}
	return 0;
}

static __always_inline void note_available(unsigned int available)
{
	last_available = available;
	last_available_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/global_asid_assign")
int BPF_PROG(global_asid_assign, struct mm_struct *mm, u16 asid,
	     unsigned int cpus, unsigned int available)
{
	struct tlbtop_global *g = global();
	struct tlbtop_proc *p;

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->asid_assigns++;
	note_available(available);
	note_mm(mm, asid, cpus, bpf_ktime_get_ns());
	p = proc();
	if (p)
		p->asid_assigns++;
	return 0;
}

SEC("tp_btf/global_asid_free")
int BPF_PROG(global_asid_free, struct mm_struct *mm, u16 asid,
	     unsigned int available)
{
	struct tlbtop_global *g = global();
	__u64 key = (__u64)mm;

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->asid_frees++;
	note_available(available);
	bpf_map_delete_elem(&mms, &key);
	return 0;
}

SEC("tp_btf/global_asid_reset")
int BPF_PROG(global_asid_reset, unsigned int reusable, unsigned int available)
{
	struct tlbtop_global *g = global();

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->asid_resets++;
	note_available(available);
	return 0;
}

SEC("tp_btf/global_asid_transition_done")
int BPF_PROG(global_asid_transition_done, struct mm_struct *mm, u16 asid)
{
	struct tlbtop_global *g = global();

	if (!armed)
		return 0;

	if (g)
		g->asid_transitions++;
	return 0;
}

SEC("tp_btf/tlbbatch_flush")
int BPF_PROG(tlbbatch_flush, unsigned int cpus, bool pending)
{
	struct tlbtop_global *g = global();

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->batch_flushes++;
	if (pending)
		g->batch_pending++;
	g->batch_ipis += cpus;
	return 0;
}

SEC("tp_btf/mm_vmscan_lru_shrink_inactive")
int BPF_PROG(mm_vmscan_lru_shrink_inactive, int nid, unsigned long nr_scanned,
	     unsigned long nr_reclaimed, void *stat, int priority, int file)
{
	struct tlbtop_global *g = global();

	if (!armed)
		return 0;

	if (!g)
		return 0;
	g->reclaim_scanned += nr_scanned;
	g->reclaim_pages += nr_reclaimed;
	return 0;
}

/*
 * The fentry source.
 *
 * mm_cpumask(): the bitmap after the mm_struct, at flexible_array since
 * 6.8 and at cpu_bitmap before it.
 */
struct mm_struct___fa {
	char flexible_array[0];
} __attribute__((preserve_access_index));

struct arch_tlbflush_unmap_batch___up {
	bool unmapped_pages;
} __attribute__((preserve_access_index));

extern struct tlb_state cpu_tlbstate __ksym __weak;
extern struct tlb_state_shared cpu_tlbstate_shared __ksym __weak;

static __always_inline const void *mm_mask(struct mm_struct *mm)
{
	if (bpf_core_field_exists(struct mm_struct___fa, flexible_array))
		return (void *)mm + bpf_core_field_offset(struct mm_struct___fa,
							  flexible_array);
	return (void *)mm + bpf_core_field_offset(struct mm_struct, cpu_bitmap);
}

/* The CPUs of a cpumask, less the current one. */
static __always_inline __u32 mask_others(const void *mask)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 n = 0;

	for (int i = 0; i < TLBTOP_MAX_MASK_WORDS; i++) {
		__u64 w = 0;

		if (i >= nr_cpu_words)
			break;
		bpf_probe_read_kernel(&w, sizeof(w), mask + i * 8);
		if (cpu / 64 == i)
			w &= ~(1ULL << (cpu % 64));
		n += popcount64(w);
	}
	return n;
}

static __always_inline __u32 mm_asid(struct mm_struct *mm)
{
	if (!bpf_core_field_exists(mm->context.global_asid))
		return 0;
	return BPF_CORE_READ(mm, context.global_asid);
}

static __always_inline __u32 mm_transition(struct mm_struct *mm)
{
	if (!bpf_core_field_exists(mm->context.asid_transition))
		return 0;
	return BPF_CORE_READ(mm, context.asid_transition);
}

static __always_inline void read_available(void)
{
	int v = 0;

	if (!asid_available_addr ||
	    bpf_probe_read_kernel(&v, sizeof(v), (void *)asid_available_addr))
		return;
	note_available(v);
}

/* What a call of flush_tlb_mm_range() or mm_free_global_asid() began with. */
struct call_state {
	__u64 mm;
	__u32 asid;
	__u32 transition;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);		/* thread id */
	__type(value, struct call_state);
} calls SEC(".maps");

SEC("fentry/flush_tlb_mm_range")
int BPF_PROG(fentry_flush_tlb_mm_range, struct mm_struct *mm,
	     unsigned long start, unsigned long end, unsigned int stride_shift,
	     bool freed_tables)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call_state cs = {};
	struct tlbtop_global *g;
	__u64 key = (__u64)mm;
	struct tlbtop_proc *p;
	struct tlbtop_mm *m;
	__u32 cpus;

	if (!armed)
		return 0;
	cs.mm = key;
	cs.asid = mm_asid(mm);
	cs.transition = mm_transition(mm);
	/* Nothing can change across the call: no state to keep. */
	if (cs.asid && !cs.transition) {
		bpf_map_delete_elem(&calls, &tid);
	} else {
		bpf_map_update_elem(&calls, &tid, &cs, BPF_ANY);
	}
	if (!cs.asid)
		return 0;

	/* A global ASID at entry: the call is a broadcast flush. */
	g = global();
	if (!g)
		return 0;
	cpus = mask_others(mm_mask(mm));
	g->bcast_flushes++;
	g->ipis_avoided += cpus;
	m = bpf_map_lookup_elem(&mms, &key);
	if (!m || m->asid != cs.asid)
		note_mm(mm, cs.asid, 0, 0);
	p = proc();
	if (p) {
		p->bcast_flushes++;
		p->ipis_avoided += cpus;
	}
	return 0;
}

SEC("fexit/flush_tlb_mm_range")
int BPF_PROG(fexit_flush_tlb_mm_range, struct mm_struct *mm,
	     unsigned long start, unsigned long end, unsigned int stride_shift,
	     bool freed_tables)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tlbtop_global *g = global();
	__u64 key = (__u64)mm, now;
	struct call_state *cs;
	struct tlbtop_proc *p;
	struct tlbtop_mm *m;
	__u32 asid, cpus;

	cs = bpf_map_lookup_elem(&calls, &tid);
	if (!cs || !g)
		return 0;
	if (cs->mm != key) {
		bpf_map_delete_elem(&calls, &tid);
		return 0;
	}
	asid = mm_asid(mm);
	if (!cs->asid && asid) {
		/*
		 * consider_global_asid() gave the mm one. Another thread may
		 * have noted the mm already, in a broadcast flush: the assign
		 * is counted once, by whoever sets assigned_ns.
		 */
		now = bpf_ktime_get_ns();
		cpus = mask_others(mm_mask(mm)) + 1;
		m = bpf_map_lookup_elem(&mms, &key);
		if (m && m->asid != asid) {	/* an mm freed and reused */
			bpf_map_delete_elem(&mms, &key);
			m = NULL;
		}
		if (!m) {
			if (!note_mm_flags(mm, asid, cpus, now, BPF_NOEXIST))
				goto counted;
			m = bpf_map_lookup_elem(&mms, &key);	/* lost the race */
			if (!m)
				goto transition;
		}
		if (__sync_val_compare_and_swap(&m->assigned_ns, 0, now))
			goto transition;	/* counted by another thread */
		m->cpus = cpus;
counted:
		g->asid_assigns++;
		read_available();
		p = proc();
		if (p)
			p->asid_assigns++;
	}
transition:
	if (cs->transition && !mm_transition(mm)) {
		m = bpf_map_lookup_elem(&mms, &key);
		if (m && !__sync_val_compare_and_swap(&m->transitioned, 0, 1))
			g->asid_transitions++;
	}
	bpf_map_delete_elem(&calls, &tid);
	return 0;
}

SEC("fentry/mm_free_global_asid")
int BPF_PROG(fentry_mm_free_global_asid, struct mm_struct *mm)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call_state cs = {};

	cs.mm = (__u64)mm;
	cs.asid = mm_asid(mm);
	if (armed && cs.asid)
		bpf_map_update_elem(&calls, &tid, &cs, BPF_ANY);
	return 0;
}

SEC("fexit/mm_free_global_asid")
int BPF_PROG(fexit_mm_free_global_asid, struct mm_struct *mm)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tlbtop_global *g = global();
	__u64 key = (__u64)mm;
	struct call_state *cs;

	cs = bpf_map_lookup_elem(&calls, &tid);
	if (!cs)
		return 0;
	if (g && cs->mm == key && cs->asid && !mm_asid(mm)) {
		g->asid_frees++;
		read_available();
		bpf_map_delete_elem(&mms, &key);
	}
	bpf_map_delete_elem(&calls, &tid);
	return 0;
}

SEC("fentry/arch_tlbbatch_flush")
int BPF_PROG(fentry_arch_tlbbatch_flush, struct arch_tlbflush_unmap_batch *batch)
{
	struct arch_tlbflush_unmap_batch___up *b = (void *)batch;
	struct tlbtop_global *g = global();

	if (!armed || !g)
		return 0;
	g->batch_flushes++;
	if (invlpgb_enabled > 0 &&
	    bpf_core_field_exists(b->unmapped_pages) &&
	    BPF_CORE_READ(b, unmapped_pages))
		g->batch_pending++;
	g->batch_ipis += mask_others(&batch->cpumask);
	return 0;
}

/*
 * The estimate, on a kernel that does not use INVLPGB: would upstream's
 * rule give this mm a global ASID? consider_global_asid() gives one to an
 * mm active (loaded and not lazy) on more than 3 CPUs when it sends a
 * flush by IPI, and the mm keeps it. Every later IPI flush of such an mm
 * would be a broadcast: its IPIs are avoidable. The rule's sampling (one
 * flush in 32 looks) is left out: the estimate is the count from the
 * first flush that meets the rule.
 */
#define ELIGIBLE_ACTIVE_CPUS	3	/* more than this many */
#define ESTIMATE_MAX_CPUS	(TLBTOP_MAX_MASK_WORDS * 64)

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TLBTOP_MAX_MMS);
	__type(key, __u64);		/* mm */
	__type(value, __u8);
} eligible_mms SEC(".maps");

struct active_ctx {
	struct mm_struct *mm;
	const void *mask;
	__u32 active;
};

static long count_active(__u64 cpu, struct active_ctx *c)
{
	struct tlb_state_shared *sh;
	struct tlb_state *ts;
	__u64 w = 0;

	if (cpu >= nr_cpu_words * 64)
		return 1;
	bpf_probe_read_kernel(&w, sizeof(w), c->mask + (cpu / 64) * 8);
	if (!(w & (1ULL << (cpu % 64))))
		return 0;
	ts = bpf_per_cpu_ptr(&cpu_tlbstate, cpu);
	sh = bpf_per_cpu_ptr(&cpu_tlbstate_shared, cpu);
	if (!ts || !sh)
		return 0;
	if (ts->loaded_mm == c->mm && !sh->is_lazy)
		c->active++;
	return c->active > ELIGIBLE_ACTIVE_CPUS;
}

SEC("fentry/native_flush_tlb_multi")
int BPF_PROG(fentry_native_flush_tlb_multi, const struct cpumask *cpumask,
	     const struct flush_tlb_info *info)
{
	struct flush_state *st = flush_state();
	struct active_ctx c = {};
	__u64 key;
	__u8 one = 1;

	if (!armed || !estimate || !st)
		return 0;
	c.mm = BPF_CORE_READ(info, mm);
	if (!c.mm)
		return 0;	/* reclaim's batch: no mm, no global ASID */
	key = (__u64)c.mm;
	if (!bpf_map_lookup_elem(&eligible_mms, &key)) {
		c.mask = mm_mask(c.mm);
		bpf_loop(ESTIMATE_MAX_CPUS, count_active, &c, 0);
		if (c.active <= ELIGIBLE_ACTIVE_CPUS)
			return 0;
		bpf_map_update_elem(&eligible_mms, &key, &one, BPF_ANY);
	}
	st->eligible = 1;
	return 0;
}

SEC("fexit/native_flush_tlb_multi")
int BPF_PROG(fexit_native_flush_tlb_multi, const struct cpumask *cpumask,
	     const struct flush_tlb_info *info)
{
	struct flush_state *st = flush_state();

	if (st)
		st->eligible = 0;
	return 0;
}

/*
 * Run once by userspace at start (BPF_PROG_RUN), then once an interval:
 * whether the kernel uses INVLPGB (X86_FEATURE_INVLPGB, word 13 bit 3 of
 * boot_cpu_data's capabilities, which tlbi=ipi, PTI or a CPU without it
 * leave clear) and how many global ASIDs are available.
 */
#define TLBTOP_INVLPGB_WORD	13
#define TLBTOP_INVLPGB_BIT	3

SEC("syscall")
int read_kernel_state(void *ctx)
{
	__u32 w = 0;
	__u64 off;

	if (boot_cpu_data_addr) {
		off = bpf_core_field_offset(struct cpuinfo_x86, x86_capability);
		if (!bpf_probe_read_kernel(&w, sizeof(w), (void *)(boot_cpu_data_addr +
					   off + TLBTOP_INVLPGB_WORD * 4)))
			invlpgb_enabled = (w >> TLBTOP_INVLPGB_BIT) & 1;
	}
	read_available();
	return 0;
}
