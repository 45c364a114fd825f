/* nest_prog - calls nest_lib's nl_outer (tests/record/test_libname.sh). */
#include <stdio.h>

int nl_outer(int x);

int main(void)
{
	printf("%d\n", nl_outer(5));
	return 0;
}
