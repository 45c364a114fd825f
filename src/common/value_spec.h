/* value_spec.h - the limits of the lines needle record hands the agent
 * for values and triggers (record_config's args, arg_filters and
 * triggers), defined once for both sides.  Their grammar:
 *
 *   args         "GLOB\tA|R\tkind:index:fmt:bits[:shift],...[\tSCOPE]"
 *                (agent/record/args.h; needle record's cli/args/arg_specs.c
 *                writes them from -A, -R and --auto-args)
 *   arg_filters  "GLOB\tkind:index:fmt:bits[:shift]\tOP\tVALUE" (-F
 *                'GLOB@NAME OP VALUE')
 *   triggers     "FUNC\tNS" (NS 0: on entry; --trigger)
 *
 * and the ARGS section's label lines for the views (docs/file-format.md). */
#ifndef NEEDLE_VALUE_SPEC_H
#define NEEDLE_VALUE_SPEC_H

#define VALUE_ITEMS_MAX 16       /* values per function and side (entry, exit) */
#define VALUE_STRING_MAX 256     /* --max-string's ceiling: bytes of a /s string kept */
#define VALUE_STRING_MIN 8       /* ... and its floor */
#define VALUE_STRING_DEFAULT 98  /* ... without --max-string (uftrace's: a string of 97 is whole) */
#define VALUE_GLOB_MAX 256       /* bytes of the glob of a -A, -R, -F value spec or a trigger */
#define VALUE_SPEC_MAX 1000      /* bytes of a whole -A, -R or -F value spec as given */
#define VALUE_LABEL_MAX 48       /* bytes of a value's name ("key", "p.x") with its NUL */

#endif
