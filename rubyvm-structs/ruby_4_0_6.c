/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * CRuby 4.0.6 and later 4.0.x, x86-64 Linux, default configure.
 *
 * Where the numbers come from: no 4.0.6 source tree was reachable (the
 * ruby/ruby mirror here stops at v4.0.1), so the tree was the ruby_4_0
 * branch at v4.0.1 (commit e04267a14b, `git archive', configured and
 * generated as for 4.0) with the 4.0.6 internal headers of DataDog's
 * datadog-ruby_core_source gem (lib/datadog/ruby_core_source/
 * ruby-4.0.6-p0: vm_core.h, thread_pthread.h, internal/class.h,
 * internal/imemo.h, internal/box.h, internal/array.h, internal/variable.h,
 * id_table.h, debug_counter.h, prism/version.h, prism/diagnostic.h)
 * copied over it, and RUBY_VERSION_TEENY set to 6 in version.h:
 *   scripts/rubyvm-offsets dd-4.0.6 4.0.6
 * Public headers (include/ruby/), symbol.c and gc/default/default.c are
 * 4.0.1's.  Every number below is that program's output, unedited.
 *
 * Versus 4.0.0: struct rb_thread_sched grew 8 bytes (bool is_ready,
 * runnable_hot_th, runnable_hot_th_waiting), which moves rb_ractor_t's
 * threads.running_ec/threads.main (+8) and rb_thread_t's status/name (+8,
 * the thread embeds a sched item); rb_vm_t gained master_box, moving
 * vm.objspace 1248 -> 1256.  Everything else is as in 4.0.0.  The
 * research note's 4.0.6 status@256 name@456 agree.
 * Which 4.0.x release first has this layout was not checked (4.0.1 still
 * has 4.0.0's); this table is labelled 4.0.6 as asked.
 *
 * 4.0's rb_symbols_t is { next_id, sym_set, ids }: .last_id is the
 * offset of next_id (valid serials are < next_id) and .str_sym is
 * RUBYVM_NONE.
 *
 * Not verified live (no 4.0 interpreter here).
 */
const struct rubyvm_layout rubyvm_ruby_4_0_6 = {
	.version = RUBYVM_VERSION(4, 0, 6),
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
		.objspace = 1256,
		.gvl_waitq = RUBYVM_NONE,
	},
	.ractor = {
		.threads_set = 184,
		.threads_cnt = 200,
		.running_ec = 320,
		.gvl_owner = 256,
		.threads_main = 328,
		.id = RUBYVM_NONE,
		.vmlr_node = RUBYVM_NONE,
		.gvl_waitq = RUBYVM_NONE,
	},
	.thread = {
		.size = 464,
		.list_node = 0,
		.vm = 32,
		.ractor = 24,
		.ec = 48,
		.status = 256,
		.status_shift = 0,
		.name = 456,
		.tid = RUBYVM_NONE,
		.nt = 40,
		.nt_tid = 24,
		.thread_id = 16,	/* inside rb_native_thread */
		.gvl_node = RUBYVM_NONE,
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
		.size = 184,
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
		.parent_iseq = RUBYVM_NONE,	/* not checked: see README.md */
		.local_iseq = 176,
		.call_data = RUBYVM_NONE,	/* not checked: see README.md */
		.local_table_size = RUBYVM_NONE,
		.local_table = RUBYVM_NONE,
		.ci_size = RUBYVM_NONE,
		.ci_kw_size = RUBYVM_NONE,
		.call_data_size = RUBYVM_NONE,
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
		.st_flag = 0,
		.ar_size_shift = RUBYVM_NONE,
		.ar_size_mask = RUBYVM_NONE,
		.st_ptr = RUBYVM_NONE,
		.st_embedded = RUBYVM_NONE,
		.st_num_entries = RUBYVM_NONE,
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
