/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop: the structures that bpf/tlbtop.bpf.c (kernel side) and
 * tools/tlbtop/ (userspace) share. Every counter only grows,
 * except where a comment says otherwise; userspace takes differences.
 */
#ifndef TLBTOP_H
#define TLBTOP_H

#define TLBTOP_COMM_LEN		16
#define TLBTOP_MAX_PROCS	10240	/* per-process map entries, each buffer */
#define TLBTOP_MAX_MMS		8192	/* mms holding a global ASID */
#define TLBTOP_HIST_SLOTS	40	/* log2 buckets of TLBSYNC wait ns */
#define TLBTOP_MAX_MASK_WORDS	8	/* cpumask words read: 512 CPUs */

/* tlb:tlb_flush reasons (enum tlb_flush_reason, include/linux/mm_types.h). */
#define TLBTOP_FLUSH_ON_TASK_SWITCH	0
#define TLBTOP_REMOTE_SHOOTDOWN		1
#define TLBTOP_LOCAL_SHOOTDOWN		2
#define TLBTOP_LOCAL_MM_SHOOTDOWN	3
#define TLBTOP_REMOTE_SEND_IPI		4

/* INVLPGB flag bit 0: the address (and page count) is valid. */
#define TLBTOP_INVLPGB_VA		0x1

/* System-wide counters: one per CPU in a per-CPU array of one entry. */
struct tlbtop_global {
	/* global ASID allocator */
	__u64 asid_assigns;		/* tlb:global_asid_assign */
	__u64 asid_frees;		/* tlb:global_asid_free */
	__u64 asid_resets;		/* tlb:global_asid_reset */
	__u64 asid_transitions;		/* tlb:global_asid_transition_done */
	/* INVLPGB and TLBSYNC */
	__u64 invlpgb;			/* tlb:invlpgb_issue */
	__u64 invlpgb_pages;		/* nr_pages of those with the VA flag, 4K stride */
	__u64 invlpgb_pmd_pages;	/* the same with pmd_stride (2M stride) */
	__u64 invlpgb_full;		/* those without the VA flag (whole PCID/ASID/TLB) */
	__u64 tlbsync_waits;		/* tlb:tlbsync_wait */
	__u64 tlbsync_ns;		/* sum of its ns */
	__u64 tlbsync_invlpgbs;		/* sum of its invlpgbs */
	/* flushes by path */
	__u64 bcast_flushes;		/* tlb:broadcast_flush */
	__u64 bcast_invlpgbs;		/* sum of its invlpgbs */
	__u64 ipis_avoided;		/* sum of its cpus */
	__u64 ipi_shootdowns;		/* sends of flush_tlb_func to other CPUs */
	__u64 ipis_sent;		/* CPUs those sends went to */
	__u64 ipis_avoidable;		/* fentry source without INVLPGB: the
					 * ipis_sent of flushes of an mm that
					 * upstream's rule gives a global ASID
					 * (an estimate) */
	__u64 multi_flushes;		/* tlb:tlb_flush, reason REMOTE_SEND_IPI */
	__u64 remote_flushes;		/* tlb:tlb_flush, reason REMOTE_SHOOTDOWN */
	__u64 local_flushes;		/* tlb:tlb_flush, reason LOCAL_(MM_)SHOOTDOWN */
	__u64 local_only;		/* ... of which no IPI was sent for */
	/* reclaim */
	__u64 batch_flushes;		/* tlb:tlbbatch_flush */
	__u64 batch_pending;		/* ... with broadcast INVLPGBs pending */
	__u64 batch_ipis;		/* sum of its cpus */
	__u64 reclaim_scanned;		/* vmscan:mm_vmscan_lru_shrink_inactive */
	__u64 reclaim_pages;		/* sum of its nr_reclaimed */
};

/*
 * Per process (tgid), per CPU: a per-CPU hash, so that the CPUs a
 * process's events came from can be counted. Two such maps take turns:
 * the BPF side writes the one that bss 'gen' names, userspace drains
 * and empties the other.
 */
struct tlbtop_proc {
	__u64 events;			/* events of any kind counted here */
	__u64 ipi_shootdowns;
	__u64 ipis_sent;
	__u64 bcast_flushes;
	__u64 ipis_avoided;
	__u64 ipis_avoidable;
	__u64 local_only;
	__u64 invlpgb;
	__u64 invlpgb_pages;		/* 4K and 2M strides alike */
	__u64 tlbsync_waits;
	__u64 tlbsync_ns;
	__u64 asid_assigns;
	char comm[TLBTOP_COMM_LEN];	/* group leader's, on the creating CPU */
};

/* An mm that holds a global ASID: from global_asid_assign to _free. */
struct tlbtop_mm {
	__u32 tgid;			/* mm->owner's, else the assigning task's */
	__u32 asid;
	__u32 cpus;			/* mm_cpumask weight at assign */
	__u32 pad;
	__u64 transitioned;		/* fentry source: transition counted */
	__u64 assigned_ns;		/* bpf_ktime_get_ns() at assign; 0: the
					 * mm held it before tlbtop started */
	char comm[TLBTOP_COMM_LEN];
};

/* Per-interval maximum of TLBSYNC wait ns: per CPU, one slot per gen. */
struct tlbtop_max {
	__u64 tlbsync_max_ns;
};

/* log2 histogram of TLBSYNC wait ns: per CPU, one entry. */
struct tlbtop_hist {
	__u64 slots[TLBTOP_HIST_SLOTS];
};

#endif /* TLBTOP_H */
