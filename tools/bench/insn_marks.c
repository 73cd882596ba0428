// SPDX-License-Identifier: GPL-2.0
/*
 * insn_marks: a QEMU TCG plugin that counts the guest instructions executed between two marker
 * instructions, for `make bench`'s instruction counts per post_send and per CQE.
 *
 * A marker is an 8-byte no-op the guest code places around what it measures:
 *
 *     nopl MARK(%rax,%rax,1)        0f 1f 84 00 <MARK: 32 bits, little-endian>
 *
 * with MARK = 0x52444d00 | end << 7 | id (id 1..127; end 0 opens an interval, 1 closes it).
 * Compilers pad with the same instruction but a displacement of 0, so a padding no-op is never
 * taken for a marker. Every guest instruction adds one to its vCPU's counter (an inline add);
 * at a marker a callback reads the counter: an opening marker records it for its vCPU, the
 * closing marker of the same id on the same vCPU writes one line
 *
 *     <id> <instructions from the opening marker to the closing one>
 *
 * to the file named by the plugin's `out=` argument (the opening marker itself counts, the
 * closing one does not). An interval interrupted by an interrupt or exception counts the
 * handler's instructions too: tools/bench/verbs.py takes the median over the intervals.
 *
 * With `profile=ID`, the plugin also counts, per guest address, the instructions executed inside
 * the intervals of marker ID, and writes them at exit as `pc <address> <count>` lines (a
 * conditional callback on every instruction, taken only inside an interval): with the guest's
 * /proc/kallsyms, tools/bench/verbs.py sums them per function.
 *
 * Usage: qemu-system-x86_64 ... -plugin libinsn_marks.so,out=FILE[,profile=ID]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_MAGIC 0x52444d00u
#define MARK_MAGIC_MASK 0xffffff00u
#define MARK_END 0x80u
#define MARK_ID 0x7fu
#define MAX_VCPUS 64

/* The instructions each vCPU executed (the inline counters). */
static struct qemu_plugin_scoreboard *counts;
/* Per vCPU: the open interval's id (0: none) and the counter at its opening marker. */
static struct {
	unsigned int id;
	uint64_t start;
} open_mark[MAX_VCPUS];
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
/* The marker id profiled (0: none); per vCPU, whether it is inside one of its intervals. */
static unsigned int profile_id;
static struct qemu_plugin_scoreboard *inside;
/* Per guest address: instructions executed there inside a profiled interval. */
static GHashTable *pcs;

/* A marker executed on `vcpu`: `udata` is its 32-bit code. */
static void on_mark(unsigned int vcpu, void *udata)
{
	uint32_t code = (uint32_t)(uintptr_t)udata;
	unsigned int id = code & MARK_ID;
	uint64_t now;

	if (vcpu >= MAX_VCPUS)
		return;
	now = qemu_plugin_u64_get(qemu_plugin_scoreboard_u64(counts), vcpu);
	if (!(code & MARK_END)) {
		open_mark[vcpu].id = id;
		open_mark[vcpu].start = now;
		if (id == profile_id)
			qemu_plugin_u64_set(qemu_plugin_scoreboard_u64(inside), vcpu, 1);
		return;
	}
	if (id == profile_id)
		qemu_plugin_u64_set(qemu_plugin_scoreboard_u64(inside), vcpu, 0);
	if (open_mark[vcpu].id != id)
		return;
	open_mark[vcpu].id = 0;
	pthread_mutex_lock(&out_lock);
	fprintf(out, "%u %" PRIu64 "\n", id, now - open_mark[vcpu].start);
	fflush(out);
	pthread_mutex_unlock(&out_lock);
}

/* An instruction at guest address `udata` executed inside a profiled interval. */
static void on_profiled(unsigned int vcpu, void *udata)
{
	gpointer key = udata;

	(void)vcpu;
	pthread_mutex_lock(&out_lock);
	g_hash_table_insert(pcs, key,
			    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(pcs, key)) + 1));
	pthread_mutex_unlock(&out_lock);
}

/* Whether `insn` is a marker; its code in `*code` if so. */
static int is_mark(const struct qemu_plugin_insn *insn, uint32_t *code)
{
	uint8_t b[8];

	if (qemu_plugin_insn_size(insn) != sizeof(b) ||
	    qemu_plugin_insn_data(insn, b, sizeof(b)) != sizeof(b))
		return 0;
	if (b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x84 || b[3] != 0x00)
		return 0;
	*code = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
		(uint32_t)b[7] << 24;
	return (*code & MARK_MAGIC_MASK) == MARK_MAGIC && (*code & MARK_ID) != 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t code;

		/* The callback first: a marker reads the count before its own add. */
		if (is_mark(insn, &code))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)code);
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
			insn, QEMU_PLUGIN_INLINE_ADD_U64, qemu_plugin_scoreboard_u64(counts), 1);
		if (profile_id)
			qemu_plugin_register_vcpu_insn_exec_cond_cb(
				insn, on_profiled, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_COND_NE,
				qemu_plugin_scoreboard_u64(inside), 0,
				(void *)(uintptr_t)qemu_plugin_insn_vaddr(insn));
	}
}

static void plugin_exit(qemu_plugin_id_t id, void *udata)
{
	GHashTableIter it;
	gpointer pc, n;

	(void)id;
	(void)udata;
	pthread_mutex_lock(&out_lock);
	if (out && pcs) {
		g_hash_table_iter_init(&it, pcs);
		while (g_hash_table_iter_next(&it, &pc, &n))
			fprintf(out, "pc %" PRIxPTR " %u\n", (uintptr_t)pc, GPOINTER_TO_UINT(n));
	}
	if (out)
		fclose(out);
	out = NULL;
	pthread_mutex_unlock(&out_lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;

	if (info->system_emulation && info->system.max_vcpus > MAX_VCPUS) {
		fprintf(stderr, "insn_marks: at most %d vCPUs\n", MAX_VCPUS);
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0)
			path = argv[i] + 4;
		else if (strncmp(argv[i], "profile=", 8) == 0)
			profile_id = (unsigned int)strtoul(argv[i] + 8, NULL, 0) & MARK_ID;
	}
	if (!path) {
		fprintf(stderr, "insn_marks: needs out=FILE\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror("insn_marks: out");
		return -1;
	}
	counts = qemu_plugin_scoreboard_new(sizeof(uint64_t));
	inside = qemu_plugin_scoreboard_new(sizeof(uint64_t));
	if (profile_id)
		pcs = g_hash_table_new(g_direct_hash, g_direct_equal);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
