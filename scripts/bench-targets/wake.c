/*
 * pyrospy bench: the floor.  What an empty process costs in CPU to wake
 * up RATE times per second (clock_nanosleep on an absolute deadline, as
 * pyrospy's sampler does) on this machine, per wakeup.
 *     bench-wake RATE SECONDS
 * Prints "US_PER_WAKEUP" (user+sys from getrusage divided by wakeups).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

int main(int argc, char **argv)
{
	long rate = argc > 1 ? atol(argv[1]) : 100;
	double secs = argc > 2 ? atof(argv[2]) : 3;
	long n, i, period;
	struct timespec t;
	struct rusage ru;
	double us;

	if (rate < 1 || rate > 1000000 || secs <= 0)
		return 2;
	period = 1000000000L / rate;
	n = (long)(secs * (double)rate);
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (i = 0; i < n; i++) {
		t.tv_nsec += period;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	getrusage(RUSAGE_SELF, &ru);
	us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	printf("%.1f\n", n ? us / (double)n : 0.0);
	return 0;
}
