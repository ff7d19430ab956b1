/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_DUMP_JSON_H
#define PYROSPY_DUMP_JSON_H

#include <stdio.h>
#include <sys/types.h>

struct stack;
struct target;

/*
 * dump --json: one JSON document for every process dumped,
 *
 *   {"processes": [{"pid": 42, "name": "python3", "language": "Python",
 *     "version": "3.11.2", "threads": [{"tid": 42, "name": "MainThread",
 *     "state": "running", "holds_gil": true, "frames": [{"name": "work",
 *     "file": "/app/x.py", "line": 4}, ...]}, ...]}, ...]}
 *
 * frames innermost first; "line" only where known, "file" only where
 * there is one; "interpreter" or "ractor" only where dump's text says
 * them; "locals" (--locals) the lines dump's text shows under a frame;
 * "truncated": true when the outermost frames are not shown.  Every
 * string is the text dump prints, escaped for JSON.  With --tasks, a
 * process has "tasks" (their number) and "task_groups" instead of
 * "threads".
 */

/* One thread the interpreter showed, into f; first: no comma before it. */
void dump_json_thread(FILE *f, int first, const char *lang, const struct stack *st);

/* One thread of the kernel's with no frames of the language. */
void dump_json_other(FILE *f, int first, long tid, const char *name, int running);

/*
 * One process, its threads being the text of the calls above;
 * not_listed the threads with no frames left out.  first as above.
 */
void dump_json_process(FILE *f, int first, const struct target *t, const char *threads,
		       unsigned long not_listed);

/*
 * One process's asyncio tasks (--tasks): ntasks of them, members the
 * JSON members pytasks_dump() wrote.  first as above.
 */
void dump_json_tasks(FILE *f, int first, const struct target *t, unsigned int ntasks,
		     const char *members);

#endif
