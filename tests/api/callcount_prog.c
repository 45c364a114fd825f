/* callcount_prog.c - runs the plugin libapi_host.so loaded at start, then
 * dlopens another one and runs it (tests/api/test_api_callcount.sh). */
#include <dlfcn.h>
#include <stdio.h>

extern void *host_plugin;
extern int host_sites_before_plugin;

int main(void)
{
	int (*work)(int) = host_plugin ? (int (*)(int))dlsym(host_plugin, "plugin_work") : NULL;
	if (!work)
		return 2;
	printf("sites before the plugin: %d\n", host_sites_before_plugin);
	/* Not linked with libneedle (libapi_host.so is): preloaded alone,
	 * callcount must find it behind the C library. */
	int (*site_find)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "needle_site_find");
	printf("plugin_leaf site id: %d\n", site_find ? site_find("plugin_leaf") : -1);
	printf("plugin_work: %d\n", work(1000));

	void *late = dlopen(LATE_PLUGIN, RTLD_NOW);
	int (*late_work)(int) = late ? (int (*)(int))dlsym(late, "late_work") : NULL;
	if (!late_work)
		return 3;
	printf("late_work: %d\n", late_work(100));
	return 0;
}
