/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 3.0, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of upstream tag v3_0_0
 * (`git archive v3_0_0' of the upstream ruby/ruby repository; 3.0 is
 * not in the Debian archive), after `autoreconf -i && ./configure
 * --disable-install-doc --with-baseruby=/usr/bin/ruby3.1 && make id.h':
 *   scripts/rubyvm-offsets git-v3_0_0 3.0
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, id.h, symbol.h;
 * ID_ENTRY_UNIT/ID_ENTRY_SIZE and the start of rb_objspace copied from
 * symbol.c and gc.c by the script.  Every number below is that program's
 * output, unedited.  v3_0_7 gives the same table.  The internal headers
 * of DataDog's datadog-ruby_core_source gem for 3.0.0 are byte-identical
 * to the tag's.
 * Re-run, with the fields added since (the GVL queue, the call data, the
 * local table), on upstream tag v3_0_3 (`git archive', configured the
 * same way and built): it gives every number the v3_0_0 run gave, and the
 * table below is its output, unedited.
 *
 * Verified live on that build (see README.md).  Cross-checked with
 * shared/research/ruby-internals.md section 3.1: thread ractor@24 vm@32
 * ec@40 thread_id@80 status@88, ec, cfp and iseq offsets, tLAST_OP_ID 168
 * agree.  thread.name differs: the research note has 544 (rbspy's
 * bindgen build); these headers give 384.  2.7 shows the same 160-byte
 * gap (note 520, headers 360) and 360 was verified live on 2.7, so the
 * headers are trusted here.
 */
const struct rubyvm_layout rubyvm_ruby_3_0 = {
	.version = RUBYVM_VERSION(3, 0, 0),
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
		.ractor_set = 8,
		.main_ractor = 32,
		.main_thread = 40,
		.living_threads = RUBYVM_NONE,
		.gvl_owner = RUBYVM_NONE,
		.objspace = 1088,
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
		.size = 392,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 40,
		.status = 88,
		.status_shift = 0,
		.name = 384,
		.tid = RUBYVM_NONE,
		.nt = RUBYVM_NONE,
		.nt_tid = RUBYVM_NONE,
		.thread_id = 80,
		.gvl_node = 96,
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
		.size = 248,
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
		.parent_iseq = 168,
		.local_iseq = 176,
		.call_data = 192,
		.local_table_size = 232,
		.local_table = 152,
		.ci_size = 240,
		.ci_kw_size = RUBYVM_NONE,
		.call_data_size = 16,
		.kw_call_data_size = RUBYVM_NONE,
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
