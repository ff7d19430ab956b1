/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/*
 * Run a fuzz target without libFuzzer: feed it every file named on the
 * command line, and every file in every directory named, once each, in
 * name order.  A crash or sanitizer report fails the run; so does an
 * argument that cannot be read.  Built with the harness and -DFUZZ_REPLAY
 * for make check (tests/fuzz-replay).
 */
static int run_file(const char *path)
{
	unsigned char *buf = NULL;
	size_t len = 0, alloc = 0;
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;

		if (alloc - len < 65536) {
			unsigned char *p;

			alloc = alloc ? alloc * 2 : 65536;
			p = realloc(buf, alloc);
			if (!p) {
				fprintf(stderr, "replay: out of memory reading '%s'\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, alloc - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* a copy of exactly the input's size: ASan sees reads past it */
	{
		unsigned char *in = malloc(len ? len : 1);

		if (!in) {
			free(buf);
			return -1;
		}
		memcpy(in, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(in, len);
		free(in);
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned int *count)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, alloc = 0;
	int status = 0;
	DIR *d = opendir(dir);

	if (!d) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == alloc) {
			char **p;

			alloc = alloc ? alloc * 2 : 64;
			p = realloc(names, alloc * sizeof(*names));
			if (!p) {
				status = -1;
				break;
			}
			names = p;
		}
		names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
		if (!names[n]) {
			status = -1;
			break;
		}
		sprintf(names[n], "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!status) {
			fprintf(stderr, "replay: %s\n", names[i]);
			if (run_file(names[i]))
				status = -1;
			else
				(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return status;
}

int main(int argc, char **argv)
{
	unsigned int count = 0;
	int status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: cannot open '%s': %s\n", argv[i], strerror(errno));
			status = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count))
				status = 1;
		} else if (run_file(argv[i])) {
			status = 1;
		} else {
			count++;
		}
	}
	printf("%s: %u inputs\n", argv[0], count);
	return status;
}
