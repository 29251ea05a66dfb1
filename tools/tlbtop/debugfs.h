/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbtop: what the kernel's debugfs x86/broadcast_tlb/ says (the flush
 * mode, the global ASID pool, the software model's counters), read once
 * an interval next to the BPF maps.
 */
#ifndef TLBTOP_DEBUGFS_H
#define TLBTOP_DEBUGFS_H

#include <stdbool.h>

#define MAX_KV		32

/* The "KEY VALUE" lines of one file. */
struct kv {
	int n;
	char key[MAX_KV][48];
	unsigned long long val[MAX_KV];
};

struct debugfs {
	bool have_mode;
	char mode[32];
	bool have_pool;
	struct kv pool;		/* global_asid */
	bool have_soft;
	struct kv soft;		/* soft */
};

bool kv_get(const struct kv *kv, const char *key, unsigned long long *v);
/* Keys that are levels, not counters: no difference is taken of them. */
bool kv_is_level(const char *key);
void read_debugfs(struct debugfs *d);
/* The mode in words, for the header: debugfs's, else what the fentry source read. */
const char *mode_desc(const struct debugfs *d);

#endif /* TLBTOP_DEBUGFS_H */
