/* later_lib - the library dl_later loads while it runs; built without
 * tracing flags.  later_mix calls later_step once per call. */
__attribute__((noinline)) static int later_step(int x)
{
	return x * 7 + (x >> 3);
}

int later_mix(int x)
{
	return later_step(x) ^ (x << 1);
}
