/* script.h - `needle script -S FILE.py` (script.c). */
#ifndef NEEDLE_CLI_SCRIPT_H
#define NEEDLE_CLI_SCRIPT_H

int cmd_script(int argc, char **argv);

#endif
