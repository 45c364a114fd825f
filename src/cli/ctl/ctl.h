/* ctl.h - `needle ctl PID COMMAND`: a running recording changed through
 * its control socket (common/ctl_protocol.h).  This folder may include
 * cli/util and common. */
#ifndef NEEDLE_CTL_H
#define NEEDLE_CTL_H

int cmd_ctl(int argc, char **argv);

#endif
