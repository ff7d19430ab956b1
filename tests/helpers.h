/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TEST_HELPERS_H
#define PYROSPY_TEST_HELPERS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * An interpreter of the test matrix: which chroot (NULL: the host) and
 * which binary inside it.  The chroots are built by
 * scripts/provision-chroots; a missing one fails the test, never skips.
 */
struct interp {
	const char *root;	/* chroot name, NULL for the host */
	const char *bin;	/* "python3.13", "ruby3.3" */
	int lang;		/* TARGET_PYTHON / TARGET_RUBY */
	unsigned int major, minor;
};

extern const struct interp test_pythons[];
extern const size_t test_npythons;
/* Free-threaded CPython builds (3.13t...), and i-th of test_pythons then of them. */
extern const struct interp test_pythons_ft[];
extern const size_t test_npythons_ft;
const struct interp *test_python_any(size_t i);
#define test_npythons_any (test_npythons + test_npythons_ft)
extern const struct interp test_rubies[];
extern const size_t test_nrubies;

/* Environment the interpreter runs with (NULL-terminated), or NULL. */
const char *const *test_env(const struct interp *in);

/* 0..n-1, for parameterized tests (criterion-owned memory). */
size_t *test_indexes(size_t n);

/* Directory of the chroots ($PYROSPY_CHROOTS or the provisioning default). */
const char *test_chroots(void);

/*
 * Start `bin args...' (in its chroot if any) with stdout on a pipe, and
 * wait until it prints a first line (the target's "ready"), copied to
 * ready (cap bytes).  Returns the pid; the test must call test_stop().
 */
pid_t test_start(const struct interp *in, const char *const *args, char *ready, size_t cap);
/*
 * test_start() in two halves, to start many at once: start it, its
 * stdout's pipe in *out; then wait for its first line into ready.
 */
pid_t test_spawn(const struct interp *in, const char *const *args, FILE **out);
void test_ready(pid_t pid, const struct interp *in, FILE *out, char *ready, size_t cap);
void test_stop(pid_t pid);

/*
 * Run the pyrospy binary with args, capturing stdout and stderr into
 * malloc'd strings (caller frees).  Returns the exit status, or 128+signal.
 */
int test_pyrospy(const char *const *args, char **out, char **err);

/* The same, run through a wrapper command (setpriv ...). */
int test_pyrospy_wrapped(const char *const *wrap, const char *const *args, char **out,
			 char **err);

/*
 * How a function of a test script is named in profiles: Ruby labels the
 * methods of main "Object#work", Python has no prefix.  Four calls may be
 * in use at once.
 */
const char *test_func(const struct interp *in, const char *name);

/* Path of a file under tests/targets. */
const char *test_target_path(const char *name);

/* Path of the script as the target sees it: chroots get a copy in /tmp. */
const char *test_target_for(const struct interp *in, const char *name);

/*
 * Copy src (a file, or a directory's files) into dst, each file replaced
 * whole and only when it differs: never a half-written script for an
 * interpreter that starts meanwhile.  system()'s status.
 */
int test_copy_into(const char *src, const char *dst);

/* Sum of counts of folded lines whose stack contains needle. */
unsigned long test_folded_count(const char *folded, const char *needle);

/* The same for the lines whose stack ends with needle (its innermost frames). */
unsigned long test_folded_count_leaf(const char *folded, const char *needle);

/*
 * The "thread (TID)" root frame (--threads) of the first stack containing
 * needle, into tid.  0 if there is none.
 */
int test_thread_of(const char *folded, const char *needle, char *tid, size_t cap);

/*
 * The stacks of functions PREFIXbusy0 to PREFIXbusy3 (the threads targets)
 * are there, each under a thread of its own (--threads).
 */
void test_busy_threads_apart(const char *folded, const char *bin, const char *prefix);

/*
 * Start script (under tests/targets) with interpreter in, profile it with
 * `record --pid PID -o - extra...', stop it, and return the folded output
 * (caller frees).  *path is the script's path as the target saw it.  Fails
 * the test if pyrospy fails or says it dropped samples.
 */
char *test_profile(const struct interp *in, const char *script, const char *const *extra,
		   const char **path);

/*
 * Run `record --pid pid -o file extra...' (at most 18 extra).  Returns
 * pyrospy's exit status; *err gets its stderr.
 */
int test_record_pid(pid_t pid, const char *file, const char *const *extra, char **err);

/*
 * Start script with in, run `record --pid PID -o file extra...', stop the
 * script.  Returns pyrospy's exit status; *err gets its stderr.
 */
int test_record_to(const struct interp *in, const char *script, const char *const *extra,
		   const char *file, char **err);

/* N from pyrospy's "wrote ... profile to 'F' (N samples)", 0 if absent. */
unsigned long test_samples_written(const char *err);

/* The whole of a file, NUL-terminated (caller frees); fails the test if unreadable. */
char *test_slurp(const char *path);

/* Run a shell command made as printf() makes it: fails the test unless it exits 0. */
void test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run a shell command; its stdout (caller frees), its wait status in *status. */
char *test_run(const char *cmd, int *status);

/*
 * The share of samples dropped, of the closing counts pyrospy writes to
 * stderr ("..., S samples, D dropped (...)"): 0 when none were.
 */
double test_dropped_share(const char *err);

/* Sum of the counts of folded lines holding both a and b (b may be NULL). */
unsigned long test_folded_count2(const char *folded, const char *a, const char *b);

/* The first child of pid (its main thread's children file); fails the test if none. */
pid_t test_first_child(pid_t pid);

/* Sum of the counts of the folded file's lines. */
unsigned long test_folded_file_total(const char *file);

/*
 * Append to args (n used) the command that runs script with in: its
 * chroot first when it has one (its path in a buffer of this function's,
 * good until the next call).  Returns the new n.
 */
int test_interp_argv(const struct interp *in, const char *script, const char **args, int n);

/*
 * Start tests/receiver.py (the Pyroscope server side) logging accepted
 * requests to log, with extra ("--fail-first" ...) 30 if not NULL; port
 * gets the port it listens on.
 */
pid_t test_receiver(const char *log, const char *extra, char *port, size_t cap);

/* A connection to 127.0.0.1:port, reads timing out after 15 s. */
int test_connect(int port);
/* All of buf sent on fd. */
void test_send_all(int fd, const char *buf, size_t len);
/* The whole response on fd, until the server hangs up (15 s at most); closes fd. */
char *test_read_all(int fd, size_t *len);

/*
 * Make the tag helpers (taglibs/python, taglibs/ruby) importable by targets of in,
 * started from now on: copied into its chroot's /tmp, and put on
 * PYTHONPATH or RUBYLIB of this test process.
 */
void test_use_helpers(const struct interp *in);

/* A screenshot's pixels: 8-bit RGB (bpp 3) or RGBA (bpp 4), w * h * bpp bytes. */
struct test_pixels {
	uint32_t w, h, bpp;
	unsigned char *rgb;	/* the caller frees */
};

/*
 * Open svg in headless Chromium (1200x800, its own profile) and decode its
 * screenshot, written to png, into px; fails the test if Chromium fails.
 */
void test_screenshot(const char *svg, const char *png, struct test_pixels *px);

/*
 * Copy the flame graph svg to out with js run after the page's own load
 * handler (a user's clicks, as script), escaped for the attribute.
 */
void test_svg_onload(const char *svg, const char *out, const char *js);

/*
 * Open svg in headless Chromium and return its DOM once loaded, as its
 * script left it (caller frees); fails the test if Chromium fails.
 */
char *test_dom(const char *svg);

/* Directory of the npm consumers (tests/consumers, with node_modules). */
#define TEST_CONSUMERS SRCDIR "/tests/consumers"

#endif
