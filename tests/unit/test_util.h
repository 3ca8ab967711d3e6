/* Common includes for the cmocka unit tests. cmocka needs these system headers first. */
#ifndef MTLAB_TEST_UTIL_H
#define MTLAB_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#endif
