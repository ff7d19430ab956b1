/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 3.4, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of Debian's source package
 * ruby3.4 3.4.5-1~exp1 (experimental; upstream 3.4.5 tarball), after
 * `./configure --disable-install-doc':
 *   scripts/rubyvm-offsets ruby-3.4.5 3.4
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, id.h, symbol.h;
 * ID_ENTRY_UNIT/ID_ENTRY_SIZE copied from symbol.c and the start of
 * rb_objspace from gc/default/default.c by the script (the objspace is
 * reached through rb_vm_t.gc.objspace).  Every number below is that
 * program's output, unedited.
 * (The tree is the package's .orig tarball; Debian's patches touch none
 * of the headers used.)  `git archive v3_4_0' (3.4.0) and the
 * ruby_3_4 branch at 3.4.7 give the same table.
 *
 * Verified live on sid's ruby3.4 3.4.11-1~exp1 (a busy `def work' loop),
 * the same checks as 3.3, all passing: vm via ruby_vm_at_exit, main
 * ractor/thread/ec links, vm_stack_size 131072, nt->tid == pid, pthread_t,
 * status, Qnil name and storage, sched.running/running_ec, frame magics,
 * label/base_label "work", pathobj, first_lineno, pc range, insns_info
 * line_no, imemo_ment/def type/original_id, classext classpath "Object",
 * exactly one rb_symbols_t decoding original_id to "work", during_gc
 * (bit 5) set in about 23 % of samples of an allocating loop.
 * Not verified live: symbols.str_sym, klass.attached_object, the .size
 * spans (derived).
 */
const struct rubyvm_layout rubyvm_ruby_3_4 = {
	.version = RUBYVM_VERSION(3, 4, 0),
	.qnil = 0x4,
	.qundef = 0x24,
	.last_op_id = 170,
	.id_scope_shift = 4,
	.fl_singleton = 0x2000,
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
		.objspace = 1296,
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
		.size = 456,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 48,
		.status = 240,
		.status_shift = 0,
		.name = 448,
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
		.flags = 20,
		.during_gc_bit = 5,
	},
};
