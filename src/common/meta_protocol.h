/* meta_protocol.h - what libneedle's recorder tells `needle record`
 * besides events: a text file (NEEDLE_META_FD) of one record per line,
 * written by the agent (src/agent/record/recorder.c) and read by the
 * command (src/cli/record/meta.c).  Both sides spell every record with
 * these formats and no other.
 *
 *   M <module index> <path>                      an object with traced sites
 *   S <site id> <function address, hex> <module index> <name>
 *   Y <reason> <name>                            a reason for not relocating a function
 *   O <compiled> <tried> <relocated> <refused by reason 1..15> <path>
 *                                                an object: its sites compiled, the
 *                                                functions tried for relocation, those
 *                                                relocated, the others by reason
 *   T <number of functions traced>               the recorder is attached
 *   E <errno> <message>                          the recorder failed
 *
 * After T, objects the program dlopens are appended as M, S and O lines
 * (module indexes and site ids continue), before their functions are
 * patched.
 *
 * The file is a memfd that needle record sizes to META_FILE_BYTES (sparse,
 * zeros).  The agent writes its first records with write(2), then maps the
 * file, closes its descriptor (the program must not see one more) and
 * appends later records into the mapping; a reader stops at the first NUL
 * byte, and ignores a last line without its newline (being written, or
 * cut short by a crash).
 * Paths and names run to the end of the line (they may hold spaces). */
#ifndef NEEDLE_META_PROTOCOL_H
#define NEEDLE_META_PROTOCOL_H

#define META_FILE_BYTES (16u << 20)

#define META_MODULE 'M'
#define META_MODULE_WRITE "M %u %s\n"
#define META_MODULE_READ "M %u %n"   /* then the path from %n */

#define META_SITE 'S'
#define META_SITE_WRITE "S %u %llx %u %llx %s\n" /* id, function address, module, function bytes (0: unknown), name */
#define META_SITE_READ "S %u %llx %u %llx %n" /* then the name from %n */

#define META_REASON 'Y'
#define META_REASON_WRITE "Y %d %s\n"
#define META_OBJECT 'O'
#define META_OBJECT_REFUSALS 15

#define META_TRACED 'T'
#define META_TRACED_WRITE "T %d\n"
#define META_TRACED_READ "T %llu"

#define META_ERROR 'E'
#define META_ERROR_WRITE "E %d %s\n"
#define META_ERROR_READ "E %d %n"    /* then the message from %n */

#endif
