// SPDX-License-Identifier: GPL-2.0
/*
 * kflushcheck: stale kernel translations after a one-page kernel range
 * flush.
 *
 * User space cannot change a kernel mapping and read it back on another
 * CPU, except through a BPF arena: its pages are mapped both into user
 * space and into a vmalloc area of the kernel, and bpf_arena_free_pages()
 * unmaps a page from that area with vunmap_range(), which ends in
 * flush_tlb_kernel_range() of exactly one page. A BPF program reads the
 * kernel mapping; a read of an unmapped arena address faults and reads 0.
 *
 * One round, for a page P of the arena:
 *   1. the freer (first CPU) writes a marker into P through user space;
 *   2. each reader (the other CPUs) reads P through the kernel mapping with
 *      a BPF program, and must see the marker (its TLB now holds P);
 *   3. the freer frees P with bpf_arena_free_pages();
 *   4. each reader reads P again and must see 0: a marker there is a read
 *      through a translation that the kernel range flush left behind.
 * The readers wait for the freer by spinning in user space, so that their
 * TLBs are not flushed by anything but the flush under test.
 *
 * The programs (sleepable syscall programs, as bpf_arena_free_pages()
 * needs) are a few instructions each, written out here rather than
 * compiled: the addr_space_cast instruction that makes a pointer an arena
 * pointer needs a newer clang than Debian 12's.
 *
 * Exit: 0 no stale read, 1 stale reads (or a first read that missed the
 * marker), 2 usage, 3 could not run (no arena, no BTF, no root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "../common/bpfsys.h"
#include "../common/common.h"

/* From the 6.12 UAPI; Debian 12's headers predate arenas. */
#define MAP_TYPE_ARENA		33
#define ADDR_SPACE_CAST		1

#define PAGE		4096UL
#define MARK(round)	(0x5a000000u | ((round) & 0xffffffu))

enum phase { P_WRITTEN = 1, P_FREED, P_NEXT };

static struct {
	uint64_t rounds;
	unsigned int pages;
	struct cpulist cpus;
	bool quiet, json;
} opt = { .rounds = 2000, .pages = 64 };

static int arena_fd, read_fd, free_fd;
static char *arena;
static _Atomic unsigned int phase, acks;
static _Atomic uint64_t round_no;
static _Atomic uint64_t first_misses, stale_reads, reads;

/* dst = map (a two-instruction load of the map's fd) */
#define LD_MAP(d, fd) \
	BPF_INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), \
	BPF_INSN(0, 0, 0, 0, 0)

static void setup(void)
{
	union bpf_attr a;
	struct btf *btf;
	int kfunc;

	memset(&a, 0, sizeof(a));
	a.map_type = MAP_TYPE_ARENA;
	a.max_entries = opt.pages;
	a.map_flags = BPF_F_MMAPABLE;
	arena_fd = sys_bpf(BPF_MAP_CREATE, &a);
	if (arena_fd < 0)
		fatal_errno("creating a BPF arena (needs root and a 6.9+ kernel with a BPF JIT)");
	arena = mmap(NULL, opt.pages * PAGE, PROT_READ | PROT_WRITE,
		     MAP_SHARED, arena_fd, 0);
	if (arena == MAP_FAILED)
		fatal_errno("mapping the arena");

	btf = btf__load_vmlinux_btf();
	if (!btf)
		fatal("no kernel BTF (/sys/kernel/btf/vmlinux): cannot find bpf_arena_free_pages");
	kfunc = btf__find_by_name_kind(btf, "bpf_arena_free_pages", BTF_KIND_FUNC);
	btf__free(btf);
	if (kfunc < 0)
		fatal("the kernel's BTF has no bpf_arena_free_pages");

	/* r0 = *(u32 *)kernel_address(*(u64 *)ctx) */
	struct bpf_insn rd[] = {
		BPF_INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_2, BPF_REG_1, 0, 0),
		LD_MAP(BPF_REG_3, arena_fd),
		BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_2,
		     ADDR_SPACE_CAST, 1),
		BPF_INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_0, BPF_REG_2, 0, 0),
		BPF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	/* bpf_arena_free_pages(arena, *(u64 *)ctx, 1); r0 = 0 */
	struct bpf_insn fr[] = {
		BPF_INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_2, BPF_REG_1, 0, 0),
		LD_MAP(BPF_REG_1, arena_fd),
		BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 1),
		BPF_INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, kfunc),
		BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		BPF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	read_fd = bpf_syscall_prog_load(rd, sizeof(rd) / sizeof(rd[0]),
					"the reader program");
	free_fd = bpf_syscall_prog_load(fr, sizeof(fr) / sizeof(fr[0]),
					"the freer program");
}

/* Run a program with the page's user address as its context. */
static uint32_t run(int fd, void *page)
{
	uint64_t ctx = (uintptr_t)page;

	return bpf_syscall_prog_run(fd, &ctx, sizeof(ctx));
}

static void *reader(void *arg)
{
	unsigned int nreaders = opt.cpus.n - 1;
	uint64_t r;

	pin_self_or_die(*(int *)arg);
	for (r = 0; r < opt.rounds; r++) {
		char *page = arena + (r % opt.pages) * PAGE;
		uint32_t v;

		spin_until(&phase, P_WRITTEN);
		while (atomic_load(&round_no) != r)
			__builtin_ia32_pause();
		v = run(read_fd, page);
		if (v != MARK(r))
			atomic_fetch_add(&first_misses, 1);
		atomic_fetch_add(&acks, 1);
		spin_until(&phase, P_FREED);
		v = run(read_fd, page);
		atomic_fetch_add(&reads, 1);
		if (v != 0)
			atomic_fetch_add(&stale_reads, 1);
		if (atomic_fetch_add(&acks, 1) + 1 == 2 * nreaders)
			atomic_store(&phase, P_NEXT);
	}
	return NULL;
}

static void report(void)
{
	bool ok = !stale_reads && !first_misses;
	char buf[256];
	struct json j;

	cpulist_format(&opt.cpus, buf, sizeof(buf));
	if (opt.json) {
		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "kflushcheck");
		json_str(&j, "cpus", buf);
		json_u64(&j, "rounds", opt.rounds);
		json_u64(&j, "readers", (uint64_t)opt.cpus.n - 1);
		json_u64(&j, "reads", reads);
		json_u64(&j, "first_misses", first_misses);
		json_u64(&j, "stale_reads", stale_reads);
		json_str(&j, "result", ok ? "pass" : "fail");
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	if (!opt.quiet) {
		printf("CPUs %s: freer on the first, %d readers\n", buf, opt.cpus.n - 1);
		printf("pages freed:        %llu\n", (unsigned long long)opt.rounds);
		printf("reads after a free: %llu\n", (unsigned long long)reads);
		printf("first reads without the marker: %llu\n",
		       (unsigned long long)first_misses);
	}
	printf("%s: %llu stale reads of %llu freed pages in %llu reads\n",
	       ok ? "PASS" : "FAIL", (unsigned long long)stale_reads,
	       (unsigned long long)opt.rounds, (unsigned long long)reads);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-r ROUNDS] [-n PAGES] [-c CPUS] [-q | --json]\n"
		"Frees BPF arena pages on the first CPU of CPUS while the others read\n"
		"them through the kernel mapping: a read of a freed page that does not\n"
		"fault is a stale kernel translation.\n"
		"  -r, --rounds N  pages freed (default 2000)\n"
		"  -n, --pages N   arena size in pages (default 64)\n"
		"  -c, --cpus L    the freer's CPU, then the readers' (default: the\n"
		"                  first 4 CPUs that this process may run on)\n"
		"  -q, --quiet     print only the summary line\n"
		"      --json      print one JSON object instead\n"
		"Exit: 0 no stale read, 1 stale reads (or a first read without the\n"
		"marker), 2 usage, 3 could not run (needs root, a BPF JIT, BTF).\n",
		prog_name);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "pages", required_argument, NULL, 'n' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cpus = NULL;
	pthread_t *th;
	uint64_t r;
	int c, i;

	prog_name = "kflushcheck";
	while ((c = getopt_long(argc, argv, "r:n:c:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'r': opt.rounds = opt_u64("--rounds", optarg, 1, 10000000); break;
		case 'n': opt.pages = opt_u64("--pages", optarg, 1, 65536); break;
		case 'c': cpus = optarg; break;
		case 'q': opt.quiet = true; break;
		case 'j': opt.json = true; break;
		case 'h': usage(stdout); return EXIT_PASS;
		default: usage_bad_option();
		}
	}
	usage_no_operands(argc, argv, optind);
	if (opt.quiet && opt.json)
		usage_error("-q and --json do not go together");
	opt_cpulist_or_first("--cpus", cpus, 4, 2,
			     "a freer and at least one reader", &opt.cpus);

	setup();
	th = calloc(opt.cpus.n, sizeof(*th));
	if (!th)
		fatal_errno("calloc");
	for (i = 1; i < opt.cpus.n; i++)
		if (pthread_create(&th[i], NULL, reader, &opt.cpus.cpu[i]))
			fatal("pthread_create failed");
	pin_self_or_die(opt.cpus.cpu[0]);
	for (r = 0; r < opt.rounds; r++) {
		char *page = arena + (r % opt.pages) * PAGE;

		atomic_store(&acks, 0);
		atomic_store(&round_no, r);
		*(volatile uint32_t *)page = MARK(r);
		atomic_store(&phase, P_WRITTEN);
		spin_until(&acks, opt.cpus.n - 1);
		run(free_fd, page);
		atomic_store(&phase, P_FREED);
		spin_until(&phase, P_NEXT);
	}
	for (i = 1; i < opt.cpus.n; i++)
		pthread_join(th[i], NULL);

	report();
	free(th);
	cpulist_free(&opt.cpus);
	munmap(arena, opt.pages * PAGE);
	close(read_fd);
	close(free_fd);
	close(arena_fd);
	return stale_reads || first_misses ? EXIT_CHECK : EXIT_PASS;
}
