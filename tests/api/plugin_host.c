/* plugin_host.c - libapi_host.so: a library that uses libneedle (so its
 * constructor runs after libneedle's, which discovered the sites of the
 * objects loaded at start) and dlopens a plugin from its constructor.  A
 * client preloaded after it (callcount) then finds, when it attaches,
 * sites that were not there when libneedle started: their ids are at or
 * past the site count it can read before attaching. */
#include <dlfcn.h>
#include <stdio.h>

#include "needle.h"

void *host_plugin;
int host_sites_before_plugin = -1;

__attribute__((constructor)) static void host_start(void)
{
	host_sites_before_plugin = needle_site_count();
	host_plugin = dlopen(PLUGIN, RTLD_NOW);
	if (!host_plugin)
		fprintf(stderr, "host: %s\n", dlerror());
}
