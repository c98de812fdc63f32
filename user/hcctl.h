/* SPDX-License-Identifier: GPL-2.0 */
/* The commands that live in files of their own, called by hcctl.c's main(). */
#ifndef HCCTL_H
#define HCCTL_H

int cmd_index(int argc, char **argv);
int cmd_swap(int argc, char **argv);

#endif
