/*
 * pyrospy bench: run a command and report, on file descriptor 3, one line
 *     WALL_S USER_S SYS_S MAXRSS_KB STATUS
 * from wait4(2): CPU to the microsecond, and the peak RSS of the command
 * itself (a small C parent keeps the RSS counted before exec small; a
 * Python wrapper would add its own ~10 MB to ru_maxrss).
 *     bench-rusage COMMAND [ARGS...] 3>FILE
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	struct rusage ru;
	FILE *out;
	int status = 0;
	pid_t pid;

	if (argc < 2)
		return 2;
	out = fdopen(3, "w");
	if (!out)
		out = stderr;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (out != stderr)
			close(3);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(out, "%.6f %.6f %.6f %ld %d\n",
		(double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6,
		ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fclose(out);
	return 0;
}
