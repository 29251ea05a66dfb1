// SPDX-License-Identifier: GPL-2.0
/* BPF syscall programs through bpf(2): see bpfsys.h. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpfsys.h"
#include "common.h"

long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

int bpf_syscall_prog_load(const struct bpf_insn *insn, unsigned int n,
			  const char *what)
{
	static char log[65536];
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SYSCALL;
	a.insns = (uintptr_t)insn;
	a.insn_cnt = n;
	a.license = (uintptr_t)"GPL";
	a.prog_flags = BPF_F_SLEEPABLE;	/* as syscall programs must be */
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	log[0] = '\0';
	fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (fd < 0)
		fatal("loading %s (needs root and a kernel with BPF syscall programs): %s\n%s",
		      what, strerror(errno), log);
	return fd;
}

uint32_t bpf_syscall_prog_run(int fd, void *ctx, size_t size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.test.prog_fd = fd;
	a.test.ctx_in = (uintptr_t)ctx;
	a.test.ctx_size_in = size;
	if (sys_bpf(BPF_PROG_TEST_RUN, &a) < 0)
		fatal_errno("running a BPF program");
	return a.test.retval;
}
