/*
 * Boot code of the emulator's TLB test program: a multiboot v1 entry in
 * 32-bit protected mode, one test that only exists outside long mode, the
 * switch to long mode with an identity map of the low 4 GiB, the real-mode
 * trampoline that the second vCPU starts in, and the exception stubs.
 *
 * The image is flat (objcopy -O binary) and uses the multiboot "a.out
 * kludge" (flag 16), because QEMU's multiboot loader refuses 64-bit ELF.
 */

#define MB_MAGIC	0x1badb002
#define MB_FLAGS	0x00010000	/* the load addresses are in the header */

#define CR0_PE		(1 << 0)
#define CR0_PG		(1 << 31)
#define CR4_PAE		(1 << 5)
#define CR4_PGE		(1 << 7)
#define CR4_PCIDE	(1 << 17)
#define MSR_EFER	0xc0000080
#define EFER_LME	(1 << 8)

#define SEL_CODE32	0x08
#define SEL_DATA	0x10
#define SEL_CODE64	0x18

#define TRAMPOLINE	0x8000		/* SIPI vector 0x08 */
#define STACK_SIZE	16384

	.section .multiboot, "a"
	.align 4
mb_header:
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)
	.long mb_header		/* header_addr */
	.long __image_start	/* load_addr */
	.long _edata		/* load_end_addr */
	.long _end		/* bss_end_addr */
	.long _start32		/* entry_addr */

	.data
	.globl mb_info, pcide32_fault, pcide32_cr4
mb_info:	.long 0		/* in .data: the bss is cleared after it is saved */
pcide32_fault:	.long 0		/* #GP seen when setting CR4.PCIDE outside long mode */
pcide32_cr4:	.long 0		/* CR4 read back after that attempt */

	.align 16
gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
	.quad 0x00af9a000000ffff	/* 0x18: 64-bit code */
	.quad 0x00cff2000000ffff	/* 0x20: user data */
	.quad 0x00affa000000ffff	/* 0x28: user 64-bit code */
	.globl gdt_tss
gdt_tss: .quad 0, 0			/* 0x30: the TSS, filled by setup_user() */
gdt_end:
gdt_ptr:
	.word gdt_end - gdt - 1
	.quad gdt

	/* Only #GP is wired: the one 32-bit test expects nothing else. */
	.align 8
idt32:
	.fill 14, 8, 0
idt32_end:
idt32_ptr:
	.word idt32_end - idt32 - 1
	.long idt32

	/* Touched by the page walker or at boot only: off the hot pages. */
	.section .bss.cold, "aw", @nobits
	.align 4096
	.globl pml4, pdpt_lo, pd_lo
pml4:	.fill 4 * 512, 8, 0	/* one PML4 per address space 0-3 */
pdpt_lo: .fill 512, 8, 0	/* the identity map, shared by all of them */
pd_lo:	.fill 4 * 512, 8, 0	/* 4 GiB in 2 MiB pages: RAM, LAPIC */
	.align 16
bsp_stack: .fill STACK_SIZE, 1, 0
bsp_stack_top:
	.globl bsp_stack_top, ap_stack_top
ap_stack: .fill STACK_SIZE, 1, 0
ap_stack_top:

	.text
	.code32
	.globl _start32
_start32:
	cli
	movl %ebx, mb_info
	lgdt gdt_ptr
	ljmp $SEL_CODE32, $1f
1:	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	movl $bsp_stack_top, %esp

	movl $__bss_start, %edi
	movl $_end, %ecx
	subl %edi, %ecx
	xorl %eax, %eax
	cld
	rep stosb

	/*
	 * CR4.PCIDE may only be set in IA-32e mode (SDM MOV to CR4: #GP if
	 * PCIDE would be 1 while IA32_EFER.LMA is 0); without the CPUID bit it
	 * is reserved, which also means #GP. Either way this must fault. Once
	 * in long mode this rule can no longer be reached, hence the test here.
	 */
	movl $gp32_handler, %eax
	movw %ax, idt32 + 13 * 8
	movw $SEL_CODE32, idt32 + 13 * 8 + 2
	movw $0x8e00, idt32 + 13 * 8 + 4	/* present 32-bit interrupt gate */
	shrl $16, %eax
	movw %ax, idt32 + 13 * 8 + 6
	lidt idt32_ptr
	movl %cr4, %eax
	orl $CR4_PCIDE, %eax
	movl %eax, %cr4
gp32_resume:
	movl %cr4, %eax
	movl %eax, pcide32_cr4
	andl $~CR4_PCIDE, %eax		/* it must not stay set if it took */
	movl %eax, %cr4

	/* Identity map of 0-4 GiB in 2 MiB pages, not global. */
	/* user-accessible too, for the CPL3 cases (no SMEP, no SMAP) */
	movl $pdpt_lo + 7, pml4
	xorl %ecx, %ecx
2:	movl %ecx, %eax
	shll $12, %eax			/* the ecx-th page directory */
	addl $pd_lo + 7, %eax
	movl %eax, pdpt_lo(, %ecx, 8)
	incl %ecx
	cmpl $4, %ecx
	jb 2b
	xorl %ecx, %ecx
3:	movl %ecx, %eax
	shll $21, %eax
	orl $0x87, %eax			/* present, writable, user, 2 MiB */
	movl %eax, pd_lo(, %ecx, 8)
	movl %ecx, %eax
	shrl $11, %eax			/* bits 32+ of the address */
	movl %eax, pd_lo + 4(, %ecx, 8)
	incl %ecx
	cmpl $2048, %ecx
	jb 3b

	xorl %esi, %esi			/* the BSP */
	jmp enter_long

gp32_handler:
	movl $1, pcide32_fault
	addl $4, %esp			/* the error code */
	movl $gp32_resume, (%esp)
	iret

/* Common to both vCPUs; %esi says which one this is (0: BSP). */
enter_long:
	movl $pml4, %eax
	movl %eax, %cr3
	movl $(CR4_PAE | CR4_PGE), %eax
	movl %eax, %cr4
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl $(CR0_PE | CR0_PG), %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $long64

	.code64
long64:
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	testl %esi, %esi
	jnz 4f
	movq $bsp_stack_top, %rsp
	call bsp_main
	jmp halt
4:	movq $ap_stack_top, %rsp
	call ap_main
halt:	cli
	hlt
	jmp halt

/*
 * The second vCPU starts here in real mode at TRAMPOLINE (bsp_main copies
 * this block there). Addresses inside the block are TRAMPOLINE-relative;
 * everything it jumps to is in the image, below 4 GiB.
 */
	.code16
	.globl ap_tramp_start, ap_tramp_end
ap_tramp_start:
	cli
	xorw %ax, %ax
	movw %ax, %ds
	lgdtl TRAMPOLINE + (ap_tramp_gdt - ap_tramp_start)
	movl %cr0, %eax
	orl $CR0_PE, %eax
	movl %eax, %cr0
	ljmpl $SEL_CODE32, $ap_32
	.align 4
ap_tramp_gdt:
	.word gdt_end - gdt - 1
	.long gdt
ap_tramp_end:

	.code32
ap_32:
	movw $SEL_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movl $1, %esi
	jmp enter_long

/*
 * int run_user(void (*code)(void)): run code at CPL3 and return the vector
 * it raised (-1: none). The code ends in UD2; exc_handler takes a #UD at a
 * UD2 for "no fault", and every exception from CPL3 back to user_return,
 * on the stack saved here.
 */
	.code64
	.globl run_user, user_return
run_user:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, user_ret_rsp(%rip)
	pushq $(0x20 | 3)		/* SS */
	pushq $user_stack_top
	pushq $2			/* RFLAGS: interrupts stay off */
	pushq $(0x28 | 3)		/* CS */
	pushq %rdi
	iretq
user_return:
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	movl user_vec(%rip), %eax
	ret

	.globl user_nop, user_cr3, user_invpcid, user_invlpgb, user_tlbsync
user_nop:
	nop
	ud2
user_cr3:
	movq %cr3, %rax
	ud2
user_invpcid:
	movl $2, %eax
	invpcid user_desc(%rip), %rax
	ud2
user_invlpgb:
	xorl %eax, %eax
	xorl %ecx, %ecx
	xorl %edx, %edx
	.byte 0x0f, 0x01, 0xfe
	ud2
user_tlbsync:
	.byte 0x0f, 0x01, 0xff
	ud2

	.data
	.align 16
user_desc: .quad 0, 0
	.section .bss.cold, "aw", @nobits
	.align 4096
	.globl trap_stack_top
trap_stack: .fill 4096, 1, 0		/* TSS.RSP0: exceptions from CPL3 */
trap_stack_top:
user_stack: .fill 4096, 1, 0
user_stack_top:

	.text
/* Exception stubs: a uniform frame (vector, error code) for exc_handler. */
	.code64
.macro isr n
isr\n:
	.if (\n == 8) || ((\n >= 10) && (\n <= 14)) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp isr_common
.endm

.altmacro
.macro isrs from, to
	isr \from
	.if \to - \from
	isrs %(\from + 1), \to
	.endif
.endm
	isrs 0, 31

.macro isr_addr n
	.quad isr\n
.endm
.macro isr_addrs from, to
	isr_addr %(\from)
	.if \to - \from
	isr_addrs %(\from + 1), \to
	.endif
.endm
	.section .rodata
	.globl isr_table
isr_table:
	isr_addrs 0, 31

	.text
isr_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	cld
	call exc_handler
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq
