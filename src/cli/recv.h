/* recv.h - `needle recv` (recv.c). */
#ifndef NEEDLE_CLI_RECV_H
#define NEEDLE_CLI_RECV_H

int cmd_recv(int argc, char **argv);

#endif
