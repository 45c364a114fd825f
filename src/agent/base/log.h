/* log.h - needle's diagnostic messages, routed through needle_set_print(). */
#ifndef NEEDLE_LOG_H
#define NEEDLE_LOG_H

#include "needle.h"

void needle_log(enum needle_print_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* needle record -p: from log_route_hold on, messages never reach the
 * process's stderr; they are held, then sent on the session socket from
 * log_route_socket(fd) until log_route_end() (see log.c). */
void log_route_hold(void);
void log_route_socket(int fd);
void log_route_end(void);

#define pr_warn(...) needle_log(NEEDLE_WARN, __VA_ARGS__)
#define pr_info(...) needle_log(NEEDLE_INFO, __VA_ARGS__)
#define pr_debug(...) needle_log(NEEDLE_DEBUG, __VA_ARGS__)

#endif
