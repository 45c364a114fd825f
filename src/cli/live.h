/* live.h - `needle live` (live.c). */
#ifndef NEEDLE_CLI_LIVE_H
#define NEEDLE_CLI_LIVE_H

int cmd_live(int argc, char **argv);

#endif
