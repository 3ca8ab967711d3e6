/* The two searches mt_decode (decode.c) picks between: greedy.c for one beam, beam.c for
 * more. Each runs a prefilled context to the end, filling c->res. 0 or -1. */
#ifndef MTLAB_DECODE_SEARCHES_H
#define MTLAB_DECODE_SEARCHES_H

#include "decode/search.h"

int mt_decode_greedy_run(mt_decode_ctx *c);
int mt_decode_beam_run(mt_decode_ctx *c);

#endif
