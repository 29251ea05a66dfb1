// SPDX-License-Identifier: GPL-2.0
/*
 * vmemmapcheck: stale kernel translations after flush_tlb_all(), seen
 * through the vmemmap of HugeTLB pages.
 *
 * With the HugeTLB vmemmap optimisation (HVO, vm.hugetlb_optimize_vmemmap),
 * a 2 MB HugeTLB page gets most of its struct pages freed: the 8 vmemmap
 * pages that hold its 512 struct pages are all remapped, read-only, to one
 * page that holds a copy of the first 64 (the head and its first tails),
 * and the 8 old pages go back to the page allocator: the kernel calls
 * flush_tlb_all() after the remap, and only then frees them. Shrinking the
 * pool maps the 7 tail vmemmap pages to new copies, again followed by
 * flush_tlb_all(). These are kernel (global) mappings
 * whose frames change, and user space can read them back: a BPF program
 * reads struct pages with bpf_probe_read_kernel().
 *
 * After the optimisation, struct page number 64 * k (k = 1..7) of a HugeTLB
 * page lies at the start of vmemmap page k, which maps the copy of vmemmap
 * page 0: it reads as the head page (PG_head set), a "fake head" in the
 * kernel's words. A read that finds no PG_head there went through a
 * translation to the old, freed vmemmap page, which held tail struct pages:
 * flush_tlb_all() left it in that CPU's TLB.
 *
 * One trial, the pool having just been shrunk to 0 (vmemmap restored):
 *   1. each reader (CPUs after the first) reads struct pages 64k of the
 *      pool's last pages, so that its TLB holds the restored vmemmap;
 *   2. the writer (first CPU) grows the pool to N pages (HVO and
 *      flush_tlb_all()), and finds the new pages' frames (pagemap);
 *   3. each reader reads struct pages 64k of the pages that came back to
 *      the pool at the same frames, and checks each for PG_head;
 *   4. the writer shrinks the pool to 0 again.
 * nr_memmap_pages and nr_memmap_boot_pages (/proc/vmstat) show that HVO
 * ran: they drop by 7 for each page it optimised.
 *
 * Exit: 0 no stale read, 1 stale reads (or HVO did not run, or no page came
 * back at the same frame), 2 usage, 3 could not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "../common/bpfsys.h"
#include "../common/common.h"

#define PAGE		4096UL
#define HPAGE		(2UL << 20)
#define SP_SIZE		64		/* sizeof(struct page) that HVO needs */
#define SP_PER_PAGE	(PAGE / SP_SIZE)
#define TAIL_PAGES	7		/* vmemmap pages remapped to the copy */

#define NR_HUGEPAGES	"/proc/sys/vm/nr_hugepages"
#define HVO_SYSCTL	"/proc/sys/vm/hugetlb_optimize_vmemmap"

enum phase { P_PRIME = 1, P_CHECK, P_NEXT };

static struct {
	uint64_t trials;
	unsigned int pages;
	struct cpulist cpus;
	bool quiet, json;
} opt = { .trials = 20, .pages = 32 };

static int read_fd;
static uint64_t vmemmap_base;
static unsigned int pg_head;
static long saved_nr = -1;

/*
 * Frames of the pool's pages: those the readers prime (the pool before it
 * was shrunk), those of the pool grown again, and of those the ones the
 * readers check (grown again at a primed frame).
 */
static uint64_t *prime_pfn, *grown_pfn, *check_pfn;
static _Atomic unsigned int n_prime, n_check;
static _Atomic unsigned int phase, acks;
static _Atomic uint64_t trial_no;

static _Atomic uint64_t reads, stale_reads, read_faults;
static uint64_t same_frames, optimised, memmap_freed, grow_short;

/* The reader program's context: in an address, out the bytes there. */
struct read_ctx {
	uint64_t addr;
	uint8_t data[SP_SIZE];
};

/*
 * r0 = bpf_probe_read_kernel(stack, SP_SIZE, ctx->addr), then the stack
 * copied to ctx->data a word at a time (a helper may not write into the
 * context). A syscall program's context goes back to user space after
 * the run.
 */
static void load_reader(void)
{
	struct bpf_insn insn[4 + 2 + 2 * SP_SIZE / 8 + 1] = {
		BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
		BPF_INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_3, BPF_REG_6, 0, 0),
		BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_10, 0, 0),
		BPF_INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, -SP_SIZE),
	};
	unsigned int n = 4, i;

	insn[n++] = BPF_INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, SP_SIZE);
	insn[n++] = BPF_INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_probe_read_kernel);
	for (i = 0; i < SP_SIZE; i += 8) {
		insn[n++] = BPF_INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_2,
				     BPF_REG_10, i - SP_SIZE, 0);
		insn[n++] = BPF_INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_6,
				     BPF_REG_2, offsetof(struct read_ctx, data) + i, 0);
	}
	insn[n++] = BPF_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	read_fd = bpf_syscall_prog_load(insn, n, "the reader program");
}

/* Read SP_SIZE bytes of kernel memory at addr; false if that faults. */
static bool kread(uint64_t addr, uint8_t *out)
{
	struct read_ctx ctx = { .addr = addr };

	if (bpf_syscall_prog_run(read_fd, &ctx, sizeof(ctx)))
		return false;
	memcpy(out, ctx.data, SP_SIZE);
	return true;
}

/* The address of a kernel symbol, from /proc/kallsyms (root sees them). */
static uint64_t ksym(const char *name)
{
	char line[256], sym[128];
	unsigned long long addr;
	uint64_t found = 0;
	char type;
	FILE *f;

	f = fopen("/proc/kallsyms", "r");
	if (!f)
		fatal_errno("opening /proc/kallsyms");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, sym) == 3 &&
		    !strcmp(sym, name)) {
			found = addr;
			break;
		}
	fclose(f);
	if (!found)
		fatal("no %s in /proc/kallsyms (or its addresses are hidden: needs root)",
		      name);
	return found;
}

/* From the kernel's BTF: sizeof(struct page) and the bit of PG_head. */
static void read_btf(void)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	struct btf *btf;
	long size;
	int id, i;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		fatal("no kernel BTF (/sys/kernel/btf/vmlinux)");
	id = btf__find_by_name_kind(btf, "page", BTF_KIND_STRUCT);
	size = id < 0 ? -1 : btf__resolve_size(btf, id);
	if (size != SP_SIZE)
		fatal("struct page is %ld bytes in this kernel; HVO needs %d",
		      size, SP_SIZE);
	id = btf__find_by_name_kind(btf, "pageflags", BTF_KIND_ENUM);
	if (id < 0)
		fatal("the kernel's BTF has no enum pageflags");
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++)
		if (!strcmp(btf__name_by_offset(btf, e->name_off), "PG_head"))
			break;
	if (i == btf_vlen(t))
		fatal("the kernel's BTF has no PG_head");
	pg_head = e->val;
	btf__free(btf);
}

static long read_long(const char *path)
{
	char buf[64];
	long v;
	int fd, n;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		fatal_errno("opening %s", path);
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		fatal_errno("reading %s", path);
	close(fd);
	buf[n] = '\0';
	if (sscanf(buf, "%ld", &v) != 1)
		fatal("%s: not a number: %s", path, buf);
	return v;
}

static void write_long(const char *path, long v)
{
	char buf[32];
	int fd, n;

	n = snprintf(buf, sizeof(buf), "%ld\n", v);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		fatal_errno("opening %s", path);
	if (write(fd, buf, n) != n)
		fatal_errno("writing %ld to %s", v, path);
	close(fd);
}

/* vmemmap pages in use, by the page allocator and from boot. */
static long memmap_pages(void)
{
	char name[64];
	long v, sum = 0;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		fatal_errno("opening /proc/vmstat");
	while (fscanf(f, "%63s %ld", name, &v) == 2)
		if (!strcmp(name, "nr_memmap_pages") ||
		    !strcmp(name, "nr_memmap_boot_pages"))
			sum += v;
	fclose(f);
	return sum;
}

static void restore_pool(void)
{
	if (saved_nr >= 0)
		write_long(NR_HUGEPAGES, saved_nr);
}

/*
 * Set the pool to n pages, then find the frames of its pages: map them all,
 * fault them in, read pagemap, unmap (they stay in the pool). Returns how
 * many pages the pool has.
 */
static unsigned int set_pool(unsigned int n, uint64_t *pfn)
{
	unsigned int got, i;
	char *p;
	int fd;

	write_long(NR_HUGEPAGES, n);
	got = read_long(NR_HUGEPAGES);
	if (!got || !pfn)
		return got;
	p = mmap(NULL, got * HPAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		fatal_errno("mapping %u HugeTLB pages", got);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		fatal_errno("opening /proc/self/pagemap");
	for (i = 0; i < got; i++) {
		uint64_t e;
		off_t off = (uintptr_t)(p + i * HPAGE) / PAGE * sizeof(e);

		if (pread(fd, &e, sizeof(e), off) != sizeof(e))
			fatal_errno("reading /proc/self/pagemap");
		if (!(e >> 63) || !(e & ((1ULL << 55) - 1)))
			fatal("/proc/self/pagemap has no frame for HugeTLB page %u of %u after it was faulted in (entry %#llx)",
			      i + 1, got, (unsigned long long)e);
		pfn[i] = e & ((1ULL << 55) - 1);
	}
	close(fd);
	munmap(p, got * HPAGE);
	return got;
}

static uint64_t sp_addr(uint64_t pfn)
{
	return vmemmap_base + pfn * SP_SIZE;
}

static bool fake_head(const uint8_t *sp)
{
	uint64_t flags;

	memcpy(&flags, sp, sizeof(flags));
	return flags >> pg_head & 1;
}

static void *reader(void *arg)
{
	unsigned int nreaders = opt.cpus.n - 1;
	uint8_t sp[SP_SIZE];
	uint64_t t;

	pin_self_or_die(*(int *)arg);
	for (t = 0; t < opt.trials; t++) {
		unsigned int i, k;

		spin_until(&phase, P_PRIME);
		while (atomic_load(&trial_no) != t)
			__builtin_ia32_pause();
		for (i = 0; i < n_prime; i++)
			for (k = 1; k <= TAIL_PAGES; k++)
				if (!kread(sp_addr(prime_pfn[i] + k * SP_PER_PAGE), sp))
					atomic_fetch_add(&read_faults, 1);
		atomic_fetch_add(&acks, 1);
		spin_until(&phase, P_CHECK);
		for (i = 0; i < n_check; i++)
			for (k = 1; k <= TAIL_PAGES; k++) {
				atomic_fetch_add(&reads, 1);
				if (!kread(sp_addr(check_pfn[i] + k * SP_PER_PAGE), sp))
					atomic_fetch_add(&read_faults, 1);
				else if (!fake_head(sp))
					atomic_fetch_add(&stale_reads, 1);
			}
		if (atomic_fetch_add(&acks, 1) + 1 == 2 * nreaders)
			atomic_store(&phase, P_NEXT);
	}
	return NULL;
}

static bool passed(void)
{
	return !stale_reads && !read_faults && optimised && same_frames;
}

static void report(void)
{
	char buf[256];
	struct json j;

	cpulist_format(&opt.cpus, buf, sizeof(buf));
	if (opt.json) {
		json_start(&j, stdout);
		json_obj_begin(&j, NULL);
		json_str(&j, "tool", "vmemmapcheck");
		json_str(&j, "cpus", buf);
		json_u64(&j, "trials", opt.trials);
		json_u64(&j, "pool_pages", opt.pages);
		json_u64(&j, "readers", (uint64_t)opt.cpus.n - 1);
		json_u64(&j, "optimised", optimised);
		json_u64(&j, "memmap_pages_freed", memmap_freed);
		json_u64(&j, "same_frames", same_frames);
		json_u64(&j, "grow_short", grow_short);
		json_u64(&j, "reads", reads);
		json_u64(&j, "read_faults", read_faults);
		json_u64(&j, "stale_reads", stale_reads);
		json_str(&j, "result", passed() ? "pass" : "fail");
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	if (!opt.quiet) {
		printf("CPUs %s: pool on the first, %d readers\n", buf, opt.cpus.n - 1);
		printf("pages optimised:       %llu (vmemmap pages freed: %llu)\n",
		       (unsigned long long)optimised,
		       (unsigned long long)memmap_freed);
		printf("back at the same frame: %llu\n", (unsigned long long)same_frames);
		printf("pool grown short:      %llu trials\n", (unsigned long long)grow_short);
		printf("reads that faulted:    %llu\n", (unsigned long long)read_faults);
	}
	printf("%s: %llu stale reads of %llu vmemmap pages remapped by HVO\n",
	       passed() ? "PASS" : "FAIL", (unsigned long long)stale_reads,
	       (unsigned long long)reads);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-t TRIALS] [-n PAGES] [-c CPUS] [-q | --json]\n"
		"Grows and shrinks the 2 MB HugeTLB pool on the first CPU of CPUS, with\n"
		"the vmemmap optimisation on, while the others read the pool pages'\n"
		"struct pages through the vmemmap with a BPF program: a read of a\n"
		"remapped vmemmap page that finds the old contents is a stale kernel\n"
		"translation left by flush_tlb_all().\n"
		"  -t, --trials N  times the pool is grown (default 20)\n"
		"  -n, --pages N   pool size when grown, in 2 MB pages (default 32)\n"
		"  -c, --cpus L    the pool's CPU, then the readers' (default: the\n"
		"                  first 4 CPUs that this process may run on)\n"
		"  -q, --quiet     print only the summary line\n"
		"      --json      print one JSON object instead\n"
		"Needs root, BTF, an empty 2 MB pool and vm.hugetlb_optimize_vmemmap=1.\n"
		"Exit: 0 no stale read, 1 stale reads (or no check could be made),\n"
		"2 usage, 3 could not run.\n",
		prog_name);
}

static void setup(void)
{
	uint8_t v[SP_SIZE];

	if (geteuid())
		fatal("needs root (pagemap frames, kernel symbols, the HugeTLB pool)");
	if (access(NR_HUGEPAGES, W_OK))
		fatal_errno("%s (needs root and a kernel with HugeTLB pages)",
			    NR_HUGEPAGES);
	if (access(HVO_SYSCTL, R_OK))
		fatal("%s: %s (a kernel without the HugeTLB vmemmap optimisation)",
		      HVO_SYSCTL, strerror(errno));
	if (read_long(HVO_SYSCTL) != 1)
		fatal("the HugeTLB vmemmap optimisation is off (sysctl vm.hugetlb_optimize_vmemmap=1)");
	saved_nr = read_long(NR_HUGEPAGES);
	if (saved_nr)
		fatal("the 2 MB HugeTLB pool is not empty (%ld pages): it must start at 0",
		      saved_nr);
	read_btf();
	load_reader();
	if (!kread(ksym("vmemmap_base"), v))
		fatal("cannot read vmemmap_base");
	memcpy(&vmemmap_base, v, sizeof(vmemmap_base));
	prime_pfn = calloc(opt.pages, sizeof(*prime_pfn));
	grown_pfn = calloc(opt.pages, sizeof(*grown_pfn));
	check_pfn = calloc(opt.pages, sizeof(*check_pfn));
	if (!prime_pfn || !grown_pfn || !check_pfn)
		fatal_errno("calloc");
}

/* Grow the pool (step 2): returns how many pages it has. */
static unsigned int grow(void)
{
	unsigned int got, i, j, same = 0;
	long before, after;

	before = memmap_pages();
	got = set_pool(opt.pages, grown_pfn);
	after = memmap_pages();
	if (got < opt.pages)
		grow_short++;
	if (before > after) {
		memmap_freed += before - after;
		optimised += (before - after) / TAIL_PAGES;
	}
	/* Keep the pages that came back at a frame the readers primed. */
	for (i = 0; i < got; i++)
		for (j = 0; j < n_prime; j++)
			if (grown_pfn[i] == prime_pfn[j]) {
				check_pfn[same++] = grown_pfn[i];
				break;
			}
	same_frames += same;
	n_check = same;
	return got;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "trials", required_argument, NULL, 't' },
		{ "pages", required_argument, NULL, 'n' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *cpus = NULL;
	unsigned int got;
	pthread_t *th;
	uint64_t t;
	int c, i;

	prog_name = "vmemmapcheck";
	while ((c = getopt_long(argc, argv, "t:n:c:qh", lo, NULL)) != -1) {
		switch (c) {
		case 't': opt.trials = opt_u64("--trials", optarg, 1, 100000); break;
		case 'n': opt.pages = opt_u64("--pages", optarg, 1, 4096); break;
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
			     "a CPU for the pool and at least one reader",
			     &opt.cpus);

	setup();
	atexit(restore_pool);
	pin_self_or_die(opt.cpus.cpu[0]);
	/* The first primed frames: a pool grown once and shrunk again. */
	n_prime = set_pool(opt.pages, prime_pfn);
	set_pool(0, NULL);

	th = calloc(opt.cpus.n, sizeof(*th));
	if (!th)
		fatal_errno("calloc");
	for (i = 1; i < opt.cpus.n; i++)
		if (pthread_create(&th[i], NULL, reader, &opt.cpus.cpu[i]))
			fatal("pthread_create failed");
	for (t = 0; t < opt.trials; t++) {
		atomic_store(&acks, 0);
		atomic_store(&trial_no, t);
		atomic_store(&phase, P_PRIME);
		spin_until(&acks, opt.cpus.n - 1);
		got = grow();
		atomic_store(&phase, P_CHECK);
		spin_until(&phase, P_NEXT);
		/* Shrunk again, the pool's frames are the next ones primed. */
		set_pool(0, NULL);
		memcpy(prime_pfn, grown_pfn, got * sizeof(*prime_pfn));
		n_prime = got;
	}
	for (i = 1; i < opt.cpus.n; i++)
		pthread_join(th[i], NULL);

	report();
	free(th);
	free(prime_pfn);
	free(grown_pfn);
	free(check_pfn);
	cpulist_free(&opt.cpus);
	close(read_fd);
	return passed() ? EXIT_PASS : EXIT_CHECK;
}
