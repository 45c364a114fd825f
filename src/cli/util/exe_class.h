/* exe_class.h - is an executable x86-64 (see exe_class.c). */
#ifndef NEEDLE_CLI_EXE_CLASS_H
#define NEEDLE_CLI_EXE_CLASS_H

/* 0 for a 64-bit x86-64 ELF, -1 for another class or machine (a 32-bit
 * program), 1 when fd holds too little to tell. */
int exe_class_check(int fd);

#endif
