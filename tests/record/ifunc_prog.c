/* ifunc_prog - calls libm's expf, whose default version is an IFUNC
 * (expf@@GLIBC_2.27) beside an old version's plain function
 * (expf@GLIBC_2.2.5), and prints the call as replay shows it with its
 * argument and return value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	float x = argc > 1 ? strtof(argv[1], NULL) : 1.5f;
	volatile float y = expf(x);
	printf("expf(x=%g) = %f;\n", x, y);
	return 0;
}
