/* cli.h - what the needle subcommands share. */
#ifndef NEEDLE_CLI_H
#define NEEDLE_CLI_H

#include <stdint.h>

int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ctl(int argc, char **argv);

/* Print "needle: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse a duration like "10us", "1.5ms", "2s", "100" (ns).  0 or -1. */
int cli_parse_duration(const char *s, uint64_t *ns);
/* Format ns as uftrace does: "  1.234 us". */
void cli_format_duration(char *buf, size_t len, uint64_t ns);

#endif
