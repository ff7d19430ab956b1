/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "sample/budget.h"

#define NSEC 1000000000ll
#define MIN_SPAN_NS (NSEC / 2)		/* usage measured this long at least before it is judged */
#define RING_STEP_NS (BUDGET_SPAN_NS / 8)	/* the ring's points this far apart */
/*
 * What a new rate aims at, of the share: the usage measured at a rate
 * varies by some percent from one span to the next (what the targets run,
 * uploads, the scan of /proc every second), and the share is a bound, not
 * a mean to hover around.
 */
#define AIM 0.85
#define EARLY_TICKS 3		/* ticks that tell a rate plainly too high */

void budget_init(struct budget *b, double share, unsigned int max, int64_t now_ns, int64_t cpu_ns)
{
	memset(b, 0, sizeof(*b));
	b->share = share;
	b->max = b->rate = max;
	b->at = now_ns;
	b->cpu = cpu_ns;
}

static void ring_reset(struct budget *b, int64_t now, int64_t cpu)
{
	b->nring = 1;
	b->head = 0;
	b->ring[0].at = now;
	b->ring[0].cpu = cpu;
	b->ring[0].ticks = b->ticks;
}

static void ring_push(struct budget *b, int64_t now, int64_t cpu)
{
	unsigned int n = sizeof(b->ring) / sizeof(b->ring[0]);
	unsigned int newest = (b->head + b->nring - 1) % n;

	if (now - b->ring[newest].at < RING_STEP_NS)
		return;
	if (b->nring < n) {
		b->nring++;
	} else {
		b->head = (b->head + 1) % n;
	}
	newest = (b->head + b->nring - 1) % n;
	b->ring[newest].at = now;
	b->ring[newest].cpu = cpu;
	b->ring[newest].ticks = b->ticks;
}

static void set_rate(struct budget *b, unsigned int rate, int64_t now, int64_t cpu)
{
	if (rate < b->rate)
		b->lowered++;
	else
		b->raised++;
	b->rate = rate;
	b->over = 0;	/* not judged yet at this rate */
	/* what was measured was at the old rate */
	ring_reset(b, now, cpu);
}

unsigned int budget_pace(struct budget *b, int64_t now, int64_t cpu, int may_raise)
{
	double cap = b->share * BUDGET_DEBT_S, span_share = b->share * (double)BUDGET_SPAN_NS / NSEC;
	double used, per_tick, aim, want;
	int64_t span;
	unsigned int w;

	/* a clock that went back (it does not: both are monotonic) is no measure */
	if (now < b->at || cpu < b->cpu) {
		b->ticks++;
		b->at = now;
		b->cpu = cpu;
		ring_reset(b, now, cpu);
		return b->rate;
	}
	b->debt += ((double)(cpu - b->cpu) - b->share * (double)(now - b->at)) / NSEC;
	if (b->debt < 0)
		b->debt = 0;
	if (b->debt > cap)
		b->debt = cap;
	if (b->over)
		b->over_ns += (uint64_t)(now - b->at);
	b->at = now;
	b->cpu = cpu;
	/* the ring measures ticks: from the first, the start's cost in the debt only */
	if (++b->ticks == 1) {
		ring_reset(b, now, cpu);
		return b->rate;
	}
	ring_push(b, now, cpu);
	span = now - b->ring[b->head].at;
	/*
	 * Before a span is measured, a rate plainly past the share (the ticks
	 * since the first, which paid for opening the processes, cost more
	 * than twice the share at this rate) comes down at once, not half a
	 * second later: 64 processes of 8 busy threads at 100 Hz took 72 % of
	 * a core for that half second, more than the next 12 s at 1 Hz.
	 */
	if (span < MIN_SPAN_NS && b->ticks >= b->ring[b->head].ticks + EARLY_TICKS) {
		per_tick = (double)(cpu - b->ring[b->head].cpu) / NSEC /
			   (double)(b->ticks - b->ring[b->head].ticks);
		if (per_tick * b->rate > 2 * b->share) {
			/* what -v says: the share of a core since the first tick */
			if (now > b->ring[b->head].at)
				b->used = (double)(cpu - b->ring[b->head].cpu) /
					  (double)(now - b->ring[b->head].at);
			want = AIM * b->share / per_tick;
			w = want <= BUDGET_FLOOR ? BUDGET_FLOOR : (unsigned int)want;
			if (w < b->rate)
				set_rate(b, w, now, cpu);
		}
	}
	if (span < MIN_SPAN_NS)
		return b->rate;
	used = b->used = (double)(cpu - b->ring[b->head].cpu) / (double)span;
	/*
	 * The cost of a tick, of the ticks there were: on a busy host they
	 * fall behind the rate asked, and the CPU they took is that of fewer
	 * (what is spent between them, finding processes and uploading, is
	 * counted in, as if it grew with the rate: wrong at low rates, where
	 * the next look corrects it).
	 */
	per_tick = b->ticks > b->ring[b->head].ticks ?
		   (double)(cpu - b->ring[b->head].cpu) / NSEC /
		   (double)(b->ticks - b->ring[b->head].ticks) : 0;
	/* the debt paid back over the next span */
	aim = AIM * b->share - b->debt * NSEC / (double)BUDGET_SPAN_NS;
	want = per_tick > 0 ? aim / per_tick : (double)b->max;
	w = want >= b->max ? b->max : want <= BUDGET_FLOOR ? BUDGET_FLOOR : (unsigned int)want;
	if (w < b->rate && (used > b->share || b->debt > span_share / 2))
		set_rate(b, w, now, cpu);
	else if (may_raise && w > b->rate && (uint64_t)w * 5 >= (uint64_t)b->rate * 6 &&
		 b->debt <= 0)
		set_rate(b, w, now, cpu);
	else	/* judged at the rate it was measured at */
		b->over = b->rate == BUDGET_FLOOR && used > b->share;
	return b->rate;
}
