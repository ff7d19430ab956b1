/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 2.7, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of Debian's source package
 * ruby2.7 2.7.4-1+deb11u1 (bullseye; upstream 2.7.4 tarball, which ships
 * the generated id.h), after `./configure --disable-install-doc':
 *   scripts/rubyvm-offsets ruby-2.7.4 2.7
 * Headers: vm_core.h, iseq.h, method.h, internal.h, id.h, symbol.h,
 * include/ruby/ruby.h; ID_ENTRY_UNIT/ID_ENTRY_SIZE and the start of
 * rb_objspace (gc.flags) copied from symbol.c and gc.c by the script.
 * Every number below is that program's output, unedited.
 * (The tree is the package's .orig tarball; Debian's patches touch none
 * of the headers used.)
 * The same program on a `git archive v2_7_8' tree prints the same table.
 *
 * Verified live (bullseye chroot, ruby2.7 2.7.4-1+deb11u1, a busy
 * `def work' loop): ruby_current_vm_ptr -> vm; living_threads' first node
 * is vm.main_thread; thread->vm points back; ec->thread_ptr is the thread;
 * ec->vm_stack_size == 131072; status reads THREAD_RUNNABLE; name is Qnil
 * (0x08); thread_id is the main thread's pthread_t; gvl.owner is the
 * thread; the innermost cfps have frame magics 0x11110001/0x22220001/
 * 0x55550001/0x77770001 and the method frame's label and base_label
 * decode to "work", pathobj to ["-e", nil] (embedded array), first_lineno
 * (Fixnum) to 1, pc lies in iseq_encoded, insns_info entries (8 bytes)
 * have line_no 1 (or 0 for one entry with no line, Ruby's own data);
 * ep[-2] is an imemo_ment whose def type is ISEQ and original_id ==
 * called_id; Object's classext iv_tbl holds "Object" (__classpath__); a
 * scan of libruby's data for rb_symbols_t found exactly one place where
 * ids decodes original_id to "work"; objspace flags.during_gc (bit 5) is
 * set in about 16 % of samples of an allocating loop.
 * Not verified live: symbols.str_sym, the .size spans (derived).
 */
const struct rubyvm_layout rubyvm_ruby_2_7 = {
	.version = RUBYVM_VERSION(2, 7, 0),
	.qnil = 0x8,
	.qundef = 0x34,
	.last_op_id = 168,
	.id_scope_shift = 4,
	.fl_singleton = 0x1000,
	.imemo_ment = 6,
	.imemo_cref = 1,
	.imemo_svar = 2,
	.method_type_iseq = 0,
	.method_type_cfunc = 1,
	.method_type_bmethod = 4,
	.vm = {
		.ractor_set = RUBYVM_NONE,
		.main_ractor = RUBYVM_NONE,
		.main_thread = 192,
		.living_threads = 312,
		.gvl_owner = 8,
		.objspace = 1152,
		.gvl_waitq = 56,
	},
	.ractor = {
		.threads_set = RUBYVM_NONE,
		.threads_cnt = RUBYVM_NONE,
		.running_ec = RUBYVM_NONE,
		.gvl_owner = RUBYVM_NONE,
		.threads_main = RUBYVM_NONE,
		.id = RUBYVM_NONE,
		.vmlr_node = RUBYVM_NONE,
		.gvl_waitq = RUBYVM_NONE,
	},
	.thread = {
		.size = 368,
		.list_node = 0,
		.vm = 24,
		.ractor = RUBYVM_NONE,
		.ec = 32,
		.status = 80,
		.status_shift = 0,
		.name = 360,
		.tid = RUBYVM_NONE,
		.nt = RUBYVM_NONE,
		.nt_tid = RUBYVM_NONE,
		.thread_id = 72,
		.gvl_node = 88,
	},
	.ec = {
		.size = 72,
		.vm_stack = 0,
		.vm_stack_size = 8,
		.cfp = 16,
		.thread_ptr = 56,
		.local_storage = 64,
		.storage = RUBYVM_NONE,
	},
	.cfp = {
		.size = 56,
		.pc = 0,
		.sp = 8,
		.iseq = 16,
		.self = 24,
		.ep = 32,
		.jit_return = RUBYVM_NONE,
	},
	.iseq = {
		.body = 16,
		.size = 248,	/* by hand: to ci_size */
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
		.local_table_size = 232,
		.local_table = 152,
		.ci_size = 240,
		.ci_kw_size = 244,
		.call_data_size = 80,
		.kw_call_data_size = 88,
		.insn_info_size = 8,
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
