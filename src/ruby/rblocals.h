/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RBLOCALS_H
#define PYROSPY_RBLOCALS_H

#include <stddef.h>
#include <stdint.h>

struct rmem;
struct rubyvm_layout;

/*
 * A Ruby frame's local variables as text, for dump --locals: one line
 * "name: Class = value" each, in the order of the iseq's local table
 * (arguments first), as binding.local_variables lists them.  Values are
 * short and bounded: nil, true, false; an Integer in decimal up to
 * RBLOCALS_INT_DIGITS digits, else "<Integer, N digits>" (or
 * "<negative Integer, N digits>"); a Float as Float#inspect writes it; a
 * Symbol as Symbol#inspect; a String as String#inspect of its first
 * RBLOCALS_STR_MAX bytes (cut at a character boundary, then "..."); the
 * size of an Array or Hash ("<Array, len N>"); "#<Class>" for anything
 * else.  A value that cannot be read or does not hold together is "<?>".
 *
 * A frame's locals lie below its environment pointer (ep), local i of n at
 * ep[-n - 2 + i] (VM_ENV_DATA_SIZE 3: method entry or cref, specval and
 * flags at ep[-2 .. 0]), named by the ID at local_table[i]; IDs that are
 * no local variable's (the VM's hidden ones, anonymous *, ** and &) are
 * left out, as Ruby leaves them out.
 */
#define RBLOCALS_MAX		256	/* locals of one frame shown */
#define RBLOCALS_STR_MAX	64	/* bytes of a String shown */
#define RBLOCALS_INT_DIGITS	100	/* decimal digits of an Integer shown */
#define RBLOCALS_NAME_MAX	128	/* bytes of a name shown */
/* bytes of the longest value: every byte escaped as \u{XXXXXX}, quotes, ... */
#define RBLOCALS_REPR_MAX	(RBLOCALS_STR_MAX * 10 + 16)

/* What the stack reader lends: names of IDs and classes, from its caches. */
struct rblocals_src {
	void *arg;
	/* an ID's name, sanitized; NULL if unknown */
	const char *(*id_name)(void *arg, uint64_t id);
	/* a class's permanent path ("Shop", "A::B"); NULL if anonymous or unreadable */
	const char *(*class_path)(void *arg, uint64_t klass);
};

struct rblocals {
	struct rmem *mem;
	const struct rubyvm_layout *L;
	struct rblocals_src src;
	char **text;		/* this sample's, freed by rblocals_begin() */
	size_t ntext, cap;
};

/* mem and L must outlive rl. */
void rblocals_init(struct rblocals *rl, struct rmem *mem, const struct rubyvm_layout *L,
		   const struct rblocals_src *src);
void rblocals_release(struct rblocals *rl);

/* Forget the texts of the last sample. */
void rblocals_begin(struct rblocals *rl);

/*
 * The locals of the frame whose environment is at ep, its iseq's local
 * table at local_table holding n IDs, as lines ending in '\n'; NULL if it
 * has none or they cannot be read.  Valid until the next rblocals_begin().
 */
const char *rblocals_frame(struct rblocals *rl, uint64_t ep, uint64_t local_table, uint32_t n);

/*
 * The value v (a VALUE) as text into out (cap bytes, at least
 * RBLOCALS_REPR_MAX), and its class's name into type (tcap bytes); "<?>"
 * and "?" when unreadable.
 */
void rblocals_repr(struct rblocals *rl, uint64_t v, char *out, size_t cap, char *type,
		   size_t tcap);

#endif
