/* What an AVX2 core gives each form of an 8-bit product: the cycles one row of a tile spends
 * on 64 multiply-adds (4 k-steps x 16 channels, as cpu_int8_avx2.c's row step) in four forms,
 * each timed alone on registers (no memory), with four rows in flight so that no chain of
 * additions waits on another (docs/quantization.md §2):
 *
 *   exact      mtlab's: |w| * (x * sign w), vpsignb x 2, vpmaddubsw x 2, vpmaddwd x 2 (by ones),
 *              vpaddd x 2; every pair sum fits 16 bits, so the int32 sums are exact
 *   saturating u8 x s8 without the sign step (x + 128 against w), vpmaddubsw x 2, vpmaddwd x 2,
 *              vpaddd x 2; a pair may exceed 32767 and saturate
 *   int16      both operands widened to 16 bits, vpmaddwd x 4, vpaddd x 4; exact
 *   fp32       vfmadd231ps x 8, the fp32 product's inner step
 *
 * and then how many of the instructions involved the core issues a cycle, alone and in pairs
 * (which of them share pipes). The cycle is the time of one dependent integer addition (1 cycle
 * on every x86-64 core), taken before each figure; each is the best of 7 rounds. A development
 * tool, not a unit test:
 *
 *   make bench-ports      (or: cc -O2 tests/bench/int8_ports.c -o ports && ./ports)
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

#define AVX2 __attribute__((target("avx2,fma")))
enum { ITER = 20000000, ROUNDS = 7 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* seconds of one dependent addition */
static double cycle_seconds(void)
{
    double t0 = now();
    for (long i = 0; i < ITER; i++)
        __asm__ volatile("add $1, %%rax\n\tadd $1, %%rax\n\tadd $1, %%rax\n\tadd $1, %%rax\n\t"
                         "add $1, %%rax\n\tadd $1, %%rax\n\tadd $1, %%rax\n\tadd $1, %%rax" ::
                             : "rax");
    return (now() - t0) / (8.0 * ITER);
}

/* One iteration is four rows' steps: accumulators ymm0-7 (two a row), temporaries ymm8-11,
 * operands ymm12 (the row's bytes), ymm13-14 (two weight vectors: normal floats, so that the fp32
 * form meets no subnormal), ymm15 (ones). */
#define CLOBBER \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

#define EXACT(a0, a1, t0, t1)                    \
    "vpsignb %%ymm13, %%ymm12, %%" t0 "\n\t"     \
    "vpsignb %%ymm14, %%ymm12, %%" t1 "\n\t"     \
    "vpmaddubsw %%" t0 ", %%ymm13, %%" t0 "\n\t" \
    "vpmaddubsw %%" t1 ", %%ymm14, %%" t1 "\n\t" \
    "vpmaddwd %%ymm15, %%" t0 ", %%" t0 "\n\t"   \
    "vpmaddwd %%ymm15, %%" t1 ", %%" t1 "\n\t"   \
    "vpaddd %%" t0 ", %%" a0 ", %%" a0 "\n\t"    \
    "vpaddd %%" t1 ", %%" a1 ", %%" a1 "\n\t"
#define SATURATING(a0, a1, t0, t1)              \
    "vpmaddubsw %%ymm13, %%ymm12, %%" t0 "\n\t" \
    "vpmaddubsw %%ymm14, %%ymm12, %%" t1 "\n\t" \
    "vpmaddwd %%ymm15, %%" t0 ", %%" t0 "\n\t"  \
    "vpmaddwd %%ymm15, %%" t1 ", %%" t1 "\n\t"  \
    "vpaddd %%" t0 ", %%" a0 ", %%" a0 "\n\t"   \
    "vpaddd %%" t1 ", %%" a1 ", %%" a1 "\n\t"
#define INT16(a0, a1, t0, t1)                 \
    "vpmaddwd %%ymm13, %%ymm12, %%" t0 "\n\t" \
    "vpmaddwd %%ymm14, %%ymm12, %%" t1 "\n\t" \
    "vpaddd %%" t0 ", %%" a0 ", %%" a0 "\n\t" \
    "vpaddd %%" t1 ", %%" a1 ", %%" a1 "\n\t" \
    "vpmaddwd %%ymm14, %%ymm12, %%" t0 "\n\t" \
    "vpmaddwd %%ymm13, %%ymm12, %%" t1 "\n\t" \
    "vpaddd %%" t0 ", %%" a0 ", %%" a0 "\n\t" \
    "vpaddd %%" t1 ", %%" a1 ", %%" a1 "\n\t"
/* three multiply-adds into each of a row's two accumulators and one into each of the two it
 * shares with the row two on: no register takes more than three a pass, fewer than the pass's
 * 32 multiply-adds at two a cycle give a multiply-add's latency to finish */
#define FP32(a0, a1, t0, t1)                     \
    "vfmadd231ps %%ymm13, %%ymm12, %%" a0 "\n\t" \
    "vfmadd231ps %%ymm14, %%ymm12, %%" a1 "\n\t" \
    "vfmadd231ps %%ymm13, %%ymm12, %%" t0 "\n\t" \
    "vfmadd231ps %%ymm14, %%ymm12, %%" t1 "\n\t" \
    "vfmadd231ps %%ymm14, %%ymm12, %%" a0 "\n\t" \
    "vfmadd231ps %%ymm13, %%ymm12, %%" a1 "\n\t" \
    "vfmadd231ps %%ymm13, %%ymm12, %%" a0 "\n\t" \
    "vfmadd231ps %%ymm14, %%ymm12, %%" a1 "\n\t"
#define FOUR_ROWS(F)                    \
    F("ymm0", "ymm1", "ymm8", "ymm9")   \
    F("ymm2", "ymm3", "ymm10", "ymm11") \
    F("ymm4", "ymm5", "ymm8", "ymm9") F("ymm6", "ymm7", "ymm10", "ymm11")

/* seconds of one row step of each form */
#define FORM_FN(name, F)                                                                  \
    AVX2 static double name(void)                                                         \
    {                                                                                     \
        __asm__ volatile("vpxor %%ymm12, %%ymm12, %%ymm12\n\tvpcmpeqd %%ymm15, %%ymm15, " \
                         "%%ymm15\n\tvpsrlw $15, %%ymm15, %%ymm15\n\tvcvtdq2ps %%ymm15, " \
                         "%%ymm13\n\tvmovaps %%ymm13, %%ymm14" ::                         \
                             : "xmm12", "xmm13", "xmm14", "xmm15");                       \
        double t0 = now();                                                                \
        for (long i = 0; i < ITER; i++) __asm__ volatile(FOUR_ROWS(F)::: CLOBBER);        \
        return (now() - t0) / (4.0 * ITER);                                               \
    }
/* 12 independent instructions, a and b alternating, on registers alone: how many a cycle the
 * core issues of one instruction, or of two beside each other (sharing pipes or not) */
#define PAIR12(a, b)                                                      \
    a " %%ymm13, %%ymm12, %%ymm0\n\t" b " %%ymm13, %%ymm12, %%ymm1\n\t" a \
      " %%ymm13, %%ymm12, %%ymm2\n\t" b " %%ymm13, %%ymm12, %%ymm3\n\t" a \
      " %%ymm13, %%ymm12, %%ymm4\n\t" b " %%ymm13, %%ymm12, %%ymm5\n\t" a \
      " %%ymm13, %%ymm12, %%ymm6\n\t" b " %%ymm13, %%ymm12, %%ymm7\n\t" a \
      " %%ymm13, %%ymm12, %%ymm8\n\t" b " %%ymm13, %%ymm12, %%ymm9\n\t" a \
      " %%ymm13, %%ymm12, %%ymm10\n\t" b " %%ymm13, %%ymm12, %%ymm11\n\t"
#define PAIR_FN(name, a, b)                                                        \
    AVX2 static double name(void)                                                  \
    {                                                                              \
        double t0 = now();                                                         \
        for (long i = 0; i < ITER; i++) __asm__ volatile(PAIR12(a, b)::: CLOBBER); \
        return (now() - t0) / (12.0 * ITER);                                       \
    }
PAIR_FN(p_maddubs, "vpmaddubsw", "vpmaddubsw")
PAIR_FN(p_madd, "vpmaddwd", "vpmaddwd")
PAIR_FN(p_sign, "vpsignb", "vpsignb")
PAIR_FN(p_add, "vpaddd", "vpaddd")
PAIR_FN(p_maddubs_madd, "vpmaddubsw", "vpmaddwd")
PAIR_FN(p_sign_madd, "vpsignb", "vpmaddwd")
PAIR_FN(p_sign_add, "vpsignb", "vpaddd")

FORM_FN(exact, EXACT)
FORM_FN(saturating, SATURATING)
FORM_FN(int16, INT16)
FORM_FN(fp32, FP32)

typedef struct {
    const char *name, *ops;
    double (*fn)(void);
    double best; /* cycles */
} timed;

/* each entry's best of ROUNDS, in cycles, the entries interleaved round by round; returns the
 * highest clock seen, in GHz */
static double time_all(timed *t, int n)
{
    double ghz = 0.0;
    for (int r = 0; r < ROUNDS; r++)
        for (int f = 0; f < n; f++) {
            double c = cycle_seconds(), cycles = t[f].fn() / c;
            if (cycles < t[f].best) t[f].best = cycles;
            if (1e-9 / c > ghz) ghz = 1e-9 / c;
        }
    return ghz;
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "int8_ports: this CPU has no AVX2 and FMA; nothing to time\n");
        return 1;
    }
    timed forms[] = {
        {"exact", "2 vpsignb, 2 vpmaddubsw, 2 vpmaddwd, 2 vpaddd", exact, 1e9},
        {"saturating", "2 vpmaddubsw, 2 vpmaddwd, 2 vpaddd", saturating, 1e9},
        {"int16", "4 vpmaddwd, 4 vpaddd", int16, 1e9},
        {"fp32", "8 vfmadd231ps", fp32, 1e9},
    };
    timed pairs[] = {
        {"vpmaddubsw", "", p_maddubs, 1e9},
        {"vpmaddwd", "", p_madd, 1e9},
        {"vpsignb", "", p_sign, 1e9},
        {"vpaddd", "", p_add, 1e9},
        {"vpmaddubsw + vpmaddwd", "", p_maddubs_madd, 1e9},
        {"vpsignb + vpmaddwd", "", p_sign_madd, 1e9},
        {"vpsignb + vpaddd", "", p_sign_add, 1e9},
    };
    enum { N = sizeof forms / sizeof forms[0], P = sizeof pairs / sizeof pairs[0] };
    double ghz = time_all(forms, N);
    printf("one row's step of 64 multiply-adds, cycles (best of %d rounds; clock about %.2f GHz)\n",
           ROUNDS, ghz);
    for (int f = 0; f < N; f++)
        printf("  %-11s %5.2f cycles  %5.1f multiply-adds a cycle   %s\n", forms[f].name,
               forms[f].best, 64.0 / forms[f].best, forms[f].ops);
    time_all(pairs, P);
    printf("independent instructions issued a cycle, alone and in pairs (best of %d rounds)\n",
           ROUNDS);
    for (int f = 0; f < P; f++) printf("  %-22s %5.2f\n", pairs[f].name, 1.0 / pairs[f].best);
    return 0;
}
