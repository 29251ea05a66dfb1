// SPDX-License-Identifier: GPL-2.0
/*
 * tlbtop: reading debugfs x86/broadcast_tlb/. Every file is optional: a
 * kernel without them (or without debugfs mounted) still gets the BPF
 * counts, and the output says what is missing.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "debugfs.h"
#include "state.h"

#define BTLB_DIR	"/sys/kernel/debug/x86/broadcast_tlb"

/* A file of "KEY VALUE" lines; false when it cannot be read. */
static bool read_kv(const char *path, struct kv *kv)
{
	FILE *f = fopen(path, "r");
	char line[256];

	kv->n = 0;
	if (!f)
		return false;
	while (kv->n < MAX_KV && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%47s %llu", kv->key[kv->n], &kv->val[kv->n]) == 2)
			kv->n++;
	}
	fclose(f);
	return true;
}

bool kv_get(const struct kv *kv, const char *key, unsigned long long *v)
{
	for (int i = 0; i < kv->n; i++)
		if (!strcmp(kv->key[i], key)) {
			*v = kv->val[i];
			return true;
		}
	return false;
}

bool kv_is_level(const char *key)
{
	return !strcmp(key, "capacity") || !strcmp(key, "in_use") ||
	       !strcmp(key, "available") || !strcmp(key, "awaiting_reset") ||
	       !strcmp(key, "invlpgb_count_max");
}

void read_debugfs(struct debugfs *d)
{
	FILE *f = fopen(BTLB_DIR "/mode", "r");

	d->have_mode = false;
	if (f) {
		if (fscanf(f, "%31s", d->mode) == 1)
			d->have_mode = true;
		fclose(f);
	}
	d->have_pool = read_kv(BTLB_DIR "/global_asid", &d->pool);
	d->have_soft = read_kv(BTLB_DIR "/soft", &d->soft);
}

const char *mode_desc(const struct debugfs *d)
{
	if (!d->have_mode && st.invlpgb == 1)
		return "hardware INVLPGB (kernel's own)";
	if (!d->have_mode && st.invlpgb == 0)
		return "IPIs only (no INVLPGB in use)";
	if (!d->have_mode)
		return "unknown (no " BTLB_DIR ")";
	if (!strcmp(d->mode, "hardware"))
		return "hardware INVLPGB";
	if (!strcmp(d->mode, "soft"))
		return "software model";
	if (!strcmp(d->mode, "soft,drop"))
		return "software model dropping";
	if (!strcmp(d->mode, "none"))
		return "none";
	return d->mode;
}
