// SPDX-License-Identifier: GPL-2.0
/*
 * load_once: loads one kernel module with a single finit_module() call and reports its errno.
 *
 * busybox insmod falls back to init_module() when finit_module() fails for any reason, so a
 * load failed on purpose (hardening-failslab's fail-nth) would be retried and succeed. This tool
 * makes exactly one attempt. Usage: load_once MODULE.ko [PARAMS]; exit 0 if loaded, else 1
 * with "load_once: <errno name>: <message>" on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *params = argc > 2 ? argv[2] : "";
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: load_once MODULE.ko [PARAMS]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "load_once: open %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	if (syscall(SYS_finit_module, fd, params, 0) != 0) {
		int e = errno;

		fprintf(stderr, "load_once: errno %d: %s\n", e, strerror(e));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}
