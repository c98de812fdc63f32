/* SPDX-License-Identifier: GPL-2.0 */
/* The commands that live in files of their own, called by hcctl.c's main(). */
#ifndef HCCTL_H
#define HCCTL_H

int cmd_index(int argc, char **argv);
int cmd_swap(int argc, char **argv);
int cmd_assemble(int argc, char **argv);
int cmd_disassemble(int argc, char **argv);

/* hcctl.c's commands and helpers that assemble builds on */
#include <stdbool.h>
#include <sys/types.h>
/* when set, create refuses devices whose numbers are not these (assemble's checks) */
extern dev_t hc_expect_cache, hc_expect_origin;
bool dm_exists(const char *name);
int cmd_create(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_flush(int argc, char **argv);

#endif
