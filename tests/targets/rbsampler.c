/* SPDX-License-Identifier: MIT */
/*
 * A Ruby extension that samples its own process as stackprof does in its
 * :wall mode on Ruby 3.x, for the Rubies that have no ruby-stackprof
 * (Debian's 3.4): a SIGALRM every interval, forwarded to the thread that
 * started it, whose handler takes the stack with Ruby's own
 * rb_profile_frames() and counts each (frame, line) seen, all frames and
 * the innermost one apart, as stackprof's aggregate mode counts them
 * (lines of 0 left out).  No allocation in the handler: a fixed table.
 *
 *   RbSampler.start(interval_us)
 *   RbSampler.stop -> [samples, [[label, file, line, total, self], ...]]
 *
 * Built by tests/test_rblines.c against the target Ruby's headers.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include <ruby/ruby.h>
#include <ruby/debug.h>

#define DEPTH	256
#define SLOTS	8192		/* a power of two */

struct slot {
	VALUE frame;
	int line;
	unsigned long total, self;
};

static struct slot table[SLOTS];
static volatile sig_atomic_t running;
static pthread_t target;
static unsigned long samples, full;

static struct slot *slot_of(VALUE frame, int line)
{
	unsigned long h = ((unsigned long)frame >> 3) * 31u + (unsigned long)line;

	for (unsigned int i = 0; i < SLOTS; i++) {
		struct slot *s = &table[(h + i) & (SLOTS - 1)];

		if (s->frame == frame && s->line == line)
			return s;
		if (!s->frame) {
			s->frame = frame;
			s->line = line;
			return s;
		}
	}
	return NULL;
}

static void on_alarm(int sig)
{
	VALUE frames[DEPTH];
	int lines[DEPTH], n, saved = errno;

	if (!running)
		return;
	if (!pthread_equal(pthread_self(), target)) {
		pthread_kill(target, sig);
		errno = saved;
		return;
	}
	n = rb_profile_frames(0, DEPTH, frames, lines);
	samples++;
	for (int i = 0; i < n; i++) {
		struct slot *s;

		if (lines[i] <= 0)
			continue;
		s = slot_of(frames[i], lines[i]);
		if (!s) {
			full++;
			continue;
		}
		s->total++;
		if (i == 0)
			s->self++;
	}
	errno = saved;
}

static VALUE sampler_start(VALUE self, VALUE interval)
{
	struct sigaction sa;
	struct itimerval it;
	long us = NUM2LONG(interval);

	if (us <= 0 || us >= 1000000)
		rb_raise(rb_eArgError, "interval out of range");
	memset(table, 0, sizeof(table));
	samples = full = 0;
	target = pthread_self();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	running = 1;
	memset(&it, 0, sizeof(it));
	it.it_interval.tv_usec = us;
	it.it_value = it.it_interval;
	setitimer(ITIMER_REAL, &it, NULL);
	return Qnil;
}

static VALUE sampler_stop(VALUE self)
{
	struct itimerval it;
	VALUE rows = rb_ary_new();

	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	running = 0;
	if (full)
		rb_raise(rb_eRuntimeError, "%lu frames found the table full", full);
	for (unsigned int i = 0; i < SLOTS; i++) {
		struct slot *s = &table[i];
		VALUE file;

		if (!s->frame)
			continue;
		file = rb_profile_frame_absolute_path(s->frame);
		if (NIL_P(file))
			file = rb_profile_frame_path(s->frame);
		rb_ary_push(rows, rb_ary_new_from_args(5, rb_profile_frame_full_label(s->frame), file,
						       INT2NUM(s->line), ULONG2NUM(s->total),
						       ULONG2NUM(s->self)));
	}
	return rb_ary_new_from_args(2, ULONG2NUM(samples), rows);
}

void Init_rbsampler(void);

void Init_rbsampler(void)
{
	VALUE m = rb_define_module("RbSampler");

	rb_define_module_function(m, "start", sampler_start, 1);
	rb_define_module_function(m, "stop", sampler_stop, 0);
}
