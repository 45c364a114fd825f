/* static_nodebug - a static program without debug info: --auto-args has
 * nothing to describe in it, nor libraries to look in. */
int main(void)
{
	return 0;
}
