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
 *   N <errno> <message>                          a program exec'ed and not traced
 *   I <image>                                    the records up to the next I are
 *                                                that program image's (shm_chunk.image)
 *
 * After T, objects the program dlopens are appended as M, S and O lines
 * (module indexes and site ids continue), before their functions are
 * patched.
 *
 * Programs a traced process exec's into (agent/record/exec_follow.c) are
 * images 1, 2, ...: each has site ids and module indexes of its own,
 * counted from 0, and writes its records (never a T; an E when it could
 * not trace the program, which then runs untraced) in blocks that begin
 * with its I record.  Once an image other than the first exists, every
 * block appended, the first image's too, begins with one.  Records before
 * the first I are image 0's.  Appended blocks reserve their bytes with a
 * fetch-add on shm_header.meta_tail, so two images append side by side;
 * a reader that meets a NUL byte stops there and looks again later (a
 * block reserved and not yet copied; a writer that died inside its copy
 * leaves the records after it unread).
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

/* A module's load bias and build id, right after its M line: index,
 * bias, the build id in hex ("-": none). */
#define META_BIAS 'B'
#define META_BIAS_WRITE "B %u %llx %s\n"
#define META_BIAS_READ "B %u %llx %64s"

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

#define META_NOTE 'N'
#define META_NOTE_WRITE "N %d %s\n"
#define META_NOTE_READ "N %d %n"     /* then the message from %n */

#define META_IMAGE 'I'
#define META_IMAGE_WRITE "I %u\n"
#define META_IMAGE_READ "I %u"

#define META_ERROR 'E'
#define META_ERROR_WRITE "E %d %s\n"
#define META_ERROR_READ "E %d %n"    /* then the message from %n */

#endif
