/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_BUDGET_H
#define PYROSPY_BUDGET_H

#include <stdint.h>

/*
 * The agent's CPU budget (--max-cpu): the rate every process is sampled
 * at, lowered when the agent's own CPU time (every thread of it) goes past
 * a share of one core, raised again when there is room.  One rate for all:
 * every process is sampled at every tick, so lowering the tick rate lowers
 * every process's rate alike, and the rate stays a whole number of Hz,
 * which every wire format can say exactly (/ingest's sampleRate is one).
 *
 * Pure arithmetic on the times it is given (budget_pace()), no clock of
 * its own: the caller reads the clocks, the tests replay them.
 */

#define BUDGET_FLOOR	1	/* Hz: never lower (every process keeps a sample a second) */
#define BUDGET_SPAN_NS	(5 * 1000000000ll)	/* the window the share holds over */
/*
 * The most CPU owed, in seconds of the share: what is spent past it, the
 * start (opening every process before the first tick) included, is paid
 * back up to this much; past it (a burst of thousands of new processes)
 * the rest is forgiven, rather than keeping every process at the floor for
 * minutes.
 */
#define BUDGET_DEBT_S	30

struct budget {
	double share;		/* of one core, 0.001 to 1 */
	unsigned int max;	/* --rate: never higher */
	unsigned int rate;	/* now */
	/*
	 * CPU seconds owed: spent past the share since budget_init(), at
	 * most BUDGET_DEBT_S seconds' share of them (paid back over the next
	 * span, as far as the floor lets), never below 0: time under the
	 * budget is no licence to go over it later.
	 */
	double debt;
	int64_t at, cpu;	/* the last call's clocks */
	/* the usage measured at this rate: the oldest point of the ring, since the change */
	struct { int64_t at, cpu; uint64_t ticks; } ring[8];
	uint64_t ticks;		/* calls: the ticks, whose cost the ring measures */
	unsigned int nring, head;
	double used;		/* the share of a core last measured */
	int over;		/* at the floor and over the budget still */
	uint64_t lowered, raised;	/* changes made */
	uint64_t over_ns;	/* time spent over the budget at the floor */
};

/*
 * share: of one core (--max-cpu / 100); max: the asked rate, where it
 * starts; now_ns and cpu_ns: the clocks at the start, from which the CPU
 * spent counts (what the first tick waits for is paid for too).
 */
void budget_init(struct budget *b, double share, unsigned int max, int64_t now_ns, int64_t cpu_ns);

/*
 * Called at every tick, with the monotonic clock and the process's CPU
 * time (ns): the rate to sample at from now on.  It goes down as soon as
 * the usage measured over the last half second to BUDGET_SPAN_NS is past
 * the share; it goes up only when may_raise (the caller's window
 * boundary: a window keeps one rate), and by a fifth at least.  Between
 * BUDGET_FLOOR and max always; b->over says when even the floor is over.
 */
unsigned int budget_pace(struct budget *b, int64_t now_ns, int64_t cpu_ns, int may_raise);

#endif
