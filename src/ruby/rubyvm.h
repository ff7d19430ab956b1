/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RUBYVM_H
#define PYROSPY_RUBYVM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Where CRuby keeps what a stack walk needs, for one layout (x86-64 glibc,
 * default configure).  The numbers live in rubyvm-structs/, one file per
 * layout change; rubyvm.c picks one by version.
 *
 *   rb_vm_t
 *     .ractor.main_ractor --> rb_ractor_t (3.0+)
 *                               .threads.set --> rb_thread_t --> ...
 *     .living_threads (2.x) --> rb_thread_t --> ...
 *   rb_thread_t .ec --> rb_execution_context_t
 *                          .vm_stack, .vm_stack_size, .cfp
 *   control frames grow down from vm_stack + vm_stack_size:
 *     cfp { pc, sp, iseq, self, ep, ... }   ep[0] = frame magic,
 *                                           ep[-1] = prev ep / block,
 *                                           ep[-2] = method entry or cref
 *   rb_iseq_t .body --> rb_iseq_constant_body
 *     { iseq_encoded, location { pathobj, base_label, label },
 *       insns_info { body, succ_index_table } }
 *
 * An offset of RUBYVM_NONE means "this version has no such field".
 */
#define RUBYVM_NONE UINT32_MAX

/* Version as major * 10000 + minor * 100 + patch: 3.4.1 is 30401. */
#define RUBYVM_VERSION(a, b, c) ((a) * 10000 + (b) * 100 + (c))

/* How a class's path ("Shop", "A::B") is found. */
enum rubyvm_classpath {
	RUBYVM_CLASSPATH_IVAR,		/* <= 3.1: "__classpath__" in the class's iv_tbl */
	RUBYVM_CLASSPATH_SHAPE,		/* 3.2: in the ivar array, at its shape's index */
	RUBYVM_CLASSPATH_FIELD,		/* 3.3+: rb_classext_t.classpath */
};

struct rubyvm_layout {
	unsigned int version;		/* first release this table is for */

	/* Special constants and flags. */
	uint64_t qnil;
	uint64_t qundef;
	uint32_t last_op_id;		/* tLAST_OP_ID */
	uint32_t id_scope_shift;	/* RUBY_ID_SCOPE_SHIFT */
	uint64_t fl_singleton;		/* RUBY_FL_SINGLETON */
	uint32_t imemo_ment;		/* imemo_type values, ((flags >> 12) & 15) */
	uint32_t imemo_cref;
	uint32_t imemo_svar;
	uint32_t method_type_iseq;	/* rb_method_type_t values */
	uint32_t method_type_cfunc;
	uint32_t method_type_bmethod;

	struct {
		uint32_t ractor_set;		/* 3.0+ ccan_list_head of ractors */
		uint32_t main_ractor;		/* 3.0+ */
		uint32_t main_thread;
		uint32_t living_threads;	/* 2.x list_head of threads */
		uint32_t gvl_owner;		/* 2.x: gvl.owner */
		uint32_t objspace;		/* rb_objspace_t * */
		uint32_t gvl_waitq;		/* 2.x: gvl.waitq, threads waiting for the GVL */
	} vm;
	struct {
		uint32_t threads_set;		/* list_head of rb_thread_t */
		uint32_t threads_cnt;
		uint32_t running_ec;
		uint32_t gvl_owner;		/* gvl.owner / sched.running */
		uint32_t threads_main;
		uint32_t id;			/* u32 rb_ractor_pub.id: 1 for the main ractor */
		uint32_t vmlr_node;		/* node in vm.ractor_set */
		uint32_t gvl_waitq;		/* threads waiting for the GVL: gvl.waitq, sched.readyq */
	} ractor;
	struct {
		uint32_t size;			/* bytes worth reading from the start */
		uint32_t list_node;		/* node in threads_set / living_threads */
		uint32_t vm;
		uint32_t ractor;
		uint32_t ec;
		uint32_t status;		/* byte holding the 2-bit status bitfield */
		uint32_t status_shift;		/* its lowest bit */
		uint32_t name;			/* VALUE */
		uint32_t tid;			/* 3.1: int tid */
		uint32_t nt;			/* 3.2+: rb_native_thread * */
		uint32_t nt_tid;		/* 3.2+: inside rb_native_thread */
		uint32_t thread_id;		/* pthread_t; 3.2+: inside rb_native_thread */
		uint32_t gvl_node;		/* its node in gvl_waitq */
	} thread;
	struct {
		uint32_t size;
		uint32_t vm_stack;
		uint32_t vm_stack_size;		/* in VALUEs */
		uint32_t cfp;
		uint32_t thread_ptr;
		uint32_t local_storage;		/* st_table * (<= 2.7) / rb_id_table * */
		uint32_t storage;		/* 3.2+: Fiber storage VALUE */
	} ec;
	struct {
		uint32_t size;
		uint32_t pc;
		uint32_t sp;
		uint32_t iseq;
		uint32_t self;
		uint32_t ep;
		uint32_t jit_return;		/* 3.1+ */
	} cfp;
	struct {
		uint32_t body;			/* inside rb_iseq_t */
		uint32_t size;			/* bytes worth reading of the body */
		uint32_t type;			/* u32 */
		uint32_t iseq_size;		/* u32, in VALUEs */
		uint32_t iseq_encoded;
		uint32_t pathobj;
		uint32_t base_label;
		uint32_t label;
		uint32_t first_lineno;
		uint32_t first_lineno_fixnum;	/* 1: a Fixnum VALUE (<= 3.1), 0: int */
		uint32_t insns_info_body;
		uint32_t insns_info_size;	/* u32 */
		uint32_t succ_index_table;
		uint32_t parent_iseq;		/* what rescue, ensure and eval code is in */
		uint32_t local_iseq;
		/*
		 * The call data its send instructions point at: a caller's pc
		 * follows one (a frame's pc is past its instruction's operands).
		 * call_data_size is one entry's size; 2.7 keeps kwarg calls
		 * (kw_call_data_size each, ci_kw_size of them) after ci_size
		 * plain ones.  RUBYVM_NONE: not known, not checked.
		 */
		uint32_t call_data;
		uint32_t local_table_size;	/* u32: locals below a frame's ep */
		uint32_t local_table;		/* const ID *: their names */
		uint32_t ci_size;		/* u32 */
		uint32_t ci_kw_size;		/* u32, 2.7 */
		uint32_t call_data_size;
		uint32_t kw_call_data_size;
		uint32_t insn_info_size;	/* sizeof(struct iseq_insn_info_entry) */
		uint32_t insn_info_line_no;	/* int line_no inside it */
	} iseq;
	struct {
		uint32_t flags;
		uint32_t defined_class;
		uint32_t def;
		uint32_t called_id;
		uint32_t owner;
	} cme;
	struct {
		uint32_t type_shift;		/* type bitfield in the first 32 bits */
		uint32_t type_bits;
		uint32_t original_id;
		uint32_t method_serial;		/* unique to each definition made */
	} def;
	struct {
		uint32_t prev_ep_mask;		/* ep[-1]: prev ep with these bits cleared */
		uint32_t flag_local;		/* VM_ENV_FLAG_LOCAL in ep[0] */
	} env;
	struct {
		uint64_t noembed;		/* RSTRING_NOEMBED flag */
		uint32_t embed_len_shift;	/* <= 3.1: length in flags, */
		uint32_t embed_len_mask;	/* (flags >> shift) & mask */
		uint32_t embed_len;		/* 3.2+: long in the object; NONE if in flags */
		uint32_t embed_ptr;		/* embedded bytes */
		uint32_t heap_len;
		uint32_t heap_ptr;
	} string;
	struct {
		uint64_t embed;			/* RARRAY_EMBED_FLAG */
		uint32_t embed_len_shift;
		uint32_t embed_len_mask;
		uint32_t embed_ptr;
		uint32_t heap_len;
		uint32_t heap_ptr;
	} array;
	struct {
		enum rubyvm_classpath classpath_kind;
		uint32_t ext_ptr;		/* RClass.ptr (classext pointer), or NONE */
		uint32_t ext_embedded;		/* offset of the embedded classext, or NONE */
		uint32_t iv_tbl;		/* IVAR: st_table * inside the classext */
		uint32_t iv_ptr;		/* SHAPE: VALUE * inside the classext */
		uint32_t classpath;		/* FIELD: VALUE inside the classext */
		uint32_t attached_object;	/* VALUE inside the classext, or NONE (ivar "__attached__") */
		uint32_t ext_size;		/* bytes worth reading of the classext */
		uint32_t super;			/* VALUE in the RClass, or NONE (4.0: in the classext) */
	} klass;
	struct {
		/*
		 * CLASSPATH_SHAPE (3.2): a class's ivars are found through its
		 * object shape, whose id is the top bits of its flags.  Shapes
		 * live in one array, rb_vm_t.shape_list; each names the ivar
		 * added last and links to its parent shape.
		 */
		uint32_t list;			/* rb_vm_t.shape_list (rb_shape_t *) */
		uint32_t next_id;		/* rb_vm_t.next_shape_id (uint32_t) */
		uint32_t id_shift;		/* shape id = flags >> id_shift */
		uint32_t size;			/* sizeof(rb_shape_t) */
		uint32_t edge_name;		/* ID */
		uint32_t next_iv_index;		/* uint32_t: ivars with this shape */
		uint32_t type;			/* uint8_t */
		uint32_t parent_id;		/* uint32_t; INVALID_SHAPE_ID at the root */
		uint32_t type_ivar;		/* SHAPE_IVAR */
	} shape;
	struct {
		uint64_t st_flag;		/* RHASH_ST_TABLE_FLAG: an st_table, not an ar_table */
		uint32_t ar_size_shift;		/* ar_table's size in the flags: */
		uint32_t ar_size_mask;		/* (flags >> shift) & mask */
		uint32_t st_ptr;		/* st_table * in the RHash (<= 3.2), or NONE */
		uint32_t st_embedded;		/* 3.3+: the st_table right after the RHash */
		uint32_t st_num_entries;	/* inside st_table */
	} hash;
	struct {
		uint32_t last_id;		/* inside rb_symbols_t */
		uint32_t str_sym;
		uint32_t ids;
		uint32_t entry_size;		/* ID_ENTRY_SIZE (VALUEs per ID) */
		uint32_t unit;			/* ID_ENTRY_UNIT (IDs per chunk) */
	} symbols;
	struct {
		/*
		 * Inside rb_objspace_t.  Not read yet: vm.objspace moves
		 * between patch releases of 3.1 and 3.2 (see rubyvm-structs/).
		 */
		uint32_t flags;
		uint32_t during_gc_bit;
	} gc;
};

extern const struct rubyvm_layout rubyvm_ruby_2_7, rubyvm_ruby_3_0, rubyvm_ruby_3_1,
	rubyvm_ruby_3_2, rubyvm_ruby_3_3, rubyvm_ruby_3_4, rubyvm_ruby_4_0, rubyvm_ruby_4_0_6;

/* The table for a Ruby version (RUBYVM_VERSION), or NULL if unsupported. */
const struct rubyvm_layout *rubyvm_find(unsigned int version);

/*
 * A field that moved within a minor version: from patch release `from' to
 * `to', the uint32_t at byte `field' of the layout is `value'.
 */
struct rubyvm_patch {
	unsigned int from, to;
	size_t field;			/* offsetof(struct rubyvm_layout, ...) */
	uint32_t value;
};

extern const struct rubyvm_patch rubyvm_patches[];
extern const size_t rubyvm_npatches;

/* The layout of a version, with its patch release's overrides: 0, or -1. */
int rubyvm_layout(unsigned int version, struct rubyvm_layout *out);

/*
 * The minor versions that have a layout, oldest first, "2.7 3.0 ..." (for
 * --version), into buf of cap bytes, cut short if it does not fit.
 */
void rubyvm_versions(char *buf, size_t cap);

/* "2.7 to 4.0", for messages. */
extern const char rubyvm_supported[];

#endif
