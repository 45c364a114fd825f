/* src_lines.c - where each traced function is in its source
 * (trace_site_srcline), for replay --srcline and -L, uftrace's.
 *
 * The trace names functions by address; their source lines are read,
 * at the first lookup, from the DWARF of the objects the trace names
 * (their files where they were recorded, or the separate debug files
 * libdwfl finds for them by build id or .gnu_debuglink), each object
 * placed at the load bias its sites give (data_syms.c's
 * reader_module_bias).  An object whose file is gone or was rebuilt is
 * left out: a wrong line is worse than none.
 *
 * A function's line is its DWARF declaration (DW_AT_decl_file and
 * DW_AT_decl_line of the subprogram that holds its first instruction:
 * the line its definition starts at, as uftrace shows it), else the line
 * table's line for that instruction.
 *
 * Invariants: memory is the objects' DWARF (libdw's, kept open while the
 * trace is: the file names point into it) and two words per site, never
 * the trace's events; each site is looked up once. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "reader/reader_internal.h"
#include "reader/trace_reader.h"

struct src_lines {
	Dwfl *dwfl;         /* NULL: nothing could be read */
	const char **file;  /* by site: NULL not known */
	unsigned *line;
	uint8_t *looked;    /* by site: looked up */
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static struct src_lines *load(struct trace *t)
{
	struct src_lines *sl = calloc(1, sizeof(*sl));
	if (!sl)
		return NULL;
	size_t n = t->site_cap ? t->site_cap : 1;
	sl->file = calloc(n, sizeof(*sl->file));
	sl->line = calloc(n, sizeof(*sl->line));
	sl->looked = calloc(n, 1);
	if (!sl->file || !sl->line || !sl->looked)
		return sl; /* looked NULL or not, nothing is known */
	elf_version(EV_CURRENT);
	Dwfl *dwfl = dwfl_begin(&callbacks);
	if (!dwfl)
		return sl;
	int reported = 0;
	for (size_t m = 0; m < t->module_cnt; m++) {
		int fd = open(t->modules[m], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		uint64_t bias = 0;
		int placed = e && reader_module_bias(t, m, e, &bias);
		if (e)
			elf_end(e);
		/* The bias is the address of the file's vaddr 0: placed
		 * relative to the first segment's p_vaddr (add_p_vaddr).  On
		 * success the descriptor is libdwfl's. */
		if (placed && dwfl_report_elf(dwfl, t->modules[m], t->modules[m], fd, bias, true))
			reported++;
		else
			close(fd);
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (!reported) {
		dwfl_end(dwfl);
		return sl;
	}
	sl->dwfl = dwfl;
	return sl;
}

/* The declaration of the function whose code holds addr (module
 * address), from the scopes around it, innermost first. */
static int decl_of(Dwarf_Die *cu, Dwarf_Addr addr, const char **file, unsigned *line)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, addr, &scopes), ok = 0;
	for (int i = 0; i < n && !ok; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram)
			continue;
		int l = 0;
		const char *f = dwarf_decl_file(&scopes[i]);
		if (f && !dwarf_decl_line(&scopes[i], &l) && l > 0) {
			*file = f;
			*line = (unsigned)l;
			ok = 1;
		}
		break; /* the innermost function: an outer one is not it */
	}
	free(scopes);
	return ok;
}

int trace_site_srcline(struct trace *t, uint32_t site, const char **file, unsigned *line)
{
	if (!t->src_lines && !(t->src_lines = load(t)))
		return 0;
	struct src_lines *sl = t->src_lines;
	if (site >= t->site_cap || !sl->looked || !sl->dwfl)
		return 0;
	if (!sl->looked[site]) {
		sl->looked[site] = 1;
		uint64_t ip = t->sites[site].func_ip;
		Dwfl_Module *mod = ip ? dwfl_addrmodule(sl->dwfl, ip) : NULL;
		Dwarf_Addr bias = 0;
		Dwarf_Die *cu = mod ? dwfl_module_addrdie(mod, ip, &bias) : NULL;
		if (cu && !decl_of(cu, ip - bias, &sl->file[site], &sl->line[site])) {
			Dwfl_Line *ln = dwfl_module_getsrc(mod, ip);
			int l = 0;
			const char *f = ln ? dwfl_lineinfo(ln, NULL, &l, NULL, NULL, NULL) : NULL;
			if (f && l > 0) {
				sl->file[site] = f;
				sl->line[site] = (unsigned)l;
			}
		}
	}
	if (!sl->file[site])
		return 0;
	*file = sl->file[site];
	*line = sl->line[site];
	return 1;
}

void trace_src_lines_free(struct trace *t)
{
	struct src_lines *sl = t->src_lines;
	if (!sl)
		return;
	if (sl->dwfl)
		dwfl_end(sl->dwfl);
	free(sl->file);
	free(sl->line);
	free(sl->looked);
	free(sl);
	t->src_lines = NULL;
}
