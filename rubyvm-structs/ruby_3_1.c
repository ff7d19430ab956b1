/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 3.1, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of Debian's source package
 * ruby3.1 3.1.2-7+deb12u1 (bookworm; upstream 3.1.2 tarball), after
 * `./configure --disable-install-doc':
 *   scripts/rubyvm-offsets ruby-3.1.2 3.1
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, id.h, symbol.h;
 * ID_ENTRY_UNIT/ID_ENTRY_SIZE and the start of rb_objspace copied from
 * symbol.c and gc.c by the script.  Every number below is that program's
 * output, unedited.
 * (The tree is the package's .orig tarball; Debian's patches touch none
 * of the headers used.)  `git archive v3_1_0' gives the same table.
 * v3_1_7 differs in one number: vm.objspace is 1112 from 3.1.5 on
 * (rb_vm_t gained loaded_features_realpath_map); 3.1.0-3.1.4 have 1104.
 *
 * Verified live (host /usr/bin/ruby3.1, libruby3.1 3.1.2-7+deb12u1, a
 * busy `def work' loop): ruby_current_vm_ptr -> vm; main_ractor's
 * threads.main == vm.ractor.main_thread == first node of threads.set;
 * threads.cnt == 1; thread->vm and thread->ractor point back;
 * ec->thread_ptr is the thread; ec->vm_stack_size == 131072; tid == pid;
 * status reads THREAD_RUNNABLE; name is Qnil (0x08); thread_id is the
 * main thread's pthread_t; threads.gvl.owner is the thread and
 * threads.running_ec its ec; the method frame (magic 0x11110001) has
 * label/base_label "work", pathobj ["-e", nil], first_lineno (Fixnum) 1,
 * pc inside iseq_encoded, insns_info entries (12 bytes) with line_no 1;
 * ep[-2] is an imemo_ment with def type ISEQ and original_id == called_id;
 * Object's classext (RClass.ptr) iv_tbl holds "Object"; a scan of
 * libruby's data found exactly one rb_symbols_t whose ids decodes
 * original_id to "work"; objspace flags.during_gc (bit 5) is set in about
 * 18 % of samples of an allocating loop and never in a non-allocating one.
 * Not verified live: symbols.str_sym, the .size spans (derived).
 */
const struct rubyvm_layout rubyvm_ruby_3_1 = {
	.version = RUBYVM_VERSION(3, 1, 0),
	.qnil = 0x8,
	.qundef = 0x34,
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
		.objspace = 1104,
		.gvl_waitq = RUBYVM_NONE,
	},
	.ractor = {
		.threads_set = 304,
		.threads_cnt = 320,
		.running_ec = 520,
		.gvl_owner = 336,
		.threads_main = 528,
		.id = 8,
		.vmlr_node = 568,
		.gvl_waitq = 384,
	},
	.thread = {
		.size = 360,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 40,
		.status = 92,
		.status_shift = 0,
		.name = 352,
		.tid = 88,
		.nt = RUBYVM_NONE,
		.nt_tid = RUBYVM_NONE,
		.thread_id = 80,
		.gvl_node = 104,
	},
	.ec = {
		.size = 64,
		.vm_stack = 0,
		.vm_stack_size = 8,
		.cfp = 16,
		.thread_ptr = 48,
		.local_storage = 56,
		.storage = RUBYVM_NONE,
	},
	.cfp = {
		.size = 64,
		.pc = 0,
		.sp = 8,
		.iseq = 16,
		.self = 24,
		.ep = 32,
		.jit_return = 56,
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
		.first_lineno_fixnum = 1,
		.insns_info_body = 120,
		.insns_info_size = 136,
		.succ_index_table = 144,
		.parent_iseq = 168,	/* by hand: see README.md */
		.local_iseq = 176,
		.call_data = 192,	/* by hand: see README.md */
		.local_table_size = 240,
		.local_table = 152,
		.ci_size = 248,
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
		.embed_len_shift = 14,
		.embed_len_mask = 0x1f,
		.embed_len = RUBYVM_NONE,
		.embed_ptr = 16,
		.heap_len = 16,
		.heap_ptr = 24,
	},
	.array = {
		.embed = 0x2000,
		.embed_len_shift = 15,
		.embed_len_mask = 0x3,
		.embed_ptr = 16,
		.heap_len = 16,
		.heap_ptr = 32,
	},
	.klass = {
		.classpath_kind = RUBYVM_CLASSPATH_IVAR,
		.ext_ptr = 24,
		.ext_embedded = RUBYVM_NONE,
		.iv_tbl = 8,
		.iv_ptr = RUBYVM_NONE,
		.classpath = RUBYVM_NONE,
		.attached_object = RUBYVM_NONE,
		.ext_size = 16,
		.super = 16,
	},
	.hash = {
		.st_flag = 0x8000,
		.ar_size_shift = 16,
		.ar_size_mask = 0xf,
		.st_ptr = 16,
		.st_embedded = RUBYVM_NONE,
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
