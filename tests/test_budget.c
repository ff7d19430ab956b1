/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>

#include "sample/budget.h"

/*
 * The controller of --max-cpu on replayed clocks: an agent whose CPU per
 * second is fixed + per_hz * rate, ticking at the rate budget_pace()
 * gives, with a window boundary every 10 s.
 */
#define NSEC 1000000000ll

struct sim {
	struct budget b;
	int64_t now, cpu;
	double fixed, per_hz;	/* share of a core: fixed, and per Hz of the rate */
	unsigned int max_seen, min_seen, changes_in_window;
};

/* Run for secs; the CPU used over [from, secs) of it, as a share of a core. */
static double run(struct sim *s, double secs, double from)
{
	int64_t end = s->now + (int64_t)(secs * NSEC), mark = s->now + (int64_t)(from * NSEC);
	int64_t cpu_mark = -1;
	unsigned int rate = s->b.rate;

	while (s->now < end) {
		int64_t dt = NSEC / rate;
		int boundary = s->now / (10 * NSEC) != (s->now + dt) / (10 * NSEC);
		unsigned int next;

		s->now += dt;
		s->cpu += (int64_t)((s->fixed + s->per_hz * rate) * (double)dt);
		if (cpu_mark < 0 && s->now >= mark)
			cpu_mark = s->cpu;
		next = budget_pace(&s->b, s->now, s->cpu, boundary);
		if (next > rate && !boundary)
			s->changes_in_window++;
		rate = next;
		s->max_seen = rate > s->max_seen ? rate : s->max_seen;
		s->min_seen = !s->min_seen || rate < s->min_seen ? rate : s->min_seen;
	}
	return (double)(s->cpu - cpu_mark) / (double)(end - mark);
}

static void sim_init(struct sim *s, double share, unsigned int max, double fixed, double per_hz)
{
	memset(s, 0, sizeof(*s));
	s->now = 1000 * NSEC;
	budget_init(&s->b, share, max, s->now, s->cpu);
	s->fixed = fixed;
	s->per_hz = per_hz;
}

/* 32 processes at 100 Hz cost 10 % of a core: a 2 % budget holds within a second or two */
Test(budget, lowers_to_the_share)
{
	struct sim s;
	double used;

	sim_init(&s, 0.02, 100, 0.001, 0.001);
	used = run(&s, 22, 2);
	cr_expect_leq(used, 0.02, "%.4f of a core from 2 s on", used);
	cr_expect_geq(used, 0.02 * 0.6, "%.4f of a core: the rate fell too far", used);
	cr_expect_lt(s.b.rate, 100);
	cr_expect_geq(s.b.rate, 10, "%u Hz", s.b.rate);
	cr_expect_leq(s.max_seen, 100);
	cr_expect_geq(s.min_seen, BUDGET_FLOOR);
	cr_expect_eq(s.changes_in_window, 0, "raised within a window");
	cr_expect_eq(s.b.over, 0);
	/* the first 2 s paid back too: the whole run is within the share and a tenth */
	sim_init(&s, 0.02, 100, 0.001, 0.001);
	used = run(&s, 20, 0);
	cr_expect_leq(used, 0.022, "%.4f of a core over the whole 20 s", used);
}

/* Room again (fewer processes): raised at a window's start, never past --rate */
Test(budget, raises_at_a_boundary_only)
{
	struct sim s;

	sim_init(&s, 0.02, 100, 0.001, 0.001);
	run(&s, 12, 0);
	cr_assert_lt(s.b.rate, 30, "%u Hz", s.b.rate);
	s.per_hz = 0.00001;	/* a hundredth of the processes left */
	run(&s, 25, 0);
	cr_expect_eq(s.b.rate, 100, "%u Hz", s.b.rate);
	cr_expect_eq(s.changes_in_window, 0, "raised within a window");
	cr_expect_leq(s.max_seen, 100);
	cr_expect_geq(s.b.raised, 1);
}

/* Well within: --rate kept, nothing changed */
Test(budget, keeps_the_rate_with_room)
{
	struct sim s;

	sim_init(&s, 0.01, 100, 0.0005, 0.00002);
	run(&s, 30, 0);
	cr_expect_eq(s.b.rate, 100);
	cr_expect_eq(s.b.lowered + s.b.raised, 0);
}

/* Even 1 Hz over it: 1 Hz, said (over) and counted, not less */
Test(budget, floor_over_is_said)
{
	struct sim s;

	sim_init(&s, 0.01, 100, 0.002, 0.02);
	run(&s, 15, 0);
	cr_expect_eq(s.b.rate, BUDGET_FLOOR);
	cr_expect_eq(s.min_seen, BUDGET_FLOOR);
	cr_expect(s.b.over, "over at the floor, not said");
	cr_expect_gt(s.b.over_ns, 5 * NSEC, "%.1f s over counted", (double)s.b.over_ns / NSEC);
}

/*
 * A rate plainly past the share comes down within a few ticks, not after
 * the half second a span needs: 64 busy processes at 100 Hz cost 72 % of a
 * core (7.2 ms a tick); under a 5 % budget, 50 ms at that rate is 5 of its
 * ticks, and it settles where the share allows (5 Hz), within it.
 */
Test(budget, plainly_over_lowered_at_once)
{
	struct sim s;
	double used;

	sim_init(&s, 0.05, 100, 0, 0.0072);
	run(&s, 0.05, 0);
	cr_assert_lt(s.b.rate, 100, "still at %u Hz after 50 ms", s.b.rate);
	cr_assert_eq(s.b.lowered, 1);
	/* what -v says it used: 72 % of a core (it said 0.00 %) */
	cr_assert(s.b.used > 0.6 && s.b.used < 0.8, "used %.4f of a core", s.b.used);
	used = run(&s, 20, 0);
	cr_assert_leq(used, 0.05, "%.2f%% of a core", used * 100);
	cr_assert_geq(s.b.rate, 4, "at %u Hz", s.b.rate);
}

/*
 * The start is paid for: opening 32 processes before the first tick took
 * 0.3 s of CPU in 2 s (the sanitizer build's cost, beside busy targets),
 * three quarters of what a 2 % budget allows in 20 s; the 20 s from the
 * agent's start are within the share all the same, every process still
 * sampled (1 Hz at least), and the rate back up once the debt is paid.
 * (The debt counted from the first tick, the 20 s took 2.6 %.)
 */
Test(budget, the_start_is_paid_for)
{
	struct sim s;
	double used;
	int64_t start;

	sim_init(&s, 0.02, 100, 0.001, 0.001);
	start = s.cpu;
	s.now += 2 * NSEC;
	s.cpu += 3 * NSEC / 10;
	run(&s, 18, 0);
	used = (double)(s.cpu - start) / (20.0 * NSEC);
	cr_expect_leq(used, 0.02, "%.4f of a core over the 20 s from the start", used);
	cr_expect_geq(s.min_seen, BUDGET_FLOOR);
	run(&s, 30, 0);
	cr_expect_geq(s.b.rate, 10, "%u Hz once the start was paid for", s.b.rate);
}
