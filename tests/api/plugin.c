/* plugin.c - a library with patchable entries, loaded with dlopen.  Built
 * twice: libapi_plugin.so (plugin_*, loaded by libapi_host.so's
 * constructor) and, with -DLATE, libapi_late.so (late_*, loaded by main). */
#ifdef LATE
#define FN(name) late_##name
#else
#define FN(name) plugin_##name
#endif

__attribute__((noipa)) int FN(leaf)(int x)
{
	return x * 3 + 1;
}

int FN(work)(int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += FN(leaf)(i);
	return sum;
}
