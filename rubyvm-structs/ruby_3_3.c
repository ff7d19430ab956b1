/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 3.3, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of Debian's source package
 * ruby3.3 3.3.8-2 (trixie; upstream 3.3.8 tarball), after
 * `./configure --disable-install-doc':
 *   scripts/rubyvm-offsets ruby-3.3.8 3.3
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, id.h, symbol.h;
 * ID_ENTRY_UNIT/ID_ENTRY_SIZE and the start of rb_objspace copied from
 * symbol.c and gc.c by the script.  Every number below is that program's
 * output, unedited.
 * (The tree is the package's .orig tarball; Debian's patches touch none
 * of the headers used.)  `git archive v3_3_0' gives the same table.
 *
 * Verified live, on trixie's ruby3.3 3.3.8-2 and sid's 3.3.8-2.2 (a busy
 * `def work' loop): vm from ruby_vm_at_exit's first `mov disp(%rip)';
 * main_ractor's threads.main == vm.ractor.main_thread == first node of
 * threads.set; threads.cnt == 1; thread->vm and thread->ractor point
 * back; ec->thread_ptr is the thread; ec->vm_stack_size == 131072;
 * nt->tid == pid; nt->thread_id is the main thread's pthread_t; status
 * reads THREAD_RUNNABLE; name and ec->storage are Qnil (0x04);
 * threads.sched.running is the thread and threads.running_ec its ec; the
 * method frame (0x11110001) has label/base_label "work", pathobj
 * ["-e", nil], first_lineno (int) 1, pc inside iseq_encoded, insns_info
 * line_no 1; ep[-2] is an imemo_ment with def type ISEQ and original_id
 * == called_id; Object's embedded classext classpath is "Object"; a scan
 * of libruby's data found exactly one rb_symbols_t whose ids decodes
 * original_id to "work"; objspace flags.during_gc (bit 5) is set in
 * 11-16 % of samples of an allocating loop (GC.stat(:time) says 11 %) and
 * never in a non-allocating one.
 * Not verified live: symbols.str_sym, klass.attached_object, the .size
 * spans (derived).
 */
const struct rubyvm_layout rubyvm_ruby_3_3 = {
	.version = RUBYVM_VERSION(3, 3, 0),
	.qnil = 0x4,
	.qundef = 0x24,
	.last_op_id = 169,
	.id_scope_shift = 4,
	.fl_singleton = 0x1000,
	.imemo_ment = 6,
	.imemo_cref = 1,
	.imemo_svar = 2,
	.method_type_iseq = 0,
	.method_type_cfunc = 1,
	.method_type_bmethod = 4,
	.vm = {
		.ractor_set = 8,
		.main_ractor = 32,
		.main_thread = 40,
		.living_threads = RUBYVM_NONE,
		.gvl_owner = RUBYVM_NONE,
		.objspace = 1304,
		.gvl_waitq = RUBYVM_NONE,
	},
	.ractor = {
		.threads_set = 256,
		.threads_cnt = 272,
		.running_ec = 384,
		.gvl_owner = 328,
		.threads_main = 392,
		.id = 8,
		.vmlr_node = 432,
		.gvl_waitq = 344,
	},
	.thread = {
		.size = 440,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 48,
		.status = 240,
		.status_shift = 0,
		.name = 432,
		.tid = RUBYVM_NONE,
		.nt = 40,
		.nt_tid = 24,
		.thread_id = 16,	/* inside rb_native_thread */
		.gvl_node = 72,
	},
	.ec = {
		.size = 88,
		.vm_stack = 0,
		.vm_stack_size = 8,
		.cfp = 16,
		.thread_ptr = 48,
		.local_storage = 56,
		.storage = 80,
	},
	.cfp = {
		.size = 56,
		.pc = 0,
		.sp = 8,
		.iseq = 16,
		.self = 24,
		.ep = 32,
		.jit_return = 48,
	},
	.iseq = {
		.body = 16,
		.size = 256,	/* by hand: to ci_size */
		.type = 0,
		.iseq_size = 4,
		.iseq_encoded = 8,
		.pathobj = 64,
		.base_label = 72,
		.label = 80,
		.first_lineno = 88,
		.first_lineno_fixnum = 0,
		.insns_info_body = 112,
		.insns_info_size = 128,
		.succ_index_table = 136,
		.parent_iseq = 160,	/* by hand: see README.md */
		.local_iseq = 168,
		.call_data = 184,	/* by hand: see README.md */
		.local_table_size = 232,
		.local_table = 144,
		.ci_size = 252,
		.ci_kw_size = RUBYVM_NONE,
		.call_data_size = 16,
		.kw_call_data_size = RUBYVM_NONE,
		.insn_info_size = 12,
		.insn_info_line_no = 0,
	},
	.cme = {
		.flags = 0,
		.defined_class = 8,
		.def = 16,
		.called_id = 24,
		.owner = 32,
	},
	.def = {
		.type_shift = 0,
		.type_bits = 4,
		.original_id = 32,
		.method_serial = 40,
	},
	.env = {
		.prev_ep_mask = 0x3,
		.flag_local = 0x2,
	},
	.string = {
		.noembed = 0x2000,
		.embed_len_shift = RUBYVM_NONE,
		.embed_len_mask = RUBYVM_NONE,
		.embed_len = 16,
		.embed_ptr = 24,
		.heap_len = 16,
		.heap_ptr = 24,
	},
	.array = {
		.embed = 0x2000,
		.embed_len_shift = 15,
		.embed_len_mask = 0x7f,
		.embed_ptr = 16,
		.heap_len = 16,
		.heap_ptr = 32,
	},
	.klass = {
		.classpath_kind = RUBYVM_CLASSPATH_FIELD,
		.ext_ptr = RUBYVM_NONE,
		.ext_embedded = 32,
		.iv_tbl = RUBYVM_NONE,
		.iv_ptr = RUBYVM_NONE,
		.classpath = 120,
		.attached_object = 96,
		.ext_size = 128,
		.super = 16,
	},
	.hash = {
		.st_flag = 0x8000,
		.ar_size_shift = 16,
		.ar_size_mask = 0xf,
		.st_ptr = RUBYVM_NONE,
		.st_embedded = 24,
		.st_num_entries = 16,
	},
	.symbols = {
		.last_id = 0,
		.str_sym = 8,
		.ids = 16,
		.entry_size = 2,
		.unit = 512,
	},
	.gc = {
		.flags = 16,
		.during_gc_bit = 5,
	},
};
