// SPDX-License-Identifier: GPL-2.0
/*
 * unload_once: unloads one kernel module with a single delete_module() call, optionally with the
 * N-th kernel allocation of that call failing, and says whether the failure was injected.
 *
 * Usage: unload_once MODULE [N]
 * With N, /proc/self/fail-nth is armed with N just before the call, so only allocations made by
 * the unload itself count (not those of starting this program, as with `sh -c "echo N >
 * /proc/self/fail-nth; exec rmmod"`). Prints `fault injected` or `fault not reached` on stdout
 * (fail-nth reads 0 once it fired). Exit 0 if the module was unloaded, else 1 with
 * "unload_once: errno <n>: <message>" on stderr; 2 on a usage or set-up error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Opens /proc/self/fail-nth: an fd, or -1 with a message. */
static int open_fail_nth(void)
{
	int fd = open("/proc/self/fail-nth", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "unload_once: open /proc/self/fail-nth: %s\n", strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	char nth[32], left[32];
	int fd = -1, rc, e;
	ssize_t n;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: unload_once MODULE [N]\n");
		return 2;
	}
	if (argc == 3) {
		fd = open_fail_nth();
		if (fd < 0)
			return 2;
		n = snprintf(nth, sizeof(nth), "%ld", strtol(argv[2], NULL, 10));
		/* Armed from here: the write is the last thing before the call. */
		if (write(fd, nth, n) != n) {
			fprintf(stderr, "unload_once: arm fail-nth: %s\n", strerror(errno));
			return 2;
		}
	}
	rc = syscall(SYS_delete_module, argv[1], O_NONBLOCK);
	e = errno;
	if (fd >= 0) {
		/* Reading disarms it too: what follows must not fail by our doing. */
		n = pread(fd, left, sizeof(left) - 1, 0);
		left[n > 0 ? n : 0] = '\0';
		if (write(fd, "0", 1) != 1) {
			fprintf(stderr, "unload_once: disarm fail-nth: %s\n", strerror(errno));
			return 2;
		}
		printf("fault %s\n", n > 0 && atoi(left) == 0 ? "injected" : "not reached");
		close(fd);
	}
	if (rc != 0) {
		fprintf(stderr, "unload_once: errno %d: %s\n", e, strerror(e));
		return 1;
	}
	return 0;
}
