/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/completion.h"

/*
 * Help text goes into single-quoted shell words and zsh's [...] (where a
 * colon is text: zsh 5.9 shows "http://pyroscope:4040" whole) and
 * name:description forms: only characters that mean nothing there, up to
 * stop (a command's "name: example" loses its example).
 */
static void put_text(FILE *f, const char *s, int stop)
{
	for (; s && *s && *s != stop; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		    strchr(" ,./()=+_%-:", *s))
			putc(*s, f);
}

/* " --name -n" for every option of the command with bit */
static void put_opts(FILE *f, const struct completion *c, unsigned int bit)
{
	for (size_t i = 0; i < c->nopts; i++) {
		const struct completion_opt *o = &c->opts[i];

		if (!(o->cmds & bit))
			continue;
		fprintf(f, " --%s", o->name);
		if (o->short_name)
			fprintf(f, " -%c", o->short_name);
	}
}

/* "-p|--pid" */
static void put_alternatives(FILE *f, const struct completion_opt *o)
{
	if (o->short_name)
		fprintf(f, "-%c|", o->short_name);
	fprintf(f, "--%s", o->name);
}

static void write_bash(FILE *f, const struct completion *c)
{
	fputs("# bash completion for pyrospy: written by 'pyrospy completion bash'\n"
	      "_pyrospy_pids()\n"
	      "{\n"
	      "\tlocal p\n"
	      "\tfor p in /proc/[0-9]*; do\n"
	      "\t\tprintf '%s\\n' \"${p#/proc/}\"\n"
	      "\tdone\n"
	      "}\n"
	      "\n"
	      "_pyrospy()\n"
	      "{\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tlocal cmd=${COMP_WORDS[1]} i\n"
	      "\tCOMPREPLY=()\n"
	      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W '", f);
	for (size_t i = 0; i < c->ncmds; i++)
		fprintf(f, "%s ", c->cmds[i].name);
	fprintf(f, "%s' -- \"$cur\"))\n"
		"\t\treturn\n"
		"\tfi\n"
		"\tcase $cmd in\n", c->top_words);
	for (size_t i = 0; i < c->ncmds; i++) {
		if (!c->cmds[i].words)
			continue;
		fprintf(f, "\t%s)\n"
			"\t\t[ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n"
			"\t\treturn ;;\n", c->cmds[i].name, c->cmds[i].words);
	}
	fprintf(f, "\tesac\n"
		"\t# %s: after --, the command and its arguments\n"
		"\tif [ \"$cmd\" = %s ]; then\n"
		"\t\tfor ((i = 2; i < COMP_CWORD; i++)); do\n"
		"\t\t\t[ \"${COMP_WORDS[i]}\" = -- ] || continue\n"
		"\t\t\tif [ \"$i\" -eq $((COMP_CWORD - 1)) ]; then\n"
		"\t\t\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n"
		"\t\t\telse\n"
		"\t\t\t\tcompopt -o filenames 2>/dev/null\n"
		"\t\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		"\t\t\tfi\n"
		"\t\t\treturn\n"
		"\t\tdone\n"
		"\tfi\n"
		"\tcase $prev in\n", c->exec_cmd, c->exec_cmd);
	for (size_t i = 0; i < c->nopts; i++) {
		const struct completion_opt *o = &c->opts[i];

		if (o->arg == COMPLETION_NONE)
			continue;
		fputc('\t', f);
		put_alternatives(f, o);
		switch (o->arg) {
		case COMPLETION_PID:
			fputs(")\n\t\tCOMPREPLY=($(compgen -W \"$(_pyrospy_pids)\" -- \"$cur\"))\n", f);
			break;
		case COMPLETION_FILE:
			fputs(")\n\t\tcompopt -o filenames 2>/dev/null\n"
			      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n", f);
			break;
		case COMPLETION_WORDS:
			fprintf(f, ")\n\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", o->words);
			break;
		default:
			fputs(")\n", f);
			break;
		}
		fputs("\t\treturn ;;\n", f);
	}
	fputs("\tesac\n"
	      "\tcase $cmd in\n", f);
	for (size_t i = 0; i < c->ncmds; i++) {
		if (c->cmds[i].words)
			continue;
		fprintf(f, "\t%s)\n\t\tCOMPREPLY=($(compgen -W '", c->cmds[i].name);
		put_opts(f, c, 1u << i);
		fputs("' -- \"$cur\")) ;;\n", f);
	}
	fputs("\tesac\n"
	      "}\n"
	      "complete -F _pyrospy pyrospy pyrospy-portable\n", f);
}

/* One _arguments spec: '-p+[help]:pid:_pids' or '--pid=[help]:pid:_pids' */
static void put_zsh_spec(FILE *f, const struct completion_opt *o, int as_short)
{
	if (as_short)
		fprintf(f, "\t\t'-%c%s[", o->short_name, o->arg == COMPLETION_NONE ? "" : "+");
	else
		fprintf(f, "\t\t'--%s%s[", o->name, o->arg == COMPLETION_NONE ? "" : "=");
	put_text(f, o->help, 0);
	fputc(']', f);
	switch (o->arg) {
	case COMPLETION_NONE:
		break;
	case COMPLETION_PID:
		fputs(":pid:_pids", f);
		break;
	case COMPLETION_FILE:
		fputs(":file:_files", f);
		break;
	case COMPLETION_WORDS:
		fprintf(f, ":%s:(%s)", o->name, o->words);
		break;
	default:
		fprintf(f, ":%s: ", o->name);
		break;
	}
	fputs("'\n", f);
}

static void write_zsh(FILE *f, const struct completion *c)
{
	fputs("#compdef pyrospy pyrospy-portable\n"
	      "# zsh completion for pyrospy: written by 'pyrospy completion zsh'\n"
	      "local -a cmds opts\n"
	      "cmds=(\n", f);
	for (size_t i = 0; i < c->ncmds; i++) {
		fprintf(f, "\t'%s:", c->cmds[i].name);
		put_text(f, c->cmds[i].help, ':');
		fputs("'\n", f);
	}
	fprintf(f, ")\n"
		"if (( CURRENT == 2 )); then\n"
		"\t_describe -t commands 'pyrospy command' cmds\n"
		"\tcompadd -- %s\n"
		"\treturn\n"
		"fi\n"
		"case $words[2] in\n", c->top_words);
	for (size_t i = 0; i < c->ncmds; i++) {
		const struct completion_cmd *cmd = &c->cmds[i];

		if (cmd->words) {
			fprintf(f, "(%s)\n\t(( CURRENT == 3 )) && compadd -- %s\n\treturn ;;\n",
				cmd->name, cmd->words);
			continue;
		}
		fprintf(f, "(%s)\n\topts=(\n", cmd->name);
		for (size_t j = 0; j < c->nopts; j++) {
			const struct completion_opt *o = &c->opts[j];

			if (!(o->cmds & (1u << i)))
				continue;
			if (o->short_name)
				put_zsh_spec(f, o, 1);
			put_zsh_spec(f, o, 0);
		}
		if (!strcmp(cmd->name, c->exec_cmd))
			fputs("\t\t'*::command:_normal'\n", f);
		fputs("\t) ;;\n", f);
	}
	fputs("(*)\n"
	      "\treturn 1 ;;\n"
	      "esac\n"
	      "shift words\n"
	      "(( CURRENT-- ))\n"
	      "_arguments -s -S : $opts\n", f);
}

int completion_write(FILE *f, const char *shell, const struct completion *c)
{
	if (!strcmp(shell, "bash"))
		write_bash(f, c);
	else if (!strcmp(shell, "zsh"))
		write_zsh(f, c);
	else {
		errno = EINVAL;
		return -1;
	}
	return fflush(f) || ferror(f) ? -1 : 0;
}
