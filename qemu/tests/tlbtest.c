// SPDX-License-Identifier: GPL-2.0
/*
 * A freestanding test of the TLB features of the CPU it boots on: PCID with
 * NOFLUSH, INVPCID, INVLPGB/TLBSYNC and INVLPG, as the Intel SDM and the AMD
 * APM define them. It is written for QEMU's TCG (booted with -kernel) but
 * knows nothing of QEMU: each case says what the architecture promises.
 *
 * How a stale entry is seen: a virtual page X maps physical page A, X is
 * read (the TLB now holds X->A), the PTE is rewritten to point at C with no
 * invalidation, and X is read again. Reading A's marker means the old entry
 * is still in the TLB; reading C's means it is gone. Whether an entry is
 * *kept* is never promised (a TLB may evict at any time), so those checks
 * only fail when the kernel line says "expect=...,retain" (an emulator that
 * claims to keep inactive PCIDs must keep them), for a global entry
 * through a flush of non-global ones, "globals", and for an entry that an
 * invalidation did not name, "exact" (an emulator that flushes more than
 * it is asked to lets a kernel that flushes too little pass). Whether an entry is *gone*
 * after an invalidation is promised, and always checked.
 *
 * Kernel line: expect=pcid,invpcid,invlpgb,retain,globals,exact (features the CPU
 * must have; a missing one fails its cases instead of skipping them) and
 * "strict" (remote INVLPGB must not take effect before the TLBSYNC).
 * Output: KTAP on COM1. Exit through isa-debug-exit at 0xf4: 0 all passed,
 * 1 some failed, 2 bail out.
 */
#include <stdarg.h>

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define COM1		0x3f8
#define DEBUG_EXIT	0xf4
#define LAPIC		0xfee00000UL
#define TRAMPOLINE	0x8000

#define PTE_P		(1UL << 0)
#define PTE_W		(1UL << 1)
#define PTE_U		(1UL << 2)
#define PTE_G		(1UL << 8)
#define CR3_NOFLUSH	(1UL << 63)
#define CR4_PGE		(1UL << 7)
#define CR4_PCIDE	(1UL << 17)

#define VEC_UD		6
#define VEC_GP		13

/* Features, as found in CPUID (have) and as required by the kernel line. */
#define F_PCID		(1 << 0)
#define F_INVPCID	(1 << 1)
#define F_INVLPGB	(1 << 2)
#define F_RETAIN	(1 << 3)	/* expectation only */
#define F_STRICT	(1 << 4)	/* expectation only */
#define F_GLOBALS	(1 << 5)	/* expectation only */
#define F_EXACT		(1 << 6)	/* expectation only */

/* INVLPGB rAX flags (APM) */
#define IB_VA		(1UL << 0)
#define IB_PCID		(1UL << 1)
#define IB_GLOBAL	(1UL << 3)
#define IB_PCID_EDX(p)	((u32)(p) << 16)

extern u64 pml4[4][512], pdpt_lo[512];
extern u32 mb_info, pcide32_fault, pcide32_cr4;
extern const u64 isr_table[32];
extern const u8 ap_tramp_start[], ap_tramp_end[];
extern const u8 __image_start[], __cold_start[], bsp_stack_top[], ap_stack_top[];

/* ---- console, exit ---------------------------------------------------- */

static inline void outb(u16 port, u8 v) { asm volatile("outb %0, %1" :: "a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { asm volatile("outl %0, %1" :: "a"(v), "Nd"(port)); }
static inline u8 inb(u16 port) { u8 v; asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }

static void putch(char c)
{
	while (!(inb(COM1 + 5) & 0x20))
		;
	outb(COM1, c);
}

static void putnum(u64 v, unsigned int base, int neg)
{
	char buf[24];
	int i = 0;

	if (neg) {
		putch('-');
		v = -v;
	}
	do {
		buf[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (i)
		putch(buf[--i]);
}

/* %s %c %d %u %x, with an optional l; enough for the diagnostics. */
static void vprint(const char *fmt, va_list ap)
{
	for (; *fmt; fmt++) {
		int lng = 0;

		if (*fmt != '%') {
			putch(*fmt);
			continue;
		}
		if (*++fmt == 'l') {
			lng = 1;
			fmt++;
		}
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);

			while (*s)
				putch(*s++);
			break;
		}
		case 'c':
			putch((char)va_arg(ap, int));
			break;
		case 'd': {
			long v = lng ? va_arg(ap, long) : va_arg(ap, int);

			putnum((u64)v, 10, v < 0);
			break;
		}
		case 'u':
			putnum(lng ? va_arg(ap, u64) : va_arg(ap, u32), 10, 0);
			break;
		case 'x':
			putnum(lng ? va_arg(ap, u64) : va_arg(ap, u32), 16, 0);
			break;
		default:
			putch(*fmt);
		}
	}
}

static void print(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint(fmt, ap);
	va_end(ap);
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	print("# ");
	va_start(ap, fmt);
	vprint(fmt, ap);
	va_end(ap);
	putch('\n');
}

static __attribute__((noreturn)) void qemu_exit(u32 status)
{
	outl(DEBUG_EXIT, status);
	for (;;)	/* no isa-debug-exit device: stop here */
		asm volatile("cli; hlt");
}

static __attribute__((noreturn)) void bail_out(const char *why)
{
	print("Bail out! %s\n", why);
	qemu_exit(2);
}

/* ---- CPU helpers ------------------------------------------------------ */

static inline void cpuid(u32 leaf, u32 sub, u32 r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
		     : "a"(leaf), "c"(sub));
}

static inline u64 read_cr3(void) { u64 v; asm volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; asm volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr3(u64 v) { asm volatile("mov %0, %%cr3" :: "r"(v) : "memory"); }
static inline void write_cr4(u64 v) { asm volatile("mov %0, %%cr4" :: "r"(v) : "memory"); }
static inline void invlpg(u64 va) { asm volatile("invlpg (%0)" :: "r"(va) : "memory"); }
static inline void pause(void) { asm volatile("pause" ::: "memory"); }
static inline u64 rdtsc(void) { u32 lo, hi; asm volatile("rdtsc" : "=a"(lo), "=d"(hi)); return ((u64)hi << 32) | lo; }

static inline u32 lapic_read(u32 reg) { return *(volatile u32 *)(LAPIC + reg); }
static inline void lapic_write(u32 reg, u32 v) { *(volatile u32 *)(LAPIC + reg) = v; }
static inline u32 apic_id(void) { return lapic_read(0x20) >> 24; }

/*
 * Faulting instructions: the BSP arms recover_rip with the address after
 * the instruction, exc_handler records the vector and resumes there. Any
 * other exception, or any exception on the AP, ends the run.
 */
static u64 recover_rip;
static volatile int fault_vec, fault_err;

struct frame {
	u64 r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, err, rip, cs, rflags, rsp, ss;
};

/* run_user() (boot.S) state */
u64 user_ret_rsp;
int user_vec;
extern void user_return(void), user_nop(void), user_cr3(void), user_invpcid(void),
	user_invlpgb(void), user_tlbsync(void);
int run_user(void (*code)(void));

void exc_handler(struct frame *f);
void exc_handler(struct frame *f)
{
	if ((f->cs & 3) == 3) {
		const u8 *ip = (const u8 *)f->rip;

		user_vec = f->vector == VEC_UD && ip[0] == 0x0f && ip[1] == 0x0b ? -1 : (int)f->vector;
		f->rip = (u64)user_return;
		f->cs = 0x18;
		f->ss = 0x10;
		f->rsp = user_ret_rsp;
		f->rflags = 2;
		return;
	}
	if (recover_rip && apic_id() == 0) {
		fault_vec = (int)f->vector;
		fault_err = (int)f->err;
		f->rip = recover_rip;
		recover_rip = 0;
		return;
	}
	print("# unexpected exception %lu (error %lx) at %lx on APIC %u\n",
	      f->vector, f->err, f->rip, apic_id());
	bail_out("unexpected exception");
}

/* Each returns the vector raised, or -1. */
#define TRY_ASM(insn, ...)						\
	({								\
		fault_vec = -1;						\
		asm volatile("leaq 1f(%%rip), %%r11\n\t"		\
			     "movq %%r11, %[rec]\n\t"			\
			     insn "\n"					\
			     "1:\tmovq $0, %[rec]"			\
			     : [rec] "+m"(recover_rip)			\
			     : __VA_ARGS__ : "r11", "memory");		\
		fault_vec;						\
	})

static int try_write_cr3(u64 v) { return TRY_ASM("mov %[v], %%cr3", [v] "r"(v)); }
static int try_write_cr4(u64 v) { return TRY_ASM("mov %[v], %%cr4", [v] "r"(v)); }

static int try_invpcid(u64 type, u64 pcid, u64 addr)
{
	struct { u64 pcid, addr; } __attribute__((aligned(16))) d = { pcid, addr };

	return TRY_ASM("invpcid (%[d]), %[t]", [d] "r"(&d), [t] "r"(type), "m"(d));
}

/* 0F 01 FE and 0F 01 FF, spelt out for assemblers that lack them. */
static int try_invlpgb(u64 rax, u32 ecx, u32 edx)
{
	return TRY_ASM(".byte 0x0f, 0x01, 0xfe", "a"(rax), "c"(ecx), "d"(edx));
}

static int try_tlbsync(void) { return TRY_ASM(".byte 0x0f, 0x01, 0xff", "i"(0)); }

static const char *vec_name(int v)
{
	return v == -1 ? "no fault" : v == VEC_UD ? "#UD" : v == VEC_GP ? "#GP" : "another fault";
}

/* ---- the test address spaces ------------------------------------------ */

/*
 * Four address spaces, AS n using PCID n (AS 0 is the boot one). All share
 * the identity map of the low 4 GiB (PML4 slot 0, where code, data and the
 * LAPIC are); each has its own page table for the 2 MiB test region in
 * PML4 slot 1, so the same VA can map different pages in each.
 */
#define NAS		4
#define REGION		0x8000000000UL
/*
 * A slot is a 4 KiB page of the test region. QEMU's softmmu TLB is direct
 * mapped by VA page number (64 to 256 entries, and a victim TLB of 8): a
 * test page that shares a set with the code, data or stack that runs
 * between its fill and its re-read can be pushed out, which looks like a
 * lost entry. pick_slot_base() puts slot 0 where none of the test pages
 * shares a set (modulo 64) with those.
 */
static u64 slot_base;
#define VA(slot)	(REGION + ((u64)(slot) + slot_base) * 4096)
#define GSLOT		16	/* mapped global, the same in every AS */
#define NPAGES		24
#define MARK(p)		(0x7e570000UL + (p))
#define PTE_PS		(1UL << 7)
#define BIG(k)		(0x1000000UL + (u64)(k) * 0x200000)	/* 2 MiB pages at 16 MiB */
#define BIGMARK(k)	(40 + (k))	/* read_page() of BIG(k) */
/* VA(BIGSLOT(j)) is in the j-th 2 MiB page, at 4 KiB page 12 + j + slot_base. */
#define BIGSLOT(j)	(512 * (1 + (j)) + 12 + (j))

static u64 pdpt_hi[NAS][512] __attribute__((aligned(4096)));
static u64 pd_hi[NAS][512] __attribute__((aligned(4096)));
static u64 pt_hi[NAS][512] __attribute__((aligned(4096)));
static u8 pages[NPAGES][4096] __attribute__((aligned(4096), section(".bss.cold")));

static int pcide_on;

static void map(int as, int slot, int page)
{
	*(volatile u64 *)&pt_hi[as][slot + slot_base] = (u64)pages[page] | PTE_P | PTE_W;
}

/* The j-th 2 MiB page after the 4 KiB test page table maps BIG(k). */
static void map_big(int as, int j, int k)
{
	*(volatile u64 *)&pd_hi[as][1 + j] = BIG(k) | PTE_P | PTE_W | PTE_PS;
}

static void map_global(int slot, int page)
{
	for (int as = 0; as < NAS; as++)
		*(volatile u64 *)&pt_hi[as][slot + slot_base] = (u64)pages[page] | PTE_P | PTE_W | PTE_G;
}

/* The page whose marker a read of VA finds (-1: none). */
static int read_page(u64 va)
{
	u64 v = *(volatile u64 *)va;

	return (v >> 16) == (MARK(0) >> 16) && (v & 0xffff) < 64 ? (int)(v & 0xffff) : -1;
}

static void load_as(int as, int noflush)
{
	write_cr3((u64)pml4[as] | (pcide_on ? (u64)as : 0) | (noflush ? CR3_NOFLUSH : 0));
}

/* Toggling CR4.PGE flushes every entry of every PCID, globals included. */
static void flush_all(void)
{
	u64 cr4 = read_cr4();

	load_as(0, 0);
	write_cr4(cr4 & ~CR4_PGE);
	write_cr4(cr4);
}

/*
 * A little program of TLB steps, so that the same sequence can run on the
 * BSP or be handed to the AP: flush all, load an AS (with or without
 * NOFLUSH), read a slot (its result goes to out[], in order), INVLPG a slot.
 */
enum { S_END, S_FLUSH, S_LOAD, S_LOAD_NF, S_READ, S_INVLPG, S_WATCH };

/* S_WATCH: read a slot over and over until watch_go, then once more. */
static u32 watch_armed, watch_go;
struct step { int op; int arg; };

static void run_steps(const struct step *s, int *out)
{
	for (; s->op != S_END; s++) {
		switch (s->op) {
		case S_FLUSH: flush_all(); break;
		case S_LOAD: load_as(s->arg, 0); break;
		case S_LOAD_NF: load_as(s->arg, 1); break;
		case S_READ: *out++ = read_page(VA(s->arg)); break;
		case S_INVLPG: invlpg(VA(s->arg)); break;
		case S_WATCH:
			do {
				read_page(VA(s->arg));
				__atomic_store_n(&watch_armed, 1, __ATOMIC_RELEASE);
			} while (!__atomic_load_n(&watch_go, __ATOMIC_ACQUIRE));
			*out++ = read_page(VA(s->arg));
			break;
		}
	}
}

#define RUN(out, ...) run_steps((const struct step[]){ __VA_ARGS__, { S_END, 0 } }, out)

/* ---- the second vCPU -------------------------------------------------- */

static const struct step *ap_prog;
static int *ap_out;
static u32 ap_seq, ap_done, ap_alive;
static u32 have, expect;

static void load_idt(void);

void ap_main(void);
void ap_main(void)
{
	load_idt();
	if (have & F_PCID)
		write_cr4(read_cr4() | CR4_PCIDE);	/* CR3 is PCID 0 here */
	__atomic_store_n(&ap_alive, 1, __ATOMIC_RELEASE);
	for (u32 seen = 0;;) {
		while (__atomic_load_n(&ap_seq, __ATOMIC_ACQUIRE) == seen)
			pause();
		seen++;
		run_steps(ap_prog, ap_out);
		__atomic_store_n(&ap_done, seen, __ATOMIC_RELEASE);
	}
}

/* Busy wait; the TSC only needs to be roughly GHz for these bounds. */
static int wait_for(u32 *p, u32 val, u64 cycles)
{
	u64 end = rdtsc() + cycles;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != val)
		if (rdtsc() > end)
			return 0;
	return 1;
}

static void ap_begin(const struct step *s, int *out)
{
	ap_prog = s;
	ap_out = out;
	__atomic_store_n(&ap_seq, ap_seq + 1, __ATOMIC_RELEASE);
}

static void ap_end(void)
{
	if (!wait_for(&ap_done, ap_seq, 20000000000UL))
		bail_out("the second vCPU stopped answering");
}

static void ap_steps(const struct step *s, int *out)
{
	ap_begin(s, out);
	ap_end();
}

#define AP(out, ...) ap_steps((const struct step[]){ __VA_ARGS__, { S_END, 0 } }, out)

static void start_ap(void)
{
	const u8 *s = ap_tramp_start;

	for (u8 *d = (u8 *)TRAMPOLINE; s < ap_tramp_end;)
		*d++ = *s++;
	lapic_write(0xf0, 0x1ff);		/* software-enable the LAPIC */
	/* INIT, then SIPI twice, to all but self (SDM 8.4.4.1) */
	lapic_write(0x310, 0);
	lapic_write(0x300, 0xc4500);
	wait_for(&ap_alive, 1, 10000000);	/* ~10 ms */
	for (int i = 0; i < 2 && !__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE); i++) {
		lapic_write(0x300, 0xc4600 | (TRAMPOLINE >> 12));
		wait_for(&ap_alive, 1, 200000000);
	}
	wait_for(&ap_alive, 1, 2000000000);
}

/* ---- IDT ---------------------------------------------------------------- */

static u64 idt[32][2] __attribute__((aligned(16)));

/* A TSS only for RSP0, so that exceptions from CPL3 have a stack. */
static struct {
	u32 reserved0;
	u64 rsp0, rsp1, rsp2, reserved1, ist[7], reserved2;
	u16 reserved3, iomap;
} __attribute__((packed)) tss;
extern u64 gdt_tss[2];
extern const u8 trap_stack_top[];

static void setup_user(void)
{
	u64 base = (u64)&tss, limit = sizeof(tss) - 1;

	tss.rsp0 = (u64)trap_stack_top;
	tss.iomap = sizeof(tss);
	gdt_tss[0] = (limit & 0xffff) | (base & 0xffffff) << 16 | 0x89UL << 40 |
		     (limit >> 16 & 0xf) << 48 | (base >> 24 & 0xff) << 56;
	gdt_tss[1] = base >> 32;
	asm volatile("ltr %w0" :: "r"(0x30));
}

static void load_idt(void)
{
	struct { u16 limit; u64 base; } __attribute__((packed)) p = { sizeof(idt) - 1, (u64)idt };

	asm volatile("lidt %0" :: "m"(p));
}

static void setup_idt(void)
{
	for (int v = 0; v < 32; v++) {
		u64 a = isr_table[v];

		idt[v][0] = (a & 0xffff) | (0x18UL << 16) | (0x8eUL << 40) | ((a >> 16 & 0xffff) << 48);
		idt[v][1] = a >> 32;
	}
	load_idt();
}

/* ---- case bookkeeping ------------------------------------------------- */

enum { PASS, FAIL, SKIP };
static int failed;		/* the current case failed a check */
static const char *skip_why;
static u32 invlpgb_max;		/* CPUID 0x80000008 EDX[15:0] */

static const char *feat_name(u32 f)
{
	return f == F_PCID ? "PCID" : f == F_INVPCID ? "INVPCID" : "INVLPGB";
}

/*
 * A case needs features (and maybe the AP). Without the CPUID bit a case
 * fails when the feature is expected and skips otherwise; the instructions
 * that exist without PCID are executed once so the output shows the fault
 * that stands in for them (on QEMU 7.2: #UD).
 */
static int need(u32 f, int ap)
{
	u32 missing = f & ~have & (F_PCID | F_INVPCID | F_INVLPGB);

	for (u32 b = 1; b <= F_INVLPGB; b <<= 1) {
		if (!(missing & b))
			continue;
		diag("CPUID has no %s%s", feat_name(b), expect & b ? ", which was expected" : "");
		if (b == F_INVPCID)
			diag("INVPCID type 2 raises %s", vec_name(try_invpcid(2, 0, 0)));
		if (b == F_INVLPGB)
			diag("INVLPGB raises %s, TLBSYNC raises %s",
			     vec_name(try_invlpgb(0, 0, 0)), vec_name(try_tlbsync()));
	}
	if (missing & expect)
		return FAIL;
	if (missing) {
		skip_why = "CPUID lacks the feature";
		return SKIP;
	}
	if ((f & F_PCID) && !pcide_on) {
		diag("CR4.PCIDE could not be set");
		return FAIL;
	}
	if (ap && !ap_alive) {
		diag("the second vCPU did not start");
		return FAIL;
	}
	return -1;
}

#define NEED(f, ap) do { int _r = need(f, ap); if (_r >= 0) return _r; } while (0)

/* The architecture promises this read: the entry must be gone. */
static void want_new(const char *what, int got, int want)
{
	if (got == want)
		return;
	failed = 1;
	diag("%s: read page %d, want page %d%s", what, got, want,
	     got >= 0 ? " (a stale TLB entry)" : "");
}

/*
 * Nothing invalidated this entry: an emulator that retains must keep it.
 * f says which expectation makes it a requirement (retain or globals).
 */
static void kept(u32 f, const char *what, int got, int old, int new)
{
	if (got == old)
		return;
	if (got == new && !(expect & f)) {
		diag("%s: entry evicted (allowed, %s not expected)", what,
		     f == F_RETAIN ? "retention" : f == F_GLOBALS ? "keeping globals" :
		     f == F_EXACT ? "exactness" : "strict");
		return;
	}
	failed = 1;
	if (got == new)
		diag("%s: read page %d, want page %d: %s", what, got, old,
		     f == F_STRICT ? "the invalidation took effect before the TLBSYNC" :
		     f == F_EXACT ? "an invalidation that did not name it flushed it"
				  : "the entry was not retained");
	else
		diag("%s: read page %d, want page %d (kept) or %d", what, got, old, new);
}

static void want_kept(const char *what, int got, int old, int new)
{
	kept(F_RETAIN, what, got, old, new);
}

/* A global entry through a flush of non-global entries only. */
static void want_global_kept(const char *what, int got, int old, int new)
{
	kept(F_GLOBALS, what, got, old, new);
}

/* An entry outside what an invalidation named. */
static void want_exact_kept(const char *what, int got, int old, int new)
{
	kept(F_EXACT, what, got, old, new);
}

static void want_vec(const char *what, int got, int want)
{
	if (got == want)
		return;
	failed = 1;
	diag("%s: %s, want %s", what, vec_name(got), vec_name(want));
}

#define RESULT() (failed ? FAIL : PASS)

/* ---- the cases -------------------------------------------------------- */

static int cpuid_case(u32 f, int bit_set, const char *where)
{
	if (bit_set)
		return PASS;
	diag("%s is 0", where);
	if (expect & f)
		return FAIL;
	skip_why = "the CPU does not claim the feature";
	return SKIP;
}

static int t_cpuid_pcid(void) { return cpuid_case(F_PCID, have & F_PCID, "CPUID.1:ECX[17] (PCID)"); }
static int t_cpuid_invpcid(void) { return cpuid_case(F_INVPCID, have & F_INVPCID, "CPUID.(7,0):EBX[10] (INVPCID)"); }

static int t_cpuid_invlpgb(void)
{
	if (have & F_INVLPGB) {
		diag("INVLPGB max count (CPUID 0x80000008 EDX[15:0]): %u", invlpgb_max);
		if (invlpgb_max == 0)
			diag("no extra pages per INVLPGB: the range cases need at least 2");
	}
	return cpuid_case(F_INVLPGB, have & F_INVLPGB, "CPUID.80000008H:EBX[3] (INVLPGB)");
}

static int t_ap_started(void)
{
	return ap_alive ? PASS : (diag("no answer to INIT-SIPI-SIPI (run with -smp 2)"), FAIL);
}

/* Run from the 32-bit entry (boot.S); only its result is reported here. */
static int t_pcide_outside_long_mode(void)
{
	if (!pcide32_fault)
		diag("setting CR4.PCIDE with EFER.LMA=0 did not fault (CR4 read %x)", pcide32_cr4);
	return pcide32_fault ? PASS : FAIL;
}

static int t_pcide_rules(void)
{
	u64 cr4 = read_cr4(), cr3;
	int v;

	if (!(have & F_PCID)) {
		/* Without the CPUID bit PCIDE is a reserved bit. */
		v = try_write_cr4(cr4 | CR4_PCIDE);
		if (v == -1)
			write_cr4(cr4);
		want_vec("setting CR4.PCIDE without the CPUID bit", v, VEC_GP);
		if (expect & F_PCID) {
			diag("CPUID has no PCID, which was expected");
			return FAIL;
		}
		return RESULT();
	}
	load_as(0, 0);
	write_cr3((u64)pml4[0] | 1);	/* bits 11:0 are not a PCID yet */
	v = try_write_cr4(cr4 | CR4_PCIDE);
	if (v == -1)
		write_cr4(cr4);
	want_vec("setting CR4.PCIDE with CR3[11:0]=1", v, VEC_GP);
	write_cr3((u64)pml4[0]);
	v = try_write_cr4(cr4 | CR4_PCIDE);
	want_vec("setting CR4.PCIDE with CR3[11:0]=0", v, -1);
	if (v != -1 || !(read_cr4() & CR4_PCIDE)) {
		diag("CR4.PCIDE did not stick");
		return FAIL;
	}
	pcide_on = 1;
	/* NOFLUSH is an instruction operand, never part of CR3. */
	v = try_write_cr3((u64)pml4[1] | 1 | CR3_NOFLUSH);
	want_vec("MOV to CR3 with NOFLUSH", v, -1);
	cr3 = read_cr3();
	if (cr3 != ((u64)pml4[1] | 1)) {
		failed = 1;
		diag("CR3 reads %lx after loading PCID 1 with NOFLUSH, want %lx", cr3, (u64)pml4[1] | 1);
	}
	load_as(0, 0);
	return RESULT();
}

/*
 * The method itself, with no PCID: a rewritten PTE is not seen until an
 * invalidation, on either vCPU. If this fails, a pass elsewhere means
 * nothing (and with "retain" not expected the kept halves only report).
 */
static int t_method(void)
{
	int r[3];

	map(1, 0, 0);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 });
	map(1, 0, 1);
	RUN(r, { S_READ, 0 }, { S_INVLPG, 0 }, { S_READ, 0 });
	want_kept("vCPU 0, PTE rewritten without invalidation", r[0], 0, 1);
	want_new("vCPU 0 after INVLPG", r[1], 1);
	map_big(1, 0, 0);
	RUN(r, { S_INVLPG, BIGSLOT(0) }, { S_READ, BIGSLOT(0) });
	want_new("a 2 MiB page", r[0], BIGMARK(0));
	want_vec("a NOP at CPL3 (the CPL3 cases' method)", run_user(user_nop), -1);
	want_vec("MOV from CR3 at CPL3", run_user(user_cr3), VEC_GP);
	*(volatile u64 *)&pd_hi[1][1] = 0;
	load_as(0, 0);
	if (!ap_alive)
		return RESULT();
	map(1, 0, 2);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 });
	map(1, 0, 3);
	AP(r, { S_READ, 0 }, { S_INVLPG, 0 }, { S_READ, 0 }, { S_LOAD, 0 });
	want_kept("vCPU 1, PTE rewritten by vCPU 0 without invalidation", r[0], 2, 3);
	want_new("vCPU 1 after its INVLPG", r[1], 3);
	return RESULT();
}

static int t_cr0_pg(void)
{
	skip_why = "clearing CR0.PG in 64-bit mode faults for its own reason";
	return SKIP;
}

static int t_noflush_2(void)
{
	int r[3];

	NEED(F_PCID, 0);
	map(1, 0, 0);
	map(2, 0, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_LOAD, 1 }, { S_READ, 0 });
	want_new("PCID 1 first read", r[0], 0);
	map(1, 0, 2);			/* no invalidation */
	RUN(r, { S_LOAD_NF, 2 }, { S_READ, 0 }, { S_LOAD_NF, 1 }, { S_READ, 0 });
	want_new("PCID 2 (its own tables)", r[0], 1);
	want_kept("PCID 1 after 1->2->1 with NOFLUSH", r[1], 0, 2);
	return RESULT();
}

static int t_cr3_flushes(void)
{
	int r[3];

	NEED(F_PCID, 0);
	map(1, 0, 0);
	map(2, 0, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 });
	map(1, 0, 2);
	RUN(r, { S_LOAD_NF, 2 }, { S_LOAD, 1 }, { S_READ, 0 });
	want_new("PCID 1 reloaded without NOFLUSH after a switch", r[0], 2);
	map(1, 0, 3);
	RUN(r, { S_LOAD, 1 }, { S_READ, 0 });
	want_new("PCID 1 reloaded without NOFLUSH in place", r[0], 3);
	return RESULT();
}

static int t_noflush_3(void)
{
	int r[6];

	NEED(F_PCID, 0);
	for (int as = 1; as <= 3; as++)
		map(as, 0, as);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_LOAD, 2 }, { S_READ, 0 },
	    { S_LOAD, 3 }, { S_READ, 0 });
	for (int as = 1; as <= 3; as++)
		map(as, 0, 10 + as);
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 },
	    { S_LOAD_NF, 3 }, { S_READ, 0 }, { S_LOAD_NF, 1 }, { S_READ, 0 });
	want_kept("PCID 1 after 1->2->3->1", r[0], 1, 11);
	want_kept("PCID 2 after 1->2->3->1->2", r[1], 2, 12);
	want_kept("PCID 3 after 1->2->3->1->2->3", r[2], 3, 13);
	want_kept("PCID 1 again", r[3], 1, 11);
	RUN(r, { S_LOAD, 2 }, { S_READ, 0 });
	want_new("PCID 2 loaded without NOFLUSH", r[0], 12);
	return RESULT();
}

/*
 * A MOV to CR4 that changes PGE, or clears PCIDE, flushes every PCID,
 * globals too (SDM 4.10.4.1). flush_all() relies on the first.
 */
static int t_cr4_flushes(void)
{
	u64 cr4 = read_cr4();
	int r[3];

	NEED(F_PCID, 0);
	map_global(GSLOT, 8);
	map(1, 0, 0);
	map(2, 0, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 },
	    { S_READ, GSLOT }, { S_LOAD_NF, 0 });
	map_global(GSLOT, 9);
	map(1, 0, 2);
	map(2, 0, 3);
	write_cr4(cr4 & ~CR4_PGE);
	write_cr4(cr4);
	RUN(r, { S_READ, GSLOT }, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 });
	want_new("global page after a CR4.PGE toggle", r[0], 9);
	want_new("PCID 1 (inactive) after a CR4.PGE toggle", r[1], 2);
	want_new("PCID 2 (inactive) after a CR4.PGE toggle", r[2], 3);
	map(1, 0, 4);
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_LOAD_NF, 0 });
	map(1, 0, 5);
	write_cr4(cr4 & ~CR4_PCIDE);
	write_cr4(cr4);
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, 0 });
	want_new("PCID 1 (inactive) after CR4.PCIDE 1->0->1", r[0], 5);
	load_as(0, 0);
	return RESULT();
}

static int t_invpcid_0(void)
{
	int r[3];

	NEED(F_PCID | F_INVPCID, 0);
	map(1, 0, 0);
	map(1, 1, 1);
	map(1, 2, 6);
	map(2, 0, 2);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_READ, 1 },
	    { S_READ, 2 });
	map(1, 0, 3);
	map(1, 1, 4);
	map(1, 2, 7);
	/* the active PCID */
	want_vec("INVPCID type 0, PCID 1 active", try_invpcid(0, 1, VA(0)), -1);
	RUN(r, { S_READ, 0 }, { S_READ, 1 });
	want_new("the page invalidated in the active PCID", r[0], 3);
	want_kept("another page of the active PCID", r[1], 1, 4);
	/* an inactive PCID */
	load_as(2, 1);
	want_vec("INVPCID type 0, PCID 2 active", try_invpcid(0, 1, VA(2)), -1);
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, 2 }, { S_READ, 1 });
	want_new("the page invalidated in PCID 1 while PCID 2 was active", r[0], 7);
	want_kept("another page of PCID 1", r[1], 1, 4);
	load_as(0, 0);
	return RESULT();
}

static int t_invpcid_1(void)
{
	int r[3];

	NEED(F_PCID | F_INVPCID, 0);
	map(1, 0, 0);
	map(1, 1, 1);
	map(2, 0, 2);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 },
	    { S_READ, 1 });
	map(1, 0, 3);
	map(1, 1, 4);
	map(2, 0, 5);
	load_as(2, 1);
	want_vec("INVPCID type 1, PCID 1 while PCID 2 active", try_invpcid(1, 1, 0), -1);
	RUN(r, { S_READ, 0 }, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_READ, 1 });
	want_kept("PCID 2, not named", r[0], 2, 5);
	want_new("PCID 1, page 0", r[1], 3);
	want_new("PCID 1, page 1", r[2], 4);
	load_as(0, 0);
	return RESULT();
}

/* Types 2 and 3 share a setup: a global page and one page in PCIDs 1, 2. */
static void setup_all_contexts(void)
{
	int r[3];

	map_global(GSLOT, 8);
	map(1, 0, 0);
	map(2, 0, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 },
	    { S_READ, GSLOT });
	want_new("global page first read", r[2], 8);
	map_global(GSLOT, 9);
	map(1, 0, 2);
	map(2, 0, 3);
}

static int t_invpcid_2(void)
{
	int r[3];

	NEED(F_PCID | F_INVPCID, 0);
	setup_all_contexts();
	want_vec("INVPCID type 2", try_invpcid(2, 0, 0), -1);
	RUN(r, { S_READ, GSLOT }, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 });
	want_new("global page", r[0], 9);
	want_new("PCID 1 (active)", r[1], 2);
	want_new("PCID 2 (inactive)", r[2], 3);
	load_as(0, 0);
	return RESULT();
}

static int t_invpcid_3(void)
{
	int r[3];

	NEED(F_PCID | F_INVPCID, 0);
	setup_all_contexts();
	want_vec("INVPCID type 3", try_invpcid(3, 0, 0), -1);
	RUN(r, { S_READ, GSLOT }, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 });
	want_global_kept("global page", r[0], 8, 9);
	want_new("PCID 1 (active)", r[1], 2);
	want_new("PCID 2 (inactive)", r[2], 3);
	load_as(0, 0);
	return RESULT();
}

static int t_invpcid_gp(void)
{
	u64 cr4 = read_cr4();

	NEED(F_PCID | F_INVPCID, 0);
	want_vec("type 4", try_invpcid(4, 0, 0), VEC_GP);
	want_vec("type 1, descriptor bit 12 set", try_invpcid(1, 1UL << 12, 0), VEC_GP);
	want_vec("type 0, descriptor bit 63 set", try_invpcid(0, 1UL << 63, VA(0)), VEC_GP);
	want_vec("type 0, non-canonical address", try_invpcid(0, 1, 0x0000800000000000UL), VEC_GP);
	want_vec("type 0, canonical address", try_invpcid(0, 1, VA(0)), -1);
	/* With PCIDE=0 only PCID 0 may be named by types 0 and 1. */
	load_as(0, 0);
	write_cr4(cr4 & ~CR4_PCIDE);
	want_vec("type 1, PCID 1, CR4.PCIDE=0", try_invpcid(1, 1, 0), VEC_GP);
	want_vec("type 1, PCID 0, CR4.PCIDE=0", try_invpcid(1, 0, 0), -1);
	write_cr4(cr4);
	want_vec("a NOP at CPL3 (the method)", run_user(user_nop), -1);
	want_vec("INVPCID at CPL3", run_user(user_invpcid), VEC_GP);
	return RESULT();
}

static int t_invpcid_ud(void)
{
	if (have & F_INVPCID) {
		skip_why = "CPUID has INVPCID";
		return SKIP;
	}
	want_vec("INVPCID without the CPUID bit", try_invpcid(2, 0, 0), VEC_UD);
	want_vec("INVPCID without the CPUID bit, at CPL3", run_user(user_invpcid), VEC_UD);
	return RESULT();
}

static void invlpgb_sync(const char *what, u64 rax, u32 ecx, u32 edx)
{
	want_vec(what, try_invlpgb(rax, ecx, edx), -1);
	want_vec("TLBSYNC", try_tlbsync(), -1);
}

static int t_invlpgb_parked(void)
{
	int r[2];

	NEED(F_PCID | F_INVLPGB, 1);
	map(1, 0, 0);
	map(1, 1, 1);
	map(2, 0, 2);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_READ, 1 },
	   { S_LOAD_NF, 2 });
	/* the issuer is one of "all processors" too */
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_LOAD_NF, 2 });
	map(1, 0, 3);
	map(1, 1, 4);
	invlpgb_sync("INVLPGB VA+PCID 1", VA(0) | IB_VA | IB_PCID, 0, IB_PCID_EDX(1));
	AP(r, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_READ, 1 });
	want_new("vCPU 1, PCID 1 parked during the INVLPGB", r[0], 3);
	want_kept("vCPU 1, a page that was not named", r[1], 1, 4);
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, 0 });
	want_new("vCPU 0 (the issuer), PCID 1 parked during the INVLPGB", r[0], 3);
	load_as(0, 0);
	return RESULT();
}

static int t_invlpgb_range(void)
{
	int r[5];
	u32 n = invlpgb_max < 2 ? invlpgb_max : 2;

	NEED(F_PCID | F_INVLPGB, 1);
	for (int s = 0; s < 5; s++)
		map(1, s, s);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_READ, 1 }, { S_READ, 2 },
	   { S_READ, 3 }, { S_READ, 4 });
	for (int s = 0; s < 5; s++)
		map(1, s, 10 + s);
	invlpgb_sync("INVLPGB VA+PCID, ECX=2", VA(0) | IB_VA | IB_PCID, n, IB_PCID_EDX(1));
	AP(r, { S_READ, 0 }, { S_READ, 1 }, { S_READ, 2 }, { S_READ, 3 }, { S_READ, 4 });
	for (int s = 0; s < 5; s++) {
		const char *what[] = { "page 0 of the range", "page 1 of the range",
				       "page 2 of the range", "the page after the range",
				       "two pages after the range" };

		if (s <= (int)n)
			want_new(what[s], r[s], 10 + s);
		else
			want_kept(what[s], r[s], s, 10 + s);
	}
	return RESULT();
}

/* Without the VA flag the whole PCID goes (Linux relies on this). */
static int t_invlpgb_pcid_all(void)
{
	int r[3];

	NEED(F_PCID | F_INVLPGB, 1);
	map(1, 0, 0);
	map(1, 1, 1);
	map(2, 0, 2);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 },
	   { S_READ, 1 }, { S_LOAD_NF, 2 });
	map(1, 0, 3);
	map(1, 1, 4);
	map(2, 0, 5);
	invlpgb_sync("INVLPGB PCID 1, no VA", IB_PCID, 0, IB_PCID_EDX(1));
	AP(r, { S_READ, 0 }, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_READ, 1 });
	want_kept("vCPU 1, PCID 2 (active, not named)", r[0], 2, 5);
	want_new("vCPU 1, PCID 1 page 0", r[1], 3);
	want_new("vCPU 1, PCID 1 page 1", r[2], 4);
	return RESULT();
}

/* No VA and no PCID: every non-global entry; with GLOBAL, every entry. */
static int t_invlpgb_all(void)
{
	int r[3];

	NEED(F_PCID | F_INVLPGB, 1);
	map_global(GSLOT, 8);
	map(1, 0, 0);
	map(2, 0, 1);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 },
	   { S_READ, GSLOT });
	map_global(GSLOT, 9);
	map(1, 0, 2);
	map(2, 0, 3);
	invlpgb_sync("INVLPGB, no flags", 0, 0, 0);
	AP(r, { S_READ, GSLOT }, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 });
	want_global_kept("vCPU 1, global page after the non-global flush", r[0], 8, 9);
	want_new("vCPU 1, PCID 1 (active)", r[1], 2);
	want_new("vCPU 1, PCID 2 (was parked)", r[2], 3);
	invlpgb_sync("INVLPGB GLOBAL", IB_GLOBAL, 0, 0);
	AP(r, { S_READ, GSLOT });
	want_new("vCPU 1, global page after INVLPGB GLOBAL", r[0], 9);
	return RESULT();
}

/* ECX[31]: the count is in 2 MiB steps; here over two 2 MiB pages. */
static int t_invlpgb_2m(void)
{
	int r[3];

	NEED(F_PCID | F_INVLPGB, 1);
	if (invlpgb_max < 1) {
		skip_why = "the max count is 0";
		return SKIP;
	}
	for (int j = 0; j < 3; j++)
		map_big(1, j, j);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, BIGSLOT(0) }, { S_READ, BIGSLOT(1) },
	   { S_READ, BIGSLOT(2) }, { S_LOAD_NF, 2 });
	want_new("vCPU 1, 2 MiB page 0 first read", r[0], BIGMARK(0));
	for (int j = 0; j < 3; j++)
		map_big(1, j, 3 + j);
	invlpgb_sync("INVLPGB VA+PCID, 2M stride, ECX=1", VA(BIGSLOT(0)) | IB_VA | IB_PCID,
		     1U << 31 | 1, IB_PCID_EDX(1));
	AP(r, { S_LOAD_NF, 1 }, { S_READ, BIGSLOT(0) }, { S_READ, BIGSLOT(1) },
	   { S_READ, BIGSLOT(2) });
	want_new("vCPU 1, 2 MiB page 0 of the range", r[0], BIGMARK(3));
	want_new("vCPU 1, 2 MiB page 1 of the range", r[1], BIGMARK(4));
	/*
	 * Only reported: TLBs may flush more around large pages (QEMU's softmmu
	 * tracks them as one region per mmu_idx and flushes the whole mmu_idx
	 * when a flush touches it), which is no fault of the PCID handling.
	 */
	diag("vCPU 1, the 2 MiB page after the range reads page %d (%s)", r[2],
	     r[2] == BIGMARK(2) ? "kept" : "flushed too, allowed");
	for (int j = 0; j < 3; j++)
		*(volatile u64 *)&pd_hi[1][1 + j] = 0;
	return RESULT();
}

static int t_invlpgb_other_pcid(void)
{
	int r[1];

	NEED(F_PCID | F_INVLPGB, 1);
	map(1, 0, 0);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_LOAD_NF, 2 });
	map(1, 0, 1);
	invlpgb_sync("INVLPGB VA+PCID 3", VA(0) | IB_VA | IB_PCID, 0, IB_PCID_EDX(3));
	AP(r, { S_LOAD_NF, 1 }, { S_READ, 0 });
	want_kept("vCPU 1, PCID 1 after an INVLPGB for PCID 3", r[0], 0, 1);
	invlpgb_sync("INVLPGB VA+PCID 1", VA(0) | IB_VA | IB_PCID, 0, IB_PCID_EDX(1));
	AP(r, { S_READ, 0 });
	want_new("vCPU 1, PCID 1 (active) after an INVLPGB for PCID 1", r[0], 1);
	return RESULT();
}

static int t_invlpgb_global(void)
{
	int r[2];

	NEED(F_PCID | F_INVLPGB, 1);
	map_global(GSLOT, 8);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, GSLOT }, { S_LOAD_NF, 2 });
	map_global(GSLOT, 9);
	invlpgb_sync("INVLPGB VA+GLOBAL", VA(GSLOT) | IB_VA | IB_GLOBAL, 0, 0);
	AP(r, { S_READ, GSLOT }, { S_LOAD_NF, 1 }, { S_READ, GSLOT });
	want_new("vCPU 1, global page under PCID 2", r[0], 9);
	want_new("vCPU 1, global page under PCID 1", r[1], 9);
	return RESULT();
}

static int t_invlpgb_count_gp(void)
{
	NEED(F_INVLPGB, 0);
	if (invlpgb_max >= 0xffff) {
		skip_why = "the max count is the largest ECX[15:0]";
		return SKIP;
	}
	want_vec("INVLPGB with ECX = max count", try_invlpgb(VA(0) | IB_VA, invlpgb_max, 0), -1);
	want_vec("INVLPGB with ECX = max count + 1", try_invlpgb(VA(0) | IB_VA, invlpgb_max + 1, 0),
		 VEC_GP);
	want_vec("TLBSYNC", try_tlbsync(), -1);
	return RESULT();
}

static int t_invlpgb_cpl3(void)
{
	NEED(F_INVLPGB, 0);
	want_vec("a NOP at CPL3 (the method)", run_user(user_nop), -1);
	want_vec("INVLPGB at CPL3", run_user(user_invlpgb), VEC_GP);
	want_vec("TLBSYNC at CPL3", run_user(user_tlbsync), VEC_GP);
	return RESULT();
}

static int t_invlpgb_ud(void)
{
	if (have & F_INVLPGB) {
		skip_why = "CPUID has INVLPGB";
		return SKIP;
	}
	want_vec("INVLPGB without the CPUID bit", try_invlpgb(0, 0, 0), VEC_UD);
	want_vec("TLBSYNC without the CPUID bit", try_tlbsync(), VEC_UD);
	want_vec("INVLPGB without the CPUID bit, at CPL3", run_user(user_invlpgb), VEC_UD);
	want_vec("TLBSYNC without the CPUID bit, at CPL3", run_user(user_tlbsync), VEC_UD);
	return RESULT();
}

/*
 * TLBSYNC is where the architecture promises completion, on every CPU:
 * before it the entry may or may not be gone. The strict emulator mode
 * delays each invalidation to the issuer's TLBSYNC, on the other vCPU and
 * on the issuer itself, so there the entry must still be there. @steps
 * runs the reads where @before and @after say: on vCPU 1 (ap_steps) or on
 * the issuer (run_steps).
 */
static int tlbsync_completes(void (*steps)(const struct step *, int *),
			     const char *before, const char *after)
{
	int r[1];

	map(1, 0, 0);
	steps((const struct step[]){ { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_END, 0 } }, r);
	map(1, 0, 1);
	want_vec("INVLPGB VA+PCID 1", try_invlpgb(VA(0) | IB_VA | IB_PCID, 0, IB_PCID_EDX(1)), -1);
	steps((const struct step[]){ { S_READ, 0 }, { S_END, 0 } }, r);
	if (expect & F_STRICT)
		kept(F_STRICT, before, r[0], 0, 1);
	else
		diag("%s reads page %d (%s)", before, r[0],
		     r[0] == 0 ? "still pending" : "already gone, allowed");
	want_vec("TLBSYNC", try_tlbsync(), -1);
	steps((const struct step[]){ { S_READ, 0 }, { S_END, 0 } }, r);
	want_new(after, r[0], 1);
	return RESULT();
}

static int t_tlbsync(void)
{
	NEED(F_PCID | F_INVLPGB, 1);
	return tlbsync_completes(ap_steps, "vCPU 1 before the TLBSYNC",
				 "vCPU 1 after the TLBSYNC");
}

/*
 * The ordering TLBSYNC promises, many times over: vCPU 1 keeps reading X
 * while vCPU 0 rewrites the PTE, issues INVLPGB and TLBSYNC, then sets a
 * flag; any read of X that vCPU 1 makes after seeing the flag must miss
 * the old entry. An emulator whose TLBSYNC does not wait for the remote
 * flush loses this race now and then.
 */
static int t_tlbsync_order(void)
{
	int r[1], bad = 0, rounds = 200, v;

	NEED(F_PCID | F_INVLPGB, 1);
	map(1, 0, 0);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 });
	for (int i = 0; i < rounds; i++) {
		int old = i & 1, new = !old;

		__atomic_store_n(&watch_armed, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&watch_go, 0, __ATOMIC_RELEASE);
		ap_begin((const struct step[]){ { S_WATCH, 0 }, { S_END, 0 } }, r);
		if (!wait_for(&watch_armed, 1, 20000000000UL))
			bail_out("the second vCPU stopped answering");
		map(1, 0, new);
		v = try_invlpgb(VA(0) | IB_VA | IB_PCID, 0, IB_PCID_EDX(1));
		if (v == -1)
			v = try_tlbsync();
		__atomic_store_n(&watch_go, 1, __ATOMIC_RELEASE);
		ap_end();
		if (v != -1) {
			want_vec("INVLPGB, TLBSYNC", v, -1);
			return FAIL;
		}
		if (r[0] != new && !bad++)
			diag("round %d: vCPU 1 read page %d after the TLBSYNC, want page %d", i, r[0], new);
	}
	if (bad) {
		failed = 1;
		diag("%d of %d rounds read a stale entry after the TLBSYNC", bad, rounds);
	}
	return RESULT();
}

/* How many PCIDs keep an entry: fill one page under PCIDs 1-12 (the same
 * tables), rewrite its PTE, and go back most recent first. */
static int t_pcids_resident(void)
{
	int n = 0, k = 12;

	NEED(F_PCID, 0);
	map(1, 0, 0);
	flush_all();
	for (int p = 1; p <= k; p++) {
		write_cr3((u64)pml4[1] | (u64)p);
		read_page(VA(0));
	}
	map(1, 0, 1);
	for (int p = k; p >= 1; p--) {
		write_cr3((u64)pml4[1] | (u64)p | CR3_NOFLUSH);
		if (read_page(VA(0)) != 0)
			break;	/* the refill evicts another: stop counting */
		n++;
	}
	load_as(0, 0);
	diag("%d of %d PCIDs kept their entry", n, k);
	if (n < 3) {
		if (expect & F_RETAIN)
			failed = 1;
		diag("fewer than 3 PCIDs resident%s", expect & F_RETAIN ? "" : " (allowed, retention not expected)");
	}
	return RESULT();
}

static int t_invlpg_global(void)
{
	int r[2];

	NEED(F_PCID, 0);
	map_global(GSLOT, 8);
	map(1, 1, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, GSLOT }, { S_READ, 1 }, { S_LOAD_NF, 2 });
	map_global(GSLOT, 9);
	map(1, 1, 2);
	invlpg(VA(GSLOT));
	RUN(r, { S_LOAD_NF, 1 }, { S_READ, GSLOT }, { S_READ, 1 });
	want_new("global page filled under PCID 1, INVLPG under PCID 2", r[0], 9);
	want_kept("a non-global page of PCID 1", r[1], 1, 2);
	load_as(0, 0);
	return RESULT();
}

static int t_invlpg_nonglobal(void)
{
	int r[2];

	NEED(F_PCID, 0);
	map(1, 0, 0);
	map(2, 0, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 0 }, { S_LOAD, 1 }, { S_READ, 0 });
	map(1, 0, 2);
	map(2, 0, 3);
	invlpg(VA(0));
	RUN(r, { S_READ, 0 }, { S_LOAD_NF, 2 }, { S_READ, 0 });
	want_new("the active PCID", r[0], 2);
	want_kept("the same VA in an inactive PCID", r[1], 1, 3);
	load_as(0, 0);
	return RESULT();
}

/* ---- exactness: nothing beyond what was named ------------------------- */

/* The 4 KiB slot j of the test region maps this 2 MiB page's offset. */
static void unmap_big(int as, int j)
{
	*(volatile u64 *)&pd_hi[as][1 + j] = 0;
}

/*
 * INVLPG of a 4 KiB page near large pages: 2 MiB pages filled on both
 * sides of the 4 KiB test table (QEMU then tracks one large-page region
 * over all of them). Only the named page may go; INVLPG of any address
 * inside a 2 MiB page drops that page whole.
 */
static int t_invlpg_exact_near_large(void)
{
	int r[5];

	NEED(F_PCID, 0);
	map(1, 0, 0);
	map(1, 1, 1);
	map_big(1, 0, 0);
	map_big(1, 2, 2);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, BIGSLOT(0) }, { S_READ, BIGSLOT(2) },
	    { S_READ, 0 }, { S_READ, 1 });
	want_new("2 MiB page 0 first read", r[0], BIGMARK(0));
	map(1, 0, 2);
	map(1, 1, 3);
	map_big(1, 0, 3);
	map_big(1, 2, 4);
	invlpg(VA(0));
	RUN(r, { S_READ, 0 }, { S_READ, 1 }, { S_READ, BIGSLOT(0) }, { S_READ, BIGSLOT(2) });
	want_new("the page INVLPG named", r[0], 2);
	want_exact_kept("the next 4 KiB page", r[1], 1, 3);
	want_exact_kept("2 MiB page 0", r[2], BIGMARK(0), BIGMARK(3));
	want_exact_kept("2 MiB page 2", r[3], BIGMARK(2), BIGMARK(4));
	/* another 4 KiB of 2 MiB page 0 than the one read: the page goes */
	invlpg(VA(BIGSLOT(0)) + 5 * 4096);
	RUN(r, { S_READ, BIGSLOT(0) }, { S_READ, BIGSLOT(2) });
	want_new("2 MiB page 0 after INVLPG of another of its 4 KiB", r[0], BIGMARK(3));
	want_exact_kept("2 MiB page 2 after it", r[1], BIGMARK(2), BIGMARK(4));
	unmap_big(1, 0);
	unmap_big(1, 2);
	load_as(0, 0);
	return RESULT();
}

/*
 * A global INVLPGB of 2 pages (VA + GLOBAL, no PCID: every PCID) on the
 * other vCPU, which cached the globals under PCID 1 and then switched to
 * PCID 2: the two pages go from PCID 1's parked entries, a third global
 * page and other pages of the active and of the parked PCID stay.
 */
static int t_invlpgb_global_range_exact(void)
{
	int r[5];

	NEED(F_PCID | F_INVLPGB, 1);
	if (invlpgb_max < 1) {
		skip_why = "the max count is 0";
		return SKIP;
	}
	map_global(0, 0);
	map_global(1, 1);
	map_global(2, 2);
	map(1, 3, 3);
	map(2, 4, 4);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 0 }, { S_READ, 1 }, { S_READ, 2 },
	   { S_READ, 3 }, { S_LOAD_NF, 2 }, { S_READ, 4 });
	want_new("vCPU 1, global page 0 first read", r[0], 0);
	map_global(0, 5);
	map_global(1, 6);
	map_global(2, 7);
	map(1, 3, 8);
	map(2, 4, 9);
	invlpgb_sync("INVLPGB VA+GLOBAL, ECX=1", VA(0) | IB_VA | IB_GLOBAL, 1, 0);
	/*
	 * The globals are read back under PCID 1, which cached them: the
	 * emulator does not share global entries between PCIDs (docs/qemu.md).
	 */
	AP(r, { S_READ, 4 }, { S_LOAD_NF, 1 }, { S_READ, 0 }, { S_READ, 1 }, { S_READ, 2 },
	   { S_READ, 3 });
	want_exact_kept("vCPU 1, PCID 2 (active), a page outside the range", r[0], 4, 9);
	want_new("vCPU 1, global page 0 of the range", r[1], 5);
	want_new("vCPU 1, global page 1 of the range", r[2], 6);
	want_exact_kept("vCPU 1, the global page after the range", r[3], 2, 7);
	want_exact_kept("vCPU 1, PCID 1 (parked), a page outside the range", r[4], 3, 8);
	for (int s = 0; s < 3; s++)
		for (int as = 0; as < NAS; as++)
			*(volatile u64 *)&pt_hi[as][s + slot_base] = 0;
	return RESULT();
}

/*
 * ECX[31] over 4 KiB mappings: each step invalidates what translates the
 * address it visits (here the start of the test region and the 2 MiB page
 * after it), not the 4 KiB pages between the steps.
 */
static int t_invlpgb_2m_stride_4k(void)
{
	int r[5];

	NEED(F_PCID | F_INVLPGB, 1);
	if (invlpgb_max < 1) {
		skip_why = "the max count is 0";
		return SKIP;
	}
	for (int s = 1; s <= 4; s++)
		map(1, s, s);
	map_big(1, 0, 0);
	AP(r, { S_FLUSH, 0 }, { S_LOAD, 1 }, { S_READ, 1 }, { S_READ, 2 }, { S_READ, 3 },
	   { S_READ, 4 }, { S_READ, BIGSLOT(0) });
	want_new("vCPU 1, 4 KiB page 1 first read", r[0], 1);
	for (int s = 1; s <= 4; s++)
		map(1, s, 4 + s);
	map_big(1, 0, 3);
	invlpgb_sync("INVLPGB VA+PCID, 2M stride, ECX=1, from the region's start",
		     REGION | IB_VA | IB_PCID, 1U << 31 | 1, IB_PCID_EDX(1));
	AP(r, { S_READ, 1 }, { S_READ, 2 }, { S_READ, 3 }, { S_READ, 4 }, { S_READ, BIGSLOT(0) });
	for (int s = 1; s <= 4; s++)
		want_exact_kept("vCPU 1, a 4 KiB page between the steps", r[s - 1], s, 4 + s);
	want_new("vCPU 1, the 2 MiB page the second step visits", r[4], BIGMARK(3));
	unmap_big(1, 0);
	return RESULT();
}

/*
 * MOV to CR3 with CR4.PCIDE=0 invalidates the non-global entries only;
 * setting CR4.PCIDE (with PCID 0 loaded) invalidates nothing.
 */
static int t_cr3_pcide0_keeps_globals(void)
{
	int r[3];
	u64 cr4 = read_cr4();

	NEED(F_PCID, 0);
	load_as(0, 0);
	write_cr4(cr4 & ~CR4_PCIDE);
	pcide_on = 0;
	map_global(GSLOT, 8);
	map(0, 0, 0);
	map(0, 1, 1);
	RUN(r, { S_FLUSH, 0 }, { S_READ, GSLOT }, { S_READ, 0 });
	map_global(GSLOT, 9);
	map(0, 0, 2);
	load_as(0, 0);
	RUN(r, { S_READ, GSLOT }, { S_READ, 0 }, { S_READ, 1 });
	want_global_kept("global page after MOV to CR3 with PCIDE=0", r[0], 8, 9);
	want_new("non-global page after MOV to CR3 with PCIDE=0", r[1], 2);
	map(0, 1, 3);
	write_cr4(cr4);
	pcide_on = 1;
	RUN(r, { S_READ, 1 });
	want_exact_kept("PCID 0 page after setting CR4.PCIDE", r[0], 1, 3);
	flush_all();
	return RESULT();
}

/* A MOV to CR4 that changes no paging bit invalidates nothing. */
static int t_cr4_other_bit_keeps(void)
{
	int r[3];
	u64 cr4 = read_cr4();

	NEED(F_PCID, 0);
	map_global(GSLOT, 8);
	map(1, 0, 0);
	map(2, 1, 1);
	RUN(r, { S_FLUSH, 0 }, { S_LOAD, 2 }, { S_READ, 1 }, { S_LOAD_NF, 1 }, { S_READ, 0 },
	    { S_READ, GSLOT });
	map_global(GSLOT, 9);
	map(1, 0, 2);
	map(2, 1, 3);
	write_cr4(cr4 ^ (1UL << 2));	/* CR4.TSD */
	write_cr4(cr4);
	RUN(r, { S_READ, 0 }, { S_READ, GSLOT }, { S_LOAD_NF, 2 }, { S_READ, 1 });
	want_exact_kept("PCID 1 (active) after CR4.TSD toggled", r[0], 0, 2);
	want_exact_kept("global page after CR4.TSD toggled", r[1], 8, 9);
	want_exact_kept("PCID 2 (parked) after CR4.TSD toggled", r[2], 1, 3);
	load_as(0, 0);
	return RESULT();
}

/* The issuer's own TLB: its INVLPGB, too, is complete there at its TLBSYNC. */
static int t_tlbsync_completes_local(void)
{
	int ret;

	NEED(F_PCID | F_INVLPGB, 0);
	ret = tlbsync_completes(run_steps, "the issuer, before its TLBSYNC",
				"the issuer, after its TLBSYNC");
	load_as(0, 0);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "cpuid_pcid", t_cpuid_pcid },
	{ "cpuid_invpcid", t_cpuid_invpcid },
	{ "cpuid_invlpgb", t_cpuid_invlpgb },
	{ "second_vcpu_started", t_ap_started },
	{ "method_stale_entries_and_cpl3", t_method },
	{ "pcide_gp_outside_long_mode", t_pcide_outside_long_mode },
	{ "pcide_rules", t_pcide_rules },
	{ "cr0_pg_clear_with_pcide", t_cr0_pg },
	{ "noflush_retains_2_pcids", t_noflush_2 },
	{ "cr3_without_noflush_flushes", t_cr3_flushes },
	{ "noflush_retains_3_pcids", t_noflush_3 },
	{ "pcids_resident", t_pcids_resident },
	{ "cr4_pge_and_pcide_flush_all_pcids", t_cr4_flushes },
	{ "invpcid_type0_address", t_invpcid_0 },
	{ "invpcid_type1_context", t_invpcid_1 },
	{ "invpcid_type2_all", t_invpcid_2 },
	{ "invpcid_type3_all_but_global", t_invpcid_3 },
	{ "invpcid_gp", t_invpcid_gp },
	{ "invpcid_ud_without_cpuid", t_invpcid_ud },
	{ "invlpgb_kills_parked_remote_entry", t_invlpgb_parked },
	{ "invlpgb_range", t_invlpgb_range },
	{ "invlpgb_other_pcid_spares_entry", t_invlpgb_other_pcid },
	{ "invlpgb_whole_pcid", t_invlpgb_pcid_all },
	{ "invlpgb_all_nonglobal_then_global", t_invlpgb_all },
	{ "invlpgb_2m_stride", t_invlpgb_2m },
	{ "invlpgb_global", t_invlpgb_global },
	{ "invlpgb_count_gp", t_invlpgb_count_gp },
	{ "invlpgb_tlbsync_gp_at_cpl3", t_invlpgb_cpl3 },
	{ "invlpgb_tlbsync_ud_without_cpuid", t_invlpgb_ud },
	{ "tlbsync_completes_remote_invalidation", t_tlbsync },
	{ "tlbsync_orders_remote_reads", t_tlbsync_order },
	{ "invlpg_global_reaches_parked_pcid", t_invlpg_global },
	{ "invlpg_nonglobal_active_pcid", t_invlpg_nonglobal },
	{ "invlpg_exact_near_large_pages", t_invlpg_exact_near_large },
	{ "invlpgb_global_range_exact", t_invlpgb_global_range_exact },
	{ "invlpgb_2m_stride_leaves_4k_between", t_invlpgb_2m_stride_4k },
	{ "cr3_pcide0_keeps_globals", t_cr3_pcide0_keeps_globals },
	{ "cr4_other_bit_keeps_entries", t_cr4_other_bit_keeps },
	{ "tlbsync_completes_local_invalidation", t_tlbsync_completes_local },
};

/* ---- setup ------------------------------------------------------------ */

/* s starts with w; *end is the first character after it. */
static int starts(const char *s, const char *w, const char **end)
{
	while (*w && *s == *w)
		s++, w++;
	*end = s;
	return !*w;
}

static int word_is(const char *s, const char *w, const char **end)
{
	return starts(s, w, end) && (**end == ',' || **end == ' ' || !**end);
}

/* Kernel line words: "expect=a,b,c" and "strict". */
static void parse_cmdline(void)
{
	static const struct { const char *name; u32 f; } feats[] = {
		{ "pcid", F_PCID }, { "invpcid", F_INVPCID },
		{ "invlpgb", F_INVLPGB }, { "retain", F_RETAIN }, { "globals", F_GLOBALS },
		{ "exact", F_EXACT },
	};
	const u32 *info = (const u32 *)(u64)mb_info;
	const char *s, *e;

	if (!info || !(info[0] & 4))
		return;
	for (s = (const char *)(u64)info[4]; *s;) {
		if (word_is(s, "strict", &e))
			expect |= F_STRICT;
		else if (starts(s, "expect=", &e))
			for (s = e; *s && *s != ' '; s = *e == ',' ? e + 1 : e) {
				unsigned int i;

				for (i = 0; i < sizeof(feats) / sizeof(feats[0]); i++)
					if (word_is(s, feats[i].name, &e))
						break;
				if (i < sizeof(feats) / sizeof(feats[0]))
					expect |= feats[i].f;
				else
					diag("unknown feature in expect=: %s", s);
				while (*e && *e != ',' && *e != ' ')
					e++;
			}
		while (*s && *s != ' ')
			s++;
		while (*s == ' ')
			s++;
	}
}

static void read_cpuid(void)
{
	u32 r[4];

	cpuid(1, 0, r);
	if (r[2] & (1 << 17))
		have |= F_PCID;
	cpuid(0, 0, r);
	if (r[0] >= 7) {
		cpuid(7, 0, r);
		if (r[1] & (1 << 10))
			have |= F_INVPCID;
	}
	cpuid(0x80000000, 0, r);
	if (r[0] >= 0x80000008) {
		cpuid(0x80000008, 0, r);
		if (r[1] & (1 << 3))
			have |= F_INVLPGB;
		invlpgb_max = r[3] & 0xffff;
	}
}

/* Sets (of 64) that the test pages use, relative to slot 0's. */
static const int slot_sets[] = { 0, 1, 2, 3, 4, GSLOT, 12, 13, 14 };

static int hot_set(u64 set)
{
	u64 lo = (u64)__image_start >> 12, hi = ((u64)__cold_start >> 12) - 1;

	if (hi - lo >= 63)
		return 1;
	for (u64 p = lo; p <= hi; p++)
		if (p % 64 == set)
			return 1;
	/* the two top pages of each stack; the LAPIC page */
	for (int i = 1; i <= 2; i++)
		if (((u64)bsp_stack_top / 4096 - i) % 64 == set ||
		    ((u64)ap_stack_top / 4096 - i) % 64 == set)
			return 1;
	return (LAPIC >> 12) % 64 == set;
}

static void pick_slot_base(void)
{
	for (slot_base = 0; slot_base < 64; slot_base++) {
		unsigned int i;

		for (i = 0; i < sizeof(slot_sets) / sizeof(slot_sets[0]); i++)
			if (hot_set((slot_base + slot_sets[i]) % 64))
				break;
		if (i == sizeof(slot_sets) / sizeof(slot_sets[0]))
			return;
	}
	bail_out("the image is too large to keep the test pages on TLB sets of their own");
}

static void setup_paging(void)
{
	pick_slot_base();
	for (int p = 0; p < NPAGES; p++)
		*(u64 *)pages[p] = MARK(p);
	for (int k = 0; k < 6; k++)	/* a marker in each 4 KiB of it */
		for (u64 off = 0; off < 0x200000; off += 4096)
			*(u64 *)(BIG(k) + off) = MARK(BIGMARK(k));
	for (int as = 0; as < NAS; as++) {
		pml4[as][0] = (u64)pdpt_lo | PTE_P | PTE_W | PTE_U;
		pml4[as][1] = (u64)pdpt_hi[as] | PTE_P | PTE_W;
		pdpt_hi[as][0] = (u64)pd_hi[as] | PTE_P | PTE_W;
		pd_hi[as][0] = (u64)pt_hi[as] | PTE_P | PTE_W;
	}
	flush_all();
}

void bsp_main(void);
void bsp_main(void)
{
	int n = sizeof(cases) / sizeof(cases[0]), counts[3] = { 0, 0, 0 };

	setup_idt();
	setup_user();
	print("\nKTAP version 1\n1..%d\n", n);	/* after the firmware's text */
	parse_cmdline();
	read_cpuid();
	diag("CPUID: pcid=%d invpcid=%d invlpgb=%d; expected: pcid=%d invpcid=%d invlpgb=%d retain=%d globals=%d exact=%d strict=%d",
	     !!(have & F_PCID), !!(have & F_INVPCID), !!(have & F_INVLPGB),
	     !!(expect & F_PCID), !!(expect & F_INVPCID), !!(expect & F_INVLPGB),
	     !!(expect & F_RETAIN), !!(expect & F_GLOBALS), !!(expect & F_EXACT),
	     !!(expect & F_STRICT));
	setup_paging();
	diag("test pages from %lx (TLB set %lu of 64 on)", VA(0), slot_base);
	start_ap();
	for (int i = 0; i < n; i++) {
		int r;

		failed = 0;
		skip_why = 0;
		r = cases[i].fn();
		counts[r]++;
		if (r == SKIP)
			print("ok %d %s # SKIP %s\n", i + 1, cases[i].name, skip_why);
		else
			print("%sok %d %s\n", r == PASS ? "" : "not ", i + 1, cases[i].name);
	}
	diag("%d passed, %d failed, %d skipped", counts[PASS], counts[FAIL], counts[SKIP]);
	qemu_exit(counts[FAIL] ? 1 : 0);
}
