/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "ruby/rubyvm.h"

/*
 * Fields that moved between patch releases of one minor version (x86-64
 * Linux, default configure).  Found by running scripts/rubyvm-offsets on
 * the trees of later patch releases (v3_1_7, v3_2_3, v3_2_8 and others:
 * see README.md); every other field of every release checked is the
 * minor version's table.
 */
const struct rubyvm_patch rubyvm_patches[] = {
	/* rb_vm_t gained loaded_features_realpath_map in 3.1.5 */
	{ RUBYVM_VERSION(3, 1, 5), RUBYVM_VERSION(3, 1, 99),
	  offsetof(struct rubyvm_layout, vm.objspace), 1112 },
	/* ... in 3.2.3, then static_ext_inits in 3.2.4 */
	{ RUBYVM_VERSION(3, 2, 3), RUBYVM_VERSION(3, 2, 3),
	  offsetof(struct rubyvm_layout, vm.objspace), 1136 },
	{ RUBYVM_VERSION(3, 2, 4), RUBYVM_VERSION(3, 2, 99),
	  offsetof(struct rubyvm_layout, vm.objspace), 1144 },
};
const size_t rubyvm_npatches = sizeof(rubyvm_patches) / sizeof(rubyvm_patches[0]);
