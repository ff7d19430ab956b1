/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 3.2, x86-64 Linux, default configure (USE_RVARGC, so the
 * classext is embedded after struct RClass).
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of upstream 3.2.0.  First
 * from tag v3_2_0 (`git archive v3_2_0' of the upstream ruby/ruby
 * repository; 3.2 is not in the Debian archive), after `./autogen.sh &&
 * ./configure --disable-install-doc --with-baseruby=/usr/bin/ruby3.1 &&
 * make id.h':
 *   scripts/rubyvm-offsets git-v3_2_0 3.2
 * Then re-run, with the fields added since (the GVL queue, the iseq's call
 * data and local table, the shape group), on upstream master at 07c19cf551
 * (2022-12-25, the last commit before 3.3's development started, after
 * 3.2.0's release), configured the same way and built: it gives every
 * number the v3_2_0 run gave, and the table below is its output, unedited.
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, shape.h, id.h,
 * symbol.h; ID_ENTRY_UNIT/ID_ENTRY_SIZE and the start of rb_objspace
 * copied from symbol.c and gc.c by the script.  DataDog's
 * datadog-ruby_core_source headers for 3.2.0 are byte-identical to the
 * tag's.
 * Later 3.2 releases differ in one number: vm.objspace is 1136 in 3.2.3
 * and 1144 from 3.2.4 on (rb_vm_t gained loaded_features_realpath_map,
 * then static_ext_inits); v3_2_8 otherwise gives the same table.
 *
 * Verified live on that build (see README.md).  The class path is the
 * "__classpath__" ivar, found through the class's shape (the top 32 bits
 * of its flags, an index into vm.shape_list) in iv_ptr; a singleton
 * class's attached object is the "__attached__" ivar, found the same way.
 */
const struct rubyvm_layout rubyvm_ruby_3_2 = {
	.version = RUBYVM_VERSION(3, 2, 0),
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
		.objspace = 1128,
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
		.size = 312,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 48,
		.status = 112,
		.status_shift = 0,
		.name = 304,
		.tid = RUBYVM_NONE,
		.nt = 40,
		.nt_tid = 16,
		.thread_id = 8,	/* inside rb_native_thread */
		.gvl_node = 56,
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
		.size = 256,
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
		.parent_iseq = 160,
		.local_iseq = 168,
		.call_data = 184,
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
		.classpath_kind = RUBYVM_CLASSPATH_SHAPE,
		.ext_ptr = RUBYVM_NONE,
		.ext_embedded = 32,
		.iv_tbl = RUBYVM_NONE,
		.iv_ptr = 0,
		.classpath = RUBYVM_NONE,
		.attached_object = RUBYVM_NONE,
		.ext_size = 8,
		.super = 16,
	},
	.shape = {
		.list = 376,
		.next_id = 392,
		.id_shift = 32,
		.size = 32,
		.edge_name = 8,
		.next_iv_index = 16,
		.type = 24,
		.parent_id = 28,
		.type_ivar = 1,
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
