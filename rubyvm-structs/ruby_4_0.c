/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 4.0.0 to 4.0.5, x86-64 Linux, default configure.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/rubyvm-offsets against the headers of upstream v4.0.0 (commit
 * 553f1675f3, "v4.0.0", `git archive' of the upstream ruby/ruby repository;
 * not in Debian), after `./autogen.sh && ./configure --disable-install-doc
 * --with-baseruby=/usr/bin/ruby3.1 && make id.h prism/ast.h
 * prism/diagnostic.h':
 *   scripts/rubyvm-offsets git-v4_0_0 4.0
 * Headers: vm_core.h, iseq.h, method.h, internal.h, internal/imemo.h,
 * internal/class.h, ractor_core.h, thread_pthread.h, id.h, symbol.h;
 * ID_ENTRY_UNIT/ID_ENTRY_SIZE and rb_symbols_t itself (private to
 * symbol.c in 4.0) copied from symbol.c, the start of rb_objspace from
 * gc/default/default.c, by the script.  Every number below is that
 * program's output, unedited.  The ruby_4_0 branch at v4.0.1 gives the
 * same table, and DataDog's datadog-ruby_core_source headers for 4.0.0
 * are byte-identical to the tag's.
 * Re-run, with the fields added since (the GVL queue, the ractor list,
 * parent_iseq, the call data, the local table, the hash group), on
 * upstream master at 99e9ca1f40 (2025-12-26, the last commit before
 * 4.1's development started, after 4.0.0's release), configured the same
 * way plus --enable-yjit --enable-zjit and built: it gives every number
 * the v4.0.0 run gave, and the table below is its output, unedited.
 *
 * 4.0's rb_symbols_t is { next_id, sym_set, ids }: .last_id is the
 * offset of next_id (one past the last serial, so valid serials are
 * < next_id, not <= last_id) and .str_sym is RUBYVM_NONE (the string ->
 * symbol table is now a concurrent set VALUE).
 *
 * Verified live on that build (see README.md).  Cross-checked with
 * shared/research/ruby-internals.md: ec local_storage@72 storage@96,
 * iseq local_iseq@176, ractor running_ec@312, tLAST_OP_ID 171, vm
 * objspace 1248 and objspace flags@28 (OTel's numbers) agree.
 */
const struct rubyvm_layout rubyvm_ruby_4_0 = {
	.version = RUBYVM_VERSION(4, 0, 0),
	.qnil = 0x4,
	.qundef = 0x24,
	.last_op_id = 171,
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
		.objspace = 1248,
		.gvl_waitq = RUBYVM_NONE,
	},
	.ractor = {
		.threads_set = 184,
		.threads_cnt = 200,
		.running_ec = 312,
		.gvl_owner = 256,
		.threads_main = 320,
		.id = 8,
		.vmlr_node = 360,
		.gvl_waitq = 272,
	},
	.thread = {
		.size = 456,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 48,
		.status = 248,
		.status_shift = 0,
		.name = 448,
		.tid = RUBYVM_NONE,
		.nt = 40,
		.nt_tid = 24,
		.thread_id = 16,	/* inside rb_native_thread */
		.gvl_node = 72,
	},
	.ec = {
		.size = 104,
		.vm_stack = 0,
		.vm_stack_size = 8,
		.cfp = 16,
		.thread_ptr = 48,
		.local_storage = 72,
		.storage = 96,
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
		.size = 264,
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
		.parent_iseq = 168,
		.local_iseq = 176,
		.call_data = 192,
		.local_table_size = 240,
		.local_table = 144,
		.ci_size = 260,
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
		.ext_embedded = 24,
		.iv_tbl = RUBYVM_NONE,
		.iv_ptr = RUBYVM_NONE,
		.classpath = 128,
		.attached_object = 112,
		.ext_size = 136,
		.super = RUBYVM_NONE,
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
		.last_id = 0,	/* next_id */
		.str_sym = RUBYVM_NONE,
		.ids = 16,
		.entry_size = 2,
		.unit = 512,
	},
	.gc = {
		.flags = 28,
		.during_gc_bit = 5,
	},
};
