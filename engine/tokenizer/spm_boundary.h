/* Shared by the two C++ files of the tokenizer: the extern "C" boundary. No C++ exception may
 * cross into C, and sentencepiece's status messages become mt_error lines naming the file. */
#ifndef MTLAB_TOKENIZER_SPM_BOUNDARY_H
#define MTLAB_TOKENIZER_SPM_BOUNDARY_H

#include <sentencepiece_processor.h>

#include <exception>
#include <new>
#include <string>

extern "C" {
#include "mtlab/error.h"
}

/* sentencepiece's messages look like "Internal: ./src/x.cc(660) [(a) == (b)] Vocabulary size
 * too high (400). Please set it to a value <= 397."; users need only the sentence after the
 * source location and the failed condition. */
static inline std::string spm_status_text(const sentencepiece::util::Status &status)
{
    std::string msg = status.ToString();
    const size_t cond_end = msg.find("] ");
    if (msg.find(".cc(") != std::string::npos && cond_end != std::string::npos)
        msg = msg.substr(cond_end + 2);
    return msg;
}

/* Runs body() and returns its value; on any C++ exception records "what: reason" with
 * mt_error and returns on_fail. */
template <typename R, typename Body>
static inline R spm_guarded(const char *what, R on_fail, Body &&body)
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        mt_error("%s: out of memory in sentencepiece", what);
    } catch (const std::exception &e) {
        mt_error("%s: sentencepiece: %s", what, e.what());
    } catch (...) {
        mt_error("%s: sentencepiece raised an unknown C++ exception", what);
    }
    return on_fail;
}

#endif
