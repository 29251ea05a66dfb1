/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BPF syscall programs written out as instructions, for the checkers that
 * read kernel memory in the guest (kflushcheck, vmemmapcheck): loaded and
 * run through bpf(2) directly, with no skeleton and no clang.
 */
#ifndef TOOLS_BPFSYS_H
#define TOOLS_BPFSYS_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

/* One instruction: opcode, dst and src registers, offset, immediate. */
#define BPF_INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })

long sys_bpf(int cmd, union bpf_attr *attr);

/*
 * Load N instructions as a sleepable BPF_PROG_TYPE_SYSCALL program; on
 * failure, exit(EXIT_ERROR) with the verifier's log and WHAT ("the reader
 * program") in the message. Returns the program's fd.
 */
int bpf_syscall_prog_load(const struct bpf_insn *insn, unsigned int n,
			  const char *what);

/*
 * Run a syscall program once on this CPU with CTX (SIZE bytes) as its
 * context, which the kernel copies back after the run. Returns the
 * program's return value; exit(EXIT_ERROR) when the run itself fails.
 */
uint32_t bpf_syscall_prog_run(int fd, void *ctx, size_t size);

#endif /* TOOLS_BPFSYS_H */
