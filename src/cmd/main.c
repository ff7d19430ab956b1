/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "cmd/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
