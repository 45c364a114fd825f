/* Functions of every site form, each in its own object so that each can
 * be built with its own compiler and flags. */
#ifndef FORMS_H
#define FORMS_H
/* Keeps calls from being folded away. */
static inline void opaque_sink(int x) { __asm__ volatile("" : : "r"(x) : "memory"); }
int form_gcc_nops(int x);
int form_gcc_endbr(int x);
int form_clang_nop5(int x);
int form_clang_endbr(int x);
int form_fentry_call(int x);
int form_mnop_mcount(int x);
#endif
